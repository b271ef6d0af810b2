"""``pulpie-rt extract`` (one page -> Markdown) and ``pulpie-rt run`` (bulk, resumable)."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from pulpie_rt.runtime.model.devices import BACKEND_NAMES
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL, ModelError

WRITE_EVERY_PAGES = 64
WRITE_EVERY_S = 2.0
PARQUET_ROWS_PER_PART = 2048  # one row group per part file
PARQUET_PART_EVERY_S = 60.0
EXIT_OUTPUT_FAILED = 3  # the output could not be written (disk full, read-only)
EXIT_TERMINATED = 143  # SIGTERM, after writing every finished page (128 + 15)
EXIT_INTERRUPTED = 130  # Ctrl-C, likewise


class Terminated(Exception):
    """SIGTERM arrived: stop taking pages, write the finished ones, exit."""


class _SigtermGuard:
    """Turns SIGTERM into ``Terminated`` in the main thread, except while a batch of records
    is being written: then it is raised right after the write, so no record is torn or
    written twice."""

    def __init__(self) -> None:
        self.writing = False
        self.pending = False

    def __call__(self, signum, frame) -> None:
        if self.writing:
            self.pending = True
        else:
            raise Terminated()

    def after_write(self) -> None:
        self.writing = False
        if self.pending:
            raise Terminated()


def _fail(command: str, message: str, code: int = 2) -> int:
    print(f"pulpie-rt {command}: {message}", file=sys.stderr)
    return code


def cmd_extract(args: argparse.Namespace) -> int:
    from pulpie_rt.runtime.flow.engine import BackendError
    from pulpie_rt.runtime.flow.extractor import ExtractionError, Extractor

    source = "<stdin>" if args.page == "-" else args.page
    try:
        data = sys.stdin.buffer.read() if args.page == "-" else Path(args.page).read_bytes()
    except OSError as exc:
        return _fail("extract", f"{source}: cannot read ({exc.strerror or exc})")
    try:
        extractor = Extractor(args.model, backend=args.backend, device=args.device,
                              limits=_limits(args), profile=args.profile)
    except (ModelError, BackendError) as exc:
        return _fail("extract", str(exc))
    try:
        result = extractor.extract(data, args.content_type)
    except ExtractionError as exc:
        return _fail("extract", f"{source}: {exc}", code=1)
    sys.stdout.write(result.markdown)
    if result.markdown and not result.markdown.endswith("\n"):
        sys.stdout.write("\n")
    return 0


def _record(page, result) -> dict:
    record = {
        "id": page.id,
        "markdown": result.markdown,
        "n_main": result.n_main,
        "n_other": result.n_other,
        "error": page.error or result.error,
        "truncated": result.truncated,
        "empty_reason": result.empty_reason,
        "encoding": result.encoding,
    }
    if page.url is not None:
        record["url"] = page.url
    return record


class _NoProgress:
    """``--quiet``'s progress bar: nothing (and tqdm not imported)."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def cmd_run(args: argparse.Namespace) -> int:
    from pulpie_rt.runtime.flow.engine import BackendError
    from pulpie_rt.runtime.flow.pages import PageInput
    from pulpie_rt.runtime.flow.pipeline import Pipeline
    from pulpie_rt.runtime.io import InputError, check_inputs, iter_inputs, open_writer

    inputs = [Path(p) for p in args.inputs]
    out = Path(args.out)
    try:
        check_inputs(inputs)
        writer = open_writer(out, args.format)
        done_ids = writer.existing_ids()
    except InputError as exc:
        return _fail("run", str(exc))
    except OSError as exc:
        return _fail("run", f"{out}: cannot write there ({exc.strerror or exc})")
    try:
        pipeline = Pipeline(args.model, devices=args.devices, workers=args.workers,
                            backend=args.backend, limits=_limits(args), profile=args.profile)
    except (ModelError, BackendError) as exc:
        return _fail("run", str(exc))
    except ValueError as exc:
        return _fail("run", str(exc))

    n_skip = len(done_ids)
    stats = {"pages": 0, "written": 0, "errors": 0, "truncated": 0, "mismatch": None}

    def pages():
        for position, page in enumerate(iter_inputs(inputs, args.html_field, args.id_field)):
            if position < n_skip:
                if page.id != done_ids[position]:
                    stats["mismatch"] = (position, page.id, done_ids[position])
                    return
                continue
            html = None if page.error else page.html
            yield PageInput(html=html, page_id=page.id, metadata={"page": page},
                            content_type=page.content_type)

    # JSONL is flushed often (a killed run loses little); a Parquet part is one row group, so
    # parts are larger (a table of many tiny row groups reads slowly)
    every_pages, every_s = ((WRITE_EVERY_PAGES, WRITE_EVERY_S) if args.format == "jsonl"
                            else (PARQUET_ROWS_PER_PART, PARQUET_PART_EVERY_S))
    start = time.perf_counter()
    pending: list[dict] = []
    last_write = time.monotonic()

    guard = _SigtermGuard()

    def flush() -> None:
        nonlocal pending, last_write
        guard.writing = True
        writer.write(pending)
        stats["written"] += len(pending)
        pending, last_write = [], time.monotonic()
        guard.after_write()

    if args.quiet:
        bar = _NoProgress()
    else:
        from tqdm import tqdm

        bar = tqdm(desc="pulpie-rt", unit="page", initial=0, file=sys.stderr,
                   dynamic_ncols=True, mininterval=1.0)
    results = pipeline.run(pages())
    previous_handler = signal.signal(signal.SIGTERM, guard)
    try:
        for result in results:
            pending.append(_record(result.metadata["page"], result))
            stats["pages"] += 1
            stats["errors"] += pending[-1]["error"] is not None
            stats["truncated"] += pending[-1]["truncated"] is not None
            bar.update(1)
            if len(pending) >= every_pages or time.monotonic() - last_write > every_s:
                flush()
        flush()
    except InputError as exc:
        flush()
        return _fail("run", str(exc))
    except OSError as exc:  # the output disk is full or read-only: what is written stays
        return _fail("run", f"{out}: cannot write ({exc.strerror or exc}); "
                            f"{n_skip + stats['written']} pages are written, rerun with the "
                            "same --out to resume", code=EXIT_OUTPUT_FAILED)
    except (Terminated, KeyboardInterrupt) as exc:
        guard.pending = False
        flush()  # the pages that are finished: a rerun resumes after them
        terminated = isinstance(exc, Terminated)
        return _fail("run", f"{'SIGTERM' if terminated else 'interrupted'}: "
                            f"{n_skip + stats['written']} pages are written to {out}, rerun "
                            "with the same --out to resume",
                     code=EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
        results.close()  # stops the pipeline's threads
        bar.close()
    if stats["mismatch"] is not None:
        position, found, expected = stats["mismatch"]
        return _fail("run", f"{out} holds results of other inputs (input page {position + 1} is "
                            f"{found!r}, {out} has {expected!r}); use another --out")
    elapsed = time.perf_counter() - start
    rate = stats["pages"] / elapsed if elapsed > 0 else 0.0
    skipped = f" ({n_skip} already done)" if n_skip else ""
    fallbacks = pipeline.stats.fallbacks
    fell_back = ("; fell back: " + ", ".join(f"{what} ({n}x)" for what, n in
                                             sorted(fallbacks.items()))) if fallbacks else ""
    engines = ", ".join(sorted({f"{e.device} ({_runs_on(e.provider)})"
                                for e in pipeline.engines}))
    print(f"pulpie-rt run: {stats['pages']} pages{skipped}, {stats['errors']} errors, "
          f"{stats['truncated']} truncated, {rate:.1f} pages/s, {elapsed:.1f} s -> {out}; "
          f"profile {pipeline.bundle.profile or 'default'} on {engines}{fell_back}",
          file=sys.stderr)
    return 0


def _runs_on(provider: str) -> str:
    """How a run line names what ran the model."""
    return "no model: block rescorer" if provider == "none" else f"ONNX Runtime {provider}"


def _limits(args: argparse.Namespace):
    from pulpie_rt.runtime.flow.pages import PageLimits

    def off_if_zero(value: int) -> int | None:
        return None if value == 0 else value

    return PageLimits(max_input_bytes=off_if_zero(args.max_input_bytes),
                      max_page_tokens=off_if_zero(args.max_page_tokens))


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="default (the embedded model, or $PULPIE_RT_MODEL when set), a hub "
                             "name (orange-small|orange-base|orange-large), checkpoint dir, "
                             f"bundle dir or engine file (default {DEFAULT_MODEL})")
    parser.add_argument("--profile", default=None,
                        help="speed/quality profile of the model: the embedded default model "
                             "has fast (its block rescorer over page features alone, no "
                             "transformer) and accurate (transformer + rescorer, about 50x "
                             "the CPU time); default: the bundle's own (see the model card)")
    from pulpie_rt.runtime.flow.pages import PageLimits

    parser.add_argument("--backend", choices=BACKEND_NAMES, default="auto")
    defaults = PageLimits()
    parser.add_argument("--max-input-bytes", type=int, default=defaults.max_input_bytes,
                        help="cut a longer page to its first N bytes before parsing (0: no "
                             f"limit; default {defaults.max_input_bytes:,})")
    parser.add_argument("--max-page-tokens", type=int, default=defaults.max_page_tokens,
                        help="the model reads a page's first chunks up to N tokens; later "
                             "blocks come out as other (0: no limit; default "
                             f"{defaults.max_page_tokens:,})")


def register(subparsers) -> None:
    extract = subparsers.add_parser("extract", help="one page's main content as Markdown",
                                    description="Print the main content of PAGE as Markdown.")
    extract.add_argument("page", help="HTML file, or - for stdin")
    _add_model_options(extract)
    extract.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: auto)")
    extract.add_argument("--content-type", default=None,
                         help="the page's Content-Type as its server sent it, e.g. 'text/html; "
                              "charset=Shift_JIS' (its charset decodes the page; default: BOM, "
                              "<meta charset>, then the detector)")
    extract.set_defaults(func=cmd_extract)

    run = subparsers.add_parser(
        "run", help="bulk extraction of JSONL / WARC / Parquet inputs (resumable)",
        description="Extract every page of INPUT files into OUT: one record per page "
                    "{id, markdown, n_main, n_other, error, truncated, empty_reason, encoding}. "
                    "Rerunning with the same --out resumes after the pages already written.")
    run.add_argument("inputs", nargs="+", metavar="INPUT",
                     help="*.jsonl[.gz], *.warc[.gz] or *.parquet")
    run.add_argument("--out", required=True, help="output file (jsonl) or directory (parquet)")
    _add_model_options(run)
    run.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    run.add_argument("--html-field", default="html")
    run.add_argument("--id-field", default="id")
    run.add_argument("--devices", nargs="+", default=None, help="e.g. cuda:0 cuda:1, or cpu")
    run.add_argument("--workers", type=int, default=None,
                     help="threads calling the engine (default: the usable CPUs; two per GPU)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(func=cmd_run)
