"""End to end, HTML in -> Markdown out, ours vs the reference with the same checkpoint and pages.

Sides (each with the model loaded and warmed up beforehand; load time reported apart):

- ``ref Extractor loop``   ``pulpie.Extractor(model=CKPT, device=D).extract(html)`` per page
- ``ref Pipeline``         ``pulpie.Pipeline(model=CKPT, devices=[D]).extract_batch(pages)``
- ``ours <backend> loop``  ``pulpie_rt.Extractor(model=..., backend=B).extract(html)`` per page
- ``ours <backend> Pipeline``  ``pulpie_rt.Pipeline(...).extract_batch(pages)``

The loops are interleaved page by page with the reference loop. Tokens are counted where the
model is called — a forward pre-hook on the reference's torch model, the engine's own counters
for ours (``Engine.counters``: batches run, their rows' tokens, tokens with the padding) — so
tokens/s and the padding fraction come from what each engine actually computed, not from what
we think it did. Pages/s are wall-clock (the
model uses every core it is given).

The reference runs eager attention in fp32 on CPU and is slow on long chunks: the default is a
modest, evenly spread subset of the dev pages (``--pages``).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.report import REPO_ROOT, format_table

DEFAULT_CHECKPOINT = REPO_ROOT / "tests" / "fixtures" / "tiny-eurobert"
DEFAULT_PAGES = 24


@dataclass
class TokenCounter:
    """Tokens the model computed: ``real`` (attention mask 1) and ``computed`` (incl. padding)."""

    calls: int = 0
    real: int = 0
    computed: int = 0

    def add(self, input_ids_shape: Sequence[int], real_tokens: int) -> None:
        computed = 1
        for dim in input_ids_shape:
            computed *= int(dim)
        self.calls += 1
        self.real += int(real_tokens)
        self.computed += computed

    @property
    def padding_fraction(self) -> float | None:
        return 1 - self.real / self.computed if self.computed else None


@dataclass
class SideResult:
    name: str
    pages: int = 0
    wall_s: float = 0.0
    load_s: float | None = None
    tokens: TokenCounter = field(default_factory=TokenCounter)
    errors: int = 0
    outputs: list[Any] = field(default_factory=list, repr=False)
    note: str | None = None
    gpu_util: float | None = None  # mean %, where sampled

    def as_dict(self) -> dict[str, Any]:
        return {
            "side": self.name, "pages": self.pages, "wall_s": self.wall_s, "load_s": self.load_s,
            "pages_per_s": self.pages / self.wall_s if self.wall_s else None,
            "tokens_per_s": self.tokens.real / self.wall_s if self.wall_s and self.tokens.calls
            else None,
            "real_tokens": self.tokens.real if self.tokens.calls else None,
            "computed_tokens": self.tokens.computed if self.tokens.calls else None,
            "model_calls": self.tokens.calls,
            "padding_fraction": self.tokens.padding_fraction,
            "errors": self.errors, "note": self.note,
        }


# ---------------------------------------------------------------- token counting hooks


def engines_of(side: Any) -> list:
    """The engines an ``Extractor`` (one) or a ``Pipeline`` (one per device) runs."""
    return list(getattr(side, "engines", None) or [side.engine])


@contextlib.contextmanager
def count_engine_tokens(counter: TokenCounter, engines: Sequence) -> Iterator[None]:
    """Count the model calls and tokens ``engines`` computed inside the block (their own
    counters, read before and after)."""
    before = [engine.counters() for engine in engines]
    try:
        yield
    finally:
        for engine, start in zip(engines, before, strict=True):
            now = engine.counters()
            counter.calls += now["model_calls"] - start["model_calls"]
            counter.real += now["real_tokens"] - start["real_tokens"]
            counter.computed += now["computed_tokens"] - start["computed_tokens"]


def hook_torch_tokens(model, counter: TokenCounter):
    """Forward pre-hook on a torch model counting ``input_ids`` / ``attention_mask`` tokens."""

    def pre_hook(_module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            return
        mask = kwargs.get("attention_mask")
        real = int(mask.sum().item()) if mask is not None else int(ids.numel())
        counter.add(tuple(ids.shape), real)

    return model.register_forward_pre_hook(pre_hook, with_kwargs=True)


# ---------------------------------------------------------------- the sides


def _ref_device(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"


def load_ref_extractor(checkpoint: Path, device: str):
    from pulpie import Extractor

    return Extractor(model=str(checkpoint), device=_ref_device(device))


def load_ref_pipeline(checkpoint: Path, device: str, workers: int | None):
    from pulpie import Pipeline

    return Pipeline(model=str(checkpoint), devices=[device], n_pre_workers=workers,
                    n_post_workers=workers)


def _our_api(name: str):
    """``pulpie_rt.<name>``, or from its runtime module while the top-level export is missing."""
    import importlib

    import pulpie_rt

    if hasattr(pulpie_rt, name):
        return getattr(pulpie_rt, name)
    module = {"Extractor": "extractor", "Pipeline": "pipeline", "PageInput": "pipeline"}[name]
    return getattr(importlib.import_module(f"pulpie_rt.runtime.{module}"), name)


def load_our_extractor(model: str | Path, backend: str, device: str | None):
    return _our_api("Extractor")(model=str(model), backend=backend, device=device)


def load_our_pipeline(model: str | Path, backend: str, device: str | None, workers: int | None):
    kwargs: dict[str, Any] = {"model": str(model), "backend": backend}
    if device is not None:
        kwargs["devices"] = [device]
    if workers is not None:
        kwargs["workers"] = workers
    return _our_api("Pipeline")(**kwargs)


def _labels_of(result: Any) -> dict | None:
    return getattr(result, "labels", None)


def _timed_load(loader: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    obj = loader()
    return obj, time.perf_counter() - start


def interleaved_loops(htmls: Sequence[str], sides: dict[str, Callable[[str], Any]],
                      results: dict[str, SideResult]) -> None:
    """Each page through every side's ``extract``, rotating which side goes first."""
    names = list(sides)
    for i, html in enumerate(htmls):
        k = i % len(names)
        for name in names[k:] + names[:k]:
            side = results[name]
            start = time.perf_counter()
            try:
                out = sides[name](html)
            except Exception as exc:  # noqa: BLE001 - a failing page is counted, the run goes on
                out = exc
                side.errors += 1
            side.wall_s += time.perf_counter() - start
            side.pages += 1
            side.outputs.append(out)


def label_agreement(ours: Sequence[Any], ref: Sequence[Any]) -> dict[str, Any]:
    """Pages whose labels are identical, and block-level agreement, ours vs reference."""
    same_pages = blocks = agree = 0
    for a, b in zip(ours, ref, strict=True):
        la, lb = _labels_of(a), _labels_of(b)
        if la is None or lb is None:
            continue
        same_pages += la == lb
        blocks += len(lb)
        agree += sum(1 for k, v in lb.items() if la.get(k) == v)
    return {"pages_identical_labels": same_pages, "pages": len(ref),
            "block_agreement": agree / blocks if blocks else None}


def run_end_to_end(pages: Sequence[dict], checkpoint: Path | None = None,
                   backends: Sequence[str] = ("auto",), device: str = "cpu",
                   our_model: str | Path | None = None, with_pipelines: bool = True,
                   workers: int | None = None, log: Callable[[str], None] = print
                   ) -> dict[str, Any]:
    """Ours (each backend) vs the reference on ``pages``; JSON-ready figures.

    ``our_model`` is what our side loads (default: the checkpoint itself, which our runtime
    exports once into its cache; pass a bundle or an engine file to skip that).
    """
    checkpoint = Path(checkpoint) if checkpoint else DEFAULT_CHECKPOINT
    our_model = our_model or checkpoint
    htmls = [p["html"] for p in pages]
    warmup = htmls[:2]
    results: dict[str, SideResult] = {}
    callables: dict[str, Callable[[str], Any]] = {}
    engines: dict[str, list] = {}
    skipped: dict[str, str] = {}

    ref_name = "ref Extractor loop"
    ref_ex, load_s = _timed_load(lambda: load_ref_extractor(checkpoint, device))
    results[ref_name] = SideResult(ref_name, load_s=load_s)
    hook_torch_tokens(ref_ex.model, results[ref_name].tokens)
    callables[ref_name] = ref_ex.extract
    for backend in backends:
        name = f"ours {backend} loop"
        try:
            ours_ex, load_s = _timed_load(lambda b=backend: load_our_extractor(our_model, b,
                                                                              device))
        except Exception as exc:  # noqa: BLE001 - reported as skipped
            skipped[name] = f"{type(exc).__name__}: {exc}"
            log(f"  {name}: SKIPPED ({skipped[name]})")
            continue
        results[name] = SideResult(name, load_s=load_s)
        callables[name] = ours_ex.extract
        engines[name] = engines_of(ours_ex)

    counters = {name: results[name].tokens for name in callables}
    for fn in callables.values():  # warm-up: first-call allocations, lazy imports
        for html in warmup:
            with contextlib.suppress(Exception):
                fn(html)
    for counter in counters.values():
        counter.calls = counter.real = counter.computed = 0

    log(f"  loops: {len(htmls)} pages, interleaved: {', '.join(callables)}")
    ours_names = [n for n in callables if n != ref_name]
    # each of our sides counts what its own engine computed during its calls
    wrapped: dict[str, Callable[[str], Any]] = {ref_name: callables[ref_name]}
    for name in ours_names:
        def call(html: str, _fn=callables[name], _counter=counters[name],
                 _engines=engines[name]) -> Any:
            with count_engine_tokens(_counter, _engines):
                return _fn(html)
        wrapped[name] = call
    interleaved_loops(htmls, wrapped, results)
    for name in ours_names:
        results[name].note = "labels vs reference: " + str(
            label_agreement(results[name].outputs, results[ref_name].outputs))

    if with_pipelines:
        del ref_ex
        gc.collect()
        _run_pipelines(htmls, checkpoint, our_model, backends, device, workers, results,
                       skipped, log)

    rows = [r.as_dict() for r in results.values()]
    ref_loop = results[ref_name].as_dict()["pages_per_s"]
    ref_pipe = results.get("ref Pipeline")
    ref_pipe_pps = ref_pipe.as_dict()["pages_per_s"] if ref_pipe else None
    for row in rows:
        if row["side"].startswith("ours") and row["pages_per_s"]:
            base = ref_pipe_pps if row["side"].endswith("Pipeline") and ref_pipe_pps else ref_loop
            row["ratio_vs_ref"] = row["pages_per_s"] / base if base else None
            row["ratio_vs_ref_loop"] = row["pages_per_s"] / ref_loop if ref_loop else None
    return {"pages": len(htmls), "page_ids": [p.get("id") for p in pages],
            "checkpoint": str(checkpoint), "our_model": str(our_model), "device": device,
            "sides": rows, "skipped": skipped,
            "timing": "wall-clock seconds, model loaded and warmed up beforehand"}


def _run_pipelines(htmls, checkpoint, our_model, backends, device, workers, results, skipped,
                   log) -> None:
    from pulpie import PageInput as RefPageInput

    name = "ref Pipeline"
    try:
        pipe, load_s = _timed_load(lambda: load_ref_pipeline(checkpoint, device, workers))
        side = results[name] = SideResult(name, load_s=load_s)
        pipe.extract_batch([RefPageInput(html=h, page_id=i) for i, h in enumerate(htmls[:2])])
        for state in pipe._gpu_models:  # the reference keeps its models here
            hook_torch_tokens(state.model, side.tokens)
        start = time.perf_counter()
        out = pipe.extract_batch([RefPageInput(html=h, page_id=i) for i, h in enumerate(htmls)])
        side.wall_s = time.perf_counter() - start
        side.pages = len(htmls)
        side.errors = sum(1 for r in out if r.error)
        side.outputs = out
        del pipe
        gc.collect()
    except Exception as exc:  # noqa: BLE001
        skipped[name] = f"{type(exc).__name__}: {exc}"
        log(f"  {name}: SKIPPED ({skipped[name]})")

    for backend in backends:
        name = f"ours {backend} Pipeline"
        try:
            page_input = _our_api("PageInput")
            pipe, load_s = _timed_load(lambda b=backend: load_our_pipeline(our_model, b, device,
                                                                          workers))
            side = results[name] = SideResult(name, load_s=load_s)
            pipe.extract_batch([page_input(html=h, page_id=i) for i, h in enumerate(htmls[:2])])
            inputs = [page_input(html=h, page_id=i) for i, h in enumerate(htmls)]
            with count_engine_tokens(side.tokens, engines_of(pipe)):
                start = time.perf_counter()
                out = pipe.extract_batch(inputs)
                side.wall_s = time.perf_counter() - start
            side.pages = len(htmls)
            side.errors = sum(1 for r in out if getattr(r, "error", None))
            side.outputs = out
            if "ref Pipeline" in results:
                side.note = "labels vs reference Pipeline: " + str(
                    label_agreement(out, results["ref Pipeline"].outputs))
            close = getattr(pipe, "close", None)
            if callable(close):
                close()
            del pipe
            gc.collect()
        except Exception as exc:  # noqa: BLE001
            results.pop(name, None)
            skipped[name] = f"{type(exc).__name__}: {exc}"
            log(f"  {name}: SKIPPED ({skipped[name]})")


def end_to_end_table(report: dict[str, Any]) -> str:
    rows = [(r["side"], r["pages"], r["pages_per_s"], r["tokens_per_s"],
             f"{r['padding_fraction']:.1%}" if r["padding_fraction"] is not None else "-",
             f"{r['ratio_vs_ref']:.2f}x" if r.get("ratio_vs_ref") else "-", r["errors"])
            for r in report["sides"]]
    table = format_table(["end to end (" + report["device"] + ")", "pages", "pages/s",
                          "tokens/s", "padding", "vs ref", "errors"], rows)
    notes = [f"  {r['side']}: {r['note']}" for r in report["sides"] if r.get("note")]
    notes += [f"  {name}: skipped ({why})" for name, why in report["skipped"].items()]
    return "\n".join([table, *notes])
