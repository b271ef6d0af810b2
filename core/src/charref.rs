//! Character references, as the two readers the core reproduces decode them:
//!
//! - `py_unescape`: Python's `html.unescape`, which the specification (`tests/spec/dom_spec.py`)
//!   applies to the text and attribute values of lexbor's serialization;
//! - `libxml2_unescape`: libxml2 2.14's HTML parser (an HTML5 tokenizer), which the reference's
//!   `extract_main_html` reads `map_html` with.
//!
//! Both read the HTML5 table of named references (`py_tables.rs`, generated from Python's).

use std::borrow::Cow;

use crate::py_tables::{HTML5 as ENTITIES, INVALID_CHARREFS, INVALID_CODEPOINTS};

fn entity(name: &str) -> Option<&'static str> {
    // the references a serializer writes for "&", '"', "<" and ">" (nearly all of a page's:
    // JSON in attribute values is full of "&quot;"), spared the search
    match name {
        "quot;" => return Some("\""),
        "amp;" => return Some("&"),
        "lt;" => return Some("<"),
        "gt;" => return Some(">"),
        _ => {}
    }
    ENTITIES.binary_search_by(|(n, _)| n.as_bytes().cmp(name.as_bytes())).ok().map(|i| ENTITIES[i].1)
}

/// Python's `html.unescape`: every match of
/// `&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)` replaced as `_replace_charref`
/// does (a name not in the table falls back to its longest prefix that is; numbers go through
/// `_invalid_charrefs` and `_invalid_codepoints`).
pub fn py_unescape(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let (mut copied, mut i) = (0usize, 0usize);
    while let Some(k) = s[i..].find('&') {
        let amp = i + k;
        i = amp + 1;
        let Some((end, replacement)) = py_charref(s, amp + 1) else { continue };
        out.push_str(&s[copied..amp]);
        match replacement {
            Replacement::Text(t) => out.push_str(t),
            Replacement::Char(c) => out.push(c),
            Replacement::TextThenRest(t, rest_from) => {
                out.push_str(t);
                out.push_str(&s[rest_from..end]);
            }
            Replacement::Unchanged => out.push_str(&s[amp..end]),
        }
        copied = end;
        i = end;
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

enum Replacement {
    Text(&'static str),
    Char(char),
    /// a named reference's longest known prefix, then the rest of the match from this offset
    TextThenRest(&'static str, usize),
    /// `"&" + s`: the match stays as it is
    Unchanged,
}

/// The reference after an `&` at `at`: (end offset of the match, replacement), or None where
/// the pattern does not match (the `&` stays).
fn py_charref(s: &str, at: usize) -> Option<(usize, Replacement)> {
    let b = s.as_bytes();
    let n = b.len();
    if at >= n {
        return None;
    }
    if b[at] == b'#' {
        let (digits_at, radix) = match b.get(at + 1) {
            Some(c) if c.is_ascii_digit() => (at + 1, 10),
            Some(b'x' | b'X') if b.get(at + 2).is_some_and(|c| c.is_ascii_hexdigit()) => (at + 2, 16),
            _ => return None,
        };
        let mut end = digits_at;
        let mut value: u64 = 0;
        while end < n && (if radix == 10 { b[end].is_ascii_digit() } else { b[end].is_ascii_hexdigit() }) {
            // saturate: anything above 0x10FFFF decodes the same
            value = (value * radix + (b[end] as char).to_digit(radix as u32).unwrap() as u64).min(0x11_0000);
            end += 1;
        }
        if b.get(end) == Some(&b';') {
            end += 1;
        }
        return Some((end, py_numeric(value)));
    }
    // [^\t\n\f <&#;]{1,32};? — 32 characters, not bytes
    let mut end = at;
    let mut count = 0;
    for (offset, c) in s[at..].char_indices() {
        if count == 32 || matches!(c, '\t' | '\n' | '\x0c' | ' ' | '<' | '&' | '#' | ';') {
            end = at + offset;
            break;
        }
        count += 1;
        end = at + offset + c.len_utf8();
    }
    if count == 0 {
        return None;
    }
    if b.get(end) == Some(&b';') {
        end += 1;
    }
    let name = &s[at..end];
    if let Some(value) = entity(name) {
        return Some((end, Replacement::Text(value)));
    }
    // the longest prefix of at least two characters that is a name (names are ASCII)
    let ascii_len = name.bytes().take_while(|c| c.is_ascii()).count();
    let longest = ascii_len.min(name.len() - 1);
    for x in (2..=longest).rev() {
        if let Some(value) = entity(&name[..x]) {
            return Some((end, Replacement::TextThenRest(value, at + x)));
        }
    }
    Some((end, Replacement::Unchanged))
}

fn py_numeric(num: u64) -> Replacement {
    if let Ok(i) = INVALID_CHARREFS.binary_search_by_key(&num, |&(n, _)| n as u64) {
        return Replacement::Text(INVALID_CHARREFS[i].1);
    }
    if (0xd800..=0xdfff).contains(&num) || num > 0x10ffff {
        return Replacement::Char('\u{fffd}');
    }
    if INVALID_CODEPOINTS.binary_search(&(num as u32)).is_ok() {
        return Replacement::Text("");
    }
    Replacement::Char(char::from_u32(num as u32).unwrap_or('\u{fffd}'))
}

/// libxml2 2.14's reading of character references (the HTML5 tokenizer's): the longest name of
/// the table that the text continues with (not decoded in an attribute value when it lacks the
/// final ";" and "=" or an ASCII letter or digit follows); numbers with the windows-1252
/// remapping of 0x80–0x9F, U+FFFD for 0, surrogates and beyond U+10FFFF, other code points as
/// they are. What matches nothing stays as written.
pub fn libxml2_unescape(s: &str, in_attribute: bool) -> Cow<'_, str> {
    // memchr: every text run and attribute value of map_html comes through here, and the
    // standard library's search for a char goes byte by byte below 16 bytes
    if crate::scan::find_byte(b'&', s.as_bytes()).is_none() {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let n = b.len();
    let mut out = String::with_capacity(s.len());
    let (mut copied, mut i) = (0usize, 0usize);
    while let Some(k) = s[i..].find('&') {
        let amp = i + k;
        i = amp + 1;
        let at = amp + 1;
        if b.get(at) == Some(&b'#') {
            let (digits_at, radix) = match b.get(at + 1) {
                Some(c) if c.is_ascii_digit() => (at + 1, 10u64),
                Some(b'x' | b'X') if b.get(at + 2).is_some_and(|c| c.is_ascii_hexdigit()) => (at + 2, 16),
                _ => continue,
            };
            let mut end = digits_at;
            let mut value: u64 = 0;
            while end < n && (b[end] as char).is_digit(radix as u32) {
                value =
                    (value * radix + (b[end] as char).to_digit(radix as u32).unwrap() as u64).min(0x11_0000);
                end += 1;
            }
            if b.get(end) == Some(&b';') {
                end += 1;
            }
            out.push_str(&s[copied..amp]);
            match value {
                0 => out.push('\u{fffd}'),
                0x80..=0x9f => {
                    let i = INVALID_CHARREFS.binary_search_by_key(&value, |&(n, _)| n as u64).unwrap();
                    out.push_str(INVALID_CHARREFS[i].1);
                }
                _ => out.push(char::from_u32(value as u32).unwrap_or('\u{fffd}')),
            }
            copied = end;
            i = end;
            continue;
        }
        // the longest name in the table (names are ASCII letters and digits, then maybe ";")
        let avail = b[at..].iter().take(32).take_while(|c| c.is_ascii_alphanumeric() || **c == b';').count();
        // a name holds ";" only at its end: none is longer than the run up to the first ";"
        // (the "&amp;" of every serialized "&" is then found at the first try)
        let avail = b[at..at + avail].iter().position(|&c| c == b';').map_or(avail, |p| p + 1);
        let Some((len, value)) = (1..=avail).rev().find_map(|len| entity(&s[at..at + len]).map(|v| (len, v)))
        else {
            continue;
        };
        let end = at + len;
        if in_attribute
            && b[end - 1] != b';'
            && b.get(end).is_some_and(|c| *c == b'=' || c.is_ascii_alphanumeric())
        {
            i = end;
            continue; // left as written
        }
        out.push_str(&s[copied..amp]);
        out.push_str(value);
        copied = end;
        i = end;
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_unescape() {
        for (input, want) in [
            ("a &amp; b", "a & b"),
            ("&lt;&gt;&quot;&nbsp;", "<>\"\u{a0}"),
            ("&copy &copy; &copyx &notin; &notit;", "\u{a9} \u{a9} \u{a9}x \u{2209} \u{ac}it;"),
            (
                "&#65;&#x42;&#X43 &#0; &#1; &#12; &#x80; &#xD800; &#1114112;",
                "ABC \u{fffd}  \x0c \u{20ac} \u{fffd} \u{fffd}",
            ),
            ("& &; &# &#x; &{x} &zz;", "& &; &# &#x; &{x} &zz;"),
            ("&a", "&a"),
            ("&ampé", "&é"),
        ] {
            assert_eq!(py_unescape(input), want, "{input:?}");
        }
    }

    #[test]
    fn entity_names_hold_a_semicolon_only_at_their_end() {
        // libxml2_unescape stops its longest-name search at the first ";" on this ground
        assert!(ENTITIES.iter().all(|(name, _)| !name[..name.len() - 1].contains(';')));
        // and entity()'s shortcuts give the table's values
        for pair in [("quot;", "\""), ("amp;", "&"), ("lt;", "<"), ("gt;", ">")] {
            assert!(ENTITIES.contains(&pair), "{pair:?}");
        }
    }

    #[test]
    fn libxml2_references() {
        // (text, attribute value), as lxml 6.1 / libxml2 2.14.6 parse them
        for (input, text, attr) in [
            ("&copy &copy; &copyx &copy=", "\u{a9} \u{a9} \u{a9}x \u{a9}=", "\u{a9} \u{a9} &copyx &copy="),
            ("&notit; &notin; &lta &LT", "\u{ac}it; \u{2209} <a <", "&notit; \u{2209} &lta <"),
            (
                "&#0;&#1;&#x80;&#xD800;&#1114112;&#65&#x;&#",
                "\u{fffd}\x01\u{20ac}\u{fffd}\u{fffd}A&#x;&#",
                "\u{fffd}\x01\u{20ac}\u{fffd}\u{fffd}A&#x;&#",
            ),
            ("&{x} &zz; &amp", "&{x} &zz; &", "&{x} &zz; &"),
        ] {
            assert_eq!(libxml2_unescape(input, false), text, "{input:?}");
            assert_eq!(libxml2_unescape(input, true), attr, "{input:?}");
        }
    }
}
