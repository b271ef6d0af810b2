"""The compiled core's Markdown and plain text against their specifications, on real pages.

    python -m parity.markdown_parity --corpus dev      # 254 pages x 3 label sets
    python -m parity.markdown_parity --corpus train    # 986 pages x 3 label sets
    python -m parity.markdown_parity --random 3000     # seeded random markup only

For every page: our ``simplify``, then our ``extract_main_html`` with three label sets (all
main, all other, alternating by block id: ``parity.label_sets``), then

- Markdown: the core (``native.markdown``) vs the specification, html2text itself
  (``tests/spec/markdown_spec.py``); both raising the same exception counts as identical;
- text: the core (``native.text``) vs the specification's ``to_text`` (lexbor's tree).

``--random N`` compares both on N pages from each of three seeded generators (the
markdown-specific ones in the specification module and ``tests/test_native.random_page``);
there only Markdown must be identical (the core's text reads markup as a stream, lexbor builds
the whole HTML5 tree: on such markup they differ where HTML5 moves content, see
``core/src/markdown/text.rs``), and text differences are counted, not listed.
Prints cases compared / identical and the CPU seconds of each side; exit status 1 on any
Markdown difference, or any text difference on pages; 2 without the core or the
specification (a source checkout with the dev dependencies has both).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

from eval.report import REPO_ROOT
from parity.label_sets import item_ids_of, label_sets
from pulpie_rt.corpus import iter_pages
from pulpie_rt.runtime import native
from pulpie_rt.runtime.stages.reconstruct import extract_main_html
from pulpie_rt.runtime.stages.simplify import simplify

SPEC_PATH = REPO_ROOT / "tests" / "spec" / "markdown_spec.py"
RANDOM_SEED = 20261201


def load_spec(path: Path = SPEC_PATH) -> ModuleType:
    """``tests/spec/markdown_spec.py`` (a test file, not part of the installed package)."""
    spec = importlib.util.spec_from_file_location("markdown_spec", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise FileNotFoundError(f"no specification at {path} (a source checkout has it)")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.check_versions()
    return module


def _outcome(function: Callable[[str], str | None], html: str) -> tuple:
    """``("ok", result)`` or ``("raises", type name, message)``."""
    try:
        return ("ok", function(html))
    except native.SpecificationRaises as raised:
        return ("raises", type(raised.exception).__name__, str(raised.exception))
    except (AssertionError, ValueError) as exc:
        return ("raises", type(exc).__name__, str(exc))


class Tally:
    """Cases compared and identical for one function, with each side's CPU seconds."""

    def __init__(self, name: str, core: Callable, spec: Callable, quiet: bool = False) -> None:
        self.name, self.core, self.spec, self.quiet = name, core, spec, quiet
        self.cases = self.identical = 0
        self.core_s = self.spec_s = 0.0
        self.differ: list[str] = []

    def compare(self, case: str, html: str) -> None:
        start = time.process_time()
        ours = _outcome(self.core, html)
        middle = time.process_time()
        expected = _outcome(self.spec, html)
        self.core_s += middle - start
        self.spec_s += time.process_time() - middle
        self.cases += 1
        if ours == expected:
            self.identical += 1
        else:
            self.differ.append(case)
            if not self.quiet:
                print(f"DIFF {self.name} {case}", flush=True)

    def line(self, what: str) -> str:
        return (f"{self.name} {what}: {self.identical}/{self.cases} identical; CPU s core "
                f"{self.core_s:.2f}, specification {self.spec_s:.2f} "
                f"({self.spec_s / max(self.core_s, 1e-9):.1f}x)")


def main_htmls(corpus: str, limit: int | None) -> Iterator[tuple[str, str]]:
    """``(case name, main HTML)`` for every page and label set."""
    for k, page in enumerate(iter_pages(corpus)):
        if limit is not None and k >= limit:
            break
        simplified, map_html = simplify(page["html"])
        for name, labels in label_sets(item_ids_of(simplified)).items():
            yield f"{page['id']} {name}", extract_main_html(map_html, labels)


def random_pages(count: int) -> Iterator[tuple[str, str]]:
    """``(case name, markup)`` from the three seeded generators, ``count`` each."""
    spec = load_spec()
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from test_native import random_page

    for generator in (spec.random_markdown_page, spec.random_tokens, random_page):
        rng = random.Random(RANDOM_SEED)
        for k in range(count):
            yield f"{generator.__name__}#{k}", generator(rng)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="dev", help="corpus file name (dev, train)")
    parser.add_argument("--limit", type=int, default=None, help="first N pages only")
    parser.add_argument("--random", type=int, default=0, metavar="N",
                        help="instead of pages: N random pages from each of 3 generators")
    args = parser.parse_args(argv)
    try:
        spec = load_spec()
    except (FileNotFoundError, ImportError, RuntimeError) as exc:
        print(f"no specification: {exc}", file=sys.stderr)
        return 2
    markdown = Tally("markdown", native.markdown, spec.to_markdown)
    text = Tally("text", native.text, spec.to_text, quiet=bool(args.random))
    if args.random:
        cases = random_pages(args.random)
        what = f"random markup ({args.random} x 3 generators, seed {RANDOM_SEED})"
    else:
        cases = main_htmls(args.corpus, args.limit)
        what = f"{args.corpus} pages x 3 label sets"
    for case, html in cases:
        markdown.compare(case, html)
        if args.random:
            # lexbor cannot read lone surrogates (selectolax raises): the core's text there
            # has no specification to meet
            try:
                html.encode("utf-8")
            except UnicodeEncodeError:
                continue
        text.compare(case, html)
    print(markdown.line(what))
    print(text.line(what))
    failed = markdown.differ or (text.differ and not args.random)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
