"""The page flow: pages in, ``PageResult`` out, through the one engine (``engine``: the
compiled core's page flow, the C library's). ``Extractor`` (a page or a batch), ``Pipeline``
(a stream, threads on one engine per device), the CLI and the integrations are thin layers
over it; ``pages`` defines what a page and its result are, ``schema`` the record every door
writes of a result."""
