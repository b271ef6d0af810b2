//! Python's text semantics that the block features rest on, on `&str`: `str.lower()` (full
//! Unicode lowercasing with the final-sigma rule), `re`'s `\w` and `str.isdigit()`, from
//! the tables generated off CPython itself (`crate::py_tables`, `core/tools/gen_tables.py`),
//! and the keyword scan of `re.findall` over an alternation.

use crate::py_tables::{PY_CASED, PY_CASE_IGNORABLE, PY_DIGIT, PY_LOWER, PY_WORD};

fn in_ranges(table: &[(u32, u32)], c: char) -> bool {
    let cp = c as u32;
    // the last run starting at or before cp
    let after = table.partition_point(|&(first, _)| first <= cp);
    after > 0 && cp <= table[after - 1].1
}

/// What `\w` matches in a Python str pattern: `str.isalnum()` or `_`.
#[inline]
pub fn is_word(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || c == '_'
    } else {
        in_ranges(PY_WORD, c)
    }
}

/// Python's `str.isdigit()` of one character.
#[inline]
pub fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        in_ranges(PY_DIGIT, c)
    }
}

fn is_case_ignorable(c: char) -> bool {
    in_ranges(PY_CASE_IGNORABLE, c)
}

fn is_cased(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        in_ranges(PY_CASED, c)
    }
}

const CAPITAL_SIGMA: char = '\u{3a3}';

/// CPython's choice for a capital sigma at byte `at` of `s` (`handle_capital_sigma`): final
/// (ς) after a cased character and not before one, case-ignorable characters skipped.
fn lower_sigma(s: &str, at: usize) -> char {
    let before = s[..at].chars().rev().find(|&c| !is_case_ignorable(c));
    let mut is_final = before.is_some_and(is_cased);
    if is_final {
        let after = s[at + CAPITAL_SIGMA.len_utf8()..].chars().find(|&c| !is_case_ignorable(c));
        is_final = after.is_none_or(|c| !is_cased(c));
    }
    if is_final {
        '\u{3c2}'
    } else {
        '\u{3c3}'
    }
}

/// `s.lower()` as CPython writes it, one character at a time into `emit`.
pub fn for_each_lower(s: &str, mut emit: impl FnMut(char)) {
    if s.is_ascii() {
        for b in s.bytes() {
            emit(b.to_ascii_lowercase() as char);
        }
        return;
    }
    for (at, c) in s.char_indices() {
        if c.is_ascii() {
            emit(c.to_ascii_lowercase());
        } else {
            lower_non_ascii(s, at, c, &mut emit);
        }
    }
}

/// The lowercase of the non-ASCII character `c` at byte `at` of `s` (`str.lower()`'s), into
/// `emit`.
fn lower_non_ascii(s: &str, at: usize, c: char, mut emit: impl FnMut(char)) {
    if c == CAPITAL_SIGMA {
        emit(lower_sigma(s, at));
    } else if c == '\u{130}' {
        // the one character whose lowercase is two: "i" and a combining dot above
        emit('i');
        emit('\u{307}');
    } else {
        let cp = c as u32;
        match PY_LOWER.binary_search_by_key(&cp, |&(from, _)| from) {
            Ok(k) => emit(char::from_u32(PY_LOWER[k].1).unwrap_or(c)),
            Err(_) => emit(c),
        }
    }
}

/// `s.lower()`.
pub fn lower(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for_each_lower(s, |c| out.push(c));
    out
}

/// `len(re.findall(r"\w+", s))`.
pub fn count_words(s: &str) -> usize {
    let mut count = 0;
    let mut in_word = false;
    if s.is_ascii() {
        for b in s.bytes() {
            let w = is_ascii_word(b);
            count += (w && !in_word) as usize;
            in_word = w;
        }
        return count;
    }
    for c in s.chars() {
        let w = is_word(c);
        count += (w && !in_word) as usize;
        in_word = w;
    }
    count
}

/// `" ".join(re.findall(r"\w+", s.lower()))`, with what the features read off the words.
#[derive(Default, Debug, PartialEq)]
pub struct Words {
    pub count: usize,
    /// the words' lengths in characters, summed
    pub chars: usize,
    pub stopwords: usize,
    /// the words joined by single spaces
    pub joined: String,
}

/// The words of `s.lower()` (`re.findall(r"\w+", ...)`), counted and joined.
pub fn lower_words(s: &str) -> Words {
    if s.is_ascii() {
        lower_ascii_words(s)
    } else {
        lower_any_words(s)
    }
}

/// `lower_words` of any text, one character of `s.lower()` at a time, but for runs of ASCII
/// word characters, which go into the words whole (lowered as they are copied: one character
/// is one byte there).
fn lower_any_words(s: &str) -> Words {
    let mut builder = WordsBuilder {
        words: Words { joined: String::with_capacity(s.len()), ..Words::default() },
        word_start: None,
        word_chars: 0,
    };
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if is_ascii_word(b) {
            let start = i;
            while i < bytes.len() && is_ascii_word(bytes[i]) {
                i += 1;
            }
            builder.push_ascii_run(&s[start..i]);
        } else if b < 0x80 {
            builder.finish();
            i += 1;
        } else {
            let c = s[i..].chars().next().expect("a character starts at a lead byte");
            lower_non_ascii(s, i, c, |lowered| builder.push(lowered, is_word(lowered)));
            i += c.len_utf8();
        }
    }
    builder.finish();
    builder.words
}

/// What `\w` matches of an ASCII byte (any other byte: false), from a table of the bytes.
#[inline]
fn is_ascii_word(b: u8) -> bool {
    ASCII_WORD[b as usize]
}

/// Per byte, whether it is an ASCII letter, digit or `_`.
const ASCII_WORD: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 128 {
        table[b] = (b as u8).is_ascii_alphanumeric() || b == b'_' as usize;
        b += 1;
    }
    table
};

/// `lower_any_words`' words as the characters of `s.lower()` come.
struct WordsBuilder {
    words: Words,
    /// byte offset of the current word in `joined`
    word_start: Option<usize>,
    word_chars: usize,
}

impl WordsBuilder {
    /// One character of the lowered text, and whether `\w` matches it.
    #[inline]
    fn push(&mut self, c: char, is_word: bool) {
        if is_word {
            if self.word_start.is_none() {
                if !self.words.joined.is_empty() {
                    self.words.joined.push(' ');
                }
                self.word_start = Some(self.words.joined.len());
                self.word_chars = 0;
            }
            self.words.joined.push(c);
            self.word_chars += 1;
        } else {
            self.finish();
        }
    }

    /// ASCII word characters of the lowered text (`run`, not yet lowered), one after another:
    /// as `push` of each.
    #[inline]
    fn push_ascii_run(&mut self, run: &str) {
        if self.word_start.is_none() {
            if !self.words.joined.is_empty() {
                self.words.joined.push(' ');
            }
            self.word_start = Some(self.words.joined.len());
            self.word_chars = 0;
        }
        let at = self.words.joined.len();
        self.words.joined.push_str(run);
        self.words.joined[at..].make_ascii_lowercase();
        self.word_chars += run.len();
    }

    /// Ends the current word, if any.
    fn finish(&mut self) {
        if let Some(start) = self.word_start.take() {
            self.words.count += 1;
            self.words.chars += self.word_chars;
            self.words.stopwords += usize::from(is_stopword(&self.words.joined[start..]));
        }
    }
}

/// `lower_words` of ASCII text: a word is a run of ASCII letters, digits and `_`, lowered
/// as it is copied whole (one character is one byte).
fn lower_ascii_words(s: &str) -> Words {
    let mut words = Words { joined: String::with_capacity(s.len()), ..Words::default() };
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !is_ascii_word(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_ascii_word(bytes[i]) {
            i += 1;
        }
        if !words.joined.is_empty() {
            words.joined.push(' ');
        }
        let at = words.joined.len();
        words.joined.push_str(&s[start..i]);
        words.joined[at..].make_ascii_lowercase();
        words.count += 1;
        words.chars += i - start;
        words.stopwords += usize::from(is_stopword(&words.joined[at..]));
    }
    words
}

/// `STOPWORDS` of features_spec.py.
pub fn is_stopword(word: &str) -> bool {
    matches!(
        word,
        "the"
            | "a"
            | "an"
            | "and"
            | "or"
            | "of"
            | "to"
            | "in"
            | "is"
            | "are"
            | "was"
            | "were"
            | "be"
            | "been"
            | "it"
            | "that"
            | "this"
            | "with"
            | "for"
            | "on"
            | "as"
            | "by"
            | "at"
            | "from"
            | "but"
            | "not"
            | "have"
            | "has"
            | "had"
            | "which"
            | "you"
            | "we"
            | "they"
            | "he"
            | "she"
            | "his"
            | "her"
            | "their"
            | "its"
            | "our"
            | "your"
            | "will"
            | "would"
            | "can"
            | "could"
            | "there"
            | "than"
            | "then"
            | "so"
            | "if"
            | "into"
            | "about"
            | "also"
            | "more"
            | "some"
            | "what"
            | "when"
            | "who"
            | "how"
            | "all"
            | "one"
    )
}

const N_KEYWORDS: usize = 57;

/// Words looked for in class / id / role / itemprop values, in column order.
pub const KEYWORDS: [&str; N_KEYWORDS] = [
    "nav", "menu", "footer", "header", "sidebar", "side", "comment", "related", "share", "social",
    "breadcrumb", "banner", "cookie", "widget", "promo", "newsletter", "subscribe", "login", "search", "tag",
    "author", "meta", "date", "card", "product", "price", "review", "rating", "article", "content", "main",
    "post", "entry", "body", "text", "story", "prose", "blog", "title", "hero", "modal", "popup", "ad",
    "sponsor", "recommend", "more", "footnote", "toc", "pagination", "cart", "filter", "faq", "answer",
    "question", "thread", "message", "reply",
];

/// The keywords `re.findall` finds in `s` (already lowercased as `str.lower()` does; ASCII
/// letters are folded here, so an ASCII `s` can come as it is) with the alternation of all
/// of them, longest first: at each position the longest keyword that starts there, then on
/// after its end (so "header" is found in "header", "ad" is not), as bits in column order.
pub fn keyword_bits(s: &str) -> u64 {
    let b = s.as_bytes();
    let mut bits = 0u64;
    let mut i = 0;
    // every keyword has two letters at least: a match starts at a pair of ASCII letters
    // (never inside a character), and only the keywords starting with that pair are compared
    while i + 1 < b.len() {
        let mut candidates = BY_FIRST_TWO[letter_pair(b[i], b[i + 1])];
        let mut matched = 1;
        while candidates != 0 {
            let k = BY_LENGTH[candidates.trailing_zeros() as usize];
            candidates &= candidates - 1;
            let word = KEYWORDS[k].as_bytes();
            if b.len() - i >= word.len() && b[i + 2..i + word.len()].eq_ignore_ascii_case(&word[2..]) {
                bits |= 1 << k;
                matched = word.len();
                break;
            }
        }
        i += matched;
    }
    bits
}

/// `LETTER`'s values: the 26 letters, and one for any other byte.
const LETTERS: usize = 27;

/// The pairs of `LETTER` values: what `letter_pair` numbers.
pub(crate) const LETTER_PAIRS: usize = LETTERS * LETTERS;

/// The number of the pair of bytes `first`, `second` by their letters (`LETTER`: ASCII case
/// aside, any other byte one value), below `LETTER_PAIRS`: the index of the tables of words
/// by their first two letters.
#[inline]
pub(crate) const fn letter_pair(first: u8, second: u8) -> usize {
    LETTER[first as usize] as usize * LETTERS + LETTER[second as usize] as usize
}

/// Per byte, its letter (0 for `a` or `A` … 25 for `z` or `Z`), `LETTERS - 1` for any other
/// byte.
const LETTER: [u8; 256] = {
    let mut table = [(LETTERS - 1) as u8; 256];
    let mut c = 0;
    while c < 26 {
        table[b'a' as usize + c] = c as u8;
        table[b'A' as usize + c] = c as u8;
        c += 1;
    }
    table
};

/// Per pair of letters (`letter_pair`), the keywords starting with them, as bits of their
/// places in `BY_LENGTH` (the lowest bit the longest keyword).
const BY_FIRST_TWO: [u64; LETTER_PAIRS] = {
    let mut table = [0u64; LETTER_PAIRS];
    let mut rank = 0;
    while rank < N_KEYWORDS {
        let word = KEYWORDS[BY_LENGTH[rank]].as_bytes();
        table[letter_pair(word[0], word[1])] |= 1 << rank;
        rank += 1;
    }
    table
};
const _: () = assert!(N_KEYWORDS <= 64);
const _: () = {
    // every keyword is two lowercase ASCII letters or more
    let mut k = 0;
    while k < N_KEYWORDS {
        let word = KEYWORDS[k].as_bytes();
        assert!(word.len() >= 2);
        let mut j = 0;
        while j < word.len() {
            assert!(word[j].is_ascii_lowercase());
            j += 1;
        }
        k += 1;
    }
};

/// Indices into `KEYWORDS`, longest first (ties in column order, as Python's stable sort).
const BY_LENGTH: [usize; N_KEYWORDS] = by_length();

const fn by_length() -> [usize; N_KEYWORDS] {
    let mut order = [0usize; N_KEYWORDS];
    let mut k = 0;
    while k < N_KEYWORDS {
        order[k] = k;
        k += 1;
    }
    // insertion sort, stable, longest first
    let mut i = 1;
    while i < N_KEYWORDS {
        let mut j = i;
        while j > 0 && KEYWORDS[order[j - 1]].len() < KEYWORDS[order[j]].len() {
            let t = order[j - 1];
            order[j - 1] = order[j];
            order[j] = t;
            j -= 1;
        }
        i += 1;
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_pythons_word_characters() {
        // Python: re.findall(r"\w+", s) — letters and digits of every script, "_", and
        // numerals such as "²" and "Ⅻ" are word characters; combining marks are not
        assert_eq!(count_words("naïve café_au-lait"), 3);
        assert_eq!(count_words("东京 2024年 x² Ⅻ"), 4);
        assert_eq!(count_words("e\u{301}t\u{e9}"), 2); // "e" + U+0301 splits a word
        assert_eq!(count_words("١٢٣ ۴۵"), 2); // Arabic-Indic digits
        assert_eq!(count_words("…—«»"), 0);
        assert_eq!(count_words(""), 0);
    }

    #[test]
    fn lower_is_pythons_full_lowercase() {
        assert_eq!(lower("ÀÉÎ ΣΑΣ"), "àéî σας"); // final sigma
                                                 // "." is case-ignorable: skipped when looking for a cased neighbour
        assert_eq!(lower("ΑΣ.Σ"), "ασ.ς");
        assert_eq!(lower("Σ"), "σ"); // nothing cased before it
        assert_eq!(lower("İstanbul"), "i\u{307}stanbul");
        assert_eq!(lower("KELVIN \u{212a}"), "kelvin k");
        // İ lowers to "i" and a combining dot: two words where the original has one
        assert_eq!(count_words("İstanbul"), 1);
        assert_eq!(lower_words("İstanbul").count, 2);
    }

    #[test]
    fn lower_words_count_join_and_measure_words() {
        let w = lower_words("The Cat, and THE dog's bowl.");
        assert_eq!(w.joined, "the cat and the dog s bowl");
        assert_eq!((w.count, w.chars, w.stopwords), (7, 20, 3));
        let greek = lower_words("ΟΔΟΣ ΟΔΟΣ");
        assert_eq!(greek.joined, "οδος οδος");
        assert_eq!(greek.chars, 8);
    }

    #[test]
    fn ascii_words_are_the_words_of_any_text() {
        // every ASCII byte, and words at both ends, stopwords in any case, runs of separators
        let every_byte: String = (0u8..128).map(char::from).collect();
        for s in [
            every_byte.as_str(),
            "The Cat, and THE dog's bowl.",
            "_x_ A1b2  --  THIS is__it 42",
            "  lead and trail  ",
            "",
            "!!!",
            "one",
        ] {
            assert_eq!(lower_ascii_words(s), lower_any_words(s), "{s:?}");
        }
        // any text: the words of `lower(s)` (already lowered) split at non-word characters
        for s in [
            "Ünïcödé WÖRDS, ΟΔΟΣ ΑΣ.Σ",
            "İstanbul KELVIN \u{212a} x² Ⅻ",
            "e\u{301}t\u{e9} — «The» naïve_café",
        ] {
            let lowered = lower(s);
            let expected: Vec<&str> =
                lowered.split(|c: char| !is_word(c)).filter(|w| !w.is_empty()).collect();
            let w = lower_any_words(s);
            assert_eq!(w.joined, expected.join(" "), "{s:?}");
            assert_eq!(w.count, expected.len(), "{s:?}");
            assert_eq!(w.chars, expected.iter().map(|w| w.chars().count()).sum::<usize>(), "{s:?}");
            assert_eq!(w.stopwords, expected.iter().filter(|w| is_stopword(w)).count(), "{s:?}");
        }
        assert_eq!(lower_ascii_words("An OLD_Tree, The end").joined, "an old_tree the end");
        assert_eq!(lower_ascii_words("An OLD_Tree, The end").stopwords, 2);
    }

    #[test]
    fn digits_are_pythons_isdigit() {
        assert!(is_digit('7') && is_digit('²') && is_digit('٣') && is_digit('①'));
        assert!(!is_digit('Ⅻ') && !is_digit('½') && !is_digit('a')); // numeric, not digits
    }

    #[test]
    fn keywords_match_longest_first_without_overlap() {
        let bit = |w: &str| 1u64 << KEYWORDS.iter().position(|k| *k == w).unwrap();
        assert_eq!(keyword_bits("header"), bit("header")); // not "ad"
        assert_eq!(keyword_bits("sidebar-left"), bit("sidebar")); // not "side"
        assert_eq!(keyword_bits("site-nav navbar"), bit("nav"));
        assert_eq!(keyword_bits("post-content entry"), bit("post") | bit("content") | bit("entry"));
        assert_eq!(keyword_bits("commentary"), bit("comment"));
        assert_eq!(keyword_bits("read"), bit("ad")); // substring match, as in Python
                                                     // "data" is no "date"
        assert_eq!(keyword_bits("tagline metadata"), bit("tag") | bit("meta"));
        assert_eq!(keyword_bits("navé menü"), bit("nav"));
        assert_eq!(keyword_bits("Site-NAV"), bit("nav")); // ASCII letters folded here
        assert_eq!(keyword_bits(""), 0);
    }

    /// `re.findall` of the alternation, longest keyword first, written plainly: at each byte
    /// the longest keyword (the first in column order among equally long ones) that starts
    /// there, ASCII case aside, then on after it.
    fn keyword_bits_plainly(s: &str) -> u64 {
        let b = s.as_bytes();
        let (mut bits, mut i) = (0u64, 0);
        while i < b.len() {
            let mut best: Option<usize> = None;
            for (k, word) in KEYWORDS.iter().enumerate() {
                let fits =
                    b.len() - i >= word.len() && b[i..i + word.len()].eq_ignore_ascii_case(word.as_bytes());
                if fits && best.is_none_or(|j| KEYWORDS[j].len() < word.len()) {
                    best = Some(k);
                }
            }
            match best {
                Some(k) => {
                    bits |= 1 << k;
                    i += KEYWORDS[k].len();
                }
                None => i += 1,
            }
        }
        bits
    }

    #[test]
    fn keyword_bits_are_the_alternations_matches() {
        let mut values: Vec<String> = Vec::new();
        for word in KEYWORDS {
            values.push(word.to_string());
            values.push(word.to_ascii_uppercase());
            values.push(format!("x{}", &word[..word.len() - 1]));
            values.push(format!("é{word}é"));
            for other in KEYWORDS {
                values.push(format!("{word}{other}"));
                values.push(format!("{}-{other}", &word[1..]));
            }
        }
        values.extend(
            ["", "a", "ad", "Ad", "xad", "sidebarside", "headerad", "tagtoc", "navé", "MéTA", "prosepost"]
                .iter()
                .map(|v| v.to_string()),
        );
        for value in &values {
            assert_eq!(keyword_bits(value), keyword_bits_plainly(value), "{value:?}");
        }
    }
}
