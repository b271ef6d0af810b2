"""The page inspector: one page's blocks as the engine decided them, in one HTML report.

``inspect_page`` runs a page through an open ``Engine`` (the one engine every door uses: the
labels, scores and threshold in the report are its result's, ``PageResult.scores`` /
``threshold``) and pairs each labelled block with its content, read off the same segmentation
the engine ran (the core's ``simplify_page`` and ``extract_blocks`` over the page as the
engine cut it). ``report_html`` writes the report: one self-contained page (inline style and
script, nothing fetched) with the blocks in page order shaded kept or dropped, each block's
score (log-odds and probability) against the decision threshold, the Markdown beside them, and
a filter. Everything taken from the page is escaped, and the report's Content-Security-Policy
lets only its own script run (a nonce) and fetches nothing: a hostile page cannot run script
in it. ``pulpie-rt inspect`` and the service's ``/inspect`` write it.
"""

from __future__ import annotations

import html as html_lib
import math
import re
import secrets
from dataclasses import dataclass

from pulpie_rt.runtime import native
from pulpie_rt.runtime.flow.engine import Engine
from pulpie_rt.runtime.flow.pages import PageInput, PageResult, as_text

# why a block's label is not its score against the threshold: the bundle's decoding decided
# it from the page around it (keep_best_block, continue_story, an expected-F1 selection)
BY_THE_PAGE = "decided by the page's decoding, not by its score alone"
NO_SCORE = "no score: the page limits cut it before the model"


class InspectError(ValueError):
    """The page cannot be inspected; the message names the page and the reason."""


@dataclass(frozen=True)
class InspectedBlock:
    """One block of the page, in page order: its index, ``item_id``, tag, visible text, the
    engine's label (``main`` / ``other``) and score (log-odds of main; None: none)."""

    index: int
    item_id: str
    tag: str
    text: str
    label: str
    score: float | None

    @property
    def kept(self) -> bool:
        return self.label == "main"

    @property
    def probability(self) -> float | None:
        """The score as a probability, ``sigmoid(score)``."""
        return None if self.score is None else _sigmoid(self.score)


@dataclass(frozen=True)
class Inspection:
    """A page as the engine saw it: ``source`` (the file, URL or upload it came from), what
    ran it (``engine``: ``Engine.info()``), the decision ``threshold`` (log-odds; None for a
    failed page), the ``blocks``, and the engine's ``result`` (its Markdown, error, ...)."""

    source: str
    engine: dict
    threshold: float | None
    blocks: tuple[InspectedBlock, ...]
    result: PageResult
    url: str | None = None

    @property
    def n_kept(self) -> int:
        return sum(b.kept for b in self.blocks)


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _cut(text: str, max_bytes: int | None) -> str:
    """``text`` cut as the engine cuts a page before parsing (``PageLimits.max_input_bytes``:
    its first bytes, at a character boundary)."""
    data = native.page_bytes(text)
    if max_bytes is None or len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")


_TAG = re.compile(r"<\s*([A-Za-z][A-Za-z0-9-]*)")


def _block_text(block_html: str) -> str:
    """A block's visible text (the core's plain-text renderer), or its markup where the
    renderer declines it."""
    try:
        text = native.text(block_html)
    except (native.CoreError, native.SpecificationRaises):
        text = re.sub(r"<[^>]*>", " ", block_html)
    return " ".join(text.split())


def page_blocks(engine: Engine, html: str | bytes, content_type: str | None = None
                ) -> list[tuple[str | None, str, str]]:
    """``(item_id, tag, text)`` of each block of the page as the engine segments it (its
    bundle's segmentation, cutoff and input limit)."""
    text, _ = as_text(html, content_type)
    bundle = engine.bundle
    simplified, _ = native.simplify_page(_cut(text, engine.limits.max_input_bytes),
                                         engine.cutoff_length, keep_hidden=bundle.keep_hidden,
                                         drop_noscript=bundle.drop_noscript)
    blocks, item_ids = native.extract_blocks(simplified)
    out = []
    for block, item_id in zip(blocks, item_ids, strict=True):
        tag = _TAG.match(block.lstrip())
        out.append((item_id, tag.group(1).lower() if tag else "", _block_text(block)))
    return out


def inspection_of(engine: Engine, result: PageResult, html: str | bytes,
                  content_type: str | None = None, source: str = "page",
                  url: str | None = None, favor: str | None = None) -> Inspection:
    """The inspection of ``html`` from ``result``, the engine's result for it (``favor``: the
    one the page was extracted with, None: the engine's)."""
    blocks: list[InspectedBlock] = []
    if result.error is None:
        seen: set[str] = set()
        for index, (item_id, tag, text) in enumerate(page_blocks(engine, html, content_type)):
            if item_id is None or item_id in seen:  # no label of its own (the engine's dict)
                continue
            seen.add(item_id)
            if item_id not in result.labels:
                raise InspectError(f"{source}: block {item_id!r} of the segmentation has no "
                                   "label in the engine's result")
            score = result.scores.get(item_id)
            blocks.append(InspectedBlock(
                index, item_id, tag, text, result.labels[item_id],
                None if score is None or math.isnan(score) else float(score)))
        if len(blocks) != len(result.labels):
            raise InspectError(f"{source}: the segmentation has {len(blocks)} labelled blocks, "
                               f"the engine's result {len(result.labels)}")
    info = engine.info() if favor is None else {**engine.info(), "favor": favor}
    return Inspection(source, info, result.threshold, tuple(blocks), result, url)


def inspect_page(engine: Engine, html: str | bytes, content_type: str | None = None,
                 source: str = "page", url: str | None = None) -> Inspection:
    """Run ``html`` through ``engine`` and inspect it."""
    (result,) = engine.extract_pages([PageInput(html, page_id=source,
                                                content_type=content_type)])
    return inspection_of(engine, result, html, content_type, source, url)


# -- the report

_STYLE = """
:root { --kept: #d8f3dc; --kept-edge: #2d6a4f; --dropped: #f1f1f1; --dropped-edge: #9a9a9a;
        --mark: #c1121f; font-family: system-ui, sans-serif; font-size: 14px; }
body { margin: 0; color: #1b1b1b; }
header { padding: 10px 16px; background: #1d3557; color: #fff; }
header h1 { font-size: 17px; margin: 0 0 4px; }
header .facts { font-size: 13px; opacity: .9; }
header .facts span { margin-right: 14px; }
.controls { padding: 8px 16px; border-bottom: 1px solid #ccc; display: flex; gap: 18px;
            align-items: center; flex-wrap: wrap; }
.legend i { display: inline-block; width: 14px; height: 14px; vertical-align: -2px;
            margin: 0 4px 0 10px; border-left: 4px solid; }
.legend .k { background: var(--kept); border-color: var(--kept-edge); }
.legend .d { background: var(--dropped); border-color: var(--dropped-edge); }
main { display: flex; align-items: flex-start; }
#blocks { flex: 3; padding: 8px 16px; min-width: 0; }
#markdown { flex: 2; padding: 8px 16px; border-left: 1px solid #ccc; position: sticky; top: 0;
            max-height: 100vh; overflow: auto; min-width: 0; }
#markdown pre { white-space: pre-wrap; word-break: break-word; font-size: 13px; }
.block { margin: 4px 0; padding: 6px 8px; border-left: 4px solid; border-radius: 2px; }
.block.main { background: var(--kept); border-color: var(--kept-edge); }
.block.other { background: var(--dropped); border-color: var(--dropped-edge); color: #555; }
.block .meta { font: 12px ui-monospace, monospace; color: #333; display: flex; gap: 12px;
               align-items: center; flex-wrap: wrap; }
.meta b { min-width: 5ch; } .meta .tag { min-width: 10ch; } .meta .verdict { min-width: 7ch; }
.meta .score { min-width: 13ch; } .meta .p { min-width: 7ch; }
.block .text { margin-top: 3px; white-space: pre-wrap; word-break: break-word; }
.bar { position: relative; width: 120px; height: 8px; background: #fff;
       border: 1px solid #999; }
.bar .fill { position: absolute; left: 0; top: 0; bottom: 0; background: #457b9d; }
.bar .cut { position: absolute; top: -3px; bottom: -3px; width: 2px; background: var(--mark); }
.note { color: var(--mark); }
body.only-main .block.other, body.only-other .block.main { display: none; }
.error { margin: 16px; padding: 10px; background: #ffe3e3; border: 1px solid var(--mark); }
"""

_SCRIPT = """
(function () {
  var radios = document.querySelectorAll('input[name="show"]');
  function apply() {
    var value = document.querySelector('input[name="show"]:checked').value;
    document.body.classList.toggle('only-main', value === 'main');
    document.body.classList.toggle('only-other', value === 'other');
  }
  for (var i = 0; i < radios.length; i++) radios[i].addEventListener('change', apply);
  var search = document.getElementById('search');
  search.addEventListener('input', function () {
    var words = search.value.toLowerCase();
    var blocks = document.querySelectorAll('.block');
    for (var j = 0; j < blocks.length; j++) {
      var text = blocks[j].querySelector('.text').textContent.toLowerCase();
      blocks[j].hidden = words !== '' && text.indexOf(words) < 0;
    }
  });
  apply();
})();
"""


def _e(value: object) -> str:
    return html_lib.escape(str(value), quote=True)


def _figure(x: float | None, digits: int = 3) -> str:
    return "none" if x is None else f"{x:+.{digits}f}"


def _block_html(block: InspectedBlock, threshold: float | None) -> str:
    p = block.probability
    cut = None if threshold is None else _sigmoid(threshold)
    bar = ""
    if p is not None:
        bar = (f'<span class="bar" title="p(main) {p:.3f}"><span class="fill" '
               f'style="width:{100 * p:.1f}%"></span>'
               + ("" if cut is None else f'<span class="cut" style="left:{100 * cut:.1f}%">'
                                         '</span>') + "</span>")
    note = ""
    if block.score is None:
        note = f'<span class="note">{_e(NO_SCORE)}</span>'
    elif threshold is not None and (block.score > threshold) != block.kept:
        note = f'<span class="note">{_e(BY_THE_PAGE)}</span>'
    verdict = "kept" if block.kept else "dropped"
    probability = "" if p is None else f"p {p:.3f}"
    return (f'<div class="block {block.label}" data-label="{block.label}" '
            f'data-item-id="{_e(block.item_id)}" data-score="{_e(_figure(block.score, 6))}">'
            f'<div class="meta"><b>#{block.index}</b><span class="tag">&lt;{_e(block.tag)}&gt;'
            f'</span><span class="verdict">{verdict}</span><span class="score">score '
            f'{_figure(block.score)}</span><span class="p">{probability}</span>{bar}{note}'
            '</div>'
            f'<div class="text">{_e(block.text)}</div></div>')


def report_html(inspection: Inspection) -> str:
    """The report: one HTML document, self-contained and safe to open (see the module)."""
    nonce = secrets.token_urlsafe(16)
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; "
           "img-src 'none'; form-action 'none'; base-uri 'none'")
    info = inspection.engine
    result = inspection.result
    threshold = inspection.threshold
    facts = [
        f"model <b>{_e(info.get('model'))}</b>",
        f"profile <b>{_e(info.get('profile') or 'default')}</b>",
        f"favor <b>{_e(info.get('favor'))}</b>",
        "threshold <b>" + ("none" if threshold is None else
                           f"{threshold:+.3f} (p {_sigmoid(threshold):.3f})") + "</b>",
        f"blocks <b>{len(inspection.blocks)}</b>: kept <b>{inspection.n_kept}</b>, dropped "
        f"<b>{len(inspection.blocks) - inspection.n_kept}</b>",
    ]
    if result.encoding:
        facts.append(f"encoding {_e(result.encoding)}")
    if inspection.url:
        facts.append(f"url {_e(inspection.url)}")
    notices = []
    if result.error is not None:
        notices.append(f'<div class="error" id="page-error">{_e(result.error)}</div>')
    for what, value in (("truncated", result.truncated), ("empty", result.empty_reason)):
        if value:
            notices.append(f'<div class="error">{what}: {_e(value)}</div>')
    blocks = "\n".join(_block_html(b, threshold) for b in inspection.blocks)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">
<meta name="referrer" content="no-referrer">
<title>pulpie-rt inspect: {_e(inspection.source)}</title>
<style>{_STYLE}</style></head>
<body>
<header><h1>pulpie-rt inspect: {_e(inspection.source)}</h1>
<div class="facts">{"".join(f"<span>{f}</span>" for f in facts)}</div></header>
<div class="controls">
<span>show <label><input type="radio" name="show" value="all" checked> all</label>
<label><input type="radio" name="show" value="main"> kept</label>
<label><input type="radio" name="show" value="other"> dropped</label></span>
<label>find <input type="search" id="search"></label>
<span class="legend"><i class="k"></i>kept (main)<i class="d"></i>dropped (other)
&nbsp;score: log-odds of main; bar: p(main), red line: the threshold</span>
</div>
{"".join(notices)}
<main><section id="blocks"><h2>Blocks in page order</h2>
{blocks}
</section>
<section id="markdown"><h2>Markdown</h2><pre>{_e(result.markdown)}</pre></section></main>
<script nonce="{nonce}">{_SCRIPT}</script>
</body></html>
"""
