"""to_markdown is the reference's exact Markdown; to_text is plain text with a stated shape."""

from __future__ import annotations

import random
import re
from html.parser import HTMLParser

import html2text
import html2text.utils
import pytest
from postprocess_cases import golden, main_htmls
from selectolax.lexbor import LexborHTMLParser

from pulpie_rt.runtime.digest import text_sha256 as sha256
from pulpie_rt.runtime.stages.markdown import (
    _escape_md,
    _escape_md_section,
    _feed_html,
    _html2text_re,
    strip_spacer_images,
    to_markdown,
    to_text,
)


def test_dev_pages_match_reference_markdown_hashes():
    gold = golden()
    mismatched: dict[str, list[str]] = {}
    for (page_id, name), html in main_htmls().items():
        if sha256(to_markdown(html)) != gold[page_id]["recon"][name]["md_sha"]:
            mismatched.setdefault(page_id, []).append(name)
    assert mismatched == {}


def test_markdown_matches_reference_on_given_html():
    ref_to_markdown = pytest.importorskip("pulpie.markdown").to_markdown
    for (page_id, name), html in list(main_htmls().items())[::7]:
        assert to_markdown(html) == ref_to_markdown(html), (page_id, name)


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<p>a<img src="x.png" width="1">b</p>', "<p>ab</p>"),
        ("<p><IMG SRC='/img/spacer.gif' alt=''>c</p>", "<p>c</p>"),
        ('<p><img src="data:image/gif;base64,R0l">d</p>', "<p>d</p>"),
        ('<p><img src="photo.jpg" width="10"></p>', '<p><img src="photo.jpg" width="10"></p>'),
        ('<p><img height = "1" src="a"></p>', "<p></p>"),
        ('<p><img width="12" src="a"></p>', '<p><img width="12" src="a"></p>'),
    ],
)
def test_spacer_images_are_stripped(html, expected):
    assert strip_spacer_images(html) == expected


def test_markdown_shape():
    html = (
        '<html><body><h2>Title</h2><p>One <b>bold</b> <a href="http://x.org/a">link</a>.</p>'
        '<ul><li>a</li><li>b</li></ul><img src="http://x.org/p.png" alt="pic">'
        '<img src="http://x.org/pixel.gif"></body></html>'
    )
    assert to_markdown(html) == (
        "## Title\n\nOne **bold** [link](http://x.org/a).\n\n  * a\n  * b\n\n"
        "![pic](http://x.org/p.png)"
    )
    assert to_markdown("") == ""
    with pytest.raises(TypeError, match="html must be str"):
        to_markdown(None)


# ── plain text ───────────────────────────────────────────────────────────────────────────

_INVISIBLE = ("script", "style", "template", "iframe", "object", "embed", "svg",
              "math", "select", "textarea", "head")


def _visible_chars(html: str) -> str:
    """All text a reader sees, whitespace removed (what to_text must neither lose nor add)."""
    tree = LexborHTMLParser(html)
    for node in tree.css(", ".join(_INVISIBLE)):
        node.decompose()
    root = tree.root
    text = root.text(deep=True) if root is not None else ""
    return re.sub(r"\s+", "", text)


def test_to_text_reads_noscript_content_as_markup():
    html = '<body><noscript><div><h1>Thread</h1><p>First &amp; post</p></div></noscript></body>'
    assert to_text(html) == "Thread\nFirst & post"
    assert to_text("<body><p>a</p><noscript></noscript><p>b</p></body>") == "a\nb"


def test_to_text_keeps_all_visible_text_in_order_on_dev_pages():
    for (page_id, name), html in list(main_htmls().items())[::3]:
        text = to_text(html)
        assert re.sub(r"\s+", "", text).replace("|", "") == _visible_chars(html).replace(
            "|", ""
        ), (page_id, name)
        # no markup, no blank lines, no runs of spaces, lines stripped
        lines = text.split("\n") if text else []
        assert all(line and line == line.strip() and "  " not in line for line in lines), page_id


def test_to_text_puts_each_heading_on_its_own_line_on_dev_pages():
    checked = 0
    for (page_id, name), html in list(main_htmls().items())[::3]:
        if name != "all_main":
            continue
        lines = set(to_text(html).split("\n"))
        tree = LexborHTMLParser(html)
        for heading in tree.css("h1, h2, h3, h4, h5, h6"):
            if heading.css_first("div, p, br, li, table, img, svg, script, style"):
                continue
            parent, hidden = heading.parent, False
            while parent is not None and not hidden:
                hidden = parent.tag in _INVISIBLE
                parent = parent.parent
            if hidden:
                continue
            words = " ".join((heading.text(deep=True) or "").split())
            if words:
                assert words in lines, (page_id, words)
                checked += 1
    assert checked > 100


def test_to_text_behaviour():
    html = (
        "<html><head><title>no</title><style>p{}</style></head><body>"
        "<h1> A  title </h1><p>First\n  para<br>second line</p><script>var x;</script>"
        "<ul><li>one</li><li>two <b>bold</b></li></ul>"
        "<table><tr><th>h1</th><th>h2</th></tr><tr><td>a</td><td></td><td>c</td></tr></table>"
        "<pre>code  line1\nline2</pre><div>x<span>y</span></div></body></html>"
    )
    assert to_text(html) == (
        "A title\nFirst para\nsecond line\none\ntwo bold\nh1 | h2\na | c\ncode line1\nline2\nxy"
    )
    assert to_text("") == ""
    assert to_text("   ") == ""
    assert to_text("<html></html>") == ""
    deep = "<div>" * 20_000 + "deep" + "</div>" * 20_000
    assert to_text(deep) == "deep"


# ── the tokenizer that stands in for html.parser ─────────────────────────────────────────


class _Recorder(HTMLParser):
    """html.parser as html2text uses it (``convert_charrefs=False``), recording its calls."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.events: list = []

    def handle_data(self, data):
        self.events.append((0, data, None))

    def handle_starttag(self, tag, attrs):
        # html2text's handle_starttag passes dict(attrs) on: that is what it sees
        self.events.append((1, tag, dict(attrs)))

    def handle_endtag(self, tag):
        self.events.append((2, tag, None))

    def handle_entityref(self, name):
        self.events.append((3, name, None))

    def handle_charref(self, name):
        self.events.append((4, name, None))

    def handle_startendtag(self, tag, attrs):
        self.events.append(("startend", tag, attrs))

    def handle_comment(self, data):
        self.events.append(("comment", data, None))

    def handle_decl(self, decl):
        self.events.append(("decl", decl, None))

    def handle_pi(self, data):
        self.events.append(("pi", data, None))

    def unknown_decl(self, data):
        self.events.append(("unknown", data, None))


class _Sink:
    """The converter methods ``_feed_html`` calls, recording them as ``_Recorder`` does."""

    def __init__(self) -> None:
        self.events: list = []

    def handle_data(self, data):
        self.events.append((0, data, None))

    def handle_tag(self, tag, attrs, start):
        self.events.append((1, tag, attrs) if start else (2, tag, None))

    def handle_entityref(self, name):
        self.events.append((3, name, None))

    def handle_charref(self, name):
        self.events.append((4, name, None))


def _html_parser_events(data: str) -> list | None:
    """Our tokenizer's calls for ``data``; None where it declines."""
    sink = _Sink()
    return sink.events if _feed_html(data, sink) else None


def _parser_events(data: str) -> list:
    recorder = _Recorder()
    recorder.feed(data)
    recorder.feed("")
    recorder.close()
    return recorder.events


def test_tokenizer_makes_html_parsers_calls_on_dev_pages():
    fallbacks = checked = 0
    for (page_id, name), html in list(main_htmls().items())[::2]:
        data = strip_spacer_images(html)
        events = _html_parser_events(data)
        if events is None:
            fallbacks += 1
            continue
        assert events == _parser_events(data), (page_id, name)
        checked += 1
    assert fallbacks < checked // 10


@pytest.mark.parametrize(
    "html",
    [
        "<p>a &amp; b &lt; &gt; &quot; &copy &copy; &#39; &#x27; &#X41z &nbsp;x</p>",
        "<p>&#12a; &#;x &#xZ; & x &a-b.c; &1 tail</p>",
        "<P CLASS=\"a\" data-x='1\"2' hidden>t</P><br>",
        '<script type="x">if (a < b && c) { x = "</div>"; }</script ><style>p>a{}</style>',
        "<div title=\"a &amp; b &#39;q\" data-u=\"http://x/?a&b\" empty=\"\">x</div>",
        "<p>tail &amp</p>",
        "<p>bad <!-- comment --> and <!doctype x> and <?pi?></p>",
        "<p>a < b</p>",
        "<p>lone & at the end &",
        "<code>`x`</code> <pre>  1. item\n+ plus\n- dash \\ back</pre> 3. not a list",
    ],
)
def test_tokenizer_agrees_with_html_parser_or_declines(html):
    events = _html_parser_events(html)
    if events is not None:
        assert events == _parser_events(html)
    reference = html2text.HTML2Text(bodywidth=0)
    reference.ignore_links = False
    reference.ignore_images = False
    assert to_markdown(html) == reference.handle(strip_spacer_images(html)).strip()


def test_escape_shortcut_equals_html2text():
    rng = random.Random(7)
    alphabet = " \n\t\r\xa0\u2028\\+-.1a2\u0663*_#!`[]()x"
    for _ in range(40_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert _escape_md_section(text) == html2text.utils.escape_md_section(text), text
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert _escape_md(text) == html2text.utils.escape_md(text), text
    # html2text's own functions are back in place after each conversion
    to_markdown("<p>x</p>")
    assert html2text.escape_md_section is html2text.utils.escape_md_section
    assert html2text.escape_md is html2text.utils.escape_md


def test_whitespace_collapse_shortcut_equals_re():
    rng = random.Random(11)
    alphabet = [" ", "a", "\n", "\t", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2003",
                "\u2028", "\u3000", "\x00", "\u200b", "é"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        assert _html2text_re.sub(r"\s+", r" ", text) == re.sub(r"\s+", r" ", text), repr(text)
    assert _html2text_re.sub("a", "b", "aXa", count=1) == "bXa"
    assert _html2text_re.compile is re.compile
    to_markdown("<p>x</p>")
    assert html2text.re is re


@pytest.mark.parametrize(
    "html",
    [
        "<html><body>" + "<div>" * 20_000 + "<p>deep</p>" + "</div>" * 20_000 + "</body></html>",
        "<p>a\x00b</p>\x00",
        "<html><body><p>" + "word " * 1_000_000 + "</p></body></html>",
        "\x00\x01 binary \xff <<<>>> &&& </p></div> &#xZZ; &#",
    ],
    ids=["20000-deep", "nul-bytes", "5MB", "garbage"],
)
def test_hostile_html_gives_a_result(html):
    assert isinstance(to_markdown(html), str)
    assert isinstance(to_text(html), str)
