"""``pulpie-rt serve``: an HTTP service that batches pages across requests (extra ``serve``)."""
