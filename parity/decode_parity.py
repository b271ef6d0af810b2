"""Real pages re-encoded into legacy encodings read back as their UTF-8 originals (issue 15).

Every dev and train page is re-encoded into each legacy encoding its text fits (at least 20
non-ASCII characters, at most 5% of them outside the encoding: those few become character
references, as a legacy site writes them), its own charset declarations removed, in four
declaration kinds:

- ``meta``: ``<meta charset="X">`` at the top of ``<head>``;
- ``http-equiv``: ``<meta http-equiv="Content-Type" content="text/html; charset=X">``;
- ``transport``: no declaration in the page, ``text/html; charset=X`` as the transport's;
- ``none``: no declaration anywhere (the detector's case).

The UTF-8 original of a case is the same document as a ``str`` (the bytes decoded by Python's
codec that wrote them). Checked:

1. text: the decoding every entry point runs, through each entry point's own path: the flow's
   (``Extractor``/``Pipeline``: ``pages.as_text(bytes, content_type)``), ``pulpie-rt
   extract``'s (file bytes + ``--content-type``, the same call) and WARC input's (a WARC
   written with every case, the HTTP header carrying the transport kind's charset, read by
   ``runtime.io.iter_warc``);
2. Markdown, with the tiny checkpoint bundle (the labels of a random model depend only on the
   tokens, so equal Markdown is what a same-input claim needs): the ``--sample`` smallest cases
   of each encoding and kind, and every case whose text differed, through
   ``Extractor.extract_batch(bytes, content_types)``, ``pulpie-rt extract PAGE --content-type``
   (in process) and ``pulpie-rt run`` over the WARC, each against ``Extractor.extract(original
   str)``. A case whose text equals its original gets the original's Markdown (the flow is
   deterministic), so the Markdown figure of a kind is the text figure less the sampled cases
   that differ.

    python -m parity.decode_parity [--sample 3] [--limit N] [--json out.json]

Exit status 1 when any encoding and kind is under 99%.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from eval.reencode import THRESHOLD, Case, cases
from pulpie_rt.export.tiny import export_tiny_bundle


def load_corpus(limit: int | None) -> list[dict]:
    from pulpie_rt.corpus import load_pages

    pages = list(load_pages("dev")) + list(load_pages("train"))
    return pages[:limit] if limit else pages


def warc_record(number: int, case: Case) -> bytes:
    """A response record of the case; the HTTP header has the transport kind's charset."""
    content_type = (case.content_type or "text/html").encode("ascii")
    http = (b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\nContent-Length: "
            + str(len(case.data)).encode() + b"\r\n\r\n" + case.data)
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:case:{number}>\r\n"
            f"WARC-Target-URI: https://example.org/{number}\r\n"
            "WARC-Date: 2024-01-01T00:00:00Z\r\n"
            "Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http)}\r\n\r\n").encode("ascii")
    return head + http + b"\r\n\r\n"


def write_warc(path: Path, all_cases: list[Case]) -> None:
    """One response record per case."""
    with path.open("wb") as fh:
        for number, case in enumerate(all_cases):
            fh.write(warc_record(number, case))


@dataclass
class Checked:
    """What is kept of a case once its text is checked (the cases of every page together
    hold tens of GB of bytes and text: they are made again for the Markdown sample)."""

    label: str
    kind: str
    size: int
    text_ok: dict[str, bool]


def text_checks(pages: list[dict], workdir: Path) -> list[Checked]:
    """Per case, whether its decoded text equals its original through each entry point: the
    flow's, ``pulpie-rt extract``'s and WARC input's. Cases are made one page at a time."""
    from pulpie_rt.runtime.flow.pages import as_text
    from pulpie_rt.runtime.io import iter_warc

    checked = []
    warc_path = workdir / "cases.warc"
    page_file = workdir / "page.html"
    with warc_path.open("wb") as warc:
        for number, case in enumerate(cases(pages)):
            flow = as_text(case.data, case.content_type)[0] == case.original
            page_file.write_bytes(case.data)  # pulpie-rt extract reads the file's bytes
            extract = as_text(page_file.read_bytes(), case.content_type)[0] == case.original
            warc.write(warc_record(number, case))
            checked.append(Checked(case.label, case.kind, len(case.data),
                                   {"extractor": flow, "cli-extract": extract}))
    read = 0
    for page, case, check in zip(iter_warc(warc_path), cases(pages), checked, strict=False):
        check.text_ok["warc"] = as_text(page.html, page.content_type)[0] == case.original
        read += 1
    if read != len(checked) or any("warc" not in c.text_ok for c in checked):
        raise SystemExit(f"the WARC gave {read} pages for {len(checked)} cases")
    return checked


def markdown_checks(sample: list[Case], bundle: Path, workdir: Path) -> dict[str, list[bool]]:
    """Per entry point, whether each sampled case's Markdown equals its original's."""
    from pulpie_rt.runtime import cli as run_cli
    from pulpie_rt.runtime.flow.extractor import Extractor

    # the CLI's extract in this process (the model loads once): its own parser, as pulpie-rt's
    parser = argparse.ArgumentParser(prog="pulpie-rt")
    run_cli.register(parser.add_subparsers(dest="command", required=True))

    def cli_main(argv: list[str]) -> int:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)

    extractor = Extractor(str(bundle))
    originals = [r.markdown for r in extractor.extract_batch([c.original for c in sample])]
    got = extractor.extract_batch([c.data for c in sample], [c.content_type for c in sample])
    flow = [r.markdown == m and r.error is None for r, m in zip(got, originals, strict=True)]
    extract = []
    for case, original in zip(sample, originals, strict=True):
        page = workdir / "page.html"
        page.write_bytes(case.data)
        argv = ["extract", str(page), "--model", str(bundle)]
        if case.content_type is not None:
            argv += ["--content-type", case.content_type]
        out = io.StringIO()
        with redirect_stdout(out):
            code = cli_main(argv)
        printed = out.getvalue()
        extract.append(code == 0 and printed.rstrip("\n") == original.rstrip("\n"))
    warc_path = workdir / "sample.warc"
    write_warc(warc_path, sample)
    out_path = workdir / "run.jsonl"
    subprocess.run([sys.executable, "-m", "pulpie_rt.cli", "run", str(warc_path), "--out",
                    str(out_path), "--model", str(bundle), "--quiet"], check=True)
    records = [json.loads(line) for line in out_path.read_text().splitlines()]
    warc = [r["markdown"] == m and r["error"] is None
            for r, m in zip(records, originals, strict=True)]
    if len(records) != len(sample):
        raise SystemExit(f"pulpie-rt run wrote {len(records)} records for {len(sample)} cases")
    return {"extractor": flow, "cli-extract": extract, "warc": warc}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N corpus pages only")
    parser.add_argument("--sample", type=int, default=3,
                        help="cases per encoding and kind run through the model (default 3)")
    parser.add_argument("--bundle", default=None, help="model bundle (default: the tiny one)")
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    pages = load_corpus(args.limit)
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-decode-") as tmp:
        workdir = Path(tmp)
        checked = text_checks(pages, workdir)
        texts = {entry: [c.text_ok[entry] for c in checked]
                 for entry in ("extractor", "cli-extract", "warc")}
        groups: dict[tuple[str, str], list[int]] = defaultdict(list)
        for index, check in enumerate(checked):
            groups[(check.label, check.kind)].append(index)
        # the sample: each group's smallest pages (model runs on 5 MB pages would take hours)
        smallest = {key: sorted(members, key=lambda i: checked[i].size)
                    for key, members in groups.items()}
        chosen = sorted({i for members in smallest.values() for i in members[:args.sample]}
                        | {i for i, ok in enumerate(texts["extractor"]) if not ok}
                        | {i for i, ok in enumerate(texts["warc"]) if not ok})
        wanted = set(chosen)
        sample = [case for i, case in enumerate(cases(pages)) if i in wanted]
        bundle = Path(args.bundle) if args.bundle else export_tiny_bundle(workdir / "bundle")
        marks = markdown_checks(sample, bundle, workdir)
    markdown_ok = {entry: dict(zip(chosen, values, strict=True)) for entry, values in marks.items()}

    rows, failing = [], []
    print(f"{'encoding':<14}{'kind':<12}{'pages':>6}  " + "  ".join(
        f"{entry + ' text/md':>22}" for entry in texts))
    for (label, kind), members in groups.items():
        row = {"encoding": label, "kind": kind, "pages": len(members)}
        cells = []
        for entry, oks in texts.items():
            text_equal = sum(oks[i] for i in members)
            md_equal = sum(markdown_ok[entry].get(i, oks[i]) for i in members)
            row[entry] = {"text_equal": text_equal, "markdown_equal": md_equal,
                          "markdown_checked": sum(i in markdown_ok[entry] for i in members)}
            share = md_equal / len(members)
            if share < THRESHOLD:
                failing.append(f"{label}/{kind}/{entry}: {share:.1%}")
            cells.append(f"{text_equal / len(members):>10.1%} {share:>10.1%}")
        rows.append(row)
        print(f"{label:<14}{kind:<12}{len(members):>6}  " + "  ".join(cells))
    total = len(checked)
    print(f"{total} cases ({len(chosen)} through the model per entry point) in "
          f"{time.perf_counter() - start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "cases": total,
                                               "model_cases": len(chosen)}, indent=1))
    if failing:
        print("under 99%: " + ", ".join(failing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
