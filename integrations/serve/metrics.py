"""The service's Prometheus metrics (``GET /metrics``), one registry per service.

Names and what they count:

- ``pulpie_rt_requests_total{status}``: ``POST /v1/extract`` answers by HTTP status
- ``pulpie_rt_request_duration_seconds``: ``POST /v1/extract``, receipt to answer
- ``pulpie_rt_requests_in_progress``: extract requests being served now
- ``pulpie_rt_pages_total{outcome}``: pages answered, ``ok`` or ``error`` (a page's own error)
- ``pulpie_rt_queue_size``: pages prepared and waiting for the batcher
- ``pulpie_rt_batch_pages`` / ``pulpie_rt_batch_tokens``: pages and tokens (chunk tokens, no
  padding) in each batch the batcher formed across requests
- ``pulpie_rt_engine_batch_rows`` / ``pulpie_rt_engine_batch_tokens``: rows and tokens
  (padding included where the backend pads) of each call to the engine
- ``pulpie_rt_stage_duration_seconds{stage}``: ``prepare`` and ``finish`` per page (in the
  worker), ``queue`` per page (waiting for a batch), ``infer`` per batch
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
_PAGES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_ROWS = (1, 2, 4, 8, 16, 32, 64, 128)
_TOKENS = (256, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


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
                                 "extract requests being served now", registry=r)
        self.pages = Counter("pulpie_rt_pages", "pages answered, by outcome", ["outcome"],
                             registry=r)
        self.queue_size = Gauge("pulpie_rt_queue_size",
                                "pages prepared and waiting for the batcher", registry=r)
        self.batch_pages = Histogram("pulpie_rt_batch_pages",
                                     "pages per batch formed across requests", buckets=_PAGES,
                                     registry=r)
        self.batch_tokens = Histogram("pulpie_rt_batch_tokens",
                                      "chunk tokens per batch formed across requests",
                                      buckets=_TOKENS, registry=r)
        self.engine_rows = Histogram("pulpie_rt_engine_batch_rows", "rows per engine call",
                                     buckets=_ROWS, registry=r)
        self.engine_tokens = Histogram("pulpie_rt_engine_batch_tokens",
                                       "tokens per engine call (padding included where the "
                                       "backend pads)", buckets=_TOKENS, registry=r)
        self.stage_seconds = Histogram("pulpie_rt_stage_duration_seconds",
                                       "prepare/finish per page, queue per page, infer per batch",
                                       ["stage"], buckets=_SECONDS, registry=r)
        for status in ("200", "429"):  # present from the start, so a scrape can rate() them
            self.requests.labels(status=status)
        for outcome in ("ok", "error"):
            self.pages.labels(outcome=outcome)
        for stage in ("prepare", "queue", "infer", "finish"):
            self.stage_seconds.labels(stage=stage)

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric."""
        return generate_latest(self.registry)
