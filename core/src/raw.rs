//! The raw page before lexbor parses it: the compiled twin of the regular expressions that
//! `tests/spec/dom_spec.py` (`lexbor_serialization`) and `simplify_spec.py` run over it —
//! `</>` kept as text, nameless attributes marked, the two flags the segmentation reads, and the
//! `<?xml …>` declarations taken out of lexbor's serialization. Each function names the
//! expression it reproduces; they are matched here the way Python's `re` matches them
//! (backtracking order, Unicode `\s` and `\b`, case-insensitive letters as Python folds them).
//!
//! A page comes as Python's `str` encodes with `surrogatepass`: UTF-8, where a lone surrogate
//! (which a `str` may hold) is the 3-byte sequence of its code point. Python's expressions see
//! such a surrogate as one ordinary character; selectolax dropped them when it encoded the page
//! for lexbor, and so does `lexbor_input`.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::py_tables::PY_WORD as WORD_RANGES;

/// Whether `page` is UTF-8 with lone surrogates allowed: `Ok(holds a surrogate)`, or the byte
/// offset of the first sequence that is neither.
pub fn check_page(page: &[u8]) -> Result<bool, usize> {
    let mut surrogates = false;
    let mut at = 0;
    loop {
        match std::str::from_utf8(&page[at..]) {
            Ok(_) => return Ok(surrogates),
            Err(e) => {
                let bad = at + e.valid_up_to();
                if is_surrogate_at(page, bad) {
                    surrogates = true;
                    at = bad + 3;
                } else {
                    return Err(bad);
                }
            }
        }
    }
}

/// An encoded surrogate (U+D800–U+DFFF: ED A0–BF 80–BF) starts at `i`.
#[inline]
fn is_surrogate_at(b: &[u8], i: usize) -> bool {
    i + 2 < b.len() && b[i] == 0xed && (0xa0..=0xbf).contains(&b[i + 1]) && (b[i + 2] & 0xc0) == 0x80
}

/// The page lexbor parses: without its surrogates (selectolax encodes with `errors="ignore"`).
pub fn lexbor_input(page: &[u8], has_surrogates: bool) -> Cow<'_, [u8]> {
    if !has_surrogates {
        return Cow::Borrowed(page);
    }
    let mut out = Vec::with_capacity(page.len());
    let mut i = 0;
    while i < page.len() {
        if is_surrogate_at(page, i) {
            i += 3;
        } else {
            out.push(page[i]);
            i += 1;
        }
    }
    Cow::Owned(out)
}

/// The code point at byte `i` of a checked page and its length in bytes.
#[inline]
fn char_at(b: &[u8], i: usize) -> (u32, usize) {
    let c = b[i] as u32;
    if c < 0x80 {
        (c, 1)
    } else if c < 0xe0 {
        (((c & 0x1f) << 6) | (b[i + 1] as u32 & 0x3f), 2)
    } else if c < 0xf0 {
        (((c & 0x0f) << 12) | ((b[i + 1] as u32 & 0x3f) << 6) | (b[i + 2] as u32 & 0x3f), 3)
    } else {
        let cp = ((c & 0x07) << 18)
            | ((b[i + 1] as u32 & 0x3f) << 12)
            | ((b[i + 2] as u32 & 0x3f) << 6)
            | (b[i + 3] as u32 & 0x3f);
        (cp, 4)
    }
}

/// Python's `\s` (`str.isspace`) on a code point.
#[inline]
fn is_space(cp: u32) -> bool {
    matches!(
        cp,
        0x09..=0x0d | 0x1c..=0x20 | 0x85 | 0xa0 | 0x1680 | 0x2000..=0x200a | 0x2028 | 0x2029
            | 0x202f | 0x205f | 0x3000
    )
}

/// Python's `\w` on a code point.
#[inline]
fn is_word(cp: u32) -> bool {
    if cp < 0x80 {
        return (cp as u8).is_ascii_alphanumeric() || cp == b'_' as u32;
    }
    WORD_RANGES
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Length of the run of `\s` characters at `i`.
#[inline]
fn space_run(b: &[u8], mut i: usize) -> usize {
    let start = i;
    while i < b.len() {
        let (cp, len) = char_at(b, i);
        if !is_space(cp) {
            break;
        }
        i += len;
    }
    i - start
}

/// Python's case-insensitive match of the lower-case ASCII `word` at `i`: the end offset, or
/// None. Besides ASCII case, `re.IGNORECASE` matches "i" with U+0130 and U+0131, "k" with
/// U+212A (Kelvin sign) and "s" with U+017F (long s).
pub(crate) fn ignorecase_word_at(b: &[u8], mut i: usize, word: &[u8]) -> Option<usize> {
    for &letter in word {
        if i >= b.len() {
            return None;
        }
        let c = b[i];
        if c < 0x80 {
            if c.to_ascii_lowercase() != letter {
                return None;
            }
            i += 1;
            continue;
        }
        let (cp, len) = char_at(b, i);
        let folds = match letter {
            b'i' => cp == 0x130 || cp == 0x131,
            b'k' => cp == 0x212a,
            b's' => cp == 0x17f,
            _ => false,
        };
        if !folds {
            return None;
        }
        i += len;
    }
    Some(i)
}

/// A code point as a case-insensitive backreference compares it (its simple lower case),
/// exact for what the text-element names capture (ASCII letters, U+0130, U+0131, U+017F,
/// U+212A): only U+0130 and U+212A lower-case onto ASCII.
#[inline]
fn backref_fold(cp: u32) -> u32 {
    match cp {
        0x41..=0x5a => cp + 0x20,
        0x130 => b'i' as u32,
        0x212a => b'k' as u32,
        _ => cp,
    }
}

/// `\b` right after a word character, at `i`: the end of the text or a non-word character.
#[inline]
fn word_ends_at(b: &[u8], i: usize) -> bool {
    i >= b.len() || !is_word(char_at(b, i).0)
}

// ── text elements: (<(script|…|noframes)\b.*?</\2\s*>) ──────────────────────────────────────

/// Elements whose content is text, not markup (dom_spec's `_TEXT_ELEMENTS`), in the
/// alternation's order.
const TEXT_ELEMENTS: [&[u8]; 8] =
    [b"script", b"style", b"textarea", b"title", b"xmp", b"iframe", b"noembed", b"noframes"];

/// `<(script|style|textarea|title|xmp|iframe|noembed|noframes)\b.*?</\1\s*>` (IGNORECASE,
/// DOTALL) matched at `i`. `unclosed` remembers, per folded name, from where no end tag
/// follows: a page of unclosed `<title`s stays linear.
struct TextElements {
    unclosed: HashMap<Vec<u32>, usize>,
}

impl TextElements {
    fn new() -> Self {
        TextElements { unclosed: HashMap::new() }
    }

    /// The end offset of the text element whose start tag begins at `i` (a `<`), or None.
    fn match_at(&mut self, b: &[u8], i: usize) -> Option<usize> {
        let name_start = i + 1;
        // at most one name can match: each folds onto different ASCII letters
        let name_end = TEXT_ELEMENTS.iter().find_map(|name| ignorecase_word_at(b, name_start, name))?;
        if !word_ends_at(b, name_end) {
            return None;
        }
        let mut folded = Vec::with_capacity(8);
        let mut k = name_start;
        while k < name_end {
            let (cp, len) = char_at(b, k);
            folded.push(backref_fold(cp));
            k += len;
        }
        if self.unclosed.get(&folded).is_some_and(|&from| name_end >= from) {
            return None;
        }
        // .*? : the first "</" + the same name (as the backreference compares) + \s* + ">"
        let mut j = name_end;
        while let Some(k) = memchr(b'<', &b[j..]) {
            let lt = j + k;
            j = lt + 1;
            if b.get(lt + 1) != Some(&b'/') {
                continue;
            }
            let mut at = lt + 2;
            let mut same = true;
            for &want in &folded {
                if at >= b.len() {
                    same = false;
                    break;
                }
                let (cp, len) = char_at(b, at);
                if backref_fold(cp) != want {
                    same = false;
                    break;
                }
                at += len;
            }
            if !same {
                continue;
            }
            at += space_run(b, at);
            if b.get(at) == Some(&b'>') {
                return Some(at + 1);
            }
        }
        self.unclosed.insert(folded, name_end);
        None
    }
}

use crate::scan::find_byte as memchr;

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    crate::scan::find_bytes(hay, needle).is_some()
}

/// `_keep_empty_end_tags`: `_EMPTY_END_TAG_RE.sub(...)` — every `</>` outside text elements
/// becomes `&lt;/&gt;` (lexbor drops `</>`, the reference's Modest parser keeps it as text).
/// None when the page holds no `</>` to replace.
pub fn keep_empty_end_tags(b: &[u8]) -> Option<Vec<u8>> {
    if !contains(b, b"</>") {
        return None;
    }
    let mut elements = TextElements::new();
    let mut out: Vec<u8> = Vec::with_capacity(b.len() + 64);
    let (mut copied, mut i) = (0usize, 0usize);
    let mut replaced = false;
    while let Some(k) = memchr(b'<', &b[i..]) {
        let lt = i + k;
        if let Some(end) = elements.match_at(b, lt) {
            i = end;
        } else if b[lt..].starts_with(b"</>") {
            out.extend_from_slice(&b[copied..lt]);
            out.extend_from_slice(b"&lt;/&gt;");
            copied = lt + 3;
            i = lt + 3;
            replaced = true;
        } else {
            i = lt + 1;
        }
    }
    if !replaced {
        return None;
    }
    out.extend_from_slice(&b[copied..]);
    Some(out)
}

/// `_TEXT_ELEMENT_RE.finditer`: the spans of the page's text elements.
fn text_element_spans(b: &[u8]) -> Vec<(usize, usize)> {
    let mut elements = TextElements::new();
    let mut spans = Vec::new();
    let mut i = 0;
    while let Some(k) = memchr(b'<', &b[i..]) {
        let lt = i + k;
        match elements.match_at(b, lt) {
            Some(end) => {
                spans.push((lt, end));
                i = end;
            }
            None => i = lt + 1,
        }
    }
    spans
}

// ── nameless attributes ─────────────────────────────────────────────────────────────────

/// Where the reference's Modest parser would give a start tag a nameless attribute, this mark
/// becomes an attribute name for lexbor (the tree reads it back as the empty name).
pub const NAMELESS_ATTR_MARK: &[u8] = b" pulpie-rt-nameless";

/// What one walk over a page's `<` and `/` finds: the searches of `rewrite` and of
/// `has_raw_text`, each a pass over the whole page otherwise.
pub struct Marks {
    /// `"</>" in page`
    empty_end_tag: bool,
    /// `" /"`, `"\n/"`, `"\t/"` or `"\r/"` is in the page: only then can a tag need the mark
    slash_after_space: bool,
    /// `simplify_spec._HAS_RAW_TEXT_RE.search(page)`: `<(?:xmp|noembed|noframes|plaintext)\b`,
    /// IGNORECASE
    pub raw_text: bool,
    /// `_SLASH_TAG_RE.finditer` (`<[a-zA-Z][^<]*?\s/`): the byte offsets where it matches
    slash_tag_starts: Vec<usize>,
}

impl Marks {
    /// The marks of `b`. The slash tags are read off the `<` and `/` in order: a `<` then a
    /// letter opens a try (the one before it, if any, failed: `[^<]` stops at a `<`, and the
    /// search goes on from there); the try matches at its first `/` after a `\s` at or after
    /// the letter's next byte, and the search goes on after that `/`.
    pub fn of(b: &[u8]) -> Marks {
        const RAW_TEXT_NAMES: [&[u8]; 4] = [b"xmp", b"noembed", b"noframes", b"plaintext"];
        let mut marks = Marks {
            empty_end_tag: false,
            slash_after_space: false,
            raw_text: false,
            slash_tag_starts: Vec::new(),
        };
        let mut open: Option<usize> = None;
        for q in crate::scan::Positions::new(b, [b'<', b'/']) {
            if b[q] == b'<' {
                let next = b.get(q + 1).copied();
                marks.empty_end_tag |= next == Some(b'/') && b.get(q + 2) == Some(&b'>');
                // `<(?:xmp|noembed|noframes|plaintext)\b`, IGNORECASE: each name's first letter
                // has no other case fold than its ASCII ones
                if !marks.raw_text && matches!(next, Some(b'x' | b'X' | b'n' | b'N' | b'p' | b'P')) {
                    marks.raw_text = RAW_TEXT_NAMES.iter().any(|name| {
                        ignorecase_word_at(b, q + 1, name).is_some_and(|end| word_ends_at(b, end))
                    });
                }
                open = next.is_some_and(|c| c.is_ascii_alphabetic()).then_some(q);
            } else {
                marks.slash_after_space |= q > 0 && matches!(b[q - 1], b' ' | b'\n' | b'\t' | b'\r');
                if let Some(p) = open {
                    if q > p + 2 && ends_with_space(&b[p + 2..q]) {
                        marks.slash_tag_starts.push(p);
                        open = None;
                    }
                }
            }
        }
        marks
    }
}

/// Whether `b` ends with a character Python's `\s` matches.
fn ends_with_space(b: &[u8]) -> bool {
    let n = b.len();
    // the last character starts at the last byte that is not a continuation byte
    let mut start = n - 1;
    while start > 0 && (b[start] & 0xc0) == 0x80 && n - start < 4 {
        start -= 1;
    }
    is_space(char_at(b, start).0)
}

/// Length of the run at `i` of characters that are not `\s` and not one of `stops`.
#[inline]
fn run_without(b: &[u8], mut i: usize, stops: &[u8]) -> usize {
    let start = i;
    while i < b.len() {
        let c = b[i];
        if c < 0x80 {
            if stops.contains(&c) || is_space(c as u32) {
                break;
            }
            i += 1;
        } else {
            let (cp, len) = char_at(b, i);
            if is_space(cp) {
                break;
            }
            i += len;
        }
    }
    i - start
}

/// `_NAMELESS_ATTR_RE.match(page, start)`: its end offset, or None. The expression is
///
/// `<[a-zA-Z][^\s/>]*(?:\s+[^\s/>=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+))?)*?\s+[^\s/>=]+(?=\s+/)`
///
/// and no backtracking can change its outcome: every quantifier stops where the next token
/// cannot begin (a name where white space or "=" must follow, white space where a name or a
/// value must), so one greedy pass decides. At each attribute boundary the lazy loop first
/// tries the final `\s+[^\s/>=]+(?=\s+/)`, then one more attribute.
fn nameless_attr_end(b: &[u8], start: usize) -> Option<usize> {
    let mut q = start + 2 + run_without(b, start + 2, b"/>");
    loop {
        let spaces = space_run(b, q);
        if spaces == 0 {
            return None;
        }
        let name_start = q + spaces;
        let name = run_without(b, name_start, b"/>=");
        if name == 0 {
            return None;
        }
        let name_end = name_start + name;
        let after = space_run(b, name_end);
        if after > 0 && b.get(name_end + after) == Some(&b'/') {
            return Some(name_end);
        }
        // one more attribute: the name, then an optional \s*=\s*("…"|'…'|[^\s"'>]+)
        q = name_end;
        let eq = name_end + after;
        if b.get(eq) == Some(&b'=') {
            let v = eq + 1 + space_run(b, eq + 1);
            match b.get(v) {
                Some(&quote @ (b'"' | b'\'')) => {
                    if let Some(k) = memchr(quote, &b[v + 1..]) {
                        q = v + 1 + k + 1;
                    }
                }
                Some(_) => {
                    let bare = run_without(b, v, b"\"'>");
                    if bare > 0 {
                        q = v + bare;
                    }
                }
                None => {}
            }
        }
    }
}

/// `_mark_nameless_attrs`: `NAMELESS_ATTR_MARK` inserted where `_NAMELESS_ATTR_RE` matches at a
/// `_SLASH_TAG_RE` start, unless that start lies inside a text element. None: no change.
fn mark_nameless_attrs(b: &[u8], slash_tag_starts: &[usize]) -> Option<Vec<u8>> {
    let mut inserts = Vec::new();
    let mut spans: Option<Vec<(usize, usize)>> = None;
    for &start in slash_tag_starts {
        let Some(end) = nameless_attr_end(b, start) else { continue };
        let spans = spans.get_or_insert_with(|| text_element_spans(b));
        if spans.iter().any(|&(from, to)| from < start && start < to) {
            continue;
        }
        inserts.push(end);
    }
    if inserts.is_empty() {
        return None;
    }
    // the specification joins page[pos:at] slices: a later match that ends before an earlier
    // one (possible through quoted values) gives an empty slice, as Python's slicing does
    let mut out = Vec::with_capacity(b.len() + inserts.len() * NAMELESS_ATTR_MARK.len());
    let mut pos = 0;
    for at in inserts {
        if at > pos {
            out.extend_from_slice(&b[pos..at]);
        }
        out.extend_from_slice(NAMELESS_ATTR_MARK);
        pos = at;
    }
    out.extend_from_slice(&b[pos.min(b.len())..]);
    Some(out)
}

/// The page lexbor parses, before its surrogates are dropped: `</>` kept as text, nameless
/// attributes marked (`lexbor_serialization`'s two rewrites, in its order); `marks`: the
/// page's `Marks`.
pub fn rewrite<'a>(page: &'a [u8], marks: &Marks) -> Cow<'a, [u8]> {
    let mut page = Cow::Borrowed(page);
    let mut kept_marks = None;
    if marks.empty_end_tag {
        if let Some(kept) = keep_empty_end_tags(&page) {
            page = Cow::Owned(kept);
            kept_marks = Some(Marks::of(&page));
        }
    }
    let marks = kept_marks.as_ref().unwrap_or(marks);
    if marks.slash_after_space {
        if let Some(marked) = mark_nameless_attrs(&page, &marks.slash_tag_starts) {
            page = Cow::Owned(marked);
        }
    }
    page
}

// ── flags of the raw page and the serialization's <?xml …> ─────────────────────────────────

/// `simplify_spec._NOT_XML_CHAR_RE.search(page)`: a C0 control other than tab, LF and CR,
/// U+FFFE, U+FFFF or a surrogate.
pub fn has_not_xml_chars(b: &[u8]) -> bool {
    has_not_xml_bytes(b, true)
}

/// Whether `b` holds a C0 control other than tab, LF and CR, U+FFFE or U+FFFF, or (with
/// `surrogates`) an encoded surrogate. Chunks without a byte that can start one (a control
/// but tab, LF and CR; 0xEF; 0xED) are passed over by a loop the compiler vectorizes: this
/// runs over whole pages.
pub fn has_not_xml_bytes(b: &[u8], surrogates: bool) -> bool {
    const CHUNK: usize = 32;
    let mut start = 0;
    for chunk in b.chunks(CHUNK) {
        let mut suspect = false;
        for &c in chunk {
            suspect |= ((c < 0x20) & (c != b'\t') & (c != b'\n') & (c != b'\r')) | (c == 0xef) | (c == 0xed);
        }
        if suspect {
            for i in start..start + chunk.len() {
                let hit = match b[i] {
                    0x00..=0x08 | 0x0b | 0x0c | 0x0e..=0x1f => true,
                    0xef => b.get(i + 1) == Some(&0xbf) && matches!(b.get(i + 2), Some(0xbe | 0xbf)),
                    0xed => surrogates && is_surrogate_at(b, i),
                    _ => false,
                };
                if hit {
                    return true;
                }
            }
        }
        start += chunk.len();
    }
    false
}

/// `dom_spec._XML_DECL_RE.sub("", serialized)` (`<\?xml\s+.*?\??>`, DOTALL): from `<?xml`
/// followed by white space to the first `>` after it.
pub fn remove_xml_declarations(s: String) -> String {
    if !s.contains("<?xml") {
        return s;
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut copied, mut i) = (0usize, 0usize);
    while let Some(k) = s[i..].find("<?xml") {
        let at = i + k;
        if at + 5 < b.len() && space_run(b, at + 5) > 0 {
            match memchr(b'>', &b[at + 5..]) {
                Some(gt) => {
                    out.push_str(&s[copied..at]);
                    copied = at + 5 + gt + 1;
                    i = copied;
                    continue;
                }
                None => break, // no ">" follows: no later match either
            }
        }
        i = at + 1;
    }
    out.push_str(&s[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(s: &str) -> String {
        keep_empty_end_tags(s.as_bytes()).map_or(s.to_string(), |v| String::from_utf8(v).unwrap())
    }

    fn marked(s: &str) -> String {
        String::from_utf8(rewrite(s.as_bytes(), &Marks::of(s.as_bytes())).into_owned()).unwrap()
    }

    #[test]
    fn empty_end_tags_outside_text_elements() {
        assert_eq!(kept("a</>b<script>x</>y</script>c</>"), "a&lt;/&gt;b<script>x</>y</script>c&lt;/&gt;");
        // the end tag must repeat the name as the backreference compares it
        assert_eq!(kept("<TITLE>a</>b</title >c</>"), "<TITLE>a</>b</title >c&lt;/&gt;");
        // no \b after the name: not a text element
        assert_eq!(kept("<scripts></></scripts>"), "<scripts>&lt;/&gt;</scripts>");
        // the long s folds onto "s" for the name, but a backreference only matches itself
        assert_eq!(kept("<\u{17f}cript></></script>"), "<\u{17f}cript>&lt;/&gt;</script>");
        assert_eq!(kept("<\u{17f}cript></></\u{17f}cript>"), "<\u{17f}cript></></\u{17f}cript>");
        // unclosed: no text element
        assert_eq!(kept("<style></>"), "<style>&lt;/&gt;");
    }

    #[test]
    fn nameless_attributes() {
        assert_eq!(marked("<input required />"), "<input required pulpie-rt-nameless />");
        assert_eq!(marked("<input a=\"1\" b c='2' d />"), "<input a=\"1\" b c='2' d pulpie-rt-nameless />");
        assert_eq!(marked("<input a=1 />"), "<input a=1 />");
        assert_eq!(marked("<script><input required /></script>"), "<script><input required /></script>");
    }

    #[test]
    fn one_pass_finds_every_mark() {
        let marks = |s: &str| {
            let m = Marks::of(s.as_bytes());
            (m.empty_end_tag, m.slash_after_space, m.raw_text, m.slash_tag_starts)
        };
        assert_eq!(marks("a</ >b<br/>"), (false, false, false, vec![]));
        assert_eq!(marks("a</>b"), (true, false, false, vec![]));
        assert_eq!(marks("<p>x /y<br\t/><i a=1\n/>"), (false, true, false, vec![0, 7, 13]));
        // a "<" ends the try; a Unicode \s before "/" matches, an ASCII one is needed for the gate
        assert_eq!(marks("<a href=x <b c\u{a0}/>"), (false, false, false, vec![10]));
        assert_eq!(marks("<XMP>"), (false, false, true, vec![]));
        assert_eq!(marks("<noembedded><Plaintext/>"), (false, false, true, vec![]));
        assert_eq!(marks("<noframe>"), (false, false, false, vec![]));
    }

    #[test]
    fn surrogates_are_checked_and_dropped() {
        let page = b"a\xed\xa0\x80b";
        assert_eq!(check_page(page), Ok(true));
        assert_eq!(&*lexbor_input(page, true), b"ab");
        assert_eq!(check_page(b"a\xffb"), Err(1));
        assert!(has_not_xml_chars(page));
    }

    #[test]
    fn xml_declarations() {
        assert_eq!(remove_xml_declarations("a<?xml v?>b<?xmlz>c<?xml\n>d".into()), "ab<?xmlz>cd");
        assert_eq!(remove_xml_declarations("a<?xml v".into()), "a<?xml v");
    }
}
