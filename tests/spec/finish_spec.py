"""The specification of a page's finish (``runtime.flow.pages._finish``), in Python on the
stages' Python API: the compiled core's ``finish_main`` / ``whole_text``
(``core/src/engine/mod.rs``), which the page flow runs through ``native.finish_page``, gives the
same result; ``tests/test_limits.py`` compares the two on the dev pages.

labels -> main HTML (``reconstruct.extract_main_html``) -> Markdown (``markdown.to_markdown``).
A page without blocks (plain text, text outside any element the segmentation keeps) has
nothing to label: its whole visible text is its main content, one ``<p>`` a line. An empty
result says why it is empty (``empty_reason``). A failure raises ``PageError`` naming the
stage.
"""

from __future__ import annotations

import html as html_lib

from pulpie_rt.runtime.flow.pages import (
    EMPTY_MAIN_WITHOUT_TEXT,
    EMPTY_NO_MAIN,
    EMPTY_NO_TEXT,
    PageError,
    PageResult,
    PreparedPage,
    describe,
)
from pulpie_rt.runtime.stages.labels import MAIN, labels_from_predictions


def spec_finish(page: PreparedPage, predictions: list[int]) -> PageResult:
    """labels -> main HTML -> Markdown; ``PageError`` names the failing stage.

    A page without blocks (plain text, text outside any element the segmentation keeps) has
    nothing to label: its whole visible text is its main content. An empty result says why
    it is empty (``empty_reason``).
    """
    from pulpie_rt.runtime.stages.markdown import to_markdown
    from pulpie_rt.runtime.stages.reconstruct import extract_main_html

    if page.n_blocks == 0:
        return spec_whole_text(page)
    labels = labels_from_predictions(page.item_ids, predictions)
    try:
        main_html = extract_main_html(page.map_html, labels)
    except Exception as exc:
        raise PageError("reconstruct", describe(exc)) from exc
    try:
        markdown = to_markdown(main_html)
    except Exception as exc:
        raise PageError("markdown", describe(exc)) from exc
    empty_reason = None
    if not markdown:
        empty_reason = EMPTY_MAIN_WITHOUT_TEXT if MAIN in labels.values() else EMPTY_NO_MAIN
    return PageResult(html=main_html, markdown=markdown, labels=labels,
                      truncated=page.truncated, empty_reason=empty_reason,
                      encoding=page.encoding)


def spec_whole_text(page: PreparedPage) -> PageResult:
    """The result of a page without blocks: its visible text, one paragraph per line."""
    from pulpie_rt.runtime.stages.markdown import to_markdown, to_text

    try:
        lines = to_text(page.map_html).splitlines()
        if not lines:
            return PageResult(truncated=page.truncated, empty_reason=EMPTY_NO_TEXT,
                              encoding=page.encoding)
        main_html = ("<html><body>" + "".join(f"<p>{html_lib.escape(line)}</p>" for line in lines)
                     + "</body></html>")
        markdown = to_markdown(main_html)
    except Exception as exc:
        raise PageError("markdown", describe(exc)) from exc
    return PageResult(html=main_html, markdown=markdown, truncated=page.truncated,
                      encoding=page.encoding)
