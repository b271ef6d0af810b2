//! The two pre-tokenizer regexes our tokenizers use, written out by hand: the position where
//! each match ends, exactly as Oniguruma (the regex engine of `tokenizers`) finds it with its
//! backtracking, leftmost-alternative-first semantics.
//!
//! - `SplitPattern::Gpt2`, the pattern of `ByteLevel(use_regex=true)`:
//!   `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//! - `SplitPattern::Llama3`, the `Split` pattern of Llama-3 and EuroBERT:
//!   `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
//!
//! Both are used with the `Isolated` behaviour: every match is a piece, and so is every gap
//! between matches (there are none with these two patterns: every character starts a match).
//! The character classes are `unicode_tables` (Unicode 16.0, as Oniguruma there sees them).

use super::unicode_tables::{BLOCKS, BLOCK_OF, BLOCK_SHIFT, LETTER, NUMBER, WHITE_SPACE};

pub const GPT2_PATTERN: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
pub const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// `[^\s\p{L}\p{N}]`: none of the three class bits.
const OTHER: u8 = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitPattern {
    Gpt2,
    Llama3,
}

impl SplitPattern {
    /// The pattern whose regex source is exactly `source`, if it is one of ours.
    pub fn from_regex(source: &str) -> Option<SplitPattern> {
        match source {
            GPT2_PATTERN => Some(SplitPattern::Gpt2),
            LLAMA3_PATTERN => Some(SplitPattern::Llama3),
            _ => None,
        }
    }

    /// Calls `piece` with every piece of `text`, in order: the matches and the gaps between them.
    pub fn split<'t>(self, text: &'t str, mut piece: impl FnMut(&'t str)) {
        let b = text.as_bytes();
        let mut pos = 0;
        let mut gap_start = None;
        while pos < b.len() {
            let end = match self {
                SplitPattern::Gpt2 => gpt2_match_at(b, pos),
                SplitPattern::Llama3 => llama3_match_at(b, pos),
            };
            match end {
                Some(end) => {
                    if let Some(start) = gap_start.take() {
                        piece(&text[start..pos]);
                    }
                    piece(&text[pos..end]);
                    pos = end;
                }
                None => {
                    gap_start.get_or_insert(pos);
                    pos += decode(b, pos).1;
                }
            }
        }
        if let Some(start) = gap_start {
            piece(&text[start..]);
        }
    }
}

/// The character at byte `i` of valid UTF-8 and its length in bytes.
#[inline]
fn decode(b: &[u8], i: usize) -> (u32, usize) {
    let b0 = b[i] as u32;
    if b0 < 0x80 {
        (b0, 1)
    } else if b0 < 0xE0 {
        (((b0 & 0x1F) << 6) | (b[i + 1] as u32 & 0x3F), 2)
    } else if b0 < 0xF0 {
        (((b0 & 0x0F) << 12) | ((b[i + 1] as u32 & 0x3F) << 6) | (b[i + 2] as u32 & 0x3F), 3)
    } else {
        let c = ((b0 & 0x07) << 18)
            | ((b[i + 1] as u32 & 0x3F) << 12)
            | ((b[i + 2] as u32 & 0x3F) << 6)
            | (b[i + 3] as u32 & 0x3F);
        (c, 4)
    }
}

/// The class bits of code point `cp` (`LETTER`, `NUMBER`, `WHITE_SPACE`, or `OTHER`).
#[inline]
pub fn class_of(cp: u32) -> u8 {
    let block = BLOCK_OF[(cp >> BLOCK_SHIFT) as usize] as usize;
    BLOCKS[(block << BLOCK_SHIFT) | (cp as usize & ((1 << BLOCK_SHIFT) - 1))]
}

/// The character at `i` (None at the end) and its class.
#[inline]
fn char_at(b: &[u8], i: usize) -> Option<(u32, usize, u8)> {
    if i >= b.len() {
        return None;
    }
    let (c, n) = decode(b, i);
    Some((c, n, class_of(c)))
}

/// End of the run of characters from `i` whose class has a bit of `bits`.
#[inline]
fn run_of(b: &[u8], mut i: usize, bits: u8) -> usize {
    while let Some((_, n, class)) = char_at(b, i) {
        if class & bits == 0 {
            break;
        }
        i += n;
    }
    i
}

/// End of the run of `[^\s\p{L}\p{N}]` from `i`.
#[inline]
fn run_of_other(b: &[u8], mut i: usize) -> usize {
    while let Some((_, n, class)) = char_at(b, i) {
        if class != OTHER {
            break;
        }
        i += n;
    }
    i
}

/// The white-space alternatives at `i` (a white-space character): `\s+(?!\S)|\s+`. The first
/// backtracks from the whole run to leave its last character when a non-space follows; with a
/// single character before a non-space it fails and `\s+` takes that character.
#[inline]
fn space_run_end(b: &[u8], i: usize) -> usize {
    let (mut end, mut last_start, mut count) = (i, i, 0);
    while let Some((_, n, class)) = char_at(b, end) {
        if class & WHITE_SPACE == 0 {
            break;
        }
        last_start = end;
        end += n;
        count += 1;
    }
    if end == b.len() || count == 1 {
        end
    } else {
        last_start
    }
}

/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+` at `p`.
fn gpt2_match_at(b: &[u8], p: usize) -> Option<usize> {
    let (c, n, class) = char_at(b, p)?;
    if c == u32::from(b'\'') {
        match (b.get(p + 1), b.get(p + 2)) {
            (Some(b's' | b't' | b'm' | b'd'), _) => return Some(p + 2),
            (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => return Some(p + 3),
            _ => {}
        }
    }
    // ` ?X+` for X = \p{L}, \p{N}, [^\s\p{L}\p{N}]: with the space when X follows it
    // (a space is none of the three X), else from p
    let (start, class) = match (c, char_at(b, p + n)) {
        (0x20, Some((_, _, next_class))) if next_class & WHITE_SPACE == 0 => (p + 1, next_class),
        _ => (p, class),
    };
    if class & LETTER != 0 {
        return Some(run_of(b, start, LETTER));
    }
    if class & NUMBER != 0 {
        return Some(run_of(b, start, NUMBER));
    }
    if class == OTHER {
        return Some(run_of_other(b, start));
    }
    Some(space_run_end(b, p))
}

/// The Llama-3 pattern (`LLAMA3_PATTERN`) at `p`.
fn llama3_match_at(b: &[u8], p: usize) -> Option<usize> {
    let (c, n, class) = char_at(b, p)?;
    // (?i:'s|'t|'re|'ve|'m|'ll|'d): Oniguruma's case folding also matches U+017F (long s) for s
    if c == u32::from(b'\'') {
        if let Some((c1, n1, _)) = char_at(b, p + 1) {
            let second = b.get(p + 2).map(u8::to_ascii_lowercase);
            match c1 {
                0x73 | 0x53 | 0x17F | 0x74 | 0x54 | 0x6D | 0x4D | 0x64 | 0x44 => return Some(p + 1 + n1),
                0x72 | 0x52 | 0x76 | 0x56 if second == Some(b'e') => return Some(p + 3),
                0x6C | 0x4C if second == Some(b'l') => return Some(p + 3),
                _ => {}
            }
        }
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if class & LETTER != 0 {
        return Some(run_of(b, p, LETTER));
    }
    let next = char_at(b, p + n);
    if c != 0x0D && c != 0x0A && class & NUMBER == 0 {
        if let Some((_, _, next_class)) = next {
            if next_class & LETTER != 0 {
                return Some(run_of(b, p + n, LETTER));
            }
        }
    }
    // \p{N}{1,3}
    if class & NUMBER != 0 {
        let mut end = p + n;
        for _ in 0..2 {
            match char_at(b, end) {
                Some((_, n, class)) if class & NUMBER != 0 => end += n,
                _ => break,
            }
        }
        return Some(end);
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    let start = match (c, next) {
        (0x20, Some((_, _, OTHER))) => p + 1,
        _ => p,
    };
    if start > p || class == OTHER {
        let mut end = run_of_other(b, start);
        while let Some(b'\r' | b'\n') = b.get(end) {
            end += 1;
        }
        return Some(end);
    }
    // the rest are white space: \s*[\r\n]+ ends after the run's last \r or \n; else
    // \s+(?!\S)|\s+
    let mut end = p;
    let mut after_newline = None;
    while let Some((c, n, class)) = char_at(b, end) {
        if class & WHITE_SPACE == 0 {
            break;
        }
        end += n;
        if c == 0x0D || c == 0x0A {
            after_newline = Some(end);
        }
    }
    if after_newline.is_some() {
        return after_newline;
    }
    Some(space_run_end(b, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(pattern: SplitPattern, text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        pattern.split(text, |p| out.push(p));
        assert_eq!(out.concat(), text);
        out
    }

    #[test]
    fn classes() {
        assert_eq!(class_of('a' as u32), LETTER);
        assert_eq!(class_of('中' as u32), LETTER);
        assert_eq!(class_of('٣' as u32), NUMBER); // Arabic-Indic digit
        assert_eq!(class_of('½' as u32), NUMBER);
        assert_eq!(class_of(0xA0), WHITE_SPACE);
        assert_eq!(class_of(0x3000), WHITE_SPACE);
        assert_eq!(class_of(0x1C), OTHER); // Python's isspace() says yes; Oniguruma's \s no
        assert_eq!(class_of(0x301), OTHER); // combining acute accent: Mn
        assert_eq!(class_of(0x1C89), LETTER); // new in Unicode 16.0
    }

    #[test]
    fn gpt2() {
        let p = SplitPattern::Gpt2;
        assert_eq!(
            pieces(p, "Hello world's  end 123abc"),
            ["Hello", " world", "'s", " ", " end", " 123", "abc"]
        );
        assert_eq!(pieces(p, "a  \n\tb  "), ["a", "  \n", "\t", "b", "  "]);
        assert_eq!(pieces(p, "x 'Sup ?!"), ["x", " '", "Sup", " ?!"]);
        assert_eq!(pieces(p, "don't 'll'd"), ["don", "'t", " '", "ll", "'d"]);
        assert_eq!(pieces(p, " "), [" "]);
        assert_eq!(pieces(p, "a\u{a0}b"), ["a", "\u{a0}", "b"]);
    }

    #[test]
    fn llama3() {
        let p = SplitPattern::Llama3;
        assert_eq!(
            pieces(p, "Hello world's  end 1234567abc"),
            ["Hello", " world", "'s", " ", " end", " ", "123", "456", "7", "abc"]
        );
        assert_eq!(pieces(p, "IT'S WE'LL x'ſ"), ["IT", "'S", " WE", "'LL", " x", "'ſ"]);
        assert_eq!(pieces(p, "a \r\n\r\n  b"), ["a", " \r\n\r\n", " ", " b"]);
        assert_eq!(pieces(p, "a\n \t"), ["a", "\n", " \t"]);
        assert_eq!(pieces(p, "\tword ...\n\nnext"), ["\tword", " ...\n\n", "next"]);
        assert_eq!(pieces(p, "(x)\u{301}é"), ["(x", ")\u{301}", "é"]);
        assert_eq!(pieces(p, "\u{a0}mot 'x"), ["\u{a0}mot", " '", "x"]);
        assert_eq!(pieces(p, "\nx"), ["\n", "x"]);
    }
}
