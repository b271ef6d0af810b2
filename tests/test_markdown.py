"""to_markdown is the reference's exact Markdown; to_text is plain text with a stated shape.

Both run on the compiled core (core/src/markdown); its specifications are html2text itself
(tests/spec/markdown_spec.py) and its lexbor-based ``to_text``: the core must equal
them on every dev page, on the edge cases below and on seeded random markup."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest
from postprocess_cases import golden, main_htmls
from selectolax.lexbor import LexborHTMLParser

from pulpie_rt.runtime import native
from pulpie_rt.runtime.digest import text_sha256 as sha256
from pulpie_rt.runtime.stages.markdown import to_markdown, to_text

sys.path.insert(0, str(Path(__file__).parent / "spec"))
import markdown_spec  # noqa: E402  (the specification lives beside the tests)
from markdown_spec import strip_spacer_images  # noqa: E402
from markdown_spec import to_text as to_text_python  # noqa: E402


@pytest.fixture(scope="module")
def core() -> None:
    """The compiled core's Markdown, and the versions of html2text and Python it ports."""
    try:
        markdown_spec.check_versions()
    except RuntimeError as exc:
        pytest.skip(f"not the specification the core ports: {exc}")
    assert native.markdown("") == "", "the compiled core is not built: `make core`"


def _outcome(function, html: str) -> tuple:
    """``("ok", result)`` or the exception's type and message."""
    try:
        return ("ok", function(html))
    except (AssertionError, ValueError) as exc:
        return ("raises", type(exc).__name__, str(exc))



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


# ── the compiled core against its specification ─────────────────────────────────────────


def test_core_markdown_equals_the_specification_on_every_dev_page(core):
    differ = [key for key, html in main_htmls().items()
              if to_markdown(html) != markdown_spec.to_markdown(html)]
    assert differ == []
    assert len(main_htmls()) == 762


def test_core_text_equals_the_python_text_on_every_dev_page(core):
    differ = [key for key, html in main_htmls().items() if to_text(html) != to_text_python(html)]
    assert differ == []


EDGE_CASES = [
    # character references: named with and without ";", unknown, numeric of every range
    "<p>a &amp; b &lt; &gt; &quot; &copy &copy; &#39; &#x27; &#X41z &nbsp;x</p>",
    "<p>&#12a; &#;x &#xZ; & x &a-b.c; &1 tail</p>",
    "<p>&amp; &#x1F600; &notanentity &notanentity; &#0; &#xD800; &#x110000; &#128; &#x9F;</p>",
    "<p>&rsquo;&lsquo;&mdash;&ndash;&hellip;&lrm;&rlm;&eacute;&AElig;&nbsp_place_holder;</p>",
    "<p>&#8217;&#8212;&#x2013;&#233;&#8206;&#160;</p>",
    "<p>tail &amp</p>", "<p>lone & at the end &", "<p>ends in &#", "&#x41", "x&a",
    "<p>" + "&#" + "1" * 4301 + ";</p>",  # int() refuses: ValueError, as in the specification
    # tags html.parser reads its own way
    "<P CLASS=\"a\" data-x='1\"2' hidden>t</P><br>",
    "<div title=\"a &amp; b &#39;q\" data-u=\"http://x/?a&b\" empty=\"\">x</div>",
    "<p>bad <!-- comment --> and <!doctype x> and <?pi?></p>",
    "<p>a < b</p>", "<p a='unclosed>x</p>", "<p a== 'x>y</p>", "<a href=x/>t</a>",
    "<p/>x<br/>y<img src=x />", "<p>unterminated <b", "<p>x</p", "<![CDATA[x]]>y<![if !IE]>z",
    "<![foo[x]]>", "<![ x", "</ p>x</>y</ 1>",
    # script and style bodies, the split end tag html2text rewrites
    '<script type="x">if (a < b && c) { x = "</div>"; }</script ><style>p>a{}</style>',
    "<script>a</' + 'script>b</script>c", "<script>never closed <p>x</p>",
    "<style>a</\u017fcript></style>z", "<SCRIPT>x</SCRIPT >y", "</script>quiet<body>loud",
    # lists, blockquotes, pre, tables
    "<ol start=\"3\"><li>a<li>b<ol><li>c<ul><li>d</ul></ol></ol>",
    "<ol start=\"x\"><li>a</ol><ol start=\" \u0663 \"><li>b</ol><ol start=\"-2\"><li>c</ol>",
    "<ol start><li>x</ol>",  # html2text asserts the value is not None
    "<ol start=\"" + "9" * 4300 + "\"><li>a<li>b</ol>",  # str() refuses the 4301-digit number
    "<blockquote>q<blockquote>qq<br>r</blockquote></blockquote></blockquote>after",
    "<pre>  1. item\n+ plus\n- dash \\ back</pre> 3. not a list",
    "<ul><li><pre>code\nmore</pre></li></ul><pre></pre>x",
    "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>",
    "<table><tr><td><table><tr><td>in</td></tr></table></td></tr></table>",
    "<dl><dt>t</dt><dd>d</dd></dl><hr><q>quoted</q><abbr title=\"T\">A</abbr>",
    # links and images
    '<a href="http://x.org/a(b)" title=\'t "q" (p)\'>link</a> <a href="#top">in</a>',
    '<a href="http://x.org">http://x.org</a><a href="">e</a><a href="x"></a><a>n</a>',
    '<a href="x"><h2>head</h2></a><a href="y">t<img src="i.png" alt="[a]" title="t"></a>',
    '<img src="a (1).png" alt="a\\b"><img src="http://x/pixel.gif"><img width=1 src=x>',
    "<em>e</em>x<strong>s</strong>*<b>b</b>~<del>d</del>_<i>i</i>",
    "<code>`x`</code> <kbd>k</kbd><tt>t</tt>",
    # whitespace and escapes
    "<p>\\back\\slash* 1. x\n2. y\n+ z\n- w\n-- v</p><p>\u0663. x</p>",
    "<p>a\u00a0b\u3000c\u2028d\x85e\x0bf\x1cg</p>",
    "<p>a\ud800b</p>\udfff",  # lone surrogates travel both ways
]


@pytest.mark.parametrize("html", EDGE_CASES)
def test_core_markdown_equals_the_specification_on_edge_cases(core, html):
    assert _outcome(to_markdown, html) == _outcome(markdown_spec.to_markdown, html)


def test_specification_errors_are_raised_as_python_raises_them(core):
    with pytest.raises(AssertionError, match="^unknown status keyword 'foo' in marked section$"):
        to_markdown("<![foo[x]]>")
    with pytest.raises(ValueError, match=r"^Exceeds the limit \(4300 digits\)"):
        to_markdown("&#" + "1" * 4301 + ";")


def _random_markup(generator: str):
    """A seeded random-markup generator by name: the specification's two, test_native's one."""
    if generator == "random_page":
        from test_native import random_page

        return random_page
    return getattr(markdown_spec, generator)


@pytest.mark.parametrize("generator", ["random_markdown_page", "random_tokens", "random_page"])
def test_core_markdown_equals_the_specification_on_random_markup(core, generator):
    make = _random_markup(generator)
    rng = random.Random(20261201)
    for _ in range(1000):
        html = make(rng)
        assert _outcome(to_markdown, html) == _outcome(markdown_spec.to_markdown, html), html


def test_core_escapes_text_as_html2text_does(core):
    # html2text escapes each text run (backslashes, "1." / "+" / "-" at line starts) and
    # collapses its whitespace with Python's \s and \d
    rng = random.Random(7)
    alphabet = " \n\t\r\xa0\u2028\\+-.1a2\u0663*_#!`[]()x\x0b\x1c\x85\u3000\u200b\xe9"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        html = f"<p>{text}</p><p><b>{text}</b><i>{text}</i>x</p>"
        assert to_markdown(html) == markdown_spec.to_markdown(html), repr(text)


@pytest.mark.parametrize("generator", ["random_markdown_page", "random_tokens", "random_page"])
def test_core_text_answers_on_random_markup(core, generator):
    # to_text's core reads HTML5's moves of table content and misnested formatting as a
    # stream; on such markup it may differ from lexbor's tree, but it must always answer
    make = _random_markup(generator)
    rng = random.Random(20261202)
    for _ in range(1000):
        html = make(rng)
        assert isinstance(native.text(html), str), html


@pytest.mark.parametrize(
    "html",
    [
        "<table><tr><td>a</td></tr>b</table>",  # text in a table's rows goes before it
        "<table><tr><td>a<p>b</tr>c</table>",
        "<table><TT><ol></tt></ol><table>x",  # a moved element closed by misnesting
        "<head><title>t</title></head><p>x</p>",
        "<select>a<option>b</option><p>c</p></select>d",
        "<svg>a<p>b</p>c</svg>d",
        "<b>a<p>b</b>c</p>",
        "<template><b></table></b>x</template>y",
        "<p>&#13;x&#1;y&#xFDD0;z&#0;&#x80;&#x81;</p><pre>a\rb\r\nc</pre>",
    ],
)
def test_core_text_equals_the_python_text_on_html5_rules(core, html):
    assert to_text(html) == to_text_python(html)


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


class _PanickingCore:
    """A core whose Markdown and text calls fail as a caught panic does: status 2 and the
    panic's message."""

    reason = b"panicked at core/src/markdown/mod.rs: index out of bounds"

    def _fail(self, data, size, out):
        out._obj.reason = self.reason
        return 2

    pulpie_rt_markdown = pulpie_rt_text = _fail


def test_a_core_failure_is_the_pages_error_never_another_implementations_output(monkeypatch):
    monkeypatch.setattr(native, "_library", _PanickingCore)
    expected = ("the compiled core failed on this input: panicked at core/src/markdown/mod.rs: "
                "index out of bounds")
    for convert in (to_markdown, to_text):
        with pytest.raises(native.CoreError) as raised:
            convert("<p>x</p>")
        assert str(raised.value) == expected
