//! Main-content HTML -> Markdown, byte for byte what the reference `pulpie.markdown.to_markdown`
//! writes: its spacer-image removal, then html2text **2025.4.15** (`HTML2Text(bodywidth=0)`,
//! links and images kept) on Python **3.11**'s `html.parser`, the result stripped. Those
//! versions are the oracle this port was written from and is tested against (the Python
//! specification is `tests/spec/markdown_spec.py`); another html2text or `html.parser`
//! (CPython changed its comment and CDATA rules in later 3.x patch releases) needs this code
//! and `tools/gen_tables.py` looked at again.
//!
//! Text travels as UTF-8 that may hold lone surrogates (Python's `surrogatepass`), so every
//! Python `str` gives the same output here. Where the specification raises (html.parser's
//! marked-section assertions, `int()`'s digit limit, html2text's assertion on `<ol start>`
//! without a value), `to_markdown` returns a `SpecError` naming Python's exception and
//! message instead.
//!
//! Also `to_text`, the runtime's own plain-text rendering (`text.rs`).

pub(crate) mod chars;
use chars::contains;
mod convert;
mod escape;
mod spacer;
mod spec_error;
mod text;
mod tokenizer;
mod unescape;

pub use spacer::strip_spacer_images;
pub use spec_error::SpecError;
pub use text::to_text;

/// What `HTML2Text.feed` does to its input before tokenizing.
const SCRIPT_SPLIT: &[u8] = b"</' + 'script>";
const SCRIPT_SPLIT_REPLACEMENT: &[u8] = b"</ignore>";

/// `to_markdown(html)`: `html` is UTF-8 (lone surrogates allowed), and so is the result.
pub fn to_markdown(html: &[u8]) -> Result<Vec<u8>, SpecError> {
    let cleaned = strip_spacer_images(html);
    let data: std::borrow::Cow<[u8]> = if contains(&cleaned, SCRIPT_SPLIT) {
        std::borrow::Cow::Owned(replace(&cleaned, SCRIPT_SPLIT, SCRIPT_SPLIT_REPLACEMENT))
    } else {
        cleaned
    };
    let mut converter = convert::Converter::new(data.len() / 2);
    tokenizer::feed(&data, &mut converter)?;
    let text = converter.finish();
    Ok(chars::strip(&text).to_vec())
}

fn replace(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(html: &str) -> String {
        String::from_utf8(to_markdown(html.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn markdown_shape() {
        let html = "<html><body><h2>Title</h2><p>One <b>bold</b> <a href=\"http://x.org/a\">link</a>.</p>\
            <ul><li>a</li><li>b</li></ul><img src=\"http://x.org/p.png\" alt=\"pic\">\
            <img src=\"http://x.org/pixel.gif\"></body></html>";
        assert_eq!(
            md(html),
            "## Title\n\nOne **bold** [link](http://x.org/a).\n\n  * a\n  * b\n\n![pic](http://x.org/p.png)"
        );
        assert_eq!(md(""), "");
    }

    #[test]
    fn specification_errors() {
        assert_eq!(
            to_markdown(b"<![foo[x]]>"),
            Err(SpecError::assertion("unknown status keyword 'foo' in marked section".into()))
        );
        assert_eq!(to_markdown(b"<ol start><li>x</ol>"), Err(SpecError::assertion(String::new())));
        assert_eq!(
            to_markdown(format!("&#{};", "1".repeat(4301)).as_bytes()).unwrap_err().kind,
            "ValueError"
        );
    }

    #[test]
    fn entities_and_links() {
        assert_eq!(
            md("<p>a &amp; b &copy; &nbsp;x &#8217; &#x1F600; &notanentity; &#0;</p>"),
            "a & b (C)  x ' \u{1f600} &notanentity; \u{fffd}"
        );
        assert_eq!(md("<a href=\"http://a/(b)\" title='t \"q\"'>x</a>"), "[x](http://a/\\(b\\) \"t \"q\"\")");
        assert_eq!(md("<a href=\"http://a\">http://a</a>"), "<http://a>");
        assert_eq!(md("<ol start=\"3\"><li>a<li>b</ol>"), "3. a\n  4. b");
    }

    #[test]
    fn html2text_state() {
        assert_eq!(md("<abbr title=\"Hyper\">HT</abbr> and <q>q</q>"), "HT and \"q\"\n  *[HT]: Hyper");
        assert_eq!(md("<ul><li>a<ol><li>b<li>c</ol></ul>"), "* a\n    1. b\n    2. c");
        assert_eq!(md("<pre>x\ny</pre>"), "x\n    y");
        assert_eq!(md("<blockquote>a<br>b</blockquote>"), "> a  \n> b");
        assert_eq!(md("<a href=\"u\"><h2>T</h2></a>"), "## [T](u)");
        assert_eq!(md("<em>a</em>b<b>c</b>"), "_a_ b**c**");
        // a stray </head> takes "quiet" below zero: nothing shows until <body> resets it
        assert_eq!(md("<script>x</script>quiet</head>still<body>loud"), "quietloud");
    }

    #[test]
    fn tokenizer_passes() {
        // html.parser stops a pass at "&#" that is no reference (after handing it on as text);
        // html2text runs three passes, and the last hands all that is left on as text
        assert_eq!(md("a&#12a;b&#12a;c&#12a;d&amp;e&#12a;f"), "a&#12a;b&#12a;c&#12a;d&amp;e&#12a;f");
        assert_eq!(md("<p>x &#1"), "x &#1");
    }
}
