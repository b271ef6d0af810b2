//! `html.unescape` (what `html.parser` does to every attribute value) and `int()` of a
//! decimal string, with the one error both can raise.

use super::chars::{decode, push_char};
use super::spec_error::SpecError;

/// Python's limit on the digits `int()` converts (`sys.get_int_max_str_digits()`).
pub const INT_MAX_STR_DIGITS: usize = 4300;

pub fn int_too_long(digits: usize) -> SpecError {
    SpecError::value(format!(
        "Exceeds the limit ({INT_MAX_STR_DIGITS} digits) for integer string conversion: value \
         has {digits} digits; use sys.set_int_max_str_digits() to increase the limit"
    ))
}

/// `html.entities.html5[name]`.
pub fn html5(name: &[u8]) -> Option<&'static str> {
    crate::py_tables::HTML5
        .binary_search_by(|(k, _)| k.as_bytes().cmp(name))
        .ok()
        .map(|k| crate::py_tables::HTML5[k].1)
}

/// The value of a run of ASCII digits in `base` (16 or 10), saturated above `u32::MAX`.
pub fn digits_value(digits: &[u8], base: u32) -> u64 {
    let mut v: u64 = 0;
    for &d in digits {
        v = v * base as u64 + (d as char).to_digit(base).unwrap_or(0) as u64;
        if v > u32::MAX as u64 {
            return u32::MAX as u64 + 1;
        }
    }
    v
}

/// `html.unescape(s)`.
pub fn unescape(s: &[u8]) -> Result<Vec<u8>, SpecError> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while let Some(k) = crate::scan::find_byte(b'&', &s[i..]) {
        let amp = i + k;
        out.extend_from_slice(&s[i..amp]);
        match reference_at(s, amp)? {
            Some(end) => {
                replace_reference(&s[amp + 1..end], &mut out)?;
                i = end;
            }
            None => {
                out.push(b'&');
                i = amp + 1;
            }
        }
    }
    out.extend_from_slice(&s[i..]);
    Ok(out)
}

/// Where `html._charref` (`&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)`)
/// matching at `amp` ends, if it matches.
fn reference_at(s: &[u8], amp: usize) -> Result<Option<usize>, SpecError> {
    let n = s.len();
    let mut j = amp + 1;
    if j >= n {
        return Ok(None);
    }
    if s[j] == b'#' {
        j += 1;
        let hex = j < n && (s[j] == b'x' || s[j] == b'X');
        let digits_start = if hex { j + 1 } else { j };
        let mut e = digits_start;
        while e < n && (if hex { s[e].is_ascii_hexdigit() } else { s[e].is_ascii_digit() }) {
            e += 1;
        }
        if e == digits_start {
            return Ok(None);
        }
        if e < n && s[e] == b';' {
            e += 1;
        }
        return Ok(Some(e));
    }
    let mut count = 0;
    while j < n && count < 32 && !matches!(s[j], b'\t' | b'\n' | 0x0c | b' ' | b'<' | b'&' | b'#' | b';') {
        j += decode(s, j).1;
        count += 1;
    }
    if count == 0 {
        return Ok(None);
    }
    if j < n && s[j] == b';' {
        j += 1;
    }
    Ok(Some(j))
}

/// `html._replace_charref` of the reference `body` (what follows `&`).
fn replace_reference(body: &[u8], out: &mut Vec<u8>) -> Result<(), SpecError> {
    if body[0] == b'#' {
        let (digits, base) =
            if body[1] == b'x' || body[1] == b'X' { (&body[2..], 16) } else { (&body[1..], 10) };
        let digits = digits.strip_suffix(b";").unwrap_or(digits);
        if base == 10 && digits.len() > INT_MAX_STR_DIGITS {
            return Err(int_too_long(digits.len()));
        }
        let num = digits_value(digits, base);
        if let Ok(k) = crate::py_tables::INVALID_CHARREFS.binary_search_by(|&(c, _)| (c as u64).cmp(&num)) {
            out.extend_from_slice(crate::py_tables::INVALID_CHARREFS[k].1.as_bytes());
        } else if (0xd800..=0xdfff).contains(&num) || num > 0x10ffff {
            push_char(out, 0xfffd);
        } else if crate::py_tables::INVALID_CODEPOINTS.binary_search(&(num as u32)).is_err() {
            push_char(out, num as u32);
        }
        return Ok(());
    }
    if let Some(text) = html5(body) {
        out.extend_from_slice(text.as_bytes());
        return Ok(());
    }
    // the longest name the table knows that starts the reference, at least two characters
    let mut ends = Vec::new();
    let mut i = 0;
    while i < body.len() {
        i += decode(body, i).1;
        ends.push(i);
    }
    for &end in ends.iter().rev().skip(1) {
        if ends.len() < 3 || end < ends[1] {
            break;
        }
        if let Some(text) = html5(&body[..end]) {
            out.extend_from_slice(text.as_bytes());
            out.extend_from_slice(&body[end..]);
            return Ok(());
        }
    }
    out.push(b'&');
    out.extend_from_slice(body);
    Ok(())
}

/// `int(s)` for a `str` in base 10, or None where Python raises `ValueError` (the digit limit
/// included). Sign and decimal digits (most significant first, no leading zeros).
pub fn parse_int(s: &[u8]) -> Option<(bool, Vec<u8>)> {
    // int() reads every Unicode space as a space and every decimal digit as its ASCII digit
    let mut ascii = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let (c, n) = decode(s, i);
        i += n;
        if super::chars::is_space(c) {
            ascii.push(b' ');
        } else if c < 0x80 {
            ascii.push(c as u8);
        } else if super::chars::is_decimal(c) {
            ascii.push(b'0' + super::chars::decimal_value(c) as u8);
        } else {
            return None;
        }
    }
    let t: &[u8] = {
        let start = ascii.iter().position(|c| !c.is_ascii_whitespace() && *c != 0x0b);
        let end = ascii.iter().rposition(|c| !c.is_ascii_whitespace() && *c != 0x0b);
        match (start, end) {
            (Some(a), Some(b)) => &ascii[a..=b],
            _ => return None,
        }
    };
    let (negative, body) = match t[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    // digits, single underscores only between digits
    if body.is_empty() || !body[0].is_ascii_digit() || !body[body.len() - 1].is_ascii_digit() {
        return None;
    }
    let mut digits = Vec::with_capacity(body.len());
    let mut previous_underscore = false;
    for &c in body {
        if c == b'_' {
            if previous_underscore {
                return None;
            }
            previous_underscore = true;
        } else if c.is_ascii_digit() {
            digits.push(c - b'0');
            previous_underscore = false;
        } else {
            return None;
        }
    }
    if digits.len() > INT_MAX_STR_DIGITS {
        return None;
    }
    let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len() - 1);
    digits.drain(..first);
    let negative = negative && digits != [0];
    Some((negative, digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn un(s: &str) -> String {
        String::from_utf8(unescape(s.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn unescape_like_python() {
        assert_eq!(
            un("a &amp; b &amp c &ampx &notit; &#x41;&#65 &#0; &#xD800; &#1;"),
            "a & b & c &x \u{ac}it; AA \u{fffd} \u{fffd} "
        );
        assert_eq!(un("&#128;&zz;&"), "\u{20ac}&zz;&");
        assert!(unescape(format!("&#{}", "1".repeat(4301)).as_bytes()).is_err());
    }

    #[test]
    fn int_like_python() {
        assert_eq!(parse_int(b" -0_1 "), Some((true, vec![1])));
        assert_eq!(parse_int("\u{663}\u{3000}".as_bytes()), Some((false, vec![3])));
        assert_eq!(parse_int(b"-0"), Some((false, vec![0])));
        assert_eq!(parse_int(b"1__0"), None);
        assert_eq!(parse_int(b""), None);
        assert_eq!(parse_int(b"0x1"), None);
    }
}
