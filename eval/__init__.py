"""Measuring extraction: quality metrics, the pages measured, the systems compared, and how a
result is recorded. Imported by ``bench``, ``parity`` and ``train``; imports only the runtime."""
