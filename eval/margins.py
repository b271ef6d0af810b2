"""The transformer's SEP logits of prepared chunks, for the tools that look inside the decoding:
calibration (``train.calibrate``), ``bench.default_model_parts``, the parity commands and the
tests. Not a door: every door runs pages through the engine (``runtime/flow/engine.py``).

It runs the bundle's ``model.onnx`` through onnxruntime's Python API (the export and test
environments have it; the runtime never imports it), grouped by the engine's own batcher
(``native.plan_batches``) and padded as the engine pads, so its logits are the engine's up to
float rounding (``tests/test_ort_core.py`` compares the two).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from pulpie_rt.runtime import native


class SepLogitsSession:
    """A bundle's token classifier on onnxruntime's CPU provider: per chunk, the
    ``[n_sep, labels]`` logits at its SEP tokens."""

    def __init__(self, bundle, threads: int | None = None):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
        self.bundle = bundle
        self.session = ort.InferenceSession(str(bundle.onnx_path), options,
                                            providers=["CPUExecutionProvider"])
        self.inputs = {i.name: np.int32 if i.type == "tensor(int32)" else np.int64
                       for i in self.session.get_inputs()}
        self.output = bundle.output

    def run_rows(self, rows: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """One padded batch: per row its SEP logits (float32)."""
        lengths = [len(r) for r in rows]
        width = max(lengths)
        input_ids = np.full((len(rows), width), self.bundle.pad_id, np.int64)
        attention = np.zeros((len(rows), width), np.int64)
        for i, row in enumerate(rows):
            input_ids[i, :len(row)] = row
            attention[i, :len(row)] = 1
        values = {"input_ids": input_ids, "attention_mask": attention,
                  "position_ids": np.broadcast_to(np.arange(width), input_ids.shape)}
        feed = {name: values[name].astype(dtype, copy=False)
                for name, dtype in self.inputs.items()}
        (logits,) = self.session.run([self.output], feed)
        out = []
        for i, n in enumerate(lengths):
            positions = np.flatnonzero(input_ids[i, :n] == self.bundle.sep_id)
            out.append(np.asarray(logits[i, positions], dtype=np.float32))
        return out

    def run(self, items: Sequence[tuple[Hashable, Sequence[int]]],
            max_batch_tokens: int | None = None) -> dict[Hashable, np.ndarray]:
        """``{key: SEP logits}`` for ``(key, token ids)`` items, batched as the engine
        batches (its buckets, token budget and attention cap)."""
        if max_batch_tokens is None:
            max_batch_tokens = native.engine_defaults().max_batch_tokens
        lengths = [len(tokens) for _, tokens in items]
        plans = native.plan_batches(lengths, max_batch_tokens, None,
                                    native.max_batch_attention(), True)
        out: dict[Hashable, Any] = {}
        for order, _size, _cap in plans:
            indices = [int(i) for i in order]
            rows = [items[i][1] for i in indices]
            for i, logits in zip(indices, self.run_rows(rows), strict=True):
                out[items[i][0]] = logits
        return out


def chunk_sep_logits(session: SepLogitsSession, pages: Sequence
                     ) -> list[list[np.ndarray] | None]:
    """Per prepared page (``flow.pages.PreparedPage``, or None) its chunks' SEP logits."""
    items = [((p, c), chunk.token_ids) for p, page in enumerate(pages) if page is not None
             for c, chunk in enumerate(page.chunks)]
    logits = session.run(items)
    return [None if page is None else [logits[(p, c)] for c in range(len(page.chunks))]
            for p, page in enumerate(pages)]
