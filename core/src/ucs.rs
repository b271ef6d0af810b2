//! UTF-8 of text held as fixed-width code points — 1, 2 or 4 bytes each (Latin-1, UCS-2,
//! UCS-4), the three ways CPython stores a `str` (PEP 393) — for the Python doors: a page's
//! `str` is read where CPython keeps it (runtime/native.py) and encoded here, in place of
//! `str.encode("utf-8")`, whose encoder takes a branch per character (a sixth of reconstruct's
//! benchmark: pages are stored as UCS-2 for a few non-ASCII characters, and their markup and
//! whitespace are ASCII). Here runs of 16 ASCII code points are tested and narrowed at once, in
//! loops the compiler vectorizes.
//!
//! A surrogate code point (U+D800–U+DFFF: a lone surrogate in Python, which UTF-8 cannot hold)
//! is refused, so the caller encodes that text as before, with its own error handling.

use std::mem::MaybeUninit;

/// The code points of one storage width.
pub trait CodeUnit: Copy {
    fn point(self) -> u32;
}

impl CodeUnit for u8 {
    #[inline(always)]
    fn point(self) -> u32 {
        self as u32
    }
}

impl CodeUnit for u16 {
    #[inline(always)]
    fn point(self) -> u32 {
        self as u32
    }
}

impl CodeUnit for u32 {
    #[inline(always)]
    fn point(self) -> u32 {
        self
    }
}

/// Code points tested for ASCII at once.
const RUN: usize = 16;

/// The UTF-8 of `points`, or None where one is a surrogate (or above U+10FFFF); in a buffer
/// with room for the longest UTF-8 of that many points (`shrink_to_fit` it to hand it out).
pub fn utf8_of<T: CodeUnit>(points: &[T]) -> Option<Vec<u8>> {
    // room for the longest UTF-8 of this width (pages a run leaves unwritten are never
    // touched), given back once written: one pass over the points
    let longest = match std::mem::size_of::<T>() {
        1 => 2,
        2 => 3,
        _ => 4,
    };
    // (+ 3: write_point takes 4 bytes of room)
    let mut out = Vec::with_capacity(points.len() * longest + 3);
    let buffer = out.spare_capacity_mut();
    let mut len = 0;
    let mut runs = points.chunks_exact(RUN);
    for run in &mut runs {
        if run.iter().fold(0, |any, &unit| any | unit.point()) < 0x80 {
            for (byte, &unit) in buffer[len..len + RUN].iter_mut().zip(run) {
                byte.write(unit.point() as u8);
            }
            len += RUN;
        } else {
            for &unit in run {
                len += write_point(&mut buffer[len..len + 4], unit.point())?;
            }
        }
    }
    for &unit in runs.remainder() {
        len += write_point(&mut buffer[len..len + 4], unit.point())?;
    }
    // SAFETY: the first len bytes were written above
    unsafe { out.set_len(len) };
    Some(out)
}

/// Writes the UTF-8 of `c` at the start of `to`; its length, or None for a surrogate or a
/// point above U+10FFFF.
#[inline(always)]
fn write_point(to: &mut [MaybeUninit<u8>], c: u32) -> Option<usize> {
    if c < 0x80 {
        to[0].write(c as u8);
        return Some(1);
    }
    let mut bytes = [0u8; 4];
    let encoded = char::from_u32(c)?.encode_utf8(&mut bytes).len();
    for (to, &byte) in to.iter_mut().zip(&bytes[..encoded]) {
        to.write(byte);
    }
    Some(encoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_widths(text: &str) -> Vec<Option<Vec<u8>>> {
        let points: Vec<u32> = text.chars().map(|c| c as u32).collect();
        let mut results = vec![utf8_of(&points)];
        if points.iter().all(|&c| c < 0x1_0000) {
            results.push(utf8_of(&points.iter().map(|&c| c as u16).collect::<Vec<_>>()));
        }
        if points.iter().all(|&c| c < 0x100) {
            results.push(utf8_of(&points.iter().map(|&c| c as u8).collect::<Vec<_>>()));
        }
        results
    }

    #[test]
    fn every_width_gives_the_text_utf8() {
        let ascii = "<div class=\"a\">                      text </div>\n".repeat(3);
        let texts = [
            String::new(),
            "a".into(),
            ascii.clone(),
            format!("{ascii}é{ascii}ÿ"),
            format!("{ascii}\u{80}\u{7ff}\u{800}ЖĀ{ascii}\u{ffff}x"),
            format!("😀{ascii}\u{10ffff}{ascii}\u{10000}"),
            "é".repeat(33),
        ];
        for text in &texts {
            for (width, result) in all_widths(text).into_iter().enumerate() {
                assert_eq!(result.as_deref(), Some(text.as_bytes()), "{text:?}, width {width}");
            }
        }
    }

    #[test]
    fn surrogates_are_refused_in_every_position() {
        for at in [0, 5, 15, 16, 17, 40] {
            for surrogate in [0xD800u32, 0xDBFF, 0xDC00, 0xDFFF] {
                let mut points: Vec<u32> = "x".repeat(41).chars().map(|c| c as u32).collect();
                points[at] = surrogate;
                assert_eq!(utf8_of(&points), None);
                let narrow: Vec<u16> = points.iter().map(|&c| c as u16).collect();
                assert_eq!(utf8_of(&narrow), None);
            }
        }
        // the code points around them are not
        let near: Vec<u16> = vec![0xD7FF, 0xE000];
        assert_eq!(utf8_of(&near).as_deref(), Some("\u{d7ff}\u{e000}".as_bytes()));
        assert_eq!(utf8_of(&[0x11_0000u32]), None);
    }
}
