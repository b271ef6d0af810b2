"""extract_main_html gives the reference's exact output: real dev pages and libxml2's rules."""

from __future__ import annotations

import time

import pytest
from postprocess_cases import LABEL_SETS, golden, main_htmls

from pulpie_rt.runtime.digest import text_sha256 as sha256
from pulpie_rt.runtime.stages.reconstruct import extract_main_html


def test_dev_pages_match_reference_hashes():
    outputs = main_htmls()
    gold = golden()
    mismatched: dict[str, list[str]] = {}
    for (page_id, name), html in outputs.items():
        if sha256(html) != gold[page_id]["recon"][name]["html_sha"]:
            mismatched.setdefault(page_id, []).append(name)
    n_pages = len({page_id for page_id, _ in outputs})
    assert n_pages == 254
    # map_html from our simplify, reconstructed by us: the reference's output on every page
    assert mismatched == {}


def test_dev_pages_keep_real_content():
    outputs = main_htmls()
    sizes = {name: sum(len(h) for (_, n), h in outputs.items() if n == name) for name in
             LABEL_SETS}
    # all-other keeps only the root element; alternating keeps less than all-main
    assert sizes["all_other"] < 254 * 200 < sizes["alternating"] < sizes["all_main"]


def _doc(body: str, head: str = "") -> str:
    return f"<html><head>{head}</head><body>{body}</body></html>"


@pytest.mark.parametrize(
    ("body", "labels", "expected"),
    [
        # blank text: kept in elements that allow character data, dropped elsewhere
        (
            '\n<div _item_id="1">\n<span>a</span>\n<p>b</p>\n</div>\n',
            {"1": "main"},
            '<html><body>\n<div _item_id="1">\n<span>a</span>\n<p>b</p>\n</div>\n</body></html>',
        ),
        (
            '<ul _item_id="1">\n<li>a</li>\n<li>b</li>\n</ul><table _item_id="2">\n<tbody>\n<tr> '
            "<td>x</td> </tr>\n</tbody></table>",
            {"1": "main", "2": "main"},
            '<html><body><ul _item_id="1"><li>a</li>\n<li>b</li>\n</ul><table _item_id="2">'
            "<tbody><tr><td>x</td> </tr></tbody></table></body></html>",
        ),
        # tails go with removed elements; the element's own text stays
        (
            '<div>lead <p _item_id="1">kept</p> tail <p _item_id="2">gone</p> tail2</div>',
            {"1": "main", "2": "other"},
            '<html><body><div>lead <p _item_id="1">kept</p> tail </div></body></html>',
        ),
        # <br> next to kept content is recalled; the run wrapper is unwrapped
        (
            '<div><br><cc-alg-uc-text _item_id="1">run <b>x</b></cc-alg-uc-text><br>after'
            "<br><p>no</p></div>",
            {"1": "main"},
            "<html><body><div><br>run <b>x</b><br>after</div></body></html>",
        ),
        # serializer: quoting, escaping, boolean and URI attributes, empty <li>
        (
            "<div _item_id=\"1\"><p a='x\"y' b=\"q&quot;r's\" c=\"&amp;{x}&amp;<>\">t &amp; &lt;"
            '</p><input checked="checked" disabled><a href=" /a b?é&amp;c" name="n m">l</a>'
            "<ul><li></li></ul></div>",
            {"1": "main"},
            '<html><body><div _item_id="1"><p a=\'x"y\' b="q&quot;r\'s" c="&{x}&amp;&lt;&gt;">'
            "t &amp; &lt;</p><input checked disabled><a href=\"/a%20b?%C3%A9&amp;c\" "
            'name="n%20m">l</a><ul><li></ul></div></body></html>',
        ),
        # entities decoded in http(s) href/src values only
        (
            '<p _item_id="1"><a href="http://x.org/?a=1&amp;b=2">x</a>'
            '<a href="/?a=1&amp;b=2">y</a><img data-src="//cdn/x?a&amp;b"></p>',
            {"1": "main"},
            '<html><body><p _item_id="1"><a href="http://x.org/?a=1&b=2">x</a>'
            '<a href="/?a=1&amp;b=2">y</a><img data-src="//cdn/x?a&b"></p></body></html>',
        ),
        # ... also where the pattern occurs in text (decoded once, "&region" stays)
        (
            '<p _item_id="1"><a href="http://x.org/?a=1&amp;region=2">x</a> code: '
            "src=\"http://y/?q&amp;r\" <b title='a href=\"//z?a&amp;b'>t</b></p>",
            {"1": "main"},
            '<html><body><p _item_id="1"><a href="http://x.org/?a=1&region=2">x</a> code: '
            "src=\"http://y/?q&r\" <b title='a href=\"//z?a&amp;b'>t</b></p></body></html>",
        ),
        # libxml2 has no void <source>/<wbr>: they hold their following siblings
        (
            '<picture _item_id="1"><source srcset="a"><img src="b"></picture>'
            '<p _item_id="2">x<wbr>y</p>',
            {"1": "main", "2": "main"},
            '<html><body><picture _item_id="1"><source srcset="a"><img src="b"></source>'
            '</picture><p _item_id="2">x<wbr>y</wbr></p></body></html>',
        ),
        # template content is ordinary content for libxml2; SVG names are lower-case
        (
            '<template><div _item_id="1">in template</div></template>'
            '<svg _item_id="2" viewBox="0 0 1 1"><clipPath><use xlink:href="#a"></use>'
            "</clipPath></svg>",
            {"1": "main", "2": "main"},
            '<html><body><template><div _item_id="1">in template</div></template>'
            '<svg _item_id="2" viewbox="0 0 1 1"><clippath><use xlink:href="#a"></use>'
            "</clippath></svg></body></html>",
        ),
        # libxml2 leaves out a <meta http-equiv="Content-Type"> when it writes UTF-8
        (
            '<div _item_id="1"><meta http-equiv="Content-Type" content="text/html">a'
            '<meta name="x" content="y"></div>',
            {"1": "main"},
            '<html><body><div _item_id="1">a<meta name="x" content="y"></div></body></html>',
        ),
    ],
)
def test_libxml2_rules(body, labels, expected):
    assert extract_main_html(_doc(body), labels) == expected


def test_nothing_main_keeps_the_root_element_only():
    html = '<html lang="en"><head><title>t</title></head><body><p _item_id="1">x</p></body></html>'
    assert extract_main_html(html, {"1": "other"}) == '<html lang="en"></html>'
    assert extract_main_html(html, {}) == '<html lang="en"></html>'
    assert extract_main_html(html, {"7": "main"}) == '<html lang="en"></html>'


def test_fragments_and_empty_input_as_lxml_reads_them():
    assert extract_main_html("", {}) == ""
    assert extract_main_html(" ", {}) == "<HtmlElement></HtmlElement>"
    assert extract_main_html("x", {}) == "<span>x</span>"
    assert extract_main_html('<p _item_id="1">a</p>', {"1": "main"}) == '<p _item_id="1">a</p>'
    assert (
        extract_main_html('<p _item_id="1">a</p><p>b</p>', {"1": "main"})
        == '<div><p _item_id="1">a</p></div>'
    )


def test_map_html_of_both_serializers_gives_the_same_output():
    from postprocess_cases import label_set, map_htmls
    from selectolax.lexbor import LexborHTMLParser

    for page_id, map_html in map_htmls()[::25]:
        item_ids = golden()[page_id]["item_ids"]
        reserialized = LexborHTMLParser(map_html).html
        for name in LABEL_SETS:
            labels = label_set(name, item_ids)
            assert extract_main_html(reserialized, labels) == extract_main_html(
                map_html, labels
            ), (page_id, name)


def test_reference_on_its_own_map_html():
    """Direct comparison with the reference on its own map_html (lxml's serialization) and
    on lexbor's re-serialization of it (needs the dev extra: pulpie, lxml)."""
    pytest.importorskip("lxml")
    ref_simplify = pytest.importorskip("pulpie.simplify").simplify
    ref_extract = pytest.importorskip("pulpie.reconstruct").extract_main_html
    from postprocess_cases import label_set
    from selectolax.lexbor import LexborHTMLParser

    from pulpie_rt.corpus import load_pages

    for page in load_pages("dev")[::20]:
        _, map_html = ref_simplify(page["html"])
        item_ids = golden()[page["id"]]["item_ids"]
        reserialized = LexborHTMLParser(map_html).html
        for name in LABEL_SETS:
            labels = label_set(name, item_ids)
            expected = ref_extract(map_html, labels)
            assert extract_main_html(map_html, labels) == expected, (page["id"], name)
            assert extract_main_html(reserialized, labels) == expected, (page["id"], name)


@pytest.mark.parametrize(
    "map_html",
    [
        "<html><body>" + "<div>" * 20_000 + '<p _item_id="1">deep</p>' + "</div>" * 20_000
        + "</body></html>",
        '<html><body><p _item_id="1">a\x00b</p>\x00<p _item_id="2">\x00</p></body></html>',
        "<html><body>" + '<p _item_id="1">' + "word " * 1_000_000 + "</p></body></html>",
        "\x00\x01\x02 binary \xff\xfe garbage <<<>>> &&& </p></div>",
    ],
    ids=["20000-deep", "nul-bytes", "5MB", "garbage"],
)
def test_hostile_input_gives_a_result_within_seconds(map_html):
    """A result, and no runaway cost: CPU seconds of this process (not wall time, which a loaded
    machine stretches), with a bound far above what a linear pass costs."""
    start = time.process_time()
    out = extract_main_html(map_html, {"1": "main", "2": "main"})
    assert time.process_time() - start < 30
    assert isinstance(out, str)
    if map_html.startswith("<html><body><div>"):
        assert out.count("<div>") == 20_000 and "deep" in out
    if "word" in map_html:
        assert len(out) > 5_000_000


def test_bad_input_type_is_a_clear_error():
    with pytest.raises(TypeError, match="map_html must be str, not bytes"):
        extract_main_html(b"<p>x</p>", {})
