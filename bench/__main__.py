"""``python -m bench``: the benchmarks of ``bench/`` as sub-commands, from a checkout's root
(the benchmarks are the repository's tools: the package does not ship them).

    python -m bench                 CPU stages + end to end + token distribution (= make bench)
    python -m bench check           the regression gate (= make bench-check)
    python -m bench tokens          token distribution with the Llama-3 vocabulary
    python -m bench gpu bench|parity --checkpoint DIR [--engine F] [--bundle D]
    python -m bench quality [--model M] [--limit N] [--skip trafilatura]   word F1 / ROUGE-5
"""

from __future__ import annotations

import argparse
import sys


def _run_all(args: argparse.Namespace) -> int:
    from bench import run_all

    return run_all.run(args)


def _check(args: argparse.Namespace) -> int:
    from bench import check

    return check.run(args)


def _tokens(args: argparse.Namespace) -> int:
    from bench import token_report

    argv = [*args.inputs, "--corpus", args.corpus]
    if args.pages is not None:
        argv += ["--pages", str(args.pages)]
    if args.out is not None:
        argv += ["--out", args.out]
    return token_report.main(argv)


def _gpu(args: argparse.Namespace) -> int:
    from bench import gpu

    return gpu.run(args)


def _quality(args: argparse.Namespace) -> int:
    from bench import quality

    return quality.run(args)


def build_parser() -> argparse.ArgumentParser:
    from bench import check, gpu, quality, run_all

    bench = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmarks, ours vs the reference pulpie 0.0.2 on the same real pages. "
                    "Without a sub-command: CPU stages, end to end and the token distribution.")
    run_all.add_arguments(bench)
    bench.set_defaults(func=_run_all)
    inner = bench.add_subparsers(dest="bench_command", required=False)

    gate = inner.add_parser(
        "check", help="regression gate: the working tree vs its merge base, side by side")
    check.build_parser(gate)
    gate.set_defaults(func=_check)

    tokens = inner.add_parser("tokens", help="tokens per page with the Llama-3 vocabulary")
    tokens.add_argument("inputs", nargs="*")
    tokens.add_argument("--pages", type=int, default=None)
    tokens.add_argument("--corpus", default="dev")
    tokens.add_argument("--out", default=None)
    tokens.set_defaults(func=_tokens)

    gpu_parser = inner.add_parser("gpu", help="GPU bench / TensorRT-vs-PyTorch parity")
    gpu.add_arguments(gpu_parser)
    gpu_parser.set_defaults(func=_gpu)

    quality_parser = inner.add_parser(
        "quality", help="extraction quality on the ground-truth dev pages, ours vs trafilatura")
    quality.add_arguments(quality_parser)
    quality_parser.set_defaults(func=_quality)
    return bench


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
