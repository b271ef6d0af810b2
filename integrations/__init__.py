"""pulpie-rt inside the systems our users already run: the HTTP service (``serve``, extra
``[serve]``), and steps of the batch engines crawl teams run, Ray Data (``ray``, extra
``[ray]``) and datatrove (``datatrove``, extra ``[datatrove]``). Each module imports only its
own stack; the base install pulls none of them."""
