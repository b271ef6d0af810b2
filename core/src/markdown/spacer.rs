//! `strip_spacer_images`: the reference's `_SPACER_IMG` substitution, case-insensitive with
//! Python's folds (`ſ` is an `s`, `K` (Kelvin) a `k`, `İ`/`ı` an `i`):
//!
//! ```text
//! <img\b[^>]*?(?:(?:width|height)\s*=\s*["']?\s*1\b
//!               |src\s*=\s*["'][^"']*(?:trans(?:parent)?|spacer|blank|pixel|1x1|clear)[^"']*["']
//!               |src\s*=\s*["']data:image[^"']*["'])[^>]*>
//! ```
//!
//! The lazy `[^>]*?` tries each position before the tag's first `>` in turn, and at each the
//! three alternatives in order; the quoted `src` values may run past that `>`, and the match
//! then ends at the first `>` after the value.

use std::borrow::Cow;

use super::chars::{decode, ignorecase_len, is_word, skip_space};

pub fn strip_spacer_images(html: &[u8]) -> Cow<'_, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(k) = crate::scan::find_byte(b'<', &html[i..]) {
        let lt = i + k;
        match spacer_at(html, lt) {
            Some(end) => {
                let out = out.get_or_insert_with(|| Vec::with_capacity(html.len()));
                out.extend_from_slice(&html[copied..lt]);
                copied = end;
                i = end;
            }
            None => i = lt + 1,
        }
        if i >= html.len() {
            break;
        }
    }
    match out {
        None => Cow::Borrowed(html),
        Some(mut out) => {
            out.extend_from_slice(&html[copied..]);
            Cow::Owned(out)
        }
    }
}

/// The case-insensitive ASCII `word` at `i`: where it ends.
fn word_at(b: &[u8], mut i: usize, word: &[u8]) -> Option<usize> {
    for &letter in word {
        if i >= b.len() {
            return None;
        }
        let n = if letter.is_ascii_alphabetic() {
            ignorecase_len(b, i, letter)
        } else {
            (b[i] == letter) as usize
        };
        if n == 0 {
            return None;
        }
        i += n;
    }
    Some(i)
}

/// `\b` after a word character: the end of the text or a non-word character.
fn word_boundary_after(b: &[u8], i: usize) -> bool {
    i >= b.len() || !is_word(decode(b, i).0)
}

fn find_gt(b: &[u8], from: usize) -> Option<usize> {
    crate::scan::find_byte(b'>', b.get(from..)?).map(|k| from + k)
}

/// Where the match starting at `lt` ends, if one does.
fn spacer_at(b: &[u8], lt: usize) -> Option<usize> {
    let after = word_at(b, lt + 1, b"img")?;
    if !word_boundary_after(b, after) {
        return None;
    }
    let first_gt = find_gt(b, after)?;
    let mut p = after;
    while p < first_gt {
        if width_or_height_one(b, p) {
            // it holds no ">": the match ends at the tag's first one
            return Some(first_gt + 1);
        }
        if let Some(value_end) = src_value(b, p) {
            if let Some(gt) = find_gt(b, value_end) {
                return Some(gt + 1);
            }
        }
        p += decode(b, p).1;
    }
    None
}

/// Whether `(?:width|height)\s*=\s*["']?\s*1\b` matches at `p`.
fn width_or_height_one(b: &[u8], p: usize) -> bool {
    let Some(name_end) = word_at(b, p, b"width").or_else(|| word_at(b, p, b"height")) else {
        return false;
    };
    let eq = skip_space(b, name_end);
    if b.get(eq) != Some(&b'=') {
        return false;
    }
    let mut k = skip_space(b, eq + 1);
    if matches!(b.get(k), Some(b'"' | b'\'')) {
        k += 1;
    }
    k = skip_space(b, k);
    b.get(k) == Some(&b'1') && word_boundary_after(b, k + 1)
}

/// `src\s*=\s*["']` then a quoted value that holds a spacer word or starts with
/// `data:image`, up to the next quote: the end of that quote.
fn src_value(b: &[u8], p: usize) -> Option<usize> {
    let name_end = word_at(b, p, b"src")?;
    let eq = skip_space(b, name_end);
    if b.get(eq) != Some(&b'=') {
        return None;
    }
    let open = skip_space(b, eq + 1);
    if !matches!(b.get(open), Some(b'"' | b'\'')) {
        return None;
    }
    let start = open + 1;
    let close = start + b[start..].iter().position(|&c| c == b'"' || c == b'\'')?;
    let value = &b[start..close];
    // at each character of the value (not inside one: a continuation byte could decode as
    // a folded letter)
    let spacer = (0..value.len()).filter(|&k| value[k] & 0xc0 != 0x80).any(|k| {
        [&b"trans"[..], b"spacer", b"blank", b"pixel", b"1x1", b"clear"]
            .iter()
            .any(|word| word_at(value, k, word).is_some())
    });
    if spacer || word_at(value, 0, b"data:image").is_some() {
        Some(close + 1)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(s: &str) -> String {
        String::from_utf8(strip_spacer_images(s.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn spacers_go() {
        assert_eq!(strip("<p><img src=\"a/spacer.gif\">x</p>"), "<p>x</p>");
        assert_eq!(strip("<IMG width=1 src=a>"), "");
        assert_eq!(strip("<img width=12 src=a>"), "<img width=12 src=a>");
        assert_eq!(strip("<img src='a>pixel' b>c"), "c");
        assert_eq!(strip("<imgx src='pixel'>"), "<imgx src='pixel'>");
        assert_eq!(strip("<img \u{17f}rc='data:image/x'>"), "");
    }
}
