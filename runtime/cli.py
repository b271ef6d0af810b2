"""``pulpie-rt extract`` (one page -> Markdown), ``pulpie-rt inspect`` (one page's blocks as an
HTML report) and ``pulpie-rt run`` (bulk, resumable)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from pulpie_rt.runtime.model.devices import backend_names
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL, ModelError

WRITE_EVERY_PAGES = 64
WRITE_EVERY_S = 2.0
PARQUET_ROWS_PER_PART = 2048  # one row group per part file
PARQUET_PART_EVERY_S = 60.0
EXIT_USAGE = 2  # a page or an option the command cannot take (argparse's own code)
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


def _fail(command: str, message: str, code: int = EXIT_USAGE) -> int:
    print(f"pulpie-rt {command}: {message}", file=sys.stderr)
    return code


def _read_page(command: str, page: str) -> tuple[str, bytes | None]:
    """The page ``extract`` or ``inspect`` reads (``-``: standard input) and the name errors
    give it; ``None`` for the bytes once the failure is printed."""
    source = "<stdin>" if page == "-" else page
    try:
        return source, sys.stdin.buffer.read() if page == "-" else Path(page).read_bytes()
    except OSError as exc:
        _fail(command, f"{source}: cannot read ({exc.strerror or exc})")
        return source, None


def cmd_extract(args: argparse.Namespace) -> int:
    from pulpie_rt.runtime.flow.engine import BackendError
    from pulpie_rt.runtime.flow.extractor import ExtractionError, Extractor

    source, data = _read_page("extract", args.page)
    if data is None:
        return EXIT_USAGE
    try:
        extractor = Extractor(args.model, backend=args.backend, device=args.device,
                              limits=_limits(args), profile=args.profile, favor=args.favor)
    except (ModelError, BackendError) as exc:
        return _fail("extract", str(exc))
    try:
        result = extractor.extract(data, args.content_type)
    except ExtractionError as exc:
        return _fail("extract", f"{source}: {exc}", code=1)
    from pulpie_rt.runtime.flow.schema import record

    output = _output(args, args.format)
    values = record(source, result, output)
    if values["error"] is not None:  # the content could not be rendered
        return _fail("extract", f"{source}: {values['error']}", code=1)
    if output.format == "json":
        text = json.dumps(values, ensure_ascii=False)
    else:
        text = values[output.content_format]
    sys.stdout.write(text)
    if text and not text.endswith("\n"):
        sys.stdout.write("\n")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from pulpie_rt.runtime.flow.engine import BackendError, Engine
    from pulpie_rt.runtime.inspector import InspectError, inspect_page, report_html

    source, data = _read_page("inspect", args.page)
    if data is None:
        return EXIT_USAGE
    try:
        engine = Engine(args.model, profile=args.profile, backend=args.backend,
                        device=args.device, limits=_limits(args), favor=args.favor)
    except (ModelError, BackendError) as exc:
        return _fail("inspect", str(exc))
    try:
        inspection = inspect_page(engine, data, args.content_type, source=source, url=args.url)
    except InspectError as exc:
        return _fail("inspect", str(exc), code=1)
    finally:
        engine.close()
    try:
        Path(args.out).write_text(report_html(inspection), encoding="utf-8")
    except OSError as exc:
        return _fail("inspect", f"{args.out}: cannot write ({exc.strerror or exc})",
                     code=EXIT_OUTPUT_FAILED)
    result = inspection.result
    said = f"failed: {result.error}" if result.error else (
        f"{len(inspection.blocks)} blocks, {inspection.n_kept} kept")
    print(f"pulpie-rt inspect: {source}: {said} -> {args.out}", file=sys.stderr)
    return 1 if result.error else 0


def _output(args: argparse.Namespace, output_format: str):
    """The ``Output`` the options ask for."""
    from pulpie_rt.runtime.flow.schema import Output

    return Output(output_format, links=not args.no_links, images=not args.no_images,
                  tables=not args.no_tables)


def _add_output_options(parser: argparse.ArgumentParser, flag: str) -> None:
    from pulpie_rt.runtime.flow.schema import DEFAULT_FORMAT, OUTPUT_FORMATS

    parser.add_argument(flag, choices=OUTPUT_FORMATS, default=DEFAULT_FORMAT,
                        dest="content" if flag == "--content" else "format",
                        help="the main content as markdown, html or text; json: the record "
                             "with the Markdown and each block's label (default "
                             f"{DEFAULT_FORMAT})")
    for name, what in (("links", "links' tags (their text stays)"), ("images", "images"),
                       ("tables", "tables with their content")):
        parser.add_argument(f"--no-{name}", action="store_true", help=f"leave out {what}")


def _record(page, result, output) -> dict:
    """The page's record (``flow.schema``) as ``output`` asks: its id, the result, the WARC
    record's URL; an input the reader could not use has its own error."""
    from pulpie_rt.runtime.flow.schema import record

    return record(page.id, result, output, error=page.error, url=page.url)


class _NoProgress:
    """``--quiet``'s progress bar: nothing (and tqdm not imported)."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


DUPLICATE_RULES = ("skip", "keep", "error")
_DUPLICATES_DONE = {"skip": "skipped", "keep": "kept", "error": "refused"}


def _skip_done(pages, output, out: Path) -> tuple[int, str | None]:
    """Reads past the input pages done, comparing their ids with the output's as two streams
    (neither is held): the input pages read, and why the inputs are not the output's, or None.
    An input page whose id a page done before it had is a duplicate that was not written (an
    index rebuilt from the output has no row for it)."""
    read = 0
    for position, expected in output.done_pages():
        while True:
            page = next(pages, None)
            if page is None:
                return read, (f"{out} holds results of other inputs ({output.pages_done()} "
                              f"pages done, the inputs have {read}); use another --out")
            read += 1
            if page.id == expected:
                break
            earlier = output.seen(page.id)
            if earlier is None or earlier >= position:
                return read, (f"{out} holds results of other inputs (input page {read} is "
                              f"{page.id!r}, {out} has {expected!r}); use another --out")
    return read, None


def cmd_run(args: argparse.Namespace) -> int:
    from pulpie_rt.runtime.io import InputError, check_inputs
    from pulpie_rt.runtime.output import OutputError, OutputWriteError, open_output

    inputs = [Path(p) for p in args.inputs]
    out = Path(args.out)
    try:
        check_inputs(inputs)
        output = open_output(args.out, args.format, shard_records=args.shard_records,
                             shard_bytes=args.shard_bytes, compression=args.compression,
                             content=_output(args, args.content))
        output.resume()
    except (InputError, OutputError, OutputWriteError) as exc:  # the last names its file
        return _fail("run", str(exc))
    except OSError as exc:  # the output's folder cannot be written: before any page is read
        return _fail("run", f"{out}: cannot write there ({exc.strerror or exc})")
    try:
        return _run(args, inputs, out, output)
    finally:
        output.close()


def _run(args: argparse.Namespace, inputs: list[Path], out: Path, output) -> int:
    """``pulpie-rt run`` once its output is open and resumed."""
    from pulpie_rt.runtime.flow.engine import BackendError
    from pulpie_rt.runtime.flow.pages import PageInput
    from pulpie_rt.runtime.flow.pipeline import Pipeline
    from pulpie_rt.runtime.io import InputError, iter_inputs
    from pulpie_rt.runtime.output import Entry, OutputWriteError

    source = iter_inputs(inputs, args.html_field, args.id_field)
    try:
        n_skip, mismatch = _skip_done(source, output, out)
    except InputError as exc:
        return _fail("run", str(exc))
    if mismatch is not None:
        return _fail("run", mismatch)
    try:
        pipeline = Pipeline(args.model, devices=args.devices, workers=args.workers,
                            backend=args.backend, limits=_limits(args), profile=args.profile,
                            favor=args.favor)
    except (ModelError, BackendError) as exc:
        return _fail("run", str(exc))
    except ValueError as exc:
        return _fail("run", str(exc))

    rule = args.on_duplicate_id
    output_choice = _output(args, args.content)
    stats = {"pages": 0, "written": 0, "errors": 0, "truncated": 0, "duplicates": 0}
    # ids read but not yet in the index (in the pipeline or the batch not yet written): their
    # first position; bounded by what is in flight
    in_flight: dict[str, int] = {}

    def pages():
        for position, page in enumerate(source, n_skip):
            earlier = in_flight.get(page.id)
            if earlier is None:
                earlier = output.seen(page.id)
            if earlier is None:
                in_flight[page.id] = position
            skip = earlier is not None and rule != "keep"
            html = None if page.error or skip else page.html
            yield PageInput(html=html, page_id=page.id, content_type=page.content_type,
                            metadata={"page": page, "position": position, "earlier": earlier})

    # JSONL is flushed often (a killed run loses little); a Parquet part is one row group, so
    # parts are larger (a table of many tiny row groups reads slowly)
    every_pages, every_s = ((WRITE_EVERY_PAGES, WRITE_EVERY_S) if args.format == "jsonl"
                            else (PARQUET_ROWS_PER_PART, PARQUET_PART_EVERY_S))
    start = time.perf_counter()
    pending: list = []
    last_write = time.monotonic()

    guard = _SigtermGuard()

    def flush() -> None:
        nonlocal pending, last_write
        guard.writing = True
        output.write(pending)
        stats["written"] += len(pending)
        for entry in pending:
            if in_flight.get(entry.id) == entry.position:
                del in_flight[entry.id]
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
    duplicate = None
    try:
        for result in results:
            page, position, earlier = (result.metadata[k] for k in ("page", "position",
                                                                      "earlier"))
            stats["pages"] += 1
            bar.update(1)
            if earlier is not None:
                stats["duplicates"] += 1
                if rule == "error":
                    duplicate = (position, page.id, earlier)
                    break
            if earlier is not None and rule == "skip":
                pending.append(Entry(position, page.id, None))
            else:
                record = output.as_written(_record(page, result, output_choice))
                pending.append(Entry(position, page.id, record))
                stats["errors"] += record["error"] is not None
                stats["truncated"] += record["truncated"] is not None
            if len(pending) >= every_pages or time.monotonic() - last_write > every_s:
                flush()
        flush()
        if duplicate is None:
            output.finish()
    except InputError as exc:
        flush()
        return _fail("run", str(exc))
    except OSError as exc:  # the output disk is full or read-only: what is written stays
        where = str(exc) if isinstance(exc, OutputWriteError) else \
            f"{out}: cannot write ({exc.strerror or exc})"
        return _fail("run", f"{where}; {output.pages_done()} pages are written, rerun with the "
                            "same --out to resume", code=EXIT_OUTPUT_FAILED)
    except (Terminated, KeyboardInterrupt) as exc:
        guard.pending = False
        flush()  # the pages that are finished: a rerun resumes after them
        terminated = isinstance(exc, Terminated)
        return _fail("run", f"{'SIGTERM' if terminated else 'interrupted'}: "
                            f"{output.pages_done()} pages are written to {out}, rerun "
                            "with the same --out to resume",
                     code=EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
        results.close()  # stops the pipeline's threads
        bar.close()
    if duplicate is not None:
        position, page_id, earlier = duplicate
        return _fail("run", f"input page {position + 1} has the id {page_id!r} of input page "
                            f"{earlier + 1} (--on-duplicate-id error); {output.pages_done()} "
                            "pages are written")
    elapsed = time.perf_counter() - start
    rate = stats["pages"] / elapsed if elapsed > 0 else 0.0
    skipped = f" ({n_skip} already done)" if n_skip else ""
    fallbacks = pipeline.stats.fallbacks
    fell_back = ("; fell back: " + ", ".join(f"{what} ({n}x)" for what, n in
                                             sorted(fallbacks.items()))) if fallbacks else ""
    engines = ", ".join(sorted({f"{e.device} ({_runs_on(e.provider)})"
                                for e in pipeline.engines}))
    print(f"pulpie-rt run: {stats['pages']} pages{skipped}, {stats['errors']} errors, "
          f"{stats['truncated']} truncated, {stats['duplicates']} duplicate ids "
          f"{_DUPLICATES_DONE[rule]}, {rate:.1f} pages/s, {elapsed:.1f} s -> {out}; "
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
                             f"or bundle dir (default {DEFAULT_MODEL})")
    parser.add_argument("--profile", default=None,
                        help="speed/quality profile of the model: the embedded default model "
                             "has fast (its block rescorer over page features alone, no "
                             "transformer) and accurate (transformer + rescorer, about 126x "
                             "the CPU time); default: the bundle's own (see the model card)")
    from pulpie_rt.runtime.flow.engine import DEFAULT_FAVOR, FAVOR_HELP, favor_settings
    from pulpie_rt.runtime.flow.pages import PageLimits

    parser.add_argument("--favor", choices=list(favor_settings()), default=DEFAULT_FAVOR,
                        help=FAVOR_HELP)
    parser.add_argument("--backend", choices=backend_names(), default="auto")
    defaults = PageLimits()
    parser.add_argument("--max-input-bytes", type=int, default=defaults.max_input_bytes,
                        help="cut a longer page to its first N bytes before parsing (0: no "
                             f"limit; default {defaults.max_input_bytes:,})")
    parser.add_argument("--max-page-tokens", type=int, default=defaults.max_page_tokens,
                        help="the model reads a page's first chunks up to N tokens; later "
                             "blocks come out as other (0: no limit; default "
                             f"{defaults.max_page_tokens:,})")


def register(subparsers) -> None:
    from pulpie_rt.runtime.flow.schema import record_fields

    extract = subparsers.add_parser("extract", help="one page's main content as Markdown",
                                    description="Print the main content of PAGE as Markdown "
                                                "(--format: HTML, text or the JSON record).")
    extract.add_argument("page", help="HTML file, or - for stdin")
    _add_model_options(extract)
    extract.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: auto)")
    _add_output_options(extract, "--format")
    extract.add_argument("--content-type", default=None,
                         help="the page's Content-Type as its server sent it, e.g. 'text/html; "
                              "charset=Shift_JIS' (its charset decodes the page; default: BOM, "
                              "<meta charset>, then the detector)")
    extract.set_defaults(func=cmd_extract)

    inspect = subparsers.add_parser(
        "inspect", help="one page's blocks, kept and dropped, with their scores, as an HTML "
                        "report",
        description="Write a self-contained HTML report of PAGE: its blocks in page order, "
                    "shaded kept (main) or dropped (other), each block's score (log-odds and "
                    "probability) against the decision threshold, and the Markdown beside "
                    "them. The report loads nothing from the network and runs no script of "
                    "the page.")
    inspect.add_argument("page", help="HTML file, or - for stdin")
    inspect.add_argument("--out", required=True, help="the report's file (HTML)")
    inspect.add_argument("--url", default=None, help="the page's URL, shown in the report")
    _add_model_options(inspect)
    inspect.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: auto)")
    inspect.add_argument("--content-type", default=None,
                         help="the page's Content-Type as its server sent it (its charset "
                              "decodes the page)")
    inspect.set_defaults(func=cmd_inspect)

    run = subparsers.add_parser(
        "run", help="bulk extraction of JSONL / WARC / Parquet inputs (resumable)",
        description="Extract every page of INPUT files into OUT: one record per page "
                    f"{{{', '.join(f.name for f in record_fields())}}} (WARC inputs add url). "
                    "Rerunning with the same --out resumes after the pages already written.")
    run.add_argument("inputs", nargs="+", metavar="INPUT",
                     help="*.jsonl[.gz], *.warc[.gz] or *.parquet")
    run.add_argument("--out", required=True,
                     help="output file (jsonl: *.jsonl, *.jsonl.gz or *.jsonl.zst, compressed "
                          "by its suffix) or folder (JSONL shards, or Parquet parts)")
    _add_model_options(run)
    run.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl",
                     help="the output file's format (the record's content: --content)")
    _add_output_options(run, "--content")
    run.add_argument("--shard-records", type=int, default=None, metavar="N",
                     help="write --out as a folder of JSONL shards part-NNNNN.jsonl[.gz|.zst] "
                          "of N records each (the last one fewer)")
    run.add_argument("--shard-bytes", type=int, default=None, metavar="N",
                     help="write --out as a folder of JSONL shards, each closed once it holds N "
                          "bytes (at most one written batch over)")
    run.add_argument("--compression", choices=["none", "gzip", "zstd"], default=None,
                     help="the shards' compression (default none; a file's is its suffix: "
                          ".gz gzip, .zst zstd)")
    run.add_argument("--on-duplicate-id", choices=list(DUPLICATE_RULES), default="skip",
                     help="a page whose id an earlier page had: skip (the default: the first "
                          "page's record only), keep (a record for each page) or error (stop "
                          "before it); counted in the run's summary")
    run.add_argument("--html-field", default="html")
    run.add_argument("--id-field", default="id")
    run.add_argument("--devices", nargs="+", default=None, help="e.g. cuda:0 cuda:1, or cpu")
    run.add_argument("--workers", type=int, default=None,
                     help="threads calling the engine (default: the usable CPUs; two per GPU)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(func=cmd_run)
