//! Python's view of text, on bytes: the converter reads and writes UTF-8 extended to lone
//! surrogates (what Python's `surrogatepass` error handler writes), so every `str` Python can
//! hold travels through it unchanged, and each character class is Python's own (tables from
//! `crate::py_tables`).

/// The code point starting at byte `i` of `b` and its byte length. `b` is UTF-8 with lone
/// surrogates allowed; a stray byte reads as itself (never produced by the caller's encoder).
#[inline]
pub fn decode(b: &[u8], i: usize) -> (u32, usize) {
    let c0 = b[i] as u32;
    if c0 < 0x80 {
        return (c0, 1);
    }
    let cont = |k: usize| b.get(i + k).map_or(0, |&x| (x & 0x3f) as u32);
    if c0 < 0xe0 {
        (((c0 & 0x1f) << 6) | cont(1), 2.min(b.len() - i))
    } else if c0 < 0xf0 {
        (((c0 & 0x0f) << 12) | (cont(1) << 6) | cont(2), 3.min(b.len() - i))
    } else {
        (((c0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3), 4.min(b.len() - i))
    }
}

/// The code point that ends just before byte `end`.
#[inline]
pub fn decode_before(b: &[u8], end: usize) -> u32 {
    let mut start = end - 1;
    while start > 0 && b[start] & 0xc0 == 0x80 {
        start -= 1;
    }
    decode(b, start).0
}

/// Append code point `c` (a surrogate too) to `out`.
#[inline]
pub fn push_char(out: &mut Vec<u8>, c: u32) {
    if c < 0x80 {
        out.push(c as u8);
    } else if c < 0x800 {
        out.extend_from_slice(&[0xc0 | (c >> 6) as u8, 0x80 | (c & 0x3f) as u8]);
    } else if c < 0x10000 {
        out.extend_from_slice(&[
            0xe0 | (c >> 12) as u8,
            0x80 | ((c >> 6) & 0x3f) as u8,
            0x80 | (c & 0x3f) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xf0 | (c >> 18) as u8,
            0x80 | ((c >> 12) & 0x3f) as u8,
            0x80 | ((c >> 6) & 0x3f) as u8,
            0x80 | (c & 0x3f) as u8,
        ]);
    }
}

fn in_ranges(table: &[(u32, u32)], c: u32) -> bool {
    match table.binary_search_by(|&(a, _)| a.cmp(&c)) {
        Ok(_) => true,
        Err(0) => false,
        Err(k) => c <= table[k - 1].1,
    }
}

/// `str.isspace` (and `\s`).
#[inline]
pub fn is_space(c: u32) -> bool {
    if c < 0x80 {
        return matches!(c, 0x09..=0x0d | 0x1c..=0x20);
    }
    in_ranges(crate::py_tables::PY_SPACE, c)
}

/// `str.isdecimal` (and `\d`).
#[inline]
pub fn is_decimal(c: u32) -> bool {
    if c < 0x80 {
        return (0x30..=0x39).contains(&c);
    }
    in_ranges(crate::py_tables::PY_DECIMAL, c)
}

/// The value `int()` reads from a decimal character.
pub fn decimal_value(c: u32) -> u32 {
    if c < 0x80 {
        return c - 0x30;
    }
    let k = crate::py_tables::PY_DECIMAL.partition_point(|&(a, _)| a <= c) - 1;
    (c - crate::py_tables::PY_DECIMAL[k].0) % 10
}

/// `\w`: `str.isalnum` or `_`.
#[inline]
pub fn is_word(c: u32) -> bool {
    if c < 0x80 {
        return (c as u8).is_ascii_alphanumeric() || c == 0x5f;
    }
    in_ranges(crate::py_tables::PY_WORD, c)
}

/// Whether the whitespace character (Python's `\s`) starts at byte `i`: its length, else 0.
#[inline]
pub fn space_len(b: &[u8], i: usize) -> usize {
    let x = b[i];
    if x < 0x80 {
        return matches!(x, 0x09..=0x0d | 0x1c..=0x20) as usize;
    }
    let (c, n) = decode(b, i);
    if is_space(c) {
        n
    } else {
        0
    }
}

/// The end of the run of whitespace starting at byte `i`.
#[inline]
pub fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        let n = space_len(b, i);
        if n == 0 {
            break;
        }
        i += n;
    }
    i
}

/// `s.strip()`.
pub fn strip(s: &[u8]) -> &[u8] {
    let mut start = 0;
    while start < s.len() {
        let n = space_len(s, start);
        if n == 0 {
            break;
        }
        start += n;
    }
    let mut end = s.len();
    while end > start {
        let mut k = end - 1;
        while k > start && s[k] & 0xc0 == 0x80 {
            k -= 1;
        }
        if space_len(s, k) == 0 {
            break;
        }
        end = k;
    }
    &s[start..end]
}

/// The ASCII letter a case-insensitive `re` pattern letter `letter` matches at byte `i`
/// (Python folds U+0130/U+0131 onto `i`, U+212A onto `k`, U+017F onto `s`): the length of
/// the character there when it matches, else 0.
#[inline]
pub fn ignorecase_len(b: &[u8], i: usize, letter: u8) -> usize {
    let x = b[i];
    if x < 0x80 {
        return (x.to_ascii_lowercase() == letter) as usize;
    }
    let (c, n) = decode(b, i);
    if crate::py_tables::IGNORECASE_FOLDS.iter().any(|&(f, l)| f == c && l == letter) {
        n
    } else {
        0
    }
}

/// Whether `name.lower()` (Python's) equals the lowercase ASCII `target`.
pub fn lower_equals(name: &[u8], target: &str) -> bool {
    let mut i = 0;
    for &t in target.as_bytes() {
        if i >= name.len() {
            return false;
        }
        let x = name[i];
        if x < 0x80 {
            if x.to_ascii_lowercase() != t {
                return false;
            }
            i += 1;
        } else {
            let (c, n) = decode(name, i);
            if !crate::py_tables::LOWER_TO_ASCII.iter().any(|&(f, l)| f == c && l == t) {
                return false;
            }
            i += n;
        }
    }
    i == name.len()
}

/// Python's `repr(s)` of a `str` (for the messages of the exceptions the specification
/// raises).
pub fn py_repr(s: &[u8]) -> String {
    let has_single = s.contains(&b'\'');
    let has_double = s.contains(&b'"');
    let quote = if has_single && !has_double { b'"' } else { b'\'' };
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(quote);
    let mut i = 0;
    while i < s.len() {
        let (c, n) = decode(s, i);
        i += n;
        match c {
            0x5c => out.extend_from_slice(b"\\\\"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0a => out.extend_from_slice(b"\\n"),
            0x0d => out.extend_from_slice(b"\\r"),
            _ if c == quote as u32 => {
                out.push(b'\\');
                out.push(quote);
            }
            _ if (0x20..0x7f).contains(&c) => out.push(c as u8),
            _ if c >= 0x80 && in_ranges(crate::py_tables::PY_PRINTABLE, c) => push_char(&mut out, c),
            _ if c < 0x100 => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
            _ if c < 0x10000 => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            _ => out.extend_from_slice(format!("\\U{c:08x}").as_bytes()),
        }
    }
    out.push(quote);
    String::from_utf8_lossy(&out).into_owned()
}

/// Byte offset of the `count`-th character boundary of `s` from `start` (or `s.len()`).
pub fn advance_chars(s: &[u8], start: usize, count: usize) -> usize {
    let mut i = start;
    for _ in 0..count {
        if i >= s.len() {
            return s.len();
        }
        i += decode(s, i).1;
    }
    i
}

/// Where `needle` (non-empty) first occurs in `hay`.
pub(crate) fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(k) = crate::scan::find_byte(needle[0], hay.get(i..)?) {
        let at = i + k;
        if hay[at..].starts_with(needle) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find_bytes(hay, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surrogates_round_trip() {
        let mut out = Vec::new();
        push_char(&mut out, 0xd800);
        assert_eq!(out, [0xed, 0xa0, 0x80]);
        assert_eq!(decode(&out, 0), (0xd800, 3));
    }

    #[test]
    fn python_classes() {
        assert!(is_space(0x1c) && is_space(0x85) && is_space(0x3000) && !is_space(0x200b));
        assert!(is_decimal(0x663) && decimal_value(0x663) == 3 && !is_decimal(0xb2));
        assert!(is_word(0xb2) && is_word(b'_' as u32) && !is_word(0x93e));
        assert_eq!(strip("\u{a0} a b\u{2028}".as_bytes()), b"a b");
        assert!(lower_equals("BLOC\u{212a}QUOTE".as_bytes(), "blockquote"));
        assert!(!lower_equals("scr\u{130}pt".as_bytes(), "script"));
        assert_eq!(ignorecase_len("\u{17f}".as_bytes(), 0, b's'), 2);
    }

    #[test]
    fn repr_like_python() {
        assert_eq!(py_repr(b"a'b"), "\"a'b\"");
        assert_eq!(py_repr("x\u{a0}\n\\".as_bytes()), "'x\\xa0\\n\\\\'");
        assert_eq!(py_repr("'\"".as_bytes()), "'\\'\"'");
        assert_eq!(py_repr("\u{2028}\u{e9}".as_bytes()), "'\\u2028\u{e9}'");
    }
}
