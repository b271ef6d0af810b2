"""pulpie-rt as a step of the batch engines crawl teams already run: Ray Data (``ray``, extra
``[ray]``) and datatrove (``datatrove``, extra ``[datatrove]``). Each module imports only its
own engine; the base install pulls neither."""
