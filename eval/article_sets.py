"""Public news and blog article sets with human ground truth, rebuilt from their sources into
the corpus record format (``pulpie_rt.corpus``), as evaluation sets held apart from training.

    python -m eval.article_sets --page-signal DIR --merged DIR [--out DIR]

Sets (each page's ``reference`` is its human-selected main text, ``reference_kind``
``"groundtruth"``):

- ``l3s-gn1``: L3S-GN1 (Kohlschütter, Fankhauser, Nejdl, "Boilerplate Detection using Shallow
  Text Features", WSDM 2010): 621 news articles from 408 sites, sampled from Google News in
  2008, each text run labelled by human assessors as headline, full text, supplemental
  (captions and the like), related content, comments or not content. Reference: the headline,
  full text and supplemental runs, in page order (what "belongs to the article"); related
  content and comments are boilerplate. Source: the dataset's HTML conversion in
  https://github.com/geodrome/page-signal (``L3S-GN1-20100130203947-00001/annotated`` and
  ``original``). Licence (its ``Readme-L3S-GN1.txt``): L3S grants a non-exclusive,
  royalty-free licence to use it **for research use only**.
- ``dragnet``: Dragnet's data (Peters and Lecocq, "Content Extraction Using Diverse Feature
  Sets", WWW 2013; collected in 2012 by Kurtis Bohrnstedt for Moz): 1,381 news and blog pages
  (their corrected text read as UTF-8, else as Windows-1252).
  Reference: the hand-corrected main article, the text before Dragnet's comment separator
  (``!@#$%^&*()  COMMENTS``; comments are boilerplate here). Source: seomoz/dragnet_data
  (whose tarballs are not stored in git any more), as mirrored file by file in
  https://github.com/j-szulc/html-cleaning-dataset-merged (``dragnet_data/input`` and
  ``GoldStandard``). Licence (seomoz/dragnet_data's README): **AGPLv3**.

Neither licence suits training the shipped (Apache-2.0) model, so both sets are only ever
scored (``bench.quality``), never trained, calibrated or chosen on, and they are not committed:
this module rebuilds them from a checkout of each source repository (``git clone``), into
``build/article-sets/`` by default, where ``bench.quality`` finds them.

Pages are decoded as the runtime decodes bytes (``runtime.stages.decode``); a page whose
reference has no word, or whose HTML is under 500 bytes, is left out (counted in the log).
"""

from __future__ import annotations

import argparse
import gzip
import html.parser
import json
import sys
from collections.abc import Iterator
from pathlib import Path

ARTICLE_SETS_DIR = Path(__file__).resolve().parent.parent / "build" / "article-sets"
SETS = ("l3s-gn1", "dragnet")
# today's news pages (python -m eval.modern_news): a train split, and a split of
# other sites held apart from training, scored beside the sets above
MODERN_NEWS_TRAIN = "modern-news-train"
MODERN_NEWS_HELDOUT = "modern-news-heldout"
# Postlight Parser's fixture pages (python -m eval.modern_news --postlight): to learn from only
POSTLIGHT_TRAIN = "postlight-train"
# Fundus's earlier test pages, replaced since (python -m eval.modern_news --fundus-history):
# to learn from only
FUNDUS_HISTORY_TRAIN = "fundus-history-train"
# the built sets bench.quality scores (never trained, calibrated or chosen on, but the
# held-apart modern split, which choices are made on)
SCORED_SETS = (MODERN_NEWS_HELDOUT, *SETS)
L3S_DIR = "L3S-GN1-20100130203947-00001"
L3S_MAIN_LABELS = frozenset({1, 2, 3})  # headline, full text, supplemental
DRAGNET_COMMENTS = "!@#$%^&*()  COMMENTS"
MIN_HTML_BYTES = 500
# elements that do not end a line of text (a run split by one of them is one text)
INLINE_TAGS = frozenset("a abbr b big cite code em font i q s small span strong sub sup u "
                        "tt".split())


def article_set_path(name: str, folder: Path = ARTICLE_SETS_DIR) -> Path:
    return Path(folder) / f"{name}.jsonl.gz"


def load_article_set_path(name: str, folder: Path = ARTICLE_SETS_DIR) -> Path:
    """The file of a built set; a clear error naming the command that builds it when it was
    not built."""
    path = article_set_path(name, folder)
    if not path.is_file():
        command = ("python -m eval.modern_news"
                   if name in (MODERN_NEWS_TRAIN, MODERN_NEWS_HELDOUT, POSTLIGHT_TRAIN,
                               FUNDUS_HISTORY_TRAIN)
                   else "python -m eval.article_sets")
        raise FileNotFoundError(f"article set {name!r}: {path} not found; build it with "
                                f"{command} (see its docstring)")
    return path


def load_article_set(name: str, folder: Path = ARTICLE_SETS_DIR) -> list[dict]:
    """The pages of a built set; a clear error naming the command when it was not built."""
    with gzip.open(load_article_set_path(name, folder), "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class _LabelledRuns(html.parser.HTMLParser):
    """Text of an L3S-GN1 annotated page by label: runs inside ``<span class="x-nc-selN">``,
    skipping elements marked ``x-nc-invisible`` and script/style."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, int | None, bool]] = []  # (tag, label, invisible)
        self.runs: list[tuple[int, str, bool]] = []  # (label, text, after a block boundary)
        self.boundary = True

    def _state(self) -> tuple[int | None, bool]:
        label, hidden = None, False
        for _, lab, inv in self.stack:
            label = lab if lab is not None else label
            hidden = hidden or inv
        return label, hidden

    def handle_starttag(self, tag, attrs):
        self.boundary = self.boundary or tag not in INLINE_TAGS
        if tag in ("br", "img", "meta", "link", "hr", "input", "wbr"):
            return
        classes = (dict(attrs).get("class") or "").split()
        label = next((int(c[len("x-nc-sel"):]) for c in classes
                      if c.startswith("x-nc-sel") and c[len("x-nc-sel"):].isdigit()), None)
        hidden = "x-nc-invisible" in classes or tag in ("script", "style")
        self.stack.append((tag, label, hidden))

    def handle_endtag(self, tag):
        self.boundary = self.boundary or tag not in INLINE_TAGS
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        label, hidden = self._state()
        if label is not None and not hidden and data.strip():
            self.runs.append((label, data, self.boundary))
            self.boundary = False


def l3s_reference(annotated: str) -> str:
    """The headline, full-text and supplemental runs of an annotated page, in page order: one
    line per block element (runs split only by inline elements such as ``<a>`` join)."""
    parser = _LabelledRuns()
    parser.feed(annotated)
    parser.close()
    lines: list[str] = []
    joined = False
    for label, text, boundary in parser.runs:
        if label not in L3S_MAIN_LABELS:
            joined = False
            continue
        if joined and not boundary:
            lines[-1] += text
        else:
            lines.append(text)
        joined = True
    return "\n".join(" ".join(line.split()) for line in lines)


def _decode(raw: bytes) -> str:
    from pulpie_rt.runtime.stages.decode import decode_input

    return decode_input(raw)[0]


def iter_l3s(root: Path) -> Iterator[dict]:
    base = root / L3S_DIR
    urls = {}
    for line in (base / "url-mapping.txt").read_text(encoding="utf-8").splitlines():
        key, _, url = line.partition("\t")
        urls[key.strip().removeprefix("<urn:uuid:").removesuffix(">")] = url.strip() or None
    for annotated in sorted((base / "annotated").glob("*.html")):
        name = annotated.stem
        yield {"id": f"l3s-gn1/{name}", "source": "L3S-GN1 (geodrome/page-signal)",
               "url": urls.get(name), "html": _decode((base / "original" / annotated.name)
                                                      .read_bytes()),
               "reference": l3s_reference(_decode(annotated.read_bytes())),
               "reference_kind": "groundtruth", "snippets": None}


def iter_dragnet(root: Path) -> Iterator[dict]:
    base = root / "dragnet_data"
    for page in sorted((base / "input").glob("*.html"), key=lambda p: (len(p.stem), p.stem)):
        gold = base / "GoldStandard" / f"{page.stem}.txt"
        if not gold.is_file():
            continue
        raw = gold.read_bytes()
        try:
            reference = raw.decode("utf-8")
        except UnicodeDecodeError:  # some corrected files are Windows-1252
            reference = raw.decode("cp1252", errors="replace")
        reference = reference.partition(DRAGNET_COMMENTS)[0].strip()
        yield {"id": f"dragnet/{page.stem}", "source": "seomoz/dragnet_data", "url": None,
               "html": _decode(page.read_bytes()), "reference": reference,
               "reference_kind": "groundtruth", "snippets": None}


def write_set(name: str, pages: Iterator[dict], out: Path, log=print) -> Path:
    from eval.metrics import words

    out.mkdir(parents=True, exist_ok=True)
    path = article_set_path(name, out)
    kept = left_out = 0
    unfinished = path.with_suffix(".tmp")
    with gzip.open(unfinished, "wt", encoding="utf-8") as fh:
        for page in pages:
            if not words(page["reference"]) or len(page["html"].encode()) < MIN_HTML_BYTES:
                left_out += 1
                continue
            fh.write(json.dumps(page, ensure_ascii=False) + "\n")
            kept += 1
    unfinished.rename(path)
    log(f"{name}: {kept} pages -> {path} ({left_out} left out: no reference word or HTML "
        f"under {MIN_HTML_BYTES} bytes)")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.article_sets",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--page-signal", type=Path,
                        help="checkout of github.com/geodrome/page-signal (L3S-GN1)")
    parser.add_argument("--merged", type=Path,
                        help="checkout of github.com/j-szulc/html-cleaning-dataset-merged "
                             "(Dragnet's data)")
    parser.add_argument("--out", type=Path, default=ARTICLE_SETS_DIR)
    args = parser.parse_args(argv)
    if not (args.page_signal or args.merged):
        parser.error("give --page-signal and/or --merged")
    if args.page_signal:
        write_set("l3s-gn1", iter_l3s(args.page_signal), args.out)
    if args.merged:
        write_set("dragnet", iter_dragnet(args.merged), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
