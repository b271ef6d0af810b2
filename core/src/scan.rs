//! Byte searches over whole pages, through the C library's `memchr` and `memmem` (vectorized
//! in glibc; the core links the C library anyway, for lexbor): a page of several hundred
//! kilobytes is scanned a few times before and after lexbor parses it, and a byte-by-byte loop
//! there cost as much as a tenth of `simplify`.

use std::ffi::{c_int, c_void};

extern "C" {
    fn memchr(s: *const c_void, c: c_int, n: usize) -> *mut c_void;
    fn memmem(hay: *const c_void, hay_len: usize, needle: *const c_void, needle_len: usize) -> *mut c_void;
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

/// Offset of the first occurrence of `needle` (not empty) in `hay`.
#[inline]
pub fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    debug_assert!(!needle.is_empty());
    if hay.len() < needle.len() {
        return None;
    }
    // SAFETY: memmem reads within the two slices only
    let at = unsafe {
        memmem(
            hay.as_ptr() as *const c_void,
            hay.len(),
            needle.as_ptr() as *const c_void,
            needle.len(),
        )
    };
    (!at.is_null()).then(|| at as usize - hay.as_ptr() as usize)
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
    }
}
