//! html2text's text escapes (`utils.escape_md_section` without `snob`, `utils.escape_md`)
//! and the whitespace collapse of `HTML2Text.o` (`re.sub(r"\s+", " ", data)`), with
//! Python's character classes.

use std::borrow::Cow;

use super::chars::{decode, is_decimal, skip_space, space_len};

/// `escape_md_section(text, snob=False)`: its four substitutions in order.
pub fn escape_md_section(text: &[u8]) -> Cow<'_, [u8]> {
    if !text.iter().any(|&c| matches!(c, b'\\' | b'.' | b'+' | b'-')) {
        return Cow::Borrowed(text);
    }
    // RE_MD_BACKSLASH_MATCHER: a backslash before one of \`*_{}[]()#+-.! is doubled
    let mut s: Cow<[u8]> = Cow::Borrowed(text);
    if text.contains(&b'\\') {
        let mut out = Vec::with_capacity(text.len() + 8);
        for (k, &c) in text.iter().enumerate() {
            out.push(c);
            if c == b'\\' && text.get(k + 1).is_some_and(|n| b"\\`*_{}[]()#+-.!".contains(n)) {
                out.push(b'\\');
            }
        }
        s = Cow::Owned(out);
    }
    for kind in [LineStart::Dot, LineStart::Plus, LineStart::Dash] {
        if let Some(escaped) = escape_line_starts(&s, kind) {
            s = Cow::Owned(escaped);
        }
    }
    s
}

#[derive(Clone, Copy)]
enum LineStart {
    /// RE_MD_DOT_MATCHER: `^(\s*\d+)(\.)(?=\s)`
    Dot,
    /// RE_MD_PLUS_MATCHER: `^(\s*)(\+)(?=\s)`
    Plus,
    /// RE_MD_DASH_MATCHER: `^(\s*)(-)(?=\s|\-)`
    Dash,
}

/// One MULTILINE substitution that puts a backslash before the marker found after the
/// whitespace at a line start (`^` is the text's start or follows "\n"; `\s*` may run over
/// several lines, and the next search starts after the marker). None when nothing matches.
fn escape_line_starts(s: &[u8], kind: LineStart) -> Option<Vec<u8>> {
    let marker = match kind {
        LineStart::Dot => b'.',
        LineStart::Plus => b'+',
        LineStart::Dash => b'-',
    };
    if !s.contains(&marker) {
        return None;
    }
    let mut inserts = Vec::new();
    let mut line = 0;
    loop {
        let q = skip_space(s, line);
        let at = match kind {
            LineStart::Dot => {
                let mut d = q;
                while d < s.len() {
                    let (c, n) = decode(s, d);
                    if !is_decimal(c) {
                        break;
                    }
                    d += n;
                }
                (d > q && s.get(d) == Some(&b'.')).then_some(d)
            }
            _ => (s.get(q) == Some(&marker)).then_some(q),
        };
        let matched = at.filter(|&m| {
            m + 1 < s.len()
                && (space_len(s, m + 1) > 0 || matches!(kind, LineStart::Dash) && s[m + 1] == b'-')
        });
        // the next line start after the match, or after this attempt's whitespace (line
        // starts inside it fail the same way)
        let from = match matched {
            Some(m) => {
                inserts.push(m);
                m + 1
            }
            None => q,
        };
        match s[from..].iter().position(|&c| c == b'\n') {
            Some(k) => line = from + k + 1,
            None => break,
        }
    }
    if inserts.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() + inserts.len());
    let mut last = 0;
    for m in inserts {
        out.extend_from_slice(&s[last..m]);
        out.push(b'\\');
        last = m;
    }
    out.extend_from_slice(&s[last..]);
    Some(out)
}

/// `escape_md`: a backslash before each of `\[]()`.
pub fn escape_md_into(out: &mut Vec<u8>, text: &[u8]) {
    for &c in text {
        if matches!(c, b'\\' | b'[' | b']' | b'(' | b')') {
            out.push(b'\\');
        }
        out.push(c);
    }
}

/// The length of the whitespace character at `k` (0 if none), reading only the lead bytes
/// a multi-byte space can start with (U+0085/U+00A0, U+1680, U+2000-U+205F, U+3000).
#[inline(always)]
fn space_at(data: &[u8], k: usize) -> usize {
    match data[k] {
        0x09..=0x0d | 0x1c..=0x20 => 1,
        0xc2 | 0xe1 | 0xe2 | 0xe3 => space_len(data, k),
        _ => 0,
    }
}

/// `re.sub(r"\s+", " ", data)`.
pub fn collapse_whitespace(data: &[u8]) -> Cow<'_, [u8]> {
    // the first run that is not a lone " "
    let mut k = 0;
    let dirty = loop {
        if k >= data.len() {
            return Cow::Borrowed(data);
        }
        let n = space_at(data, k);
        if n == 0 {
            k += 1;
            continue;
        }
        if data[k] != b' ' || (k + 1 < data.len() && space_at(data, k + 1) > 0) {
            break k;
        }
        k += 1;
    };
    let mut out = Vec::with_capacity(data.len());
    out.extend_from_slice(&data[..dirty]);
    let mut k = dirty;
    while k < data.len() {
        if space_at(data, k) > 0 {
            out.push(b' ');
            while k < data.len() {
                let n = space_at(data, k);
                if n == 0 {
                    break;
                }
                k += n;
            }
        } else {
            // up to the next byte that may start a space (continuation bytes never do)
            let start = k;
            k += 1;
            while k < data.len() && !matches!(data[k], 0x09..=0x0d | 0x1c..=0x20 | 0xc2 | 0xe1 | 0xe2 | 0xe3)
            {
                k += 1;
            }
            out.extend_from_slice(&data[start..k]);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        String::from_utf8(escape_md_section(s.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn section_escapes() {
        assert_eq!(esc("1. a"), "1\\. a");
        assert_eq!(esc("\n\n 12. a\n3.b\n+ c\n- d\n--e\n-x"), "\n\n 12\\. a\n3.b\n\\+ c\n\\- d\n\\--e\n-x");
        assert_eq!(esc("\\. \\a"), "\\\\. \\a");
        assert_eq!(esc("\u{663}. x"), "\u{663}\\. x");
        assert_eq!(esc("1."), "1.");
    }

    #[test]
    fn whitespace_collapse() {
        assert_eq!(&*collapse_whitespace(b"a b"), b"a b");
        assert_eq!(&*collapse_whitespace("a \u{a0}\n b\t".as_bytes()), b"a b ");
    }
}
