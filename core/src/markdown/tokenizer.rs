//! CPython 3.11's `html.parser.HTMLParser` (with `_markupbase`), as html2text drives it:
//! `convert_charrefs=False`, the whole page fed once, then `feed("")`, then `close()` — three
//! passes of `goahead` (end=0, 0, 1) over what is left, which matters because a pass stops
//! early at a few constructs (`&#` that is no reference, an unterminated tag or script) and
//! the last pass hands what remains to `handle_data` as it is.
//!
//! Each of html.parser's regular expressions is a function here, written to find the match
//! Python's backtracking engine finds (the comments give the pattern).

use super::chars::{decode, decode_before, ignorecase_len, is_space, skip_space, space_len};
use super::spec_error::SpecError;
use super::unescape::unescape;

/// An attribute as `html.parser` reports it: lowered name (raw bytes here: the consumer
/// compares it) and its value, `None` for a bare name, unescaped otherwise.
pub struct Attr<'a> {
    pub name: &'a [u8],
    pub value: Option<Vec<u8>>,
}

/// What `html.parser` calls on its subclass (comments, declarations and processing
/// instructions are dropped: html2text ignores them).
pub trait Handler {
    fn start_tag(&mut self, name: &[u8], attrs: Vec<Attr>) -> Result<(), SpecError>;
    fn end_tag(&mut self, name: &[u8]) -> Result<(), SpecError>;
    fn data(&mut self, data: &[u8]) -> Result<(), SpecError>;
    fn charref(&mut self, name: &[u8]) -> Result<(), SpecError>;
    fn entityref(&mut self, name: &[u8]) -> Result<(), SpecError>;
    /// `handle_startendtag`: html2text keeps html.parser's (start, then end)
    fn start_end_tag(&mut self, name: &[u8], attrs: Vec<Attr>) -> Result<(), SpecError> {
        self.start_tag(name, attrs)?;
        self.end_tag(name)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Cdata {
    Script,
    Style,
}

impl Cdata {
    fn name(self) -> &'static [u8] {
        match self {
            Cdata::Script => b"script",
            Cdata::Style => b"style",
        }
    }
}

struct Parser<'a, H: Handler> {
    raw: &'a [u8],
    handler: &'a mut H,
    cdata: Option<Cdata>,
}

/// Tokenize `data` as html2text's `handle` does (`feed(data)`, `feed("")`, `close()`).
pub fn feed<H: Handler>(data: &[u8], handler: &mut H) -> Result<(), SpecError> {
    let mut parser = Parser { raw: data, handler, cdata: None };
    let mut pos = 0;
    for end in [false, false, true] {
        pos = parser.goahead(pos, end)?;
    }
    Ok(())
}

// ── small pattern pieces ───────────────────────────────────────────────────────────────

/// The first `needle` at or after `from` (memchr: attribute values, URLs most, run long).
#[inline]
fn find_byte(b: &[u8], from: usize, needle: u8) -> Option<usize> {
    crate::scan::find_byte(needle, b.get(from..)?).map(|k| from + k)
}

/// Whether the character before byte `k` is one of `'"/` or whitespace (the attribute
/// name's lookbehind `(?<=['"\s/])`).
#[inline]
fn attr_lookbehind(b: &[u8], k: usize) -> bool {
    if k == 0 {
        return false;
    }
    let x = b[k - 1];
    if x < 0x80 {
        return matches!(x, b'\'' | b'"' | b'/') || is_space(x as u32);
    }
    is_space(decode_before(b, k))
}

/// `(?:\s|/(?!>))*` from `k`.
#[inline]
fn skip_space_or_slash(b: &[u8], mut k: usize) -> usize {
    while k < b.len() {
        if b[k] == b'/' {
            if b.get(k + 1) == Some(&b'>') {
                break;
            }
            k += 1;
            continue;
        }
        let n = space_len(b, k);
        if n == 0 {
            break;
        }
        k += n;
    }
    k
}

/// `[^\t\n\r\f />\x00]*` from `k`: a tag name's rest.
#[inline]
fn tag_name_end(b: &[u8], mut k: usize) -> usize {
    while k < b.len() && !matches!(b[k], b'\t' | b'\n' | b'\r' | 0x0c | b' ' | b'/' | b'>' | 0) {
        k += 1;
    }
    k
}

/// `[^\s/=>]*` (with `first` also excluding `=` or not) from `k`: an attribute name.
#[inline]
fn attr_name_end(b: &[u8], mut k: usize) -> usize {
    while k < b.len() {
        let x = b[k];
        if matches!(x, b'/' | b'=' | b'>') || space_len(b, k) > 0 {
            break;
        }
        k += if x < 0x80 { 1 } else { decode(b, k).1 };
    }
    k
}

/// Whether an attribute name can start at `k`: `(?<=['"\s/])[^\s/>]`.
#[inline]
fn attr_name_starts(b: &[u8], k: usize) -> bool {
    k < b.len() && attr_lookbehind(b, k) && !matches!(b[k], b'/' | b'>') && space_len(b, k) == 0
}

/// `'[^']*'|"[^"]*"|(?!['"])[^>\s]*` at `v`: where the value ends, None where it cannot
/// match (an unclosed quote).
#[inline]
fn value_end(b: &[u8], v: usize) -> Option<usize> {
    match b.get(v) {
        Some(&q @ (b'\'' | b'"')) => find_byte(b, v + 1, q).map(|e| e + 1),
        _ => {
            let mut e = v;
            while e < b.len() && b[e] != b'>' && space_len(b, e) == 0 {
                e += if b[e] < 0x80 { 1 } else { decode(b, e).1 };
            }
            Some(e)
        }
    }
}

/// `\s*=+\s*(value)` at `k` (right after an attribute name), as the backtracking engine
/// matches it: `(value start, value end)`, or None where the group does not match. When the
/// value is an unclosed quote, the engine gives back one space (an empty bare value before
/// it) or else one `=` (a bare value starting with it).
fn value_indicator(b: &[u8], k: usize) -> Option<(usize, usize)> {
    let eq = skip_space(b, k);
    if b.get(eq) != Some(&b'=') {
        return None;
    }
    let mut eq_end = eq;
    while b.get(eq_end) == Some(&b'=') {
        eq_end += 1;
    }
    let v = skip_space(b, eq_end);
    if let Some(e) = value_end(b, v) {
        return Some((v, e));
    }
    if v > eq_end {
        let mut last = eq_end;
        while last + space_len(b, last) < v {
            last += space_len(b, last);
        }
        return Some((last, last));
    }
    if eq_end - eq >= 2 {
        let start = eq_end - 1;
        return value_end(b, start).map(|e| (start, e));
    }
    None
}

/// `</\s*NAME\s*>` with NAME matched case-insensitively (`set_cdata_mode`'s pattern):
/// the start of its first match at or after `from`, and its end.
fn find_cdata_end(b: &[u8], from: usize, name: &[u8]) -> Option<(usize, usize)> {
    let mut i = from;
    while let Some(lt) = find_byte(b, i, b'<') {
        i = lt + 1;
        if b.get(lt + 1) != Some(&b'/') {
            continue;
        }
        let mut k = skip_space(b, lt + 2);
        let mut ok = true;
        for &letter in name {
            if k >= b.len() {
                ok = false;
                break;
            }
            let n = ignorecase_len(b, k, letter);
            if n == 0 {
                ok = false;
                break;
            }
            k += n;
        }
        if !ok {
            continue;
        }
        k = skip_space(b, k);
        if b.get(k) == Some(&b'>') {
            return Some((lt, k + 1));
        }
    }
    None
}

/// The end of `]\s*]\s*>` (`double`) or `]\s*>` searched from `from`.
fn find_section_close(b: &[u8], from: usize, double: bool) -> Option<usize> {
    let mut i = from;
    while let Some(k) = find_byte(b, i, b']') {
        i = k + 1;
        let mut j = skip_space(b, k + 1);
        if double {
            if b.get(j) != Some(&b']') {
                continue;
            }
            j = skip_space(b, j + 1);
        }
        if b.get(j) == Some(&b'>') {
            return Some(j + 1);
        }
    }
    None
}

impl<'a, H: Handler> Parser<'a, H> {
    /// `goahead(end)` from `i`; returns where the next pass starts (`self.rawdata`).
    fn goahead(&mut self, mut i: usize, end: bool) -> Result<usize, SpecError> {
        let raw = self.raw;
        let n = raw.len();
        while i < n {
            let j = match self.cdata {
                Some(cdata) => match find_cdata_end(raw, i, cdata.name()) {
                    Some((start, _)) => start,
                    None => break,
                },
                // (16 bytes tested at once: text runs between tags)
                None => crate::scan::find_any(&raw[i..], [b'<', b'&']).map_or(n, |k| i + k),
            };
            if i < j {
                self.handler.data(&raw[i..j])?;
            }
            i = j;
            if i == n {
                break;
            }
            if raw[i] == b'<' {
                let next = raw.get(i + 1).copied();
                let k = if next.is_some_and(|c| c.is_ascii_alphabetic()) {
                    self.parse_starttag(i)?
                } else if next == Some(b'/') {
                    self.parse_endtag(i)?
                } else if raw[i..].starts_with(b"<!--") {
                    self.parse_comment(i)
                } else if next == Some(b'?') {
                    find_byte(raw, i + 2, b'>').map_or(-1, |g| g as isize + 1)
                } else if next == Some(b'!') {
                    self.parse_html_declaration(i)?
                } else if i + 1 < n {
                    self.handler.data(b"<")?;
                    (i + 1) as isize
                } else {
                    break;
                };
                let k = if k < 0 {
                    if !end {
                        break;
                    }
                    let k = match find_byte(raw, i + 1, b'>') {
                        Some(g) => g + 1,
                        None => find_byte(raw, i + 1, b'<').unwrap_or(i + 1),
                    };
                    self.handler.data(&raw[i..k])?;
                    k
                } else {
                    k as usize
                };
                i = k;
            } else if raw[i..].starts_with(b"&#") {
                match charref_end(raw, i) {
                    Some(terminator) => {
                        self.handler.charref(&raw[i + 2..terminator])?;
                        // the terminator is consumed only when it is ";"
                        i = if raw[terminator] == b';' { terminator + 1 } else { terminator };
                        continue;
                    }
                    None => {
                        if find_byte(raw, i, b';').is_some() {
                            self.handler.data(b"&#")?;
                            i += 2;
                        }
                        break;
                    }
                }
            } else {
                // "&"
                if let Some(terminator) = entityref_end(raw, i) {
                    self.handler.entityref(&raw[i + 1..terminator])?;
                    i = if raw[terminator] == b';' { terminator + 1 } else { terminator };
                    continue;
                }
                if i + 1 < n && (raw[i + 1].is_ascii_alphabetic() || raw[i + 1] == b'#') {
                    // incomplete: at the very end of the input in the last pass, the "&" goes
                    if end && i + 2 == n {
                        i += 1;
                    }
                    break;
                } else if i + 1 < n {
                    self.handler.data(b"&")?;
                    i += 1;
                } else {
                    break;
                }
            }
        }
        if end && i < n && self.cdata.is_none() {
            self.handler.data(&raw[i..n])?;
            i = n;
        }
        Ok(i)
    }

    /// `parse_starttag`: the end of the tag, or -1 where it is not complete.
    fn parse_starttag(&mut self, i: usize) -> Result<isize, SpecError> {
        let raw = self.raw;
        let endpos = self.check_for_whole_start_tag(i);
        if endpos < 0 {
            return Ok(endpos);
        }
        let endpos = endpos as usize;
        // tagfind_tolerant: ([a-zA-Z][^\t\n\r\f />\x00]*)(?:\s|/(?!>))*
        let name_end = tag_name_end(raw, i + 2);
        let name = &raw[i + 1..name_end];
        let mut k = skip_space_or_slash(raw, name_end);
        let mut attrs = Vec::new();
        // attrfind_tolerant, as long as it matches before endpos
        while k < endpos {
            if !attr_name_starts(raw, k) {
                break;
            }
            let attr_end = attr_name_end(raw, k + decode(raw, k).1);
            let attr_name = &raw[k..attr_end];
            let (value, after) = match value_indicator(raw, attr_end) {
                Some((v, e)) => {
                    let mut value = &raw[v..e];
                    if value.len() >= 2
                        && (value[0] == b'\'' || value[0] == b'"')
                        && value[value.len() - 1] == value[0]
                    {
                        value = &value[1..value.len() - 1];
                    }
                    let value = if value.contains(&b'&') { unescape(value)? } else { value.to_vec() };
                    (Some(value), e)
                }
                None => (None, attr_end),
            };
            attrs.push(Attr { name: attr_name, value });
            k = skip_space_or_slash(raw, after);
        }
        let rest = if k < endpos { super::chars::strip(&raw[k..endpos]) } else { b"" };
        if rest == b">" {
            self.handler.start_tag(name, attrs)?;
            if super::chars::lower_equals(name, "script") {
                self.cdata = Some(Cdata::Script);
            } else if super::chars::lower_equals(name, "style") {
                self.cdata = Some(Cdata::Style);
            }
        } else if rest == b"/>" {
            self.handler.start_end_tag(name, attrs)?;
        } else {
            self.handler.data(&raw[i..endpos])?;
        }
        Ok(endpos as isize)
    }

    /// `check_for_whole_start_tag`, with `locatestarttagend_tolerant`:
    /// `<[a-zA-Z][^\t\n\r\f />\x00]*(?:[\s/]*(?:ATTRIBUTE(?:\s*=+\s*VALUE\s*)?(?:\s|/(?!>))*)*)?\s*`
    fn check_for_whole_start_tag(&self, i: usize) -> isize {
        let raw = self.raw;
        let mut k = tag_name_end(raw, i + 2);
        // [\s/]*
        while k < raw.len() {
            if raw[k] == b'/' {
                k += 1;
                continue;
            }
            let n = space_len(raw, k);
            if n == 0 {
                break;
            }
            k += n;
        }
        while attr_name_starts(raw, k) {
            let attr_end = attr_name_end(raw, k + decode(raw, k).1);
            k = match value_indicator(raw, attr_end) {
                Some((_, e)) => skip_space(raw, e),
                None => attr_end,
            };
            k = skip_space_or_slash(raw, k);
        }
        let j = skip_space(raw, k);
        match raw.get(j) {
            Some(b'>') => (j + 1) as isize,
            Some(b'/') if raw[j..].starts_with(b"/>") => (j + 2) as isize,
            Some(b'/') => -1,
            None => -1,
            Some(c) if c.is_ascii_alphabetic() || *c == b'=' => -1,
            Some(_) => j as isize,
        }
    }

    /// `parse_endtag`.
    fn parse_endtag(&mut self, i: usize) -> Result<isize, SpecError> {
        let raw = self.raw;
        let Some(gt) = find_byte(raw, i + 1, b'>') else {
            return Ok(-1);
        };
        let gtpos = gt + 1;
        // endtagfind: </\s*([a-zA-Z][-.a-zA-Z0-9:_]*)\s*>
        let name_start = skip_space(raw, i + 2);
        let mut matched = None;
        if raw.get(name_start).is_some_and(|c| c.is_ascii_alphabetic()) {
            let mut e = name_start + 1;
            while e < raw.len()
                && (raw[e].is_ascii_alphanumeric() || matches!(raw[e], b'-' | b'.' | b':' | b'_'))
            {
                e += 1;
            }
            if skip_space(raw, e) == gt {
                matched = Some(&raw[name_start..e]);
            }
        }
        let Some(elem) = matched else {
            if self.cdata.is_some() {
                self.handler.data(&raw[i..gtpos])?;
                return Ok(gtpos as isize);
            }
            // tagfind_tolerant at i + 2
            if !raw.get(i + 2).is_some_and(|c| c.is_ascii_alphabetic()) {
                if raw[i..].starts_with(b"</>") {
                    return Ok((i + 3) as isize);
                }
                // parse_bogus_comment
                return Ok(find_byte(raw, i + 2, b'>').map_or(-1, |p| p as isize + 1));
            }
            let name_end = tag_name_end(raw, i + 3);
            let after = skip_space_or_slash(raw, name_end);
            let close = find_byte(raw, after, b'>').map_or(0, |p| p + 1);
            self.handler.end_tag(&raw[i + 2..name_end])?;
            return Ok(close as isize);
        };
        if let Some(cdata) = self.cdata {
            if !super::chars::lower_equals(elem, std::str::from_utf8(cdata.name()).unwrap()) {
                self.handler.data(&raw[i..gtpos])?;
                return Ok(gtpos as isize);
            }
        }
        self.handler.end_tag(elem)?;
        self.cdata = None;
        Ok(gtpos as isize)
    }

    /// `parse_comment` (`<!--` ... `--\s*>`).
    fn parse_comment(&self, i: usize) -> isize {
        let raw = self.raw;
        let mut from = i + 4;
        while let Some(k) = find_byte(raw, from, b'-') {
            from = k + 1;
            if raw.get(k + 1) != Some(&b'-') {
                continue;
            }
            let j = skip_space(raw, k + 2);
            if raw.get(j) == Some(&b'>') {
                return (j + 1) as isize;
            }
        }
        -1
    }

    /// `parse_html_declaration` (after `<!`, not a comment).
    fn parse_html_declaration(&self, i: usize) -> Result<isize, SpecError> {
        let raw = self.raw;
        if raw[i..].starts_with(b"<![") {
            return self.parse_marked_section(i);
        }
        if raw.len() >= i + 9 && raw[i + 2..i + 9].eq_ignore_ascii_case(b"doctype") {
            return Ok(find_byte(raw, i + 9, b'>').map_or(-1, |g| g as isize + 1));
        }
        // parse_bogus_comment
        Ok(find_byte(raw, i + 2, b'>').map_or(-1, |p| p as isize + 1))
    }

    /// `_markupbase.parse_marked_section`, with `_scan_name` (both raise on what they do not
    /// know).
    fn parse_marked_section(&self, i: usize) -> Result<isize, SpecError> {
        let raw = self.raw;
        let n = raw.len();
        let start = i + 3;
        if start == n {
            return Ok(-1);
        }
        // _declname_match: [a-zA-Z][-_.a-zA-Z0-9]*\s*
        if !raw[start].is_ascii_alphabetic() {
            let end = super::chars::advance_chars(raw, i, 20);
            return Err(SpecError::assertion(format!(
                "expected name token at {}",
                super::chars::py_repr(&raw[i..end])
            )));
        }
        let mut e = start + 1;
        while e < n && (raw[e].is_ascii_alphanumeric() || matches!(raw[e], b'-' | b'_' | b'.')) {
            e += 1;
        }
        let name = &raw[start..e];
        let j = skip_space(raw, e);
        if j == n {
            return Ok(-1);
        }
        let lower = name.to_ascii_lowercase();
        let double = match lower.as_slice() {
            b"temp" | b"cdata" | b"ignore" | b"include" | b"rcdata" => true,
            b"if" | b"else" | b"endif" => false,
            _ => {
                return Err(SpecError::assertion(format!(
                    "unknown status keyword {} in marked section",
                    super::chars::py_repr(&raw[start..j])
                )))
            }
        };
        Ok(find_section_close(raw, start, double).map_or(-1, |e| e as isize))
    }
}

/// `charref` (`&#(?:[0-9]+|[xX][0-9a-fA-F]+)[^0-9a-fA-F]`) at `i`: where its last
/// character (the terminator) starts.
fn charref_end(b: &[u8], i: usize) -> Option<usize> {
    let mut k = i + 2;
    let hex = matches!(b.get(k), Some(b'x' | b'X'));
    if hex {
        k += 1;
    }
    let digits = k;
    while k < b.len() && (if hex { b[k].is_ascii_hexdigit() } else { b[k].is_ascii_digit() }) {
        k += 1;
    }
    if k == digits || k >= b.len() || b[k].is_ascii_hexdigit() {
        return None;
    }
    Some(k)
}

/// `entityref` (`&([a-zA-Z][-.a-zA-Z0-9]*)[^a-zA-Z0-9]`) at `i`: where the name ends (the
/// terminator starts). When the name runs to the end of the input, the engine backs off to
/// its last `-` or `.`, which then is the terminator.
fn entityref_end(b: &[u8], i: usize) -> Option<usize> {
    if !b.get(i + 1).is_some_and(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let mut k = i + 2;
    while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'-' || b[k] == b'.') {
        k += 1;
    }
    if k < b.len() {
        return Some(k);
    }
    (i + 2..k).rev().find(|&p| b[p] == b'-' || b[p] == b'.')
}
