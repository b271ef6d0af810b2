"""The service's Prometheus metrics (``GET /metrics``), one registry per service.

Names and what they count:

- ``pulpie_rt_requests_total{status}``: ``POST /v1/extract`` answers by HTTP status, every
  answer counted (refusals, timeouts and internal errors included; 499: the client left)
- ``pulpie_rt_request_duration_seconds``: ``POST /v1/extract``, receipt to answer
- ``pulpie_rt_requests_in_progress``: extract requests received and not answered yet
- ``pulpie_rt_request_bytes_in_flight``: request body bytes held (reserved or received)
- ``pulpie_rt_read_timeouts_total{phase}``: connections dropped for sending their request
  ``headers`` or ``body`` too slowly (--request-read-timeout)
- ``pulpie_rt_pages_total{outcome}``: pages answered, ``ok`` or ``error`` (a page's own error)
- ``pulpie_rt_queue_size``: pages waiting for an extraction thread
- ``pulpie_rt_batch_pages`` / ``pulpie_rt_batch_bytes``: pages and HTML bytes in each group of
  pages (across requests) an extraction thread hands the engine
- ``pulpie_rt_stage_duration_seconds{stage}``: ``queue`` per page (waiting for a thread),
  ``extract`` per group (the engine's whole flow)
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
_PAGES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_BYTES = tuple(2 ** k for k in range(10, 28, 2))  # 1 KiB .. 128 MiB


class ServiceMetrics:
    """Every metric of one service, in its own registry (no process-wide state)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("pulpie_rt_requests", "POST /v1/extract answers by HTTP status",
                                ["status"], registry=r)
        self.request_seconds = Histogram("pulpie_rt_request_duration_seconds",
                                         "POST /v1/extract, receipt to answer", buckets=_SECONDS,
                                         registry=r)
        self.in_progress = Gauge("pulpie_rt_requests_in_progress",
                                 "extract requests received and not answered yet", registry=r)
        self.bytes_in_flight = Gauge("pulpie_rt_request_bytes_in_flight",
                                     "request body bytes held (reserved or received)",
                                     registry=r)
        self.read_timeouts = Counter("pulpie_rt_read_timeouts",
                                     "connections dropped for sending a request too slowly",
                                     ["phase"], registry=r)
        self.pages = Counter("pulpie_rt_pages", "pages answered, by outcome", ["outcome"],
                             registry=r)
        self.queue_size = Gauge("pulpie_rt_queue_size",
                                "pages waiting for an extraction thread", registry=r)
        self.batch_pages = Histogram("pulpie_rt_batch_pages",
                                     "pages per group handed to the engine", buckets=_PAGES,
                                     registry=r)
        self.batch_bytes = Histogram("pulpie_rt_batch_bytes",
                                     "HTML bytes per group handed to the engine",
                                     buckets=_BYTES, registry=r)
        self.stage_seconds = Histogram("pulpie_rt_stage_duration_seconds",
                                       "queue per page, extract per group", ["stage"],
                                       buckets=_SECONDS, registry=r)
        for status in ("200", "429"):  # present from the start, so a scrape can rate() them
            self.requests.labels(status=status)
        for phase in ("headers", "body"):
            self.read_timeouts.labels(phase=phase)
        for outcome in ("ok", "error"):
            self.pages.labels(outcome=outcome)
        for stage in ("queue", "extract"):
            self.stage_seconds.labels(stage=stage)

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric."""
        return generate_latest(self.registry)
