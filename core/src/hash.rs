//! The hasher of the crate's own maps and sets: keys are node indices, names and short texts
//! the core makes itself, where SipHash's resistance to chosen keys buys nothing and costs
//! time (a key chosen to collide still can: `bench.hostile_growth` measures the shapes pages
//! have). A leaf: it imports nothing of the crate.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hasher (the idea of rustc's FxHasher).
#[derive(Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.write_u64(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    /// The state's high bits brought down: a map finds a key's bucket by the hash's low bits,
    /// and the low bits of a product depend only on the factors' low bits, so keys alike in
    /// their first bytes ("a1x1", "a1x2", …: attribute names, ids) shared a bucket, and a page
    /// of 400,000 such names spent most of its time in one (as rustc-hash 2 does).
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
pub type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;
