//! Byte searches over whole pages: the C library's `memchr` (vectorized in glibc; the core
//! links the C library anyway, for lexbor) and a vectorizable substring scan. A page of several
//! hundred kilobytes is scanned a few times before and after lexbor parses it, and
//! byte-by-byte loops there cost as much as a tenth of `simplify`.

use std::ffi::{c_int, c_void};

extern "C" {
    fn memchr(s: *const c_void, c: c_int, n: usize) -> *mut c_void;
}

/// Offset of the first `needle` in `hay`.
#[inline]
pub fn find_byte(needle: u8, hay: &[u8]) -> Option<usize> {
    if hay.is_empty() {
        return None;
    }
    // SAFETY: memchr reads at most hay.len() bytes of hay
    let at = unsafe { memchr(hay.as_ptr() as *const c_void, needle as c_int, hay.len()) };
    (!at.is_null()).then(|| at as usize - hay.as_ptr() as usize)
}

/// Offset of the first occurrence of `needle` (two bytes or more) in `hay`. Chunks of
/// candidate starts are tested for the needle's first, second and last bytes at once, in a
/// loop the compiler vectorizes (glibc's `memmem` is slow on HTML, where the "<" most needles
/// here begin with is everywhere); only a chunk with a candidate is compared byte by byte.
pub fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let n = needle.len();
    assert!(n >= 2, "find_bytes: the needle must be two bytes or more");
    if hay.len() < n {
        return None;
    }
    let starts = hay.len() - n + 1;
    let (first, second, last) = (needle[0], needle[1], needle[n - 1]);
    const CHUNK: usize = 64;
    let mut start = 0;
    while start < starts {
        let end = (start + CHUNK).min(starts);
        let a = &hay[start..end];
        let b = &hay[start + 1..end + 1];
        let c = &hay[start + n - 1..end + n - 1];
        let candidate = a
            .iter()
            .zip(b)
            .zip(c)
            .fold(false, |seen, ((&x, &y), &z)| seen | ((x == first) & (y == second) & (z == last)));
        if candidate {
            if let Some(k) = (start..end).find(|&i| &hay[i..i + n] == needle) {
                return Some(k);
            }
        }
        start = end;
    }
    None
}

/// Bit k set where byte k of the 16 bytes at the start of `chunk` is one of `set`: SSE2's
/// byte comparisons and move-mask (every x86-64 processor has them).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn mask16<const N: usize>(chunk: &[u8], set: [u8; N]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    assert!(chunk.len() >= 16);
    // SAFETY: SSE2 is part of x86-64; the load reads the 16 bytes checked above
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let mut hits = _mm_cmpeq_epi8(v, _mm_set1_epi8(set[0] as i8));
        for &c in &set[1..] {
            hits = _mm_or_si128(hits, _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8)));
        }
        _mm_movemask_epi8(hits) as u32
    }
}

/// `mask16` byte by byte (other processors).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn mask16<const N: usize>(chunk: &[u8], set: [u8; N]) -> u32 {
    chunk[..16].iter().enumerate().fold(0u32, |mask, (k, c)| mask | u32::from(set.contains(c)) << k)
}

/// Bit k set where byte k of the 64 bytes at the start of `chunk` is one of `set`.
#[inline(always)]
fn mask64<const N: usize>(chunk: &[u8], set: [u8; N]) -> u64 {
    (0..4).fold(0u64, |mask, k| mask | u64::from(mask16(&chunk[16 * k..], set)) << (16 * k))
}

/// Whether every byte of `hay` is one of `set` (16 bytes tested at once).
#[inline]
pub fn all_of<const N: usize>(hay: &[u8], set: [u8; N]) -> bool {
    let n = hay.len();
    if n < 16 {
        return hay.iter().all(|c| set.contains(c));
    }
    let mut at = 0;
    while at + 16 <= n {
        if mask16(&hay[at..], set) != 0xffff {
            return false;
        }
        at += 16;
    }
    // the last 16 bytes (overlapping the chunk before, which was all of `set`)
    at == n || mask16(&hay[n - 16..], set) == 0xffff
}

/// Whether every byte of `hay` is ASCII and none is one of `set`: one pass where a text is
/// checked for several things at once (ASCII text is UTF-8 as it is).
#[inline]
pub fn ascii_without<const N: usize>(hay: &[u8], set: [u8; N]) -> bool {
    let n = hay.len();
    if n < 16 {
        return !hay.iter().fold(false, |hit, c| hit | !c.is_ascii() | set.contains(c));
    }
    let mut at = 0;
    while at + 16 <= n {
        // (the set's bits, and the high bit of each byte: SSE2's move-mask of the bytes)
        if mask16(&hay[at..], set) | high_bits16(&hay[at..]) != 0 {
            return false;
        }
        at += 16;
    }
    // the last 16 bytes (overlapping the chunk before, which was clean)
    at == n || mask16(&hay[n - 16..], set) | high_bits16(&hay[n - 16..]) == 0
}

/// Bit k set where byte k of the 16 bytes at the start of `chunk` is not ASCII.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn high_bits16(chunk: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8};
    assert!(chunk.len() >= 16);
    // SAFETY: SSE2 is part of x86-64; the load reads the 16 bytes checked above
    unsafe { _mm_movemask_epi8(_mm_loadu_si128(chunk.as_ptr().cast())) as u32 }
}

/// `high_bits16` byte by byte (other processors).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn high_bits16(chunk: &[u8]) -> u32 {
    chunk[..16].iter().enumerate().fold(0u32, |mask, (k, c)| mask | u32::from(!c.is_ascii()) << k)
}

/// Offset of the first byte of `hay` that is one of `set` (a `memchr` of up to a few bytes:
/// 16 bytes tested at once, where a byte-by-byte search stops at every byte).
#[inline]
pub fn find_any<const N: usize>(hay: &[u8], set: [u8; N]) -> Option<usize> {
    let n = hay.len();
    if n < 16 {
        // (tested whole first, without a branch per byte: most short texts hold none)
        if !hay.iter().fold(false, |hit, c| hit | set.contains(c)) {
            return None;
        }
        return hay.iter().position(|c| set.contains(c));
    }
    let mut at = 0;
    while at + 16 <= n {
        let mask = mask16(&hay[at..], set);
        if mask != 0 {
            return Some(at + mask.trailing_zeros() as usize);
        }
        at += 16;
    }
    if at == n {
        return None;
    }
    // the last 16 bytes, overlapping the chunk before (which held none): bit j is byte
    // n - 16 + j, and the bytes from `at` are bits 16 - (n - at) on
    let mask = mask16(&hay[n - 16..], set) >> (16 - (n - at));
    (mask != 0).then(|| at + mask.trailing_zeros() as usize)
}

/// The offsets of every byte of `hay` that is one of `set`, in order: 64 bytes tested at once,
/// each hit then taken from the chunk's mask (for bytes as frequent in HTML as `<` and `/`,
/// where a `memchr` call per hit costs more than the search).
pub struct Positions<'a, const N: usize> {
    hay: &'a [u8],
    set: [u8; N],
    /// the offset of the chunk `mask` was made from
    base: usize,
    /// the hits of that chunk not yet given
    mask: u64,
}

impl<'a, const N: usize> Positions<'a, N> {
    pub fn new(hay: &'a [u8], set: [u8; N]) -> Self {
        let mut positions = Positions { hay, set, base: 0, mask: 0 };
        positions.mask = positions.chunk_mask();
        positions
    }

    /// The mask of the chunk at `base` (a shorter one at the end).
    #[inline]
    fn chunk_mask(&self) -> u64 {
        let rest = &self.hay[self.base.min(self.hay.len())..];
        if rest.len() >= 64 {
            mask64(rest, self.set)
        } else {
            rest.iter().enumerate().fold(0u64, |mask, (k, c)| mask | u64::from(self.set.contains(c)) << k)
        }
    }
}

impl<const N: usize> Iterator for Positions<'_, N> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            self.base += 64;
            if self.base >= self.hay.len() {
                return None;
            }
            self.mask = self.chunk_mask();
        }
        let k = self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(self.base + k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_first_occurrences() {
        assert_eq!(find_byte(b'<', b""), None);
        assert_eq!(find_byte(b'<', b"ab<c<"), Some(2));
        assert_eq!(find_byte(b'<', b"abc"), None);
        assert_eq!(find_bytes(b"a</>b</>", b"</>"), Some(1));
        assert_eq!(find_bytes(b"</", b"</>"), None);
        assert_eq!(find_bytes(b"x<-undef", b"<-undef>"), None);
        assert_eq!(find_bytes(b"<-undef>", b"<-undef>"), Some(0));
        // candidates across chunk boundaries, and a needle that ends the haystack
        let mut long = vec![b'<'; 200];
        long.extend_from_slice(b"/>");
        assert_eq!(find_bytes(&long, b"</>"), Some(199));
        assert_eq!(find_bytes(&long, b"<</"), Some(198));
        assert_eq!(find_bytes(&long, b"<x"), None);
    }

    #[test]
    fn finds_every_byte_of_a_set() {
        // every length around the 16- and 64-byte chunks, hits at every place
        for len in [0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 200] {
            let hay: Vec<u8> =
                (0..len).map(|i| [b'a', b'<', b'x', b'/', b'b', b'b', b'c'][i * 7 % 11 % 7]).collect();
            let want: Vec<usize> = (0..len).filter(|&i| matches!(hay[i], b'<' | b'/')).collect();
            assert_eq!(Positions::new(&hay, [b'<', b'/']).collect::<Vec<_>>(), want, "{len}");
            assert_eq!(find_any(&hay, [b'<', b'/']), want.first().copied(), "{len}");
            let lt: Vec<usize> = (0..len).filter(|&i| hay[i] == b'<').collect();
            assert_eq!(Positions::new(&hay, [b'<']).collect::<Vec<_>>(), lt, "{len}");
            for from in 0..len {
                let first = (from..len).find(|&i| matches!(hay[i], b'c' | b'x' | b'&')).map(|i| i - from);
                assert_eq!(find_any(&hay[from..], [b'c', b'x', b'&']), first, "{len} {from}");
            }
        }
        assert_eq!(find_any(&[0x80u8; 40], [0x80]), Some(0));
        for len in [0, 1, 15, 16, 17, 40] {
            let plain = vec![b'a'; len];
            assert!(ascii_without(&plain, [0, b'<']), "{len}");
            for at in 0..len {
                for odd in [0, b'<', 0x80, 0xe9] {
                    let mut text = plain.clone();
                    text[at] = odd;
                    assert!(!ascii_without(&text, [0, b'<']), "{len} {at} {odd}");
                }
            }
        }
        assert_eq!(Positions::new(&[0xffu8; 70], [0xff]).count(), 70);
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 40] {
            let blank: Vec<u8> = (0..len).map(|i| [b' ', b'\n', b'\t'][i % 3]).collect();
            assert!(all_of(&blank, [b' ', b'\n', b'\t']), "{len}");
            for at in 0..len {
                for odd in [b'a', 0, 0x80, b'\r'] {
                    let mut text = blank.clone();
                    text[at] = odd;
                    assert!(!all_of(&text, [b' ', b'\n', b'\t']), "{len} {at} {odd}");
                }
            }
        }
    }
}
