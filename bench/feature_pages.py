"""The pages of a corpus as a plain JSONL file (``id``, ``html`` a line) for the core's block
features benchmark (``core/src/features/mod.rs``, ``feature_pages``):

    python -m bench.feature_pages FILE [--corpus dev] [--pages N]
    PULPIE_RT_FEATURE_PAGES=FILE cargo test -p pulpie_rt_core --release --lib feature_pages -- \
        --ignored --nocapture

The test segments each page as the ``fast`` profile does and times the block features the
profile's rescorers read (and their context) off the tree simplify gives, with a digest of
every value, so that a change to the features is measured apart from the rest of a run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.capi import write_pages
from pulpie_rt.corpus import load_pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.feature_pages",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--corpus", default="dev")
    parser.add_argument("--pages", type=int, default=None, help="the first N pages (default: all)")
    args = parser.parse_args(argv)
    pages = list(load_pages(args.corpus, args.pages))
    write_pages(pages, args.out)
    print(f"{args.out}: {len(pages)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
