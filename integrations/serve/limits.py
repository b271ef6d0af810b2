"""What one service accepts, how long it waits and how it groups pages: the ``pulpie-rt serve``
options (no imports of the ``serve`` extra here, so the command registers without it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pulpie_rt.runtime.flow.pages import DEFAULT_MAX_BATCH_TOKENS
from pulpie_rt.runtime.model.devices import usable_cpus


@dataclass(frozen=True)
class Limits:
    """What one service accepts and how it groups pages (``pulpie-rt serve --help``)."""

    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    max_batch_wait_ms: float = 5.0
    max_concurrent_requests: int = 512
    max_client_batch_size: int = 32
    payload_limit: int = 16_000_000  # bytes of one request body
    # bytes of request bodies held at once (being received or served): announced
    # Content-Lengths are reserved when the headers arrive, chunked bodies as they arrive
    max_bytes_in_flight: int = 1 << 30
    request_timeout_s: float = 120.0
    # seconds a client has to send the request headers, and again its body
    request_read_timeout_s: float = 30.0
    # seconds SIGTERM waits for the requests already received before it drops them
    shutdown_timeout_s: float = 30.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_workers() -> int:
    """Extraction threads when not given: one per usable CPU (at most 32). Each takes a group
    of queued pages and runs it through the one engine, the GIL released meanwhile."""
    return min(usable_cpus(), 32)
