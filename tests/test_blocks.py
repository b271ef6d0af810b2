"""Block segmentation and item ids (on the compiled core) equal the reference's and the
specification's (``tests/spec/blocks_spec.py``) on real dev pages and odd markup."""

from __future__ import annotations

from pulpie.chunker import extract_blocks as ref_extract_blocks
from pulpie.model_utils import extract_item_ids as ref_item_ids
from rt_helpers import simplified
from spec.blocks_spec import extract_blocks as spec_extract_blocks

from pulpie_rt.runtime.stages.blocks import extract_blocks


def test_blocks_match_reference_on_dev_pages():
    pages = simplified()
    assert len(pages) >= 80
    n_blocks = 0
    for page_id, simple, _map in pages:
        blocks, item_ids = extract_blocks(simple)
        ref_blocks = ref_extract_blocks(simple)
        assert blocks == ref_blocks, page_id
        assert item_ids == ref_item_ids(ref_blocks), page_id
        assert (blocks, item_ids) == spec_extract_blocks(simple), page_id
        n_blocks += len(blocks)
    assert n_blocks > 5000


def test_edge_cases_match_reference():
    cases = [
        "",
        "<p>no ids at all</p>",
        '<p _item_id="1">one</p>',
        '  <div><p _item_id="1">a</p>\n <p _item_id="2">b</p> tail  ',
        # two ids in one tag: the first block is empty and has no id
        '<p _item_id="1" x=\'_item_id="2"\'>a</p><p _item_id="3">b</p>',
        # no "<" before the first id
        '_item_id="5" text <b _item_id="6">x</b>',
        '<p _item_id="07">leading zero</p><p _item_id="x">not an id</p>',
        '<p _item_id="\u0663">arabic-indic digit</p>',
        # lone surrogates (a str can hold them), around and inside blocks
        '\ud800<p _item_id="1">a\udfff</p>\ud83d <p _item_id="2">\u20ac\ud800</p>\udc00',
        "<p>\u2003\u00a0 only whitespace \u3000</p>",
        '<p _item_id="1">\u2003 spaced \u00a0</p>\u2029<p _item_id="2">b</p>',
    ]
    for html in cases:
        blocks, item_ids = extract_blocks(html)
        assert blocks == ref_extract_blocks(html), html
        assert item_ids == ref_item_ids(blocks), html
        assert (blocks, item_ids) == spec_extract_blocks(html), html


def test_item_ids_are_strings_in_document_order():
    blocks, item_ids = extract_blocks('<p _item_id="3">a</p><div _item_id="10">b</div>')
    assert blocks == ['<p _item_id="3">a</p>', '<div _item_id="10">b</div>']
    assert item_ids == ["3", "10"]
