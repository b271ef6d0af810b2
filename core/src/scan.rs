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
}
