//! Markup as libxml2 2.14 tokenizes it (its HTML parser's tokenizer follows HTML5's): what a
//! `<` starts in `map_html`, for `tree::parse` with `Reader::Libxml2`. A serializer's output
//! reads the same either way; this matters for `map_html` that is not one (fragments a caller
//! cut, say): a tag the end of the input cuts is dropped, quotes hold `>`, comments follow
//! HTML5's rules.

use crate::tags::{Attrs, Names, Tag, VALUELESS};
use crate::text::Text;

/// HTML5's white space ("\r" is read as "\n" before).
#[inline]
fn is_space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | b'\x0c' | b' ' | b'\r')
}

pub enum Markup {
    /// text "<"
    Text,
    /// nothing to the tree (a comment, a doctype, a tag the input ends in): read on from here
    Skip(usize),
    EndTag {
        name: Tag,
        end: usize,
    },
    /// its attributes in the caller's list
    StartTag {
        name: Tag,
        self_closing: bool,
        end: usize,
    },
    /// a start tag the end of the input cuts: no element, but libxml2 has read its name and
    /// closed and implied elements for it
    CutStartTag {
        name: Tag,
    },
}

/// What the `<` at `pos` starts; a start tag's attributes in `attrs` (cleared first).
pub fn markup_at(s: &str, pos: usize, names: &mut Names, attrs: &mut Attrs) -> Markup {
    let b = s.as_bytes();
    let n = b.len();
    match b.get(pos + 1) {
        Some(c) if c.is_ascii_alphabetic() => start_tag(s, pos, names, attrs),
        Some(b'/') => match b.get(pos + 2) {
            Some(c) if c.is_ascii_alphabetic() => end_tag(s, pos, names, attrs),
            Some(b'>') => Markup::Skip(pos + 3),
            None => Markup::Text,                          // "</" at the end: text
            Some(_) => Markup::Skip(after_gt(b, pos + 2)), // bogus comment
        },
        Some(b'!') => {
            if b[pos..].starts_with(b"<!--") {
                Markup::Skip(comment_end(b, pos + 4))
            } else {
                Markup::Skip(after_gt(b, pos + 2)) // doctype, bogus comment
            }
        }
        Some(b'?') => Markup::Skip(after_gt(b, pos + 2)),
        _ if pos + 1 >= n => Markup::Text,
        _ => Markup::Text,
    }
}

/// A tag or attribute name as libxml2 keeps it: ASCII letters in lower case, NUL as U+FFFD,
/// and only the characters that fit its 100-byte name buffer; as the parse's shared name.
fn name(raw: &str, names: &mut Names) -> Tag {
    if raw.len() <= NAME_BUFFER && !raw.bytes().any(|b| b.is_ascii_uppercase() || b == 0) {
        return names.get(raw); // kept as it is (nearly every name)
    }
    names.get(&name_string(raw))
}

pub const NAME_BUFFER: usize = 100;

fn name_string(raw: &str) -> String {
    const BUFFER: usize = NAME_BUFFER;
    let mut out = String::with_capacity(raw.len().min(BUFFER));
    for c in raw.chars() {
        let c = if c == '\0' { '\u{fffd}' } else { c.to_ascii_lowercase() };
        if out.len() + c.len_utf8() <= BUFFER {
            out.push(c);
        }
    }
    out
}

/// Just after the first `>` at or after `from`, or the end.
fn after_gt(b: &[u8], from: usize) -> usize {
    b[from..].iter().position(|&c| c == b'>').map_or(b.len(), |k| from + k + 1)
}

/// The end of a comment whose text starts at `from`: `<!-->` and `<!--->` end at once,
/// otherwise `-->` or `--!>` ends it, or the end of the input.
fn comment_end(b: &[u8], from: usize) -> usize {
    if b[from..].starts_with(b">") {
        return from + 1;
    }
    if b[from..].starts_with(b"->") {
        return from + 2;
    }
    let mut i = from;
    while i < b.len() {
        if b[i..].starts_with(b"-->") {
            return i + 3;
        }
        if b[i..].starts_with(b"--!>") {
            return i + 4;
        }
        i += 1;
    }
    b.len()
}

/// Read an attribute list from `i` (HTML5's attribute states) up to the tag's `>`: the
/// attributes into `attrs` (cleared first); self-closing, the end; None when the input ends
/// first.
fn attributes(s: &str, mut i: usize, names: &mut Names, attrs: &mut Attrs) -> Option<(bool, usize)> {
    let b = s.as_bytes();
    let n = b.len();
    attrs.clear();
    // the first of each name; a value NUL-free (libxml2 reads NUL as U+FFFD), or
    // `tree::VALUELESS` for none
    let mut add = |name: &str, value: Option<&str>, attrs: &mut Attrs| {
        let name = self::name(name, names);
        if !attrs.iter().any(|(k, _)| *k == name) {
            let value = match value {
                Some(v) => {
                    let v = crate::charref::libxml2_unescape(v, true);
                    if crate::scan::find_byte(0, v.as_bytes()).is_some() {
                        Text::from(v.replace('\0', "\u{fffd}"))
                    } else {
                        Text::from(&*v)
                    }
                }
                None => Text::from(VALUELESS),
            };
            attrs.push((name, value));
        }
    };
    loop {
        // before attribute name
        while i < n && is_space(b[i]) {
            i += 1;
        }
        if i >= n {
            return None;
        }
        match b[i] {
            b'>' => return Some((false, i + 1)),
            b'/' => {
                if b.get(i + 1) == Some(&b'>') {
                    return Some((true, i + 2));
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        // attribute name: its first character may be "="
        let name_start = i;
        i += 1;
        while i < n && !is_space(b[i]) && !matches!(b[i], b'/' | b'>' | b'=') {
            i += 1;
        }
        let name_end = i;
        while i < n && is_space(b[i]) {
            i += 1;
        }
        if i >= n {
            return None;
        }
        if b[i] != b'=' {
            add(&s[name_start..name_end], None, attrs);
            continue; // "/" and ">" are read by the next round, anything else starts a name
        }
        i += 1;
        while i < n && is_space(b[i]) {
            i += 1;
        }
        if i >= n {
            return None;
        }
        match b[i] {
            quote @ (b'"' | b'\'') => {
                // memchr: values run long (URLs, styles, data attributes)
                let k = crate::scan::find_byte(quote, &b[i + 1..])?;
                add(&s[name_start..name_end], Some(&s[i + 1..i + 1 + k]), attrs);
                i = i + 1 + k + 1;
            }
            b'>' => {
                add(&s[name_start..name_end], Some(""), attrs);
                return Some((false, i + 1));
            }
            _ => {
                let v = i;
                while i < n && !is_space(b[i]) && b[i] != b'>' {
                    i += 1;
                }
                if i >= n {
                    return None;
                }
                add(&s[name_start..name_end], Some(&s[v..i]), attrs);
            }
        }
    }
}

fn tag_name_end(b: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < b.len() && !is_space(b[i]) && b[i] != b'/' && b[i] != b'>' {
        i += 1;
    }
    i
}

fn start_tag(s: &str, pos: usize, names: &mut Names, attrs: &mut Attrs) -> Markup {
    let b = s.as_bytes();
    let name_end = tag_name_end(b, pos + 1);
    match attributes(s, name_end, names, attrs) {
        Some((self_closing, end)) => {
            Markup::StartTag { name: name(&s[pos + 1..name_end], names), self_closing, end }
        }
        None => Markup::CutStartTag { name: name(&s[pos + 1..name_end], names) },
    }
}

fn end_tag(s: &str, pos: usize, names: &mut Names, attrs: &mut Attrs) -> Markup {
    let b = s.as_bytes();
    let name_end = tag_name_end(b, pos + 2);
    match attributes(s, name_end, names, attrs) {
        Some((_, end)) => Markup::EndTag { name: name(&s[pos + 2..name_end], names), end },
        None => Markup::Skip(b.len()),
    }
}
