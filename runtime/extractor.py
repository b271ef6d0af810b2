"""``Extractor``: raw HTML in, main content out (the reference's API, without torch).

    from pulpie_rt import Extractor
    result = Extractor("path/to/bundle").extract(html)
    print(result.markdown)
"""

from __future__ import annotations

import os

from pulpie_rt.runtime.backends import create_backend
from pulpie_rt.runtime.batches import DEFAULT_MAX_BATCH_TOKENS
from pulpie_rt.runtime.models import DEFAULT_MODEL, resolve_model
from pulpie_rt.runtime.pages import (
    ExtractionResult,
    PageError,
    Preparer,
    describe,
    finish_page,
    predict_pages,
)


class ExtractionError(RuntimeError):
    """``extract`` failed for the page; the message names the stage and the reason."""


class Extractor:
    """Extract main content from raw HTML with a Pulpie model.

    ``model``: hub name, checkpoint directory, bundle directory or engine file (see
    ``pulpie_rt.runtime.models``). ``backend``: ``auto``, ``tensorrt`` or ``onnxruntime``.
    ``device``: ``cpu``, ``cuda`` or ``cuda:N``; None picks a GPU when one is usable.
    """

    def __init__(
        self,
        model: str | os.PathLike = DEFAULT_MODEL,
        backend: str = "auto",
        device: str | None = None,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        cutoff_length: int = 500,
        threads: int | None = None,
    ):
        resolved = resolve_model(model)
        self.bundle = resolved.bundle
        self.backend = create_backend(
            self.bundle, backend, device, engine_path=resolved.engine_paths, threads=threads
        )
        self.max_batch_tokens = max_batch_tokens
        self.preparer = Preparer.from_bundle(self.bundle, cutoff_length)

    @property
    def device(self) -> str:
        return self.backend.device

    def extract(self, html: str | bytes) -> ExtractionResult:
        """Main content of one page; ``ExtractionError`` ("<stage>: <reason>") on failure."""
        (result,) = self.extract_batch([html])
        if result.error is not None:
            raise ExtractionError(result.error)
        return result

    def extract_batch(self, htmls: list[str | bytes]) -> list[ExtractionResult]:
        """Results in input order; a page that fails gets ``error`` set and empty content."""
        prepared: list = []
        errors: dict[int, str] = {}
        for index, html in enumerate(htmls):
            try:
                prepared.append(self.preparer.prepare(html))
            except PageError as exc:
                prepared.append(None)
                errors[index] = str(exc)
        predictions = predict_pages(self.backend, prepared, self.max_batch_tokens)
        results = []
        for index, (page, preds) in enumerate(zip(prepared, predictions, strict=True)):
            if isinstance(preds, PageError):
                errors[index] = str(preds)
            if index in errors:
                results.append(ExtractionResult("", "", {}, error=errors[index]))
                continue
            try:
                results.append(finish_page(page, preds))
            except PageError as exc:
                results.append(ExtractionResult("", "", {}, error=str(exc)))
            except Exception as exc:  # a bug of ours still must not take down the batch
                results.append(ExtractionResult("", "", {}, error=f"finish: {describe(exc)}"))
        return results
