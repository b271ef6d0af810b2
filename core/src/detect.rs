//! The encoding of a page that does not declare one (or declares UTF-8 and is not), from its
//! bytes alone.
//!
//! 1. UTF-16 without a byte order mark: NUL bytes on one side of most byte pairs.
//! 2. No byte above 0x7F: ISO-2022-JP when its escape sequences are there, else UTF-8 (ASCII
//!    reads the same in every candidate).
//! 3. UTF-8 when the bytes are valid UTF-8, or when valid multi-byte sequences outnumber
//!    invalid ones `UTF8_MAJORITY` to one (a UTF-8 page with a few broken bytes, a record cut
//!    in the middle of a character); legacy text almost never forms valid sequences (measured
//!    in `python -m bench.detector`).
//! 4. Otherwise every candidate legacy encoding decodes the parts of the page around its
//!    non-ASCII bytes (what ASCII bytes alone spell is the same in all of them; each part keeps
//!    the ASCII byte before it and the one after it, the letters a word's non-ASCII letter sits
//!    between), and the decoding the character model (`detect_model.rs`, counted on the train
//!    pages by `core/gen/detect_model.py`) finds most probable wins, less `ERROR_COST` for each
//!    byte sequence the candidate cannot decode. The model:
//!    - a class bigram: log P(class | previous class) + log P(character | class). Classes are
//!      scripts split by case, so it sees letters of one script in words of one case
//!      (windows-1251 read as KOI8-R gives upper-case words with a lower-case first letter), the
//!      letters a language uses (windows-1250's č ř ě against windows-1252's è ø ì), C1
//!      controls and half-width kana that real text does not hold, the frequent characters of
//!      Chinese, Japanese and Korean text;
//!    - letter pairs: a pair with a non-ASCII character is scored by what followed its first
//!      character on the train pages, mixed with the class bigram by how much the pages say
//!      (a Dirichlet prior): Czech in ISO-8859-2 reads as letters in windows-1254 too (ř as ø,
//!      ě as ì, ý as ı), and only its pairs ("ře", "ěj", "př" against "øe", "ìj", "pø", a
//!      superscript ¹ inside a word) show which is a language;
//!    - runs of one non-ASCII character, scored by class and the run's length so far: a line
//!      of 60 box-drawing characters (KOI8-R's 0xA0) is plausible, 60 NBSP (windows-125x's
//!      0xA0) much less, while runs of 2 to 7 NBSP are the usual ones;
//!    - lone characters: a byte that is an element's whole text (`<span>\x9E</span>`) is
//!      scored by what elements of that name held alone on the train pages (`lone_log_ratio`).
//!      0x9E is a middle dot in KOI8-R and a zero-width joiner in windows-1256, and both follow
//!      `>` about equally often; but the dot is a separator alone in a `<span>` (279 on the
//!      train pages) and the joiner the filler of an empty Webflow `<p>` (246), never alone in
//!      a `<span>`.
//!
//! Candidates are the legacy encodings of the scripts the train pages hold text in (Latin,
//! Cyrillic, Greek, Arabic, Chinese, Japanese, Korean); Hebrew, Thai and Vietnamese pages are
//! only read right when they declare their encoding. The train pages are mostly English: a
//! language they hold little of (Czech: 24 ř on 4 pages) gets the class model's estimate for
//! its pairs, and the pairs of a frequent character the pages never show count against it.
//! Bytes whose only non-ASCII content is one symbol can stay undecidable where the symbol is
//! inside text: the pairs around it are all the model has.
//!
//! Ties go to the earlier candidate (the order is how common each is on the web): ISO-8859-15
//! reads most Western pages as windows-1252 does and wins only where its bytes differ (0xA4
//! `€` against `¤`, `Š š Ž ž Œ œ Ÿ` against `¦ ¨ ´ ¸ ¼ ½ ¾`).

use crate::detect_model as model;
use crate::encoding::{self, Encoding};

/// Valid multi-byte UTF-8 sequences per invalid byte sequence above which bytes that are not
/// all valid UTF-8 are still read as UTF-8.
pub const UTF8_MAJORITY: usize = 4;

/// What a byte sequence a candidate cannot decode costs (natural log): more than the rarest
/// character the model knows, so that a decoding with errors loses to one without.
const ERROR_COST: f64 = 30.0;

/// At most this many bytes of the page's non-ASCII parts are scored.
const SAMPLE_BYTES: usize = 32 * 1024;

/// At most this many lone bytes (`lone_bytes`) are scored.
const MAX_LONE: usize = 1024;

/// In order of preference on a tie.
pub const CANDIDATES: &[Encoding] = &[
    Encoding::WINDOWS_1252,
    Encoding::WINDOWS_1251,
    Encoding::GBK,
    Encoding::SHIFT_JIS,
    Encoding::WINDOWS_1250,
    Encoding::ISO_8859_15,
    Encoding::EUC_JP,
    Encoding::EUC_KR,
    Encoding::BIG5,
    Encoding::ISO_8859_2,
    Encoding::WINDOWS_1256,
    Encoding::WINDOWS_1254,
    Encoding::WINDOWS_1253,
    Encoding::KOI8_R,
    Encoding::ISO_8859_7,
    Encoding::ISO_8859_5,
    Encoding::KOI8_U,
    Encoding::IBM866,
];

/// How the detector decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// No byte above 0x7F and no ISO-2022-JP escape: UTF-8 by default.
    Ascii,
    /// The bytes are UTF-8 (all of them, or by `UTF8_MAJORITY`).
    Utf8,
    /// NUL bytes on one side of the byte pairs.
    Utf16,
    /// ISO-2022-JP escape sequences in 7-bit bytes.
    Iso2022Jp,
    /// The most probable candidate under the character model.
    Scored,
}

/// The detector's choice for `bytes`.
pub fn detect(bytes: &[u8]) -> (Encoding, Evidence) {
    if let Some(utf16) = utf16_without_bom(bytes) {
        return (utf16, Evidence::Utf16);
    }
    if bytes.is_ascii() {
        if has_iso_2022_jp_escapes(bytes) {
            return (Encoding::ISO_2022_JP, Evidence::Iso2022Jp);
        }
        return (Encoding::UTF_8, Evidence::Ascii);
    }
    if mostly_utf8(bytes) {
        return (Encoding::UTF_8, Evidence::Utf8);
    }
    (best_legacy(bytes), Evidence::Scored)
}

/// The most probable legacy candidate for bytes that are not UTF-8.
pub fn best_legacy(bytes: &[u8]) -> Encoding {
    let sample = non_ascii_sample(bytes, SAMPLE_BYTES);
    let lone = lone_bytes(bytes, MAX_LONE);
    let mut best = (f64::NEG_INFINITY, CANDIDATES[0]);
    for &candidate in CANDIDATES {
        let score = score(&sample, &lone, candidate, best.0);
        if score > best.0 {
            best = (score, candidate);
        }
    }
    best.1
}

/// The candidate's score, or any score below `floor` once it is sure to end below it (every
/// character's term is a log-probability, at most 0: a candidate's sum only goes down, so the
/// scoring stops there; the choice is the one a full scoring makes).
fn score(sample: &[u8], lone: &[(u8, &[u8], usize)], candidate: Encoding, floor: f64) -> f64 {
    let (text, errors) = encoding::decode(sample, candidate);
    // the lone terms can be positive: added first, so that the sum only goes down after them
    let base = lone_log_ratio(lone, candidate) - ERROR_COST * errors as f64;
    if base < floor {
        return base;
    }
    log_probability_above(&text, floor - base) + base
}

/// The page's bytes above 0x7F that make up an element's whole text, whitespace around them
/// allowed (`<span class="dot">\x9E</span>`), with the element's name from its end tag, at most
/// `limit` of them, as distinct (byte, name, how many) sorted: a page repeats its separator
/// element, which each candidate then decodes and looks up once.
pub fn lone_bytes(bytes: &[u8], limit: usize) -> Vec<(u8, &[u8], usize)> {
    let is_space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0C');
    let mut lone = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        if b < 0x80 {
            continue;
        }
        let before = bytes[..i].iter().rposition(|&c| !is_space(c));
        if before.map(|j| bytes[j]) != Some(b'>') {
            continue;
        }
        let spaces = bytes[i + 1..].iter().take_while(|&&c| is_space(c)).count();
        let rest = &bytes[i + 1 + spaces..];
        if !rest.starts_with(b"</") || !rest.get(2).is_some_and(u8::is_ascii_alphabetic) {
            continue;
        }
        let name_len = rest[2..].iter().take_while(|c| c.is_ascii_alphanumeric()).count();
        lone.push((b, &rest[2..2 + name_len]));
        if lone.len() == limit {
            break;
        }
    }
    lone.sort_unstable();
    let mut distinct: Vec<(u8, &[u8], usize)> = Vec::new();
    for (b, name) in lone {
        match distinct.last_mut() {
            Some((last_b, last_name, n)) if (*last_b, *last_name) == (b, name) => *n += 1,
            _ => distinct.push((b, name, 1)),
        }
    }
    distinct
}

/// What the lone-character model changes in log P(page) for `candidate`: for each lone byte
/// the candidate reads as one character `c` (not an error), log P(c | alone in an element of
/// that name) - log P(c | after `>`), where the first is what the train pages' elements of
/// that name held alone, mixed with the second by `LONE_PRIOR` (a Dirichlet prior, as the
/// pairs are): a middle dot is a separator alone in a `<span>` on 32 train pages, a zero-width
/// joiner the filler of an empty `<p>` (Webflow) on 16 and never alone in a `<span>`, though
/// both follow `>` equally often.
fn lone_log_ratio(lone: &[(u8, &[u8], usize)], candidate: Encoding) -> f64 {
    let mut total = 0.0;
    for &(byte, name, times) in lone {
        let (text, errors) = encoding::decode(&[byte], candidate);
        let mut chars = text.chars();
        let (Some(c), None, 0) = (chars.next(), chars.next(), errors) else {
            continue;
        };
        let n_name = lone_total(name);
        if n_name == 0.0 {
            continue;
        }
        let class = class_of(c);
        let char_logp = char_log_probability(c, class) as f64;
        let after_tag = pair_log_probability('>', class_of('>'), 1, c, class, char_logp).exp();
        let alone = (lone_count(name, c) + model::LONE_PRIOR * after_tag) / (n_name + model::LONE_PRIOR);
        total += times as f64 * (alone.ln() - after_tag.ln());
    }
    total
}

fn lone_total(name: &[u8]) -> f64 {
    match model::LONE_TOTAL.binary_search_by(|&(k, _)| cmp_name(k, name)) {
        Ok(i) => model::LONE_TOTAL[i].1 as f64,
        Err(_) => 0.0,
    }
}

fn lone_count(name: &[u8], c: char) -> f64 {
    let found = model::LONE_COUNT.binary_search_by(|&(k, cp, _)| cmp_name(k, name).then(cp.cmp(&(c as u32))));
    match found {
        Ok(i) => model::LONE_COUNT[i].2 as f64,
        Err(_) => 0.0,
    }
}

/// Orders a model's (lower-case) element name against a page's, case-insensitively.
fn cmp_name(model_name: &str, page_name: &[u8]) -> std::cmp::Ordering {
    model_name.bytes().cmp(page_name.iter().map(u8::to_ascii_lowercase))
}

/// log P(text) under the character model: the class-based bigram, with each pair that holds a
/// non-ASCII character scored by what followed its first character on the train pages (a
/// Dirichlet mixture of those counts and the class model: `core/gen/detect_model.py`), and a
/// run of one non-ASCII character by its class and length so far. The detector reads
/// `log_probability_above`; the tests compare texts by this.
#[cfg(test)]
pub fn log_probability(text: &str) -> f64 {
    log_probability_above(text, f64::NEG_INFINITY)
}

/// `log_probability`, or any value below `floor` once the sum is below it.
fn log_probability_above(text: &str, floor: f64) -> f64 {
    let mut previous: Option<(char, u8)> = None;
    let mut run = 0usize;
    let mut total = 0.0f64;
    for c in text.chars() {
        let class = class_of(c);
        let char_logp = char_log_probability(c, class) as f64;
        total += match previous {
            None => class_bigram(CLASS_SPACE, class) + char_logp,
            Some((p, p_class)) if p.is_ascii() && c.is_ascii() => class_bigram(p_class, class) + char_logp,
            Some((p, _)) if p == c => model::RUN_LOGP[class as usize][run_bucket(run)].0 as f64,
            Some((p, p_class)) => pair_log_probability(p, p_class, run, c, class, char_logp),
        };
        run = match previous {
            Some((p, _)) if p == c => run + 1,
            _ => 1,
        };
        previous = Some((c, class));
        if total < floor {
            return total;
        }
    }
    total
}

fn class_bigram(previous: u8, class: u8) -> f64 {
    model::CLASS_BIGRAM[previous as usize][class as usize] as f64
}

/// log P(c | p) for two different characters, one of them non-ASCII; `run`: how many `p` end
/// the text so far.
fn pair_log_probability(p: char, p_class: u8, run: usize, c: char, class: u8, char_logp: f64) -> f64 {
    let mut total = 0.0;
    let context_class = context_class_count(p, class);
    // every pair counted is in its first character's count for the second's class
    let pair = if context_class > 0.0 { pair_count(p, c) } else { 0.0 };
    if p.is_ascii() {
        total += class_bigram(p_class, class);
    } else {
        total += model::RUN_LOGP[p_class as usize][run_bucket(run)].1 as f64;
        let n_context = context_count(p);
        let prior = model::CLASS_PRIOR * class_bigram(p_class, class).exp();
        total += ((context_class + prior) / (n_context + model::CLASS_PRIOR)).ln();
    }
    let weight =
        if p.is_ascii() { model::PAIR_PRIOR * model::ASCII_CONTEXT_FACTOR } else { model::PAIR_PRIOR };
    total + ((pair + weight * char_logp.exp()) / (context_class + weight)).ln()
}

/// 0 for a run of 1, 1 for 2-3, 2 for 4-7, ..., the last bucket for 64 and more.
fn run_bucket(run: usize) -> usize {
    ((usize::BITS - run.max(1).leading_zeros()) as usize).min(model::RUN_BUCKETS) - 1
}

fn pair_count(first: char, second: char) -> f64 {
    let key = ((first as u64) << 32) | second as u64;
    match model::PAIR_COUNT.binary_search_by_key(&key, |&(k, _)| k) {
        Ok(i) => model::PAIR_COUNT[i].1 as f64,
        Err(_) => 0.0,
    }
}

fn context_class_count(first: char, class: u8) -> f64 {
    let key = ((first as u64) << 8) | class as u64;
    match model::CONTEXT_CLASS_COUNT.binary_search_by_key(&key, |&(k, _)| k) {
        Ok(i) => model::CONTEXT_CLASS_COUNT[i].1 as f64,
        Err(_) => 0.0,
    }
}

fn context_count(first: char) -> f64 {
    match model::CONTEXT_COUNT.binary_search_by_key(&(first as u32), |&(k, _)| k) {
        Ok(i) => model::CONTEXT_COUNT[i].1 as f64,
        Err(_) => 0.0,
    }
}

const CLASS_SPACE: u8 = 3;

/// The model's class of `c`: its range's class, moved to the upper-case class of a cased script
/// for an upper-case letter.
pub fn class_of(c: char) -> u8 {
    let cp = c as u32;
    let ranges = &model::CLASS_RANGES;
    let at = ranges.partition_point(|&(_, last, _)| last < cp);
    match ranges.get(at) {
        Some(&(first, _, class)) if first <= cp => {
            if c.is_uppercase() {
                if let Some(&(_, upper)) = model::CASED.iter().find(|&&(lower, _)| lower == class) {
                    return upper;
                }
            }
            class
        }
        _ => model::OTHER,
    }
}

fn char_log_probability(c: char, class: u8) -> f32 {
    let cp = c as u32;
    match model::CHAR_LOGP.binary_search_by_key(&cp, |&(k, _)| k) {
        Ok(i) => model::CHAR_LOGP[i].1,
        Err(_) => model::CLASS_FLOOR[class as usize],
    }
}

/// The page's non-ASCII parts: each run of bytes from a byte above 0x7F up to the first ASCII
/// byte that follows an ASCII byte (so that a multi-byte encoding's ASCII-range trail bytes
/// stay with their lead), with the ASCII byte before it (the letter a word's non-ASCII letter
/// follows: "p" of Czech "při"; it is a character of its own in every candidate, as the byte
/// before it is ASCII too), runs separated by a line feed, at most `limit` bytes.
pub fn non_ascii_sample(bytes: &[u8], limit: usize) -> Vec<u8> {
    let mut sample = Vec::with_capacity(limit.min(bytes.len()) + 1);
    let mut i = 0;
    while i < bytes.len() && sample.len() < limit {
        let Some(start) = bytes[i..].iter().position(|&b| b >= 0x80).map(|p| p + i) else {
            break;
        };
        let mut end = start + 1;
        while end < bytes.len() && (bytes[end] >= 0x80 || bytes[end - 1] >= 0x80) {
            end += 1;
        }
        if !sample.is_empty() {
            sample.push(b'\n');
        }
        sample.extend_from_slice(&bytes[start.saturating_sub(1)..end]);
        i = end;
    }
    sample
}

/// (valid multi-byte sequences, invalid sequences) of `bytes` read as UTF-8.
pub fn utf8_counts(bytes: &[u8]) -> (usize, usize) {
    let mut valid = 0;
    let mut invalid = 0;
    for chunk in bytes.utf8_chunks() {
        valid += chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        if !chunk.invalid().is_empty() {
            invalid += 1;
        }
    }
    (valid, invalid)
}

/// Whether `bytes` read as UTF-8 are mostly valid (see `UTF8_MAJORITY`).
pub fn mostly_utf8(bytes: &[u8]) -> bool {
    let (valid, invalid) = utf8_counts(bytes);
    invalid == 0 || valid >= UTF8_MAJORITY * invalid
}

fn utf16_without_bom(bytes: &[u8]) -> Option<Encoding> {
    let head = &bytes[..bytes.len().min(1024) & !1];
    if head.len() < 8 {
        return None;
    }
    let pairs = head.len() / 2;
    let zero_even = head.iter().step_by(2).filter(|&&b| b == 0).count();
    let zero_odd = head.iter().skip(1).step_by(2).filter(|&&b| b == 0).count();
    // markup is mostly ASCII: in UTF-16 nearly every other byte is 0, in 8-bit text none is
    if zero_odd * 2 > pairs && zero_even * 20 < pairs {
        Some(Encoding::UTF_16LE)
    } else if zero_even * 2 > pairs && zero_odd * 20 < pairs {
        Some(Encoding::UTF_16BE)
    } else {
        None
    }
}

fn has_iso_2022_jp_escapes(bytes: &[u8]) -> bool {
    bytes.windows(3).any(|w| matches!(w, [0x1B, b'$', b'@' | b'B'] | [0x1B, b'(', b'J' | b'I']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        let name = |c: char| model::CLASS_NAMES[class_of(c) as usize];
        assert_eq!(name('a'), "ascii_lower");
        assert_eq!(name('Z'), "ascii_upper");
        assert_eq!(name(' '), "ascii_space");
        assert_eq!(name('é'), "latin_lower");
        assert_eq!(name('É'), "latin_upper");
        assert_eq!(name('Č'), "latin_upper");
        assert_eq!(name('\u{85}'), "c1_control");
        assert_eq!(name('ж'), "cyrillic_lower");
        assert_eq!(name('Ж'), "cyrillic_upper");
        assert_eq!(name('Ω'), "greek_upper");
        assert_eq!(name('中'), "cjk_ideograph");
        assert_eq!(name('の'), "kana");
        assert_eq!(name('ｱ'), "halfwidth_kana");
        assert_eq!(name('한'), "hangul");
        assert_eq!(name('’'), "general_punct");
        assert_eq!(name('\u{E000}'), "private_use");
        assert_eq!(name('😀'), "other");
    }

    #[test]
    fn sample_keeps_trail_bytes_with_their_lead() {
        // Shift_JIS 0x81 0x40 then ASCII; windows-1252 é then ASCII
        assert_eq!(non_ascii_sample(b"ab\x81\x40cd e\xe9f g", 100), b"b\x81\x40\ne\xe9f");
        assert_eq!(non_ascii_sample(b"plain", 100), b"");
        assert_eq!(non_ascii_sample(b"\xe9a \xe9b \xe9c", 5), b"\xe9a\n \xe9b");
    }

    #[test]
    fn utf8_majority() {
        assert_eq!(utf8_counts("café".as_bytes()), (1, 0));
        assert_eq!(utf8_counts(b"caf\xe9"), (0, 1));
        // a record cut inside its last character
        let mut cut = "crème brûlée à la carte".as_bytes().to_vec();
        cut.extend_from_slice(&"é".as_bytes()[..1]);
        assert!(mostly_utf8(&cut));
        assert!(!mostly_utf8(b"cr\xe8me br\xfbl\xe9e"));
    }

    #[test]
    fn decides_without_declaration() {
        let detect_name = |b: &[u8]| detect(b).0.name();
        assert_eq!(detect(b"<p>plain</p>"), (Encoding::UTF_8, Evidence::Ascii));
        assert_eq!(detect("<p>déjà vu</p>".as_bytes()), (Encoding::UTF_8, Evidence::Utf8));
        assert_eq!(detect_name(b"<p>Caf\xe9 cr\xe8me \xe0 na\xefve, na\xefvet\xe9</p>"), "windows-1252");
        assert_eq!(detect(b"\x1b$B$3$s\x1b(B"), (Encoding::ISO_2022_JP, Evidence::Iso2022Jp));
        let utf16: Vec<u8> = "<p>hello world</p>".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(detect(&utf16), (Encoding::UTF_16LE, Evidence::Utf16));
    }

    #[test]
    fn euro_in_iso_8859_15_and_nbsp_only_pages() {
        // 0xA4: the euro sign in ISO-8859-15, the currency sign in windows-1252
        let euro = b"<p>Le prix: 20 \xa4 le kilo, l'\xe9t\xe9 de l'\xe9l\xe8ve \
                     co\xfbte 5 \xa4 de plus.</p>";
        assert_eq!(detect(euro), (Encoding::ISO_8859_15, Evidence::Scored));
        // without 0xA4 and its kin the two read alike and windows-1252 comes first
        assert_eq!(detect(b"<p>Caf\xe9 cr\xe8me</p>").0, Encoding::WINDOWS_1252);
        // runs of NBSP alone: not KOI8-R's box-drawing 0xA0
        let nbsp = b"<td>\xa0\xa0\xa0 menu</td><td>\xa0\xa0 home\xa0</td>\
                     <td>\xa0 a \xa0b</td>";
        assert_eq!(detect(nbsp).0, Encoding::WINDOWS_1252);
    }

    #[test]
    fn czech_letter_pairs() {
        // ISO-8859-2 Czech: its bytes read as windows-1254 give Turkish ı, Nordic ø and Italian
        // ì (each a letter); only the pairs ("ře" against "øe", "ěj" against "ìj", a superscript
        // ¹ inside a word) tell them apart. The class-and-character model read it as
        // windows-1254.
        let czech = b"<p>P\xf8\xedli\xb9 \xbelu\xbbou\xe8k\xfd k\xf9\xf2 \xfap\xecl \xef\xe1belsk\xe9 \
                      \xf3dy. P\xf8edseda vl\xe1dy \xf8ekl, \xbee se nic ned\xecje.</p>";
        assert_eq!(detect(czech), (Encoding::ISO_8859_2, Evidence::Scored));
        // the pair term scores the sample's pairs: a Czech pair above the same bytes in
        // windows-1254
        assert!(log_probability("ře") > log_probability("øe"));
        assert!(log_probability("pěj") > log_probability("pìj"));
    }

    #[test]
    fn runs_of_one_character() {
        // KOI8-R: lines of 0xA0 (U+2550) in a source comment, and 0xBF (©). Read as
        // windows-1251 before runs were scored by length: the same bytes are runs of NBSP there
        let mut koi8 = b"<style>/* ".to_vec();
        koi8.extend_from_slice(&[0xA0; 60]);
        koi8.extend_from_slice(b"\n   LAYOUT\n   ");
        koi8.extend_from_slice(&[0xA0; 60]);
        koi8.extend_from_slice(b" */</style><p>\xbf 2025</p>");
        assert_eq!(detect(&koi8).0, Encoding::KOI8_R);
        // runs of NBSP a few long, between words: windows-1252 (the test above holds too)
        let nbsp = b"<div>September 10\xa0\xa0\xa0\xa0\xa0\xa0 12pm\xa0\xa0\xa0\xa0 SAAC 217\xa0\xa0\xa0 \
                     Carrie Menke,\xa0 Ph.D</div>";
        assert_eq!(detect(nbsp).0, Encoding::WINDOWS_1252);
        // a run scores by its length so far: a long line of box-drawing characters above a
        // long run of NBSP, a short run of NBSP above a short run of them
        let line = |c: char, n: usize| std::iter::repeat_n(c, n).collect::<String>();
        assert!(log_probability(&line('═', 60)) > log_probability(&line('\u{A0}', 60)));
        assert!(
            log_probability(&format!("a{}b", line('\u{A0}', 3)))
                > log_probability(&format!("a{}b", line('═', 3)))
        );
    }

    #[test]
    fn ellipsis_after_words() {
        // EUC-KR 0xA1 0xA6 is "…", Big5 reads it as "’": after a word and before a tag, the
        // train pages' pairs favour the ellipsis (the class-and-character model took Big5)
        let euc_kr = b"<p>At the <b>Extrusion distance\xa1\xa6</b> prompt, then <b>Select edges\xa1\xa6</b> \
                       and <b>Fillet\xa1\xa6</b></p>";
        assert_eq!(detect(euc_kr).0, Encoding::EUC_KR);
    }

    #[test]
    fn lone_bytes_with_their_element() {
        let page = b"<span class=\"dot\">\x9e</span><p>\n  \xa0 </P><b>x\xe9</b><i>\xe9 </ i>\xe9</a>\
                     <span>\x9e</span>";
        let lone: Vec<(u8, &[u8], usize)> = lone_bytes(page, 10);
        // the third: after an end tag's `>`, as the train pages' counting reads it
        assert_eq!(lone, vec![(0x9e, &b"span"[..], 2), (0xa0, &b"P"[..], 1), (0xe9, &b"a"[..], 1)]);
        assert_eq!(lone_bytes(page, 1), vec![(0x9e, &b"span"[..], 1)]);
    }

    #[test]
    fn a_symbol_alone_in_an_element() {
        // 0x9E alone in an element: a middle dot in KOI8-R, a zero-width joiner in windows-1256.
        // Both follow `>` on the train pages about as often; which element holds it decides: a
        // separator `<span>` (the pair model alone took windows-1256) or a Webflow empty `<p>`
        let dots = b"<div><span class=\"count\">28 posts</span><span class=\"dot\">\x9e</span>\
                     <a href=\"#1\">#1</a> <span class=\"dot\">\x9e</span> <a href=\"/u\">user</a>\
                     <span class=\"dot\">\x9e</span> Jan 2024</div>";
        assert_eq!(detect(dots).0, Encoding::KOI8_R);
        let webflow = b"<div class=\"rich-text\"><p>The plan</p><p>\x9e</p><p>Next steps</p>\
                        <p>\x9e</p><p>Contact us</p><p>\x9e</p></div>";
        assert_eq!(detect(webflow).0, Encoding::WINDOWS_1256);
    }
}
