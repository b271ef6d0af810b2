"""The page flow: pages in, ``PageResult`` out. ``pages`` holds the one serial flow (prepare ->
predict -> finish) that ``Extractor``, ``Pipeline`` (which overlaps it over processes and
devices), the CLI and the integrations all run."""
