//! The main content without links, images or tables, as a reader asks (`pulpie-rt extract
//! --no-links`, …): the main-content HTML that reconstruct wrote, read tag by tag with the
//! tree's tokenizer (`html5::markup_at`) and written again without what is dropped, every kept
//! byte as it was. The Markdown and the plain text of the result are the ordinary renderers'
//! (`markdown::to_markdown`, `markdown::to_text`) over it, so each format drops the same.
//!
//! - links (`PULPIE_RT_DROP_LINKS`): each `<a>` start and end tag goes, its content stays
//!   (the link's text without its target);
//! - images (`PULPIE_RT_DROP_IMAGES`): `<img>` and each `<picture>` with its content;
//! - tables (`PULPIE_RT_DROP_TABLES`): each `<table>` with its content (nested ones too).

use crate::abi::{PULPIE_RT_DROP_IMAGES, PULPIE_RT_DROP_LINKS, PULPIE_RT_DROP_TABLES};
use crate::html5::{markup_at, Markup};
use crate::tags::{is_raw_text, is_rcdata, Names};

/// `html` without what `drop` (`PULPIE_RT_DROP_*` bits) names; `html` itself when it names
/// nothing.
pub fn prune(html: &str, drop: u32) -> String {
    let links = drop & PULPIE_RT_DROP_LINKS != 0;
    let images = drop & PULPIE_RT_DROP_IMAGES != 0;
    let tables = drop & PULPIE_RT_DROP_TABLES != 0;
    if !(links || images || tables) {
        return html.to_string();
    }
    let dropped_with_content = |tag: &str| (tables && tag == "table") || (images && tag == "picture");
    let mut names = Names::default();
    let mut attrs = Vec::new(); // (read, not used)
    let mut out = String::with_capacity(html.len());
    let (mut kept_from, mut i) = (0usize, 0usize);
    // inside a dropped element: its name and how many of that name are open
    let mut skipping: Option<(String, usize)> = None;
    while let Some(k) = html[i..].find('<') {
        let at = i + k;
        match markup_at(html, at, &mut names, &mut attrs) {
            Markup::Text => i = at + 1,
            Markup::Skip(end) => i = end,
            Markup::CutStartTag { .. } => break,
            Markup::StartTag { name, self_closing, end, .. } => {
                i = end;
                if is_raw_text(&name) || is_rcdata(&name) {
                    i = raw_text_end(html, end, &name);
                }
                if let Some((open, depth)) = skipping.as_mut() {
                    if name.as_str() == open.as_str() && !self_closing {
                        *depth += 1;
                    }
                } else if dropped_with_content(&name) {
                    out.push_str(&html[kept_from..at]);
                    skipping = Some((name.to_string(), 1));
                } else if (links && name == "a") || (images && name == "img") {
                    out.push_str(&html[kept_from..at]);
                    kept_from = end;
                }
            }
            Markup::EndTag { name, end } => {
                i = end;
                if let Some((open, depth)) = skipping.as_mut() {
                    if name.as_str() == open.as_str() {
                        *depth -= 1;
                        if *depth == 0 {
                            skipping = None;
                            kept_from = end;
                        }
                    }
                } else if links && name == "a" {
                    out.push_str(&html[kept_from..at]);
                    kept_from = end;
                }
            }
        }
    }
    if skipping.is_none() {
        out.push_str(&html[kept_from..]);
    }
    out
}

/// Just past the end tag that closes the raw text (or RCDATA) element `name` whose content
/// starts at `from` (ASCII case-insensitive), or the end of `html`.
fn raw_text_end(html: &str, from: usize, name: &str) -> usize {
    let b = html.as_bytes();
    let mut i = from;
    while let Some(k) = html[i..].find("</") {
        let at = i + k + 2;
        if b.len() >= at + name.len() && b[at..at + name.len()].eq_ignore_ascii_case(name.as_bytes()) {
            return b[at..].iter().position(|&c| c == b'>').map_or(b.len(), |g| at + g + 1);
        }
        i = at;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "<div><h2>Title</h2><p>See <a href=\"http://x.org/a\">the <b>link</b></a> \
        here.</p><img src=\"http://x.org/p.png\" alt=\"pic\"><picture><source srcset=\"x.webp\">\
        <img src=\"x.png\"></picture><table><tr><td>a<table><tr><td>in</td></tr></table></td>\
        </tr></table><p>After.</p><script>var s = \"<table>\";</script></div>";

    #[test]
    fn nothing_dropped_is_the_input() {
        assert_eq!(prune(PAGE, 0), PAGE);
    }

    #[test]
    fn links_lose_their_tags_and_keep_their_text() {
        assert_eq!(
            prune(PAGE, PULPIE_RT_DROP_LINKS),
            PAGE.replace("<a href=\"http://x.org/a\">", "").replace("</a>", "")
        );
    }

    #[test]
    fn images_and_pictures_go() {
        assert_eq!(
            prune(PAGE, PULPIE_RT_DROP_IMAGES),
            "<div><h2>Title</h2><p>See <a href=\"http://x.org/a\">the <b>link</b></a> here.</p>\
             <table><tr><td>a<table><tr><td>in</td></tr></table></td></tr></table><p>After.</p>\
             <script>var s = \"<table>\";</script></div>"
        );
    }

    #[test]
    fn tables_go_with_their_nested_tables_and_raw_text_is_not_read_as_tags() {
        assert_eq!(
            prune(PAGE, PULPIE_RT_DROP_TABLES | PULPIE_RT_DROP_LINKS | PULPIE_RT_DROP_IMAGES),
            "<div><h2>Title</h2><p>See the <b>link</b> here.</p><p>After.</p>\
             <script>var s = \"<table>\";</script></div>"
        );
    }

    #[test]
    fn an_unclosed_table_drops_the_rest() {
        assert_eq!(prune("<p>a</p><table><tr><td>b", PULPIE_RT_DROP_TABLES), "<p>a</p>");
        assert_eq!(prune("<p>a</p><TABLE><tr><td>b</TABLE>c", PULPIE_RT_DROP_TABLES), "<p>a</p>c");
    }
}
