"""What one service accepts and how it batches: the ``pulpie-rt serve`` options (no imports of
the ``serve`` extra here, so the command registers without it)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

from pulpie_rt.runtime.flow.pages import DEFAULT_MAX_BATCH_TOKENS


@dataclass(frozen=True)
class Limits:
    """What one service accepts and how it batches (``pulpie-rt serve --help``)."""

    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    max_batch_wait_ms: float = 5.0
    max_concurrent_requests: int = 512
    max_client_batch_size: int = 32
    payload_limit: int = 16_000_000  # bytes of one request body
    request_timeout_s: float = 120.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_workers() -> int:
    """CPU worker processes when not given: every core but the one the batcher and the
    engine's host work need (at least one, at most 32)."""
    return max(1, min((os.cpu_count() or 1) - 1, 32))
