//! UTF-8 of text held as fixed-width code points — 1, 2 or 4 bytes each (Latin-1, UCS-2,
//! UCS-4), the three ways CPython stores a `str` (PEP 393) — for the Python doors: a page's
//! `str` is read where CPython keeps it (runtime/native.py) and encoded here, in place of
//! `str.encode("utf-8")`, whose encoder takes a branch per character (a sixth of reconstruct's
//! benchmark: pages are stored as UCS-2 for a few non-ASCII characters, and their markup and
//! whitespace are ASCII). Here runs of 16 ASCII code points are tested and narrowed at once
//! (`CodeUnit::narrow_ascii_run`: SSE2 on x86-64).
//!
//! A surrogate code point (U+D800–U+DFFF: a lone surrogate in Python, which UTF-8 cannot hold)
//! is refused, so the caller encodes that text as before, with its own error handling.

use std::mem::MaybeUninit;

/// The code points of one storage width.
pub trait CodeUnit: Copy {
    fn point(self) -> u32;

    /// The ASCII runs at the start of `points`, narrowed: while the next `RUN` code points are
    /// all ASCII, their bytes are written to `to` (one byte each); how many code points were
    /// (a multiple of `RUN`). `to` has room for as many bytes as `points` holds units.
    #[inline(always)]
    fn narrow_ascii_runs(points: &[Self], to: &mut [MaybeUninit<u8>]) -> usize {
        let mut done = 0;
        for run in points.chunks_exact(RUN) {
            if run.iter().fold(0, |any, &unit| any | unit.point()) >= 0x80 {
                break;
            }
            for (byte, &unit) in to[done..done + RUN].iter_mut().zip(run) {
                byte.write(unit.point() as u8);
            }
            done += RUN;
        }
        done
    }
}

// On x86-64: SSE2's 16-byte loads, an OR and one test per run, then a pack, in a loop without
// bounds checks (the loop over the units it replaces came out of the compiler a unit at a
// time: ~2.8 instructions a code point where a page is stored as UCS-2).

impl CodeUnit for u8 {
    #[inline(always)]
    fn point(self) -> u32 {
        self as u32
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn narrow_ascii_runs(points: &[u8], to: &mut [MaybeUninit<u8>]) -> usize {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8, _mm_storeu_si128};
        assert!(to.len() >= points.len());
        let (from, to) = (points.as_ptr(), to.as_mut_ptr());
        let mut done = 0;
        // SAFETY: SSE2 is part of x86-64; each load reads RUN (16) units of `points` and each
        // store writes RUN bytes of `to`, both below `points.len()` (`to` is no shorter)
        unsafe {
            while done + RUN <= points.len() {
                let v = _mm_loadu_si128(from.add(done).cast());
                if _mm_movemask_epi8(v) != 0 {
                    break;
                }
                _mm_storeu_si128(to.add(done).cast(), v);
                done += RUN;
            }
        }
        done
    }
}

impl CodeUnit for u16 {
    #[inline(always)]
    fn point(self) -> u32 {
        self as u32
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn narrow_ascii_runs(points: &[u16], to: &mut [MaybeUninit<u8>]) -> usize {
        use std::arch::x86_64::{
            _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_packus_epi16, _mm_set1_epi16, _mm_setzero_si128, _mm_storeu_si128,
        };
        assert!(to.len() >= points.len());
        let (from, to) = (points.as_ptr(), to.as_mut_ptr());
        let mut done = 0;
        // SAFETY: SSE2 is part of x86-64; each pair of loads reads RUN (16) units of `points`
        // and each store writes RUN bytes of `to`, both below `points.len()` (`to` is no
        // shorter)
        unsafe {
            let above_ascii = _mm_set1_epi16(0xFF80u16 as i16);
            while done + RUN <= points.len() {
                let a = _mm_loadu_si128(from.add(done).cast());
                let b = _mm_loadu_si128(from.add(done + 8).cast());
                // any bit above the low 7 of any unit
                let high = _mm_and_si128(_mm_or_si128(a, b), above_ascii);
                if _mm_movemask_epi8(_mm_cmpeq_epi8(high, _mm_setzero_si128())) != 0xFFFF {
                    break;
                }
                _mm_storeu_si128(to.add(done).cast(), _mm_packus_epi16(a, b));
                done += RUN;
            }
        }
        done
    }
}

impl CodeUnit for u32 {
    #[inline(always)]
    fn point(self) -> u32 {
        self
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn narrow_ascii_runs(points: &[u32], to: &mut [MaybeUninit<u8>]) -> usize {
        use std::arch::x86_64::{
            _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_packs_epi32,
            _mm_packus_epi16, _mm_set1_epi32, _mm_setzero_si128, _mm_storeu_si128,
        };
        assert!(to.len() >= points.len());
        let (from, to) = (points.as_ptr(), to.as_mut_ptr());
        let mut done = 0;
        // SAFETY: SSE2 is part of x86-64; each four loads read RUN (16) units of `points` and
        // each store writes RUN bytes of `to`, both below `points.len()` (`to` is no shorter)
        unsafe {
            let above_ascii = _mm_set1_epi32(0xFFFF_FF80u32 as i32);
            while done + RUN <= points.len() {
                let p = from.add(done);
                let a = _mm_loadu_si128(p.cast());
                let b = _mm_loadu_si128(p.add(4).cast());
                let c = _mm_loadu_si128(p.add(8).cast());
                let d = _mm_loadu_si128(p.add(12).cast());
                let any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
                let high = _mm_and_si128(any, above_ascii);
                if _mm_movemask_epi8(_mm_cmpeq_epi8(high, _mm_setzero_si128())) != 0xFFFF {
                    break;
                }
                // (every value below 0x80: the saturating packs keep it)
                let low = _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
                _mm_storeu_si128(to.add(done).cast(), low);
                done += RUN;
            }
        }
        done
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
    let (mut len, mut at) = (0, 0);
    loop {
        // (the buffer has room for every point left as one byte, and more)
        let narrowed = T::narrow_ascii_runs(&points[at..], &mut buffer[len..]);
        at += narrowed;
        len += narrowed;
        if at + RUN > points.len() {
            break;
        }
        // a run that is not all ASCII, a point at a time
        for &unit in &points[at..at + RUN] {
            len += write_point(&mut buffer[len..len + 4], unit.point())?;
        }
        at += RUN;
    }
    for &unit in &points[at..] {
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
    fn a_code_point_past_ascii_is_seen_at_every_place_of_a_run() {
        // each place of the 16-unit runs (and of the remainder), with code points whose low
        // byte or low 16 bits look like ASCII
        let wide = [0x80u32, 0xFF, 0x100, 0x141, 0x7FF, 0x800, 0xFF41, 0xFFFF, 0x1_0041, 0x2_0000, 0x10_FFFF];
        for at in 0..40 {
            for &c in &wide {
                let mut points: Vec<u32> =
                    "abcdefghijklmnopqrstuvwxyz0123456789<>/=".chars().map(|c| c as u32).collect();
                points[at] = c;
                let text: String = points.iter().map(|&p| char::from_u32(p).unwrap()).collect();
                for (width, result) in all_widths(&text).into_iter().enumerate() {
                    assert_eq!(result.as_deref(), Some(text.as_bytes()), "U+{c:X} at {at}, width {width}");
                }
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
