"""Record the reference's labels and Markdown on the dev pages with the tiny test checkpoint.

The reference (``pulpie==0.0.2``, eager attention on CPU) is slow, so it runs once, here; the
runtime tests compare ONNX Runtime CPU output against the file it writes::

    python -m parity.record_golden_labels [--model tests/fixtures/tiny-eurobert]

``tests/golden/labels_tiny.json.gz``::

    {"checkpoint": {"path": str, "weights_sha256": str},
     "pages": {page_id: {"item_ids": [str], "labels": "MoMM..." (M main, o other, per item id),
                         "markdown_sha256": str} | {"error": str}}}

``weights_sha256`` lets the tests detect a golden file recorded from other weights. Progress is
kept in ``<out>.partial-<worker>.jsonl`` so an interrupted run resumes where it stopped, and
two processes can share the work (``--worker b --reverse``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

from pulpie_rt.corpus import iter_pages
from pulpie_rt.runtime.digest import files_sha256, text_sha256

REPO = Path(__file__).resolve().parent.parent
TINY_CHECKPOINT = REPO / "tests" / "fixtures" / "tiny-eurobert"
GOLDEN_PATH = REPO / "tests" / "golden" / "labels_tiny.json.gz"


def weights_sha256(checkpoint: Path) -> str:
    """sha256 over the checkpoint's weight files (sorted by name)."""
    files = sorted(checkpoint.glob("*.safetensors")) or sorted(checkpoint.glob("*.bin"))
    if not files:
        raise FileNotFoundError(f"{checkpoint}: no *.safetensors or *.bin weights")
    return files_sha256(files)


def encode_labels(labels: dict[str, str]) -> tuple[list[str], str]:
    return list(labels), "".join("M" if v == "main" else "o" for v in labels.values())


def _read_partial(path: Path) -> dict[str, dict]:
    done: dict[str, dict] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            break  # a torn last line from a killed run: that page is recorded again
        done[row["id"]] = row["record"]
    return done


def _partials(out: Path) -> list[Path]:
    return sorted(out.parent.glob(out.name + ".partial*.jsonl"))


def record(checkpoint: Path, out: Path, threads: int, worker: str, reverse: bool,
           max_chars: int | None = None) -> dict | None:
    """Record every dev page not yet in a partial file; ``reverse`` walks the corpus backwards
    so two processes (``--worker a`` / ``--worker b --reverse``) meet in the middle."""
    import torch
    from pulpie import Extractor

    sha = weights_sha256(checkpoint)  # before the run: the weights the labels come from
    torch.set_num_threads(threads)
    extractor = Extractor(model=str(checkpoint), device="cpu")
    partial = out.with_name(f"{out.name}.partial-{worker}.jsonl")
    pages = list(iter_pages("dev"))
    order = list(reversed(pages)) if reverse else pages
    if max_chars is not None:  # a helper process for the small pages only
        order = [p for p in order if len(p["html"]) <= max_chars]
    start = time.perf_counter()
    with partial.open("a", encoding="utf-8") as fh:
        for n, page in enumerate(order, 1):
            done = {k for path in _partials(out) for k in _read_partial(path)}
            if page["id"] in done:
                continue
            try:
                result = extractor.extract(page["html"])
                item_ids, labels = encode_labels(result.labels)
                row = {
                    "item_ids": item_ids,
                    "labels": labels,
                    "markdown_sha256": text_sha256(result.markdown),
                }
            except Exception as exc:  # recorded: the runtime must fail on the same pages
                row = {"error": f"{type(exc).__name__}: {exc}"}
            fh.write(json.dumps({"id": page["id"], "record": row}) + "\n")
            fh.flush()
            print(f"{n:4d} {page['id']} {time.perf_counter() - start:7.1f}s", flush=True)
    return finalize(out, sha, pages, allow_missing=False)


def finalize(out: Path, sha: str, pages: list[dict], allow_missing: bool) -> dict | None:
    """Write the golden file from the partial files (removed once every page is in)."""
    done_pages: dict[str, dict] = {}
    for path in _partials(out):
        done_pages.update(_read_partial(path))
    missing = [p["id"] for p in pages if p["id"] not in done_pages]
    if missing and not allow_missing:
        print(f"{len(missing)} pages still being recorded by another worker", file=sys.stderr)
        return None
    golden = {
        "checkpoint": {"path": TINY_CHECKPOINT.name, "weights_sha256": sha},
        "pages": {p["id"]: done_pages[p["id"]] for p in pages if p["id"] in done_pages},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        json.dump(golden, fh, sort_keys=True)
    if not missing:
        for path in _partials(out):
            path.unlink()
    return golden


def record_ours(bundle: Path, out: Path, threads: int) -> dict:
    """Our ONNX Runtime CPU outputs in the golden format (for ``--compare``)."""
    from pulpie_rt import Extractor

    extractor = Extractor(bundle, backend="cpu", device="cpu", threads=threads)
    pages: dict[str, dict] = {}
    start = time.perf_counter()
    for n, page in enumerate(iter_pages("dev"), 1):
        (result,) = extractor.extract_batch([page["html"]])
        if result.error:
            pages[page["id"]] = {"error": result.error}
        else:
            item_ids, labels = encode_labels(result.labels)
            pages[page["id"]] = {"item_ids": item_ids, "labels": labels,
                                 "markdown_sha256": text_sha256(result.markdown)}
        print(f"{n:4d} {page['id']} {time.perf_counter() - start:7.1f}s", flush=True)
    ours = {"checkpoint": {"path": str(bundle)}, "pages": pages}
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        json.dump(ours, fh, sort_keys=True)
    return ours


def compare(golden_path: Path, ours_path: Path) -> dict:
    """Block-label and Markdown agreement of two recordings; prints every differing page."""
    def load(path: Path) -> dict:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)["pages"]

    golden, ours = load(golden_path), load(ours_path)
    blocks = same_blocks = same_md = 0
    for page_id, ref in golden.items():
        mine = ours.get(page_id, {"error": "missing"})
        if "error" in ref or "error" in mine:
            print(f"{page_id}: reference error {ref.get('error')!r}, ours {mine.get('error')!r}")
            same_md += ("error" in ref) == ("error" in mine)
            continue
        ref_labels = dict(zip(ref["item_ids"], ref["labels"], strict=True))
        my_labels = dict(zip(mine["item_ids"], mine["labels"], strict=True))
        agree = sum(my_labels.get(i) == v for i, v in ref_labels.items())
        blocks += len(ref_labels)
        same_blocks += agree
        same_md += ref["markdown_sha256"] == mine["markdown_sha256"]
        md_same = ref["markdown_sha256"] == mine["markdown_sha256"]
        if agree < len(ref_labels) or not md_same:
            print(f"{page_id}: {len(ref_labels) - agree}/{len(ref_labels)} labels differ, "
                  f"markdown {'same' if md_same else 'differs'}")
    summary = {"pages": len(golden), "blocks": blocks,
               "block_agreement": same_blocks / max(blocks, 1),
               "markdown_agreement": same_md / max(len(golden), 1)}
    print(json.dumps(summary))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=TINY_CHECKPOINT)
    parser.add_argument("--out", type=Path, default=GOLDEN_PATH)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker", default="a", help="name of this recording process")
    parser.add_argument("--reverse", action="store_true", help="walk the pages backwards")
    parser.add_argument("--max-chars", type=int, default=None,
                        help="record only pages of at most this many characters")
    parser.add_argument("--ours", type=Path, metavar="BUNDLE",
                        help="record pulpie-rt (ONNX Runtime CPU) with BUNDLE into --out instead")
    parser.add_argument("--finalize", action="store_true",
                        help="write the golden file now from the pages recorded so far")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("GOLDEN", "OURS"),
                        help="print the agreement of two recordings")
    args = parser.parse_args(argv)
    if args.compare:
        compare(*args.compare)
        return 0
    if args.finalize:
        golden = finalize(args.out, weights_sha256(args.model), list(iter_pages("dev")), True)
        print(f"wrote {args.out}: {len(golden['pages'])} pages", file=sys.stderr)
        return 0
    if args.ours:
        record_ours(args.ours, args.out, args.threads)
        return 0
    golden = record(args.model, args.out, args.threads, args.worker, args.reverse,
                    args.max_chars)
    if golden is not None:
        print(f"wrote {args.out}: {len(golden['pages'])} pages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
