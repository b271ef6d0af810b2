//! The strings of a page's trees (texts, tails, attribute values): written one after another
//! into chunks of 64 KiB that the thread's pages share, instead of an allocation each. A page
//! makes some ten thousand of them (lexbor's texts and values, the copies and joins of the
//! segmentation, `map_html` read again for the reconstruction); a chunk is freed with the last
//! string in it, so a page's strings go with a few frees once its trees are dropped. A leaf: it
//! imports nothing of the crate.
//!
//! A `Text` is shared, as the `Rc<str>` it replaces was: a copy of an element shares its text,
//! a change makes a new one. The bytes a `Text` reads are never written again: a chunk is only
//! ever written past its last string (`Chunk::used`), so `push_str` can grow the last string in
//! place while copies of it still read their own, shorter, length.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A chunk's size: a few pages' worth of a thread's strings at a time.
const CHUNK: usize = 64 * 1024;
/// Strings at least this long get a chunk of their own (a script's text, a long `map_html`
/// value): a full chunk is not left mostly empty behind one.
const OWN: usize = CHUNK / 8;
/// `Text::len` of a string alone in its chunk: the chunk's length (so no length is cut to 32
/// bits).
const WHOLE: u32 = u32::MAX;

struct Chunk {
    ptr: std::ptr::NonNull<u8>,
    cap: usize,
    /// bytes `[0, used)` are written and never written again
    used: Cell<usize>,
}

impl Chunk {
    fn new(cap: usize) -> Rc<Chunk> {
        let cap = cap.max(1);
        let layout = std::alloc::Layout::array::<u8>(cap).expect("a chunk's size");
        // SAFETY: the layout's size is not zero
        let ptr = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = std::ptr::NonNull::new(ptr) else { std::alloc::handle_alloc_error(layout) };
        Rc::new(Chunk { ptr, cap, used: Cell::new(0) })
    }

    /// Write `parts` one after another past the last string: their start, or None where they
    /// do not fit.
    fn push(&self, parts: &[&str]) -> Option<usize> {
        let start = self.used.get();
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if self.cap - start < len {
            return None;
        }
        let mut at = start;
        for part in parts {
            // SAFETY: `[at, at + part.len())` lies in `[used, cap)`: allocated, read by no
            // `Text` (each reads below `used`), and `part` is another allocation's bytes or a
            // chunk's below `used`
            unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), self.ptr.as_ptr().add(at), part.len()) };
            at += part.len();
        }
        self.used.set(at);
        Some(start)
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::array::<u8>(self.cap).expect("a chunk's size");
        // SAFETY: allocated in `Chunk::new` with this layout
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) };
    }
}

thread_local! {
    /// The chunk the thread's short strings go into now.
    static CURRENT: RefCell<Option<Rc<Chunk>>> = const { RefCell::new(None) };
}

/// A text, tail or attribute value of a tree.
#[derive(Clone)]
pub struct Text {
    chunk: Rc<Chunk>,
    start: u32,
    len: u32,
}

impl Text {
    /// `parts` joined, as one string.
    pub fn concat(parts: &[&str]) -> Text {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len >= OWN {
            let chunk = Chunk::new(len);
            chunk.push(parts);
            return Text { chunk, start: 0, len: WHOLE };
        }
        CURRENT.with(|current| {
            let mut current = current.borrow_mut();
            if let Some(chunk) = current.as_ref() {
                if let Some(start) = chunk.push(parts) {
                    return Text { chunk: chunk.clone(), start: start as u32, len: len as u32 };
                }
            }
            let chunk = Chunk::new(CHUNK);
            chunk.push(parts);
            *current = Some(chunk.clone());
            Text { chunk, start: 0, len: len as u32 }
        })
    }

    /// `self += s`: in place where this string is its chunk's last and `s` fits after it (its
    /// copies keep reading what they read), else a new string.
    pub fn push_str(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if self.len != WHOLE && self.start as usize + self.len as usize == self.chunk.used.get() {
            let len = self.len as usize + s.len();
            if len < OWN && self.chunk.push(&[s]).is_some() {
                self.len = len as u32;
                return;
            }
        }
        *self = Text::concat(&[self, s]);
    }

    pub fn as_str(&self) -> &str {
        let (start, len) = if self.len == WHOLE {
            (0, self.chunk.used.get())
        } else {
            (self.start as usize, self.len as usize)
        };
        // SAFETY: `[start, start + len)` was written from whole `str`s (valid UTF-8, joined at
        // character boundaries) below `used`, and is never written again while the chunk lives
        unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(self.chunk.ptr.as_ptr().add(start), len))
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::concat(&[s])
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::concat(&[&s])
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text::concat(&[s])
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_read_back_as_written_and_copies_keep_theirs() {
        let a = Text::from("héllo");
        let mut b = a.clone();
        b.push_str(", world");
        let c = Text::from("next");
        let mut d = b.clone();
        d.push_str("!"); // b is no longer its chunk's last: a new string
        assert_eq!((&*a, &*b, &*c, &*d), ("héllo", "héllo, world", "next", "héllo, world!"));
        assert_eq!(Text::concat(&[&a, " ", &c]), "héllo next");
        assert_eq!(Text::from(""), "");
    }

    #[test]
    fn long_strings_and_full_chunks() {
        let long = "x".repeat(3 * CHUNK);
        let mut t = Text::from(long.as_str());
        t.push_str("y");
        assert_eq!(t.len(), 3 * CHUNK + 1);
        assert!(t.ends_with("xy"));
        let many: Vec<Text> = (0..20_000).map(|i| Text::from(format!("{i:05}").as_str())).collect();
        assert!(many.iter().enumerate().all(|(i, t)| *t == format!("{i:05}").as_str()));
        let mut grown = Text::from("a");
        for _ in 0..(2 * CHUNK) {
            grown.push_str("b");
        }
        assert_eq!(grown.len(), 2 * CHUNK + 1);
    }
}
