"""One side of the regression gate (``bench/check.py``): the CPU stages of one source tree,
timed on request.

``check.py`` starts two of these, one on the working tree and one on the merge base, each with
its own tree first on ``sys.path`` (``python -I gate_worker.py SHIM_DIR``), and asks them in
turn, page by page, to time one stage. Both live for the whole run, so they are measured in the
same minutes, on the same pages, under the same load.

This file runs under either tree's ``pulpie_rt``, so it imports nothing of ``pulpie_rt`` but
the stages' public entry points (``pulpie_rt.runtime.stages.*``), the engine's
``flow.pages.Preparer`` with the embedded model's bundle (``prepare``), and
``runtime.native``'s ``available()``. A stage whose entry point a tree lacks, or which fails
there, is reported as unavailable on that side instead of stopping the run.

Protocol: JSON lines on stdin/stdout. The first request configures the side and prepares every
stage's input from the raw pages with this tree's own upstream stages (untimed); then each
``{"stage", "page", "loops"}`` is answered with the CPU seconds of ``loops`` calls of that
stage on that page's input (``time.process_time``: this process only, so other jobs on the
machine are not charged). An empty line or EOF ends the worker.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# One thread per library: per-core figures, and no idle worker threads spinning on a loaded
# machine (the Pipeline's worker processes run one thread too). Set before the imports below.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

# The stages timed, in order, and what each reads (prepared once per page).
STAGES = ("simplify", "blocks", "tokens", "chunks", "reconstruct", "markdown", "features",
          "rescore", "prepare")
MAX_TOKENS = 8192
_ITEM_ID = re.compile(r'_item_id="(\d+)"')


def alternating_labels(simplified_html: str) -> dict[str, str]:
    """Every other block main, by block id: reconstruct has real work on every page."""
    return {i: ("main" if int(i) % 2 == 0 else "other") for i in _ITEM_ID.findall(simplified_html)}


def special_ids(checkpoint: Path, tokenizer: Any) -> tuple[int | None, int | None]:
    """BOS and EOS ids named by a checkpoint's ``tokenizer_config.json`` (None when absent)."""
    config_path = checkpoint / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}

    def token_id(key: str) -> int | None:
        token = config.get(key)
        if isinstance(token, dict):
            token = token.get("content")
        return tokenizer.token_to_id(token) if token else None

    return token_id("bos_token"), token_id("eos_token")


def slowed(fn: Callable, factor: float) -> Callable:
    """``fn`` followed by busy work, so that each call costs ``factor`` times its CPU time: the
    deliberate slowdown (``PULPIE_RT_BENCH_SLOWDOWN``) that shows the gate fails."""
    if factor <= 1:
        return fn

    def wrapper(*args: Any) -> Any:
        start = time.process_time()
        out = fn(*args)
        until = time.process_time() + (time.process_time() - start) * (factor - 1)
        while time.process_time() < until:
            pass
        return out

    return wrapper


def stage_functions(checkpoint: Path, slowdown: dict[str, float]) -> dict[str, Callable]:
    """Each stage as a one-argument function over its prepared input; a stage whose entry point
    this tree lacks is left out (reported by ``prepare``)."""
    functions: dict[str, Callable] = {}
    try:
        from pulpie_rt.runtime.stages.simplify import simplify
        functions["simplify"] = simplify
    except ImportError:
        pass
    try:
        from pulpie_rt.runtime.stages.blocks import extract_blocks
        functions["blocks"] = extract_blocks
    except ImportError:
        pass
    try:
        from pulpie_rt.runtime.stages.tokens import encode_blocks, load_tokenizer, sep_id
        tokenizer = load_tokenizer(checkpoint)
        sep = sep_id(tokenizer)
        bos, eos = special_ids(checkpoint, tokenizer)
        functions["tokens"] = lambda blocks: encode_blocks(tokenizer, blocks)
        from pulpie_rt.runtime.stages.chunks import pack_chunks
        functions["chunks"] = lambda ids: pack_chunks(ids, MAX_TOKENS, sep_id=sep, bos_id=bos,
                                                      eos_id=eos)
    except ImportError:
        pass
    try:
        from pulpie_rt.runtime.stages.reconstruct import extract_main_html
        functions["reconstruct"] = lambda item: extract_main_html(*item)
    except ImportError:
        pass
    try:
        from pulpie_rt.runtime.stages.markdown import to_markdown
        functions["markdown"] = to_markdown
    except ImportError:
        pass
    try:
        from pulpie_rt.runtime.stages.features import block_features
        functions["features"] = lambda item: block_features(*item)
    except ImportError:
        pass
    try:  # the default model's fast profile: its two rescorer stages on one page's blocks
        from pulpie_rt.runtime.model.bundle import load_bundle
        from pulpie_rt.runtime.model.resolve import embedded_model_dir

        functions["rescore"] = load_bundle(embedded_model_dir(), "fast").rescorer.log_odds
    except (ImportError, OSError, ValueError):
        pass
    try:  # the engine's prepare of the default profile on raw HTML, in one walk of the page:
        # simplify from lexbor's tree, its blocks, their features from simplify's own tree
        from pulpie_rt.runtime.flow.pages import Preparer
        from pulpie_rt.runtime.model.bundle import load_bundle
        from pulpie_rt.runtime.model.resolve import embedded_model_dir

        preparer = Preparer.from_bundle(load_bundle(embedded_model_dir()))
        functions["prepare"] = lambda html: _prepared(preparer.prepare(html))
    except (ImportError, OSError, ValueError, AttributeError, TypeError):
        pass
    return {name: slowed(fn, slowdown.get(name, 1.0)) for name, fn in functions.items()}


def _prepared(page: Any) -> tuple:
    """What a prepared page holds, as plain values (to fingerprint)."""
    features = getattr(page, "features", None)
    return (list(page.item_ids), page.map_html, [list(c.token_ids) for c in page.chunks],
            None if features is None else (features.shape, features.tobytes()))


def digest(value: Any) -> str:
    """A short fingerprint of a stage's output, to tell whether both sides computed the same."""
    if hasattr(value, "tobytes"):  # numpy arrays (features)
        data = value.tobytes() + repr(value.shape).encode()
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
    else:
        data = repr(_plain(value)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:16]


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "token_ids"):  # chunks
        return [list(value.token_ids), list(getattr(value, "block_indices", []))]
    return value


class Side:
    """The stages of this process's tree and their prepared inputs, page by page."""

    def __init__(self, pages: list[str], checkpoint: Path, slowdown: dict[str, float]):
        self.functions = stage_functions(checkpoint, slowdown)
        # the rows the fast stages read (their bundle's layout), read once for every page
        self.fast_layout: str | None = None
        if "rescore" in self.functions:
            from pulpie_rt.runtime.model.bundle import load_bundle
            from pulpie_rt.runtime.model.resolve import embedded_model_dir

            self.fast_layout = load_bundle(embedded_model_dir(), "fast").feature_layout
        self.inputs: dict[str, list[Any]] = {stage: [None] * len(pages) for stage in STAGES}
        self.digests: dict[str, list[str | None]] = {stage: [None] * len(pages)
                                                     for stage in STAGES}
        self.errors: dict[str, str] = {}
        for index, html in enumerate(pages):
            self._prepare(index, html)

    def _run(self, stage: str, index: int, item: Any) -> Any:
        """Run ``stage`` on ``item`` untimed, keeping the input for timing; None on failure."""
        if stage not in self.functions:
            return None
        try:
            out = self.functions[stage](item)
        except Exception as exc:  # noqa: BLE001 - the page is left out of this stage's timing
            self.errors.setdefault(stage, f"page {index}: {type(exc).__name__}: {exc}")
            return None
        self.inputs[stage][index] = item
        self.digests[stage][index] = digest(out)
        return out

    def _prepare(self, index: int, html: str) -> None:
        simplified_map = self._run("simplify", index, html)
        if simplified_map is None:
            return
        simplified, map_html = simplified_map
        found = self._run("blocks", index, simplified)
        if found is not None:
            blocks, item_ids = found
            encoded = self._run("tokens", index, blocks)
            if encoded is not None:
                self._run("chunks", index, encoded)
            self._run("features", index, (map_html, item_ids))
            if "rescore" in self.functions:
                try:  # the fast profile's rows, untimed
                    from pulpie_rt.runtime.stages.features import block_features

                    rows = block_features(map_html, item_ids, self.fast_layout)
                except Exception as exc:  # noqa: BLE001 - the page is left out of the stage
                    self.errors.setdefault("rescore", f"page {index}: {type(exc).__name__}: "
                                                      f"{exc}")
                else:
                    if len(rows):
                        self._run("rescore", index, rows)
        self._run("prepare", index, html)
        main_html = self._run("reconstruct", index, (map_html, alternating_labels(simplified)))
        if main_html is not None:
            self._run("markdown", index, main_html)

    def time(self, stage: str, index: int, loops: int) -> float | None:
        """CPU seconds of ``loops`` calls of ``stage`` on page ``index``'s input."""
        item = self.inputs[stage][index]
        if item is None:
            return None
        fn = self.functions[stage]
        gc.collect()  # garbage of the previous call is not charged to this one
        start = time.process_time()
        for _ in range(loops):
            fn(item)
        return time.process_time() - start


def _compiled_core() -> bool | None:
    try:
        from pulpie_rt.runtime import native
    except ImportError:
        return None
    return bool(native.available())


def main(argv: list[str]) -> int:
    tree = Path(argv[1]).resolve()
    sys.path.insert(0, str(tree))
    import pulpie_rt

    # the shim's package folder is a real folder of symlinks: compare without resolving them
    loaded_from = Path(os.path.abspath(pulpie_rt.__file__))
    expected = tree / "pulpie_rt"
    if loaded_from.parent != expected:
        print(json.dumps({"error": f"pulpie_rt was imported from {loaded_from}, not {expected}"}),
              flush=True)
        return 2

    config = json.loads(sys.stdin.readline())
    pages = [json.loads(line)["html"]
             for line in Path(config["pages"]).read_text(encoding="utf-8").splitlines()]
    side = Side(pages, Path(config["checkpoint"]), config.get("slowdown") or {})
    gc.collect()
    gc.freeze()  # the per-call collections then only scan what the calls allocated
    print(json.dumps({
        "pulpie_rt": str(loaded_from.parent),
        "compiled_core": _compiled_core(),
        "stages": {stage: stage in side.functions for stage in STAGES},
        "errors": side.errors,
        "digests": side.digests,
    }), flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        request = json.loads(line)
        cpu_s = side.time(request["stage"], request["page"], request["loops"])
        print(json.dumps({"cpu_s": cpu_s}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
