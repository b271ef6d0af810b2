"""Pages per CPU-second of one profile of two bundles, side by side on the same pages: a new
default model against the one it replaces (issue 46: the ``fast`` profile with the rail
columns must keep >= 0.9x today's pages per CPU-second).

    python -m bench.profile_speed --model NEW --baseline OLD [--profile fast]
                                  [--corpus dev] [--pages N] [--repeats R] [--out PATH]

``OLD`` may be a git revision's default model: ``git:REV`` (its ``pulpie_rt/default_model``
written to a scratch folder). Each page goes through ``Extractor(bundle, profile).extract``
of both bundles back to back, the order alternating page by page (``harness.side_by_side``:
CPU seconds of this process, so other jobs on the machine do not count), after one warm-up
pass. Prints ``new / old``; ``ours`` in the JSON record is the new bundle.
"""

from __future__ import annotations

import argparse
import subprocess
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from bench.harness import side_by_side
from eval.report import machine_info, write_result

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL_PATH = "pulpie_rt/default_model"


def revision_model(revision: str, folder: Path) -> Path:
    """``revision``'s ``pulpie_rt/default_model`` written into ``folder``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, DEFAULT_MODEL_PATH],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder / DEFAULT_MODEL_PATH


def main(argv: list[str] | None = None) -> int:
    from pulpie_rt.corpus import iter_pages
    from pulpie_rt.runtime.flow.extractor import Extractor

    parser = argparse.ArgumentParser(prog="python -m bench.profile_speed",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL_PATH, help="the new bundle")
    parser.add_argument("--baseline", required=True, help="the old bundle, or git:REV")
    parser.add_argument("--profile", default="fast")
    parser.add_argument("--corpus", default="dev")
    parser.add_argument("--pages", type=int, default=None, help="at most N pages")
    parser.add_argument("--repeats", type=int, default=2, help="passes over the pages")
    parser.add_argument("--out", default=None, help="JSON result (a file or a folder)")
    args = parser.parse_args(argv)
    pages = [p["html"] for p in iter_pages(args.corpus)][:args.pages]
    with tempfile.TemporaryDirectory() as scratch:
        baseline = (revision_model(args.baseline[4:], Path(scratch))
                    if args.baseline.startswith("git:") else Path(args.baseline))
        new = Extractor(args.model, profile=args.profile)
        old = Extractor(str(baseline), profile=args.profile)
        for html in pages:  # warm-up: both bundles loaded, caches filled
            new.extract(html), old.extract(html)
        result = side_by_side(f"{args.profile} profile", pages, new.extract, old.extract,
                              repeats=args.repeats).as_dict()
    print(f"{args.profile} profile on {len(pages)} {args.corpus} pages x {args.repeats}: "
          f"{args.model} {result['ours_pages_per_cpu_s']:.1f} pages per CPU-second, "
          f"{args.baseline} {result['ref_pages_per_cpu_s']:.1f}: ratio {result['ratio']:.3f}")
    if args.out:
        path = write_result("profile-speed", {"kind": "profile-speed", "machine": machine_info(),
                                              "model": args.model, "baseline": args.baseline,
                                              "profile": args.profile, "corpus": args.corpus,
                                              **result}, args.out)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
