"""Reading a JSONL file of pages as ``pulpie-rt run`` reads it (``runtime.io.iter_jsonl``: each
line's HTML decoded by the core's ``pulpie_rt_json_string_member``, the rest by orjson), the
working tree against its merge base, side by side in one run.

    python -m bench.read_pages                     # the dev pages, 9 rounds, 3 passes each
    python -m bench.read_pages --base HEAD~1 --rounds 15

Each side is a process that reads the file ``--passes`` times (after one pass that is not
timed, whose pages are digested: the file in the page cache, the modules imported); its figure
is the CPU seconds of a timed pass (``time.process_time``), the least over the rounds, the
sides alternating. Both sides are ``bench.check``'s trees (the base exported and built by the
same ``cargo build``), so the figure is the change's alone. The pages read are compared (id,
HTML, error).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.check import Tree, prepare_trees

DEFAULT_ROUNDS = 9
DEFAULT_PASSES = 3

# run in each side's process: a pass untimed that digests the pages read, then the timed passes;
# prints their CPU seconds and the digest
_CHILD_CODE = """\
import hashlib, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from pulpie_rt.runtime.io import iter_jsonl
from pulpie_rt.runtime.native import PageText
path, passes = Path(sys.argv[2]), int(sys.argv[3])
def read():
    digest = hashlib.sha256()
    for page in iter_jsonl(path):
        html = page.html.data if isinstance(page.html, PageText) else str(page.html).encode(
            "utf-8", "surrogatepass")
        digest.update(repr((page.id, page.error)).encode() + html)
    return digest.hexdigest()
first = read()
started = time.process_time()
for _ in range(passes):
    for page in iter_jsonl(path):
        pass
print(time.process_time() - started, first)
"""


def _side(tree: Tree, pages: Path, passes: int) -> tuple[float, str]:
    env = tree.environment()
    out = subprocess.run([sys.executable, "-I", "-c", _CHILD_CODE, str(tree.shim), str(pages),
                          str(passes)], env=env, cwd=tree.src, check=True, capture_output=True,
                         text=True).stdout.split()
    return float(out[0]), out[1]


def main(argv: list[str] | None = None) -> int:
    from eval.pages import bench_pages

    parser = argparse.ArgumentParser(prog="python -m bench.read_pages",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--passes", type=int, default=DEFAULT_PASSES)
    parser.add_argument("--base", default=None, help="commit to compare with (default: merge "
                        "base of HEAD and origin/main or main)")
    args = parser.parse_args(argv)
    pages = bench_pages()
    head, base = prepare_trees(args.base)
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-read-") as tmp:
        path = Path(tmp) / "pages.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            for page in pages:
                out.write(json.dumps({"id": page["id"], "html": page["html"]},
                                     ensure_ascii=False) + "\n")
        size = path.stat().st_size
        cpu: dict[str, list[float]] = {"working tree": [], "base": []}
        digests: dict[str, set[str]] = {"working tree": set(), "base": set()}
        sides = [("working tree", head), ("base", base)]
        for round_index in range(args.rounds):
            for label, tree in sides[round_index % 2:] + sides[:round_index % 2]:
                seconds, digest = _side(tree, path, args.passes)
                cpu[label].append(seconds / args.passes)
                digests[label].add(digest)
    best = {label: min(values) for label, values in cpu.items()}
    print(f"Reading {len(pages)} pages ({size / 1e6:.1f} MB of JSONL) with iter_jsonl, CPU s "
          f"per pass, least of {args.rounds} rounds:")
    for label, tree in sides:
        print(f"  {label + ' ' + tree.commit[:12]:<36} {best[label] * 1000:7.1f} ms")
    print(f"  working tree / base: {best['working tree'] / best['base']:.2f}x the CPU time")
    same = digests["working tree"] == digests["base"] and len(digests["base"]) == 1
    print(f"  same pages read as the base: {'yes' if same else 'NO'} "
          f"({hashlib.sha256(''.join(sorted(digests['base'])).encode()).hexdigest()[:12]})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
