"""A page's finish (labels -> reconstruct -> Markdown, or a page's whole text) runs in the
compiled core (``native.finish_page``, the C library's finish): it gives what its Python
specification (``tests/spec/finish_spec.py``) gives, result and error alike, on the dev
pages."""

from __future__ import annotations

import random

import pytest
from spec.finish_spec import spec_finish

from pulpie_rt.runtime.flow.pages import (
    EMPTY_MAIN_WITHOUT_TEXT,
    EMPTY_NO_MAIN,
    EMPTY_NO_TEXT,
    PageError,
    PreparedPage,
    _finish,
    finish,
)
from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.simplify import simplify


def _page(html: str, truncated: str | None = None) -> PreparedPage:
    simplified, map_html = simplify(html)
    _, item_ids = extract_blocks(simplified)
    return PreparedPage(item_ids, [], map_html, truncated=truncated, encoding="utf-8")


def _outcome(page: PreparedPage, predictions: list[int], finisher) -> object:
    try:
        return vars(finisher(page, predictions))
    except PageError as exc:
        return str(exc)


def test_the_core_finishes_dev_pages_as_the_specification(dev_pages):
    rng = random.Random(12)
    compared = 0
    for index, record in enumerate(dev_pages[::2]):
        page = _page(record["html"], truncated="cut" if index % 5 == 0 else None)
        n = page.n_blocks
        label_sets = [[rng.randrange(2) for _ in range(n)]]
        if index % 8 == 0:
            label_sets += [[1] * n, [0] * n]
        for predictions in label_sets:
            assert _outcome(page, predictions, _finish) == \
                _outcome(page, predictions, spec_finish), record["id"]
            compared += 1
        # the same page as one without blocks: its whole visible text
        whole = PreparedPage([], [], page.map_html, encoding=None)
        assert _outcome(whole, [], _finish) == _outcome(whole, [], spec_finish), record["id"]
    assert compared > 127


@pytest.mark.parametrize("html, predictions, reason", [
    ("<html><body><p>kept</p><p>dropped</p></body></html>", [1, 0], None),
    ("<html><body><p>a</p><p>b</p></body></html>", [0, 0], EMPTY_NO_MAIN),
    ('<html><body><div><img src="spacer.gif" width=1 height=1></div><p>b</p></body></html>',
     [1, 0], EMPTY_MAIN_WITHOUT_TEXT),
    ("<html><body><script>var a;</script></body></html>", [], EMPTY_NO_TEXT),
    ("plain text,\nstill one line <&> 'quoted' \u2028next", [], None),
])
def test_results_and_empty_reasons_equal_the_specification(html, predictions, reason):
    page = _page(html, truncated="the input was cut")
    assert page.n_blocks == len(predictions)
    ours = _finish(page, predictions)
    assert vars(ours) == vars(spec_finish(page, predictions))
    assert ours.empty_reason == reason and ours.truncated == "the input was cut"


def test_a_failing_page_names_the_stage_as_the_specification_does():
    """Hand-made pages (``prepare`` never makes these): map_html that is not text, or that
    holds a lone surrogate."""
    bad = PreparedPage(["1"], [], b"<p _item_id='1'>x</p>")
    assert finish(bad, [1]) == "reconstruct: TypeError: map_html must be str, not bytes"
    assert finish(bad, [1]) == _spec_error(bad, [1])
    no_blocks = PreparedPage([], [], b"<p>x</p>")
    assert finish(no_blocks, []) == "markdown: TypeError: html must be str, not bytes"
    assert finish(no_blocks, []) == _spec_error(no_blocks, [])
    odd = PreparedPage(["1"], [], "<p _item_id=\"1\">x\ud800</p>")
    assert finish(odd, [1]) == ("reconstruct: ValueError: map_html is not UTF-8-encodable "
                                "(surrogates not allowed)")
    assert finish(odd, [1]) == _spec_error(odd, [1])


def _spec_error(page: PreparedPage, predictions: list[int]) -> str:
    with pytest.raises(PageError) as raised:
        spec_finish(page, predictions)
    return str(raised.value)
