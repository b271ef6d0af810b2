"""pulpie-rt inside other systems: the HTTP service (``serve``) and adapters for other
frameworks. Each integration brings its own extra; the base install pulls none of them."""
