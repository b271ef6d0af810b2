"""Which page errors are the page's and which are the machine's: the one definition the batch
integrations (Ray Data, datatrove) act on.

A page error is ``"<stage>: <reason>"`` (``PageResult.error``). Its stage decides:

- **permanent**: the page itself cannot be extracted, and would fail the same way again: its
  input (not str or bytes), its decoding, simplify (parsing), tokenize, block features,
  rescore, reconstruct, Markdown. Written once, with ``error``, never retried.
- **transient**: the machine failed, not the page: the engine or inference (a device, a
  session, memory), a worker that crashed, ``internal`` (a failure of ours outside the page
  flow's stages). Retried: the page runs again, in this process and then as a task retry or in
  a resumed job; it is never written with the error.

A stage this list does not know is permanent: a page is never retried without end for a
failure nobody classified.
"""

from __future__ import annotations

from collections.abc import Sequence

# The stages whose failure says nothing about the page. "prepare" and "finish" are what a
# worker's own failure (a crashed process, an unexpected exception) is reported as; "pipeline"
# a batch that failed as a whole.
TRANSIENT_STAGES = frozenset({"engine", "inference", "internal", "worker", "prepare", "finish",
                              "pipeline"})
# The page flow's own stages (for the documentation and the tests: anything not transient is
# permanent).
PERMANENT_STAGES = frozenset({"input", "decode", "simplify", "parse", "tokenize", "features",
                              "rescore", "reconstruct", "markdown"})
# Attempts at a page with a transient error within one task before the task gives up on it.
TRANSIENT_ATTEMPTS = 3


class TransientPageError(RuntimeError):
    """Pages of a batch kept failing for a transient reason: the task must be retried (Ray
    Data retries the task; datatrove leaves the task incomplete for the next run)."""


def error_stage(error: str) -> str:
    """The stage of an error string ``"<stage>: <reason>"``."""
    return error.partition(":")[0].strip()


def is_transient(error: str | None) -> bool:
    """Whether a page's ``error`` is worth retrying (None: no error, nothing to retry)."""
    return error is not None and error_stage(error) in TRANSIENT_STAGES


def transient_failure(ids: Sequence, errors: Sequence[str]) -> TransientPageError:
    """The exception for pages that still fail for a transient reason: how many, which, and
    the first error."""
    shown = ", ".join(map(repr, list(ids)[:5])) + (", ..." if len(ids) > 5 else "")
    return TransientPageError(f"{len(ids)} pages failed {TRANSIENT_ATTEMPTS} times for a "
                              f"transient reason ({shown}); first: {errors[0]}")
