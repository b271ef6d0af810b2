//! The byte-level BPE model: a pre-tokenized piece's bytes in, token ids out, as `tokenizers`'
//! `BPE` model gives them after the `ByteLevel` pre-tokenizer mapped every byte to a character.
//!
//! That mapping is one-to-one, so this model works on the raw bytes: the vocabulary and the
//! merges are keyed by ids, and each byte starts as the id of its byte-level character.
//! Merging follows `tokenizers`' `Word::merge_all`: the adjacent pair with the lowest merge
//! rank goes first, the leftmost among equal ranks, and a merge creates new pairs with its
//! neighbours.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::Hasher;
use std::sync::Mutex;

pub use crate::hash::{FastHasher, FastMap};

/// GPT-2's byte-to-character table: printable Latin-1 bytes stand for themselves, the others
/// for U+0100 onwards in byte order.
pub fn byte_level_char(byte: u8) -> char {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable(byte) {
        return byte as char;
    }
    let rank = (0..byte).filter(|&b| !printable(b)).count() as u32;
    char::from_u32(0x100 + rank).expect("below U+0200")
}

/// The bytes a byte-level string stands for (None if a character is not in the table).
pub fn byte_level_bytes(token: &str, char_to_byte: &FastMap<char, u8>) -> Option<Vec<u8>> {
    token.chars().map(|c| char_to_byte.get(&c).copied()).collect()
}

/// What a merge makes: its rank (position in the merges list) and the merged token's id.
#[derive(Clone, Copy, Debug)]
pub struct Merge {
    pub rank: u32,
    pub new_id: u32,
}

pub struct Bpe {
    /// id of each byte's byte-level character (None: not in the vocabulary; `tokenizers` then
    /// drops that character, as it has no unknown token)
    pub byte_ids: [Option<u32>; 256],
    /// id of each vocabulary token by the bytes it stands for (for `ignore_merges`)
    pub ids_by_bytes: FastMap<Box<[u8]>, u32>,
    /// (left id, right id) packed as `left << 32 | right` -> the merge
    pub merges: FastMap<u64, Merge>,
    /// a piece that is a whole vocabulary token is that token, without merging
    pub ignore_merges: bool,
    /// word -> ids caches (see `WordCache`)
    caches: Vec<Mutex<WordCache>>,
}

/// How many word caches a model keeps: an encode call takes one that no other thread holds.
const WORD_CACHES: usize = 8;
/// Words each cache keeps at most (it stops taking new ones when full).
const WORD_CACHE_CAPACITY: usize = 50_000;
/// Longer pieces are not cached (long runs are rare and rarely repeat).
const MAX_CACHED_WORD: usize = 64;

/// Word (piece bytes) -> ids, the result of merging: pieces repeat within a page and across
/// pages, and a lookup costs less than the merges. Bounded: it stops taking words when full.
#[derive(Default)]
pub struct WordCache {
    ranges: FastMap<Box<[u8]>, (u32, u32)>,
    ids: Vec<u32>,
}

impl Bpe {
    pub fn new(
        byte_ids: [Option<u32>; 256],
        ids_by_bytes: FastMap<Box<[u8]>, u32>,
        merges: FastMap<u64, Merge>,
        ignore_merges: bool,
    ) -> Bpe {
        let caches = (0..WORD_CACHES).map(|_| Mutex::new(WordCache::default())).collect();
        Bpe { byte_ids, ids_by_bytes, merges, ignore_merges, caches }
    }

    /// A word cache no other thread holds right now, if any: the caller keeps it for a whole
    /// encode call (one lock per call, not per word).
    pub fn free_cache(&self) -> Option<std::sync::MutexGuard<'_, WordCache>> {
        // start from a slot that depends on the thread, so threads tend to keep their own
        let start = {
            let mut h = FastHasher::default();
            std::hash::Hash::hash(&std::thread::current().id(), &mut h);
            h.finish() as usize
        };
        (0..self.caches.len()).find_map(|i| {
            let slot = &self.caches[(start + i) % self.caches.len()];
            match slot.try_lock() {
                Ok(guard) => Some(guard),
                // a panic while a cache was held leaves it poisoned: its content is still a
                // set of finished entries (inserts happen in one step), so keep using it
                Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        })
    }

    /// Appends the ids of `word` (one pre-tokenized piece, non-empty) to `out`.
    pub fn encode_word(&self, word: &[u8], cache: Option<&mut WordCache>, out: &mut Vec<u32>) {
        // a whole-vocabulary word first: the cache then holds only words that need merging
        // (with Llama-3's vocabulary, 92% of the pieces of the dev pages are whole tokens;
        // caching them too fills the cache with them and was slower, measured)
        if self.ignore_merges {
            if let Some(&id) = self.ids_by_bytes.get(word) {
                out.push(id);
                return;
            }
        }
        let Some(cache) = cache.filter(|_| word.len() <= MAX_CACHED_WORD) else {
            self.merge_word(word, out);
            return;
        };
        if let Some(&(start, len)) = cache.ranges.get(word) {
            out.extend_from_slice(&cache.ids[start as usize..(start + len) as usize]);
            return;
        }
        let from = out.len();
        self.merge_word(word, out);
        if cache.ranges.len() < WORD_CACHE_CAPACITY {
            let start = cache.ids.len() as u32;
            cache.ids.extend_from_slice(&out[from..]);
            cache.ranges.insert(word.into(), (start, (out.len() - from) as u32));
        }
    }

    #[inline]
    fn merge_of(&self, left: u32, right: u32) -> Option<Merge> {
        self.merges.get(&((u64::from(left) << 32) | u64::from(right))).copied()
    }

    /// BPE merges of `word`'s bytes, appended to `out`.
    pub fn merge_word(&self, word: &[u8], out: &mut Vec<u32>) {
        // symbols in a linked list over the initial positions; a merged-away symbol is dead
        struct Symbol {
            id: u32,
            prev: u32,
            next: u32,
            alive: bool,
        }
        const NONE: u32 = u32::MAX;
        let mut symbols: Vec<Symbol> = Vec::with_capacity(word.len());
        for &byte in word {
            if let Some(id) = self.byte_ids[byte as usize] {
                let index = symbols.len() as u32;
                symbols.push(Symbol { id, prev: index.wrapping_sub(1), next: index + 1, alive: true });
            }
        }
        let Some(last) = symbols.last_mut() else { return };
        last.next = NONE;
        if symbols.len() == 1 {
            out.push(symbols[0].id);
            return;
        }
        // queued merges: (rank, position of the left symbol, new id), lowest rank first,
        // then leftmost; an entry is stale when its pair no longer makes that id
        let mut queue: BinaryHeap<Reverse<(u32, u32, u32)>> = BinaryHeap::with_capacity(symbols.len());
        for (pos, pair) in symbols.windows(2).enumerate() {
            if let Some(m) = self.merge_of(pair[0].id, pair[1].id) {
                queue.push(Reverse((m.rank, pos as u32, m.new_id)));
            }
        }
        while let Some(Reverse((_, pos, new_id))) = queue.pop() {
            let pos = pos as usize;
            let left = &symbols[pos];
            if !left.alive || left.next == NONE {
                continue;
            }
            let right_pos = left.next as usize;
            match self.merge_of(left.id, symbols[right_pos].id) {
                Some(m) if m.new_id == new_id => {}
                _ => continue,
            }
            let right_next = symbols[right_pos].next;
            symbols[right_pos].alive = false;
            symbols[pos].id = new_id;
            symbols[pos].next = right_next;
            if right_next != NONE {
                symbols[right_next as usize].prev = pos as u32;
            }
            let prev = symbols[pos].prev;
            if prev != NONE {
                if let Some(m) = self.merge_of(symbols[prev as usize].id, new_id) {
                    queue.push(Reverse((m.rank, prev, m.new_id)));
                }
            }
            if right_next != NONE {
                if let Some(m) = self.merge_of(new_id, symbols[right_next as usize].id) {
                    queue.push(Reverse((m.rank, pos as u32, m.new_id)));
                }
            }
        }
        out.extend(symbols.iter().filter(|s| s.alive).map(|s| s.id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model over the bytes a..e with ids 0..4 and the given merges (in rank order) of
    /// strings made of them; merged tokens get ids from 100 in the order they first appear.
    fn model(merges: &[(&str, &str)], ignore_merges: bool) -> (Bpe, FastMap<String, u32>) {
        let mut vocab: FastMap<String, u32> = FastMap::default();
        for (i, c) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            vocab.insert(c.to_string(), i as u32);
        }
        let mut merge_map = FastMap::default();
        for (rank, (l, r)) in merges.iter().enumerate() {
            let next = 100 + vocab.len() as u32 - 5;
            let new_id = *vocab.entry(format!("{l}{r}")).or_insert(next);
            let key = (u64::from(vocab[*l]) << 32) | u64::from(vocab[*r]);
            merge_map.insert(key, Merge { rank: rank as u32, new_id });
        }
        let mut byte_ids = [None; 256];
        for (i, b) in b"abcde".iter().enumerate() {
            byte_ids[*b as usize] = Some(i as u32);
        }
        let ids_by_bytes = vocab.iter().map(|(k, &v)| (k.as_bytes().into(), v)).collect();
        (Bpe::new(byte_ids, ids_by_bytes, merge_map, ignore_merges), vocab)
    }

    fn tokens(bpe: &Bpe, vocab: &FastMap<String, u32>, word: &str) -> Vec<String> {
        let mut ids = Vec::new();
        let mut cache = bpe.free_cache();
        bpe.encode_word(word.as_bytes(), cache.as_deref_mut(), &mut ids);
        let mut again = Vec::new();
        bpe.encode_word(word.as_bytes(), cache.as_deref_mut(), &mut again); // from the cache
        assert_eq!(ids, again);
        let names: FastMap<u32, &String> = vocab.iter().map(|(k, &v)| (v, k)).collect();
        ids.iter().map(|id| names[id].clone()).collect()
    }

    #[test]
    fn lowest_rank_first_then_leftmost() {
        // "bc" outranks "ab": abc -> a bc, even though "ab" is further left
        let (bpe, vocab) = model(&[("b", "c"), ("a", "b")], false);
        assert_eq!(tokens(&bpe, &vocab, "abc"), ["a", "bc"]);
        let (bpe, vocab) = model(&[("a", "b"), ("b", "c")], false);
        assert_eq!(tokens(&bpe, &vocab, "abc"), ["ab", "c"]);
        // equal ranks: leftmost first, and a merged symbol is not merged again by a stale entry
        let (bpe, vocab) = model(&[("a", "a")], false);
        assert_eq!(tokens(&bpe, &vocab, "aaa"), ["aa", "a"]);
        assert_eq!(tokens(&bpe, &vocab, "aaaa"), ["aa", "aa"]);
        let (bpe, vocab) = model(&[("a", "a"), ("aa", "aa")], false);
        assert_eq!(tokens(&bpe, &vocab, "aaaaa"), ["aaaa", "a"]);
    }

    #[test]
    fn merges_make_new_pairs_with_neighbours() {
        // a low-rank pair that only exists after a merge still goes before higher ranks
        let (bpe, vocab) = model(&[("c", "d"), ("b", "cd"), ("a", "b"), ("d", "e")], false);
        assert_eq!(tokens(&bpe, &vocab, "abcde"), ["a", "bcd", "e"]);
        let (bpe, vocab) = model(&[("a", "b"), ("c", "d"), ("ab", "cd"), ("abcd", "e")], false);
        assert_eq!(tokens(&bpe, &vocab, "abcde"), ["abcde"]);
    }

    #[test]
    fn ignore_merges_takes_whole_vocabulary_words() {
        // "abc" is in the vocabulary (made by a merge of "a" and "bc") but the merges, in
        // this rank order, would give "ab" "c"
        let (bpe, vocab) = model(&[("a", "b"), ("b", "c"), ("a", "bc")], false);
        assert_eq!(tokens(&bpe, &vocab, "abc"), ["ab", "c"]);
        let (bpe, vocab) = model(&[("a", "b"), ("b", "c"), ("a", "bc")], true);
        assert_eq!(tokens(&bpe, &vocab, "abc"), ["abc"]);
    }

    #[test]
    fn bytes_outside_the_vocabulary_are_dropped() {
        // as tokenizers does without an unknown token; the neighbours then meet
        let (bpe, vocab) = model(&[("a", "b")], false);
        assert_eq!(tokens(&bpe, &vocab, "axb"), ["ab"]);
        assert_eq!(tokens(&bpe, &vocab, "x"), Vec::<String>::new());
    }

    #[test]
    fn gpt2_byte_table() {
        assert_eq!(byte_level_char(b'A'), 'A');
        assert_eq!(byte_level_char(b' '), 'Ġ');
        assert_eq!(byte_level_char(b'\n'), 'Ċ');
        assert_eq!(byte_level_char(0), 'Ā');
        assert_eq!(byte_level_char(0xAD), 'Ń');
        let all: std::collections::HashSet<char> = (0..=255u8).map(byte_level_char).collect();
        assert_eq!(all.len(), 256);
    }
}
