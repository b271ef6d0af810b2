//! One start tag of a serialization, read exactly as the specification's token pattern
//! (`tests/spec/dom_spec.py`, `_TOKEN_RE`) reads it with Python's backtracking `re`:
//!
//! `<([^\s/>!?]+)((?:\s*(?:=[^\s=/>]*|[^\s=/>]+)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]*))?)*)\s*(/?)>`
//!
//! then its attributes as `_ATTR_RE.findall` splits group 2. A serializer's start tags match on
//! the first path the expression tries (one greedy pass); anything else (a "/" inside the tag,
//! an unclosed quote, a tag the end of the text cuts: shapes the `<?xml` removal can leave)
//! goes through `Search`, which tries the same paths in the same order as `re` does, each
//! position once.

use crate::hash::FastMap;

/// `\s` (Python's, Unicode) at byte `i`: its length, 0 if none.
#[inline]
fn space_len(b: &[u8], i: usize) -> usize {
    let c = b[i];
    if c < 0x80 {
        return matches!(c, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1c..=0x1f | b' ') as usize;
    }
    let (cp, len) = decode(b, i);
    match cp {
        0x85 | 0xa0 | 0x1680 | 0x2000..=0x200a | 0x2028 | 0x2029 | 0x202f | 0x205f | 0x3000 => len,
        _ => 0,
    }
}

#[inline]
fn decode(b: &[u8], i: usize) -> (u32, usize) {
    let c = b[i] as u32;
    if c < 0xe0 {
        (((c & 0x1f) << 6) | (b[i + 1] as u32 & 0x3f), 2)
    } else if c < 0xf0 {
        (((c & 0x0f) << 12) | ((b[i + 1] as u32 & 0x3f) << 6) | (b[i + 2] as u32 & 0x3f), 3)
    } else {
        (0x10000, 4) // no white space beyond the BMP
    }
}

#[inline]
fn char_len(b: &[u8], i: usize) -> usize {
    match b[i] {
        c if c < 0x80 => 1,
        c if c < 0xe0 => 2,
        c if c < 0xf0 => 3,
        _ => 4,
    }
}

/// Length of the run of `\s` at `i`.
#[inline]
fn spaces(b: &[u8], mut i: usize) -> usize {
    let start = i;
    while i < b.len() {
        let w = space_len(b, i);
        if w == 0 {
            break;
        }
        i += w;
    }
    i - start
}

/// Length of the run at `i` of characters that are neither `\s` nor one of `stops`.
#[inline]
fn run_without(b: &[u8], mut i: usize, stops: &[u8]) -> usize {
    let start = i;
    while i < b.len() && !stops.contains(&b[i]) && space_len(b, i) == 0 {
        i += char_len(b, i);
    }
    i - start
}

/// Where one start tag's parts end: the name (group 1), the attributes (group 2), whether
/// `/>` closes it (group 3) and the whole match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartTagSpan {
    pub name_end: usize,
    pub attrs_end: usize,
    pub self_closing: bool,
    pub end: usize,
}

/// `\s*(/?)>` at `x`: (end, self-closing).
fn tag_close(b: &[u8], x: usize) -> Option<(usize, bool)> {
    let i = x + spaces(b, x);
    match (b.get(i), b.get(i + 1)) {
        (Some(b'>'), _) => Some((i + 1, false)),
        (Some(b'/'), Some(b'>')) => Some((i + 2, true)),
        _ => None,
    }
}

/// The attribute name of one loop iteration at `x`: `\s*` (all of it: a name cannot start
/// with white space) then `=[^\s=/>]*` or `[^\s=/>]+`, longest (a shorter name only splits it
/// into names whose paths all meet again where it ends). Its end, or None.
fn attr_name_end(b: &[u8], x: usize) -> Option<usize> {
    let y = x + spaces(b, x);
    match b.get(y) {
        None | Some(b'/' | b'>') => None,
        Some(b'=') => Some(y + 1 + run_without(b, y + 1, b"=/>")),
        Some(_) => Some(y + run_without(b, y, b"=/>")),
    }
}

/// The positions one loop iteration from `x` can end at, in the order `re` tries them: after
/// the name, the value `\s*=\s*("…"|'…'|[^\s>]*)` — its quoted forms, the bare form from
/// longest to empty, the bare form empty at each shorter `\s*` after "=" — then no value.
fn iteration_ends(b: &[u8], x: usize, ends: &mut Vec<usize>) {
    ends.clear();
    let Some(name_end) = attr_name_end(b, x) else { return };
    let eq = name_end + spaces(b, name_end);
    if b.get(eq) == Some(&b'=') {
        let after_eq = eq + 1;
        let value = after_eq + spaces(b, after_eq);
        if let Some(&quote @ (b'"' | b'\'')) = b.get(value) {
            if let Some(k) = b[value + 1..].iter().position(|&c| c == quote) {
                ends.push(value + 1 + k + 1);
            }
        }
        let bare_end = value + run_without(b, value, b">");
        let mut i = bare_end;
        loop {
            ends.push(i);
            if i == value {
                break;
            }
            i -= 1;
            while (b[i] & 0xc0) == 0x80 {
                i -= 1;
            }
        }
        let mut i = value;
        while i > after_eq {
            i -= 1;
            while (b[i] & 0xc0) == 0x80 {
                i -= 1;
            }
            ends.push(i);
        }
    }
    ends.push(name_end);
}

/// The first end of one loop iteration from `x` (the path `re` tries first), or None.
fn first_iteration_end(b: &[u8], x: usize) -> Option<usize> {
    let name_end = attr_name_end(b, x)?;
    let eq = name_end + spaces(b, name_end);
    if b.get(eq) != Some(&b'=') {
        return Some(name_end);
    }
    let value = eq + 1 + spaces(b, eq + 1);
    if let Some(&quote @ (b'"' | b'\'')) = b.get(value) {
        if let Some(k) = b[value + 1..].iter().position(|&c| c == quote) {
            return Some(value + 1 + k + 1);
        }
    }
    Some(value + run_without(b, value, b">"))
}

/// The attribute loop and the tag's close from `x`, every path in `re`'s order, each position
/// once (whether the rest matches from a position does not depend on how it was reached).
struct Search<'a> {
    b: &'a [u8],
    /// position -> (attributes end, tag end, self-closing), or None where nothing matches
    memo: FastMap<usize, Option<(usize, usize, bool)>>,
}

impl Search<'_> {
    fn from(&mut self, x0: usize) -> Option<(usize, usize, bool)> {
        if let Some(&known) = self.memo.get(&x0) {
            return known;
        }
        // frames: (position, its iteration ends, the next one to try)
        let mut stack: Vec<(usize, Vec<usize>, usize)> = Vec::new();
        let mut ends = Vec::new();
        iteration_ends(self.b, x0, &mut ends);
        stack.push((x0, ends, 0));
        let mut answer: Option<Option<(usize, usize, bool)>> = None;
        loop {
            let (x, ends, next) = stack.last_mut().expect("a frame");
            let x = *x;
            if let Some(Some(found)) = answer.take() {
                // the first success is the match: every frame below takes it
                self.memo.insert(x, Some(found));
                stack.pop();
                if stack.is_empty() {
                    return Some(found);
                }
                answer = Some(Some(found));
                continue;
            }
            if *next < ends.len() {
                let end = ends[*next];
                *next += 1;
                if let Some(&known) = self.memo.get(&end) {
                    answer = Some(known);
                } else {
                    let mut child_ends = Vec::new();
                    iteration_ends(self.b, end, &mut child_ends);
                    stack.push((end, child_ends, 0));
                }
                continue;
            }
            // no iteration leads anywhere: the loop stops here, the tag must close here
            let found = tag_close(self.b, x).map(|(end, slash)| (x, end, slash));
            self.memo.insert(x, found);
            stack.pop();
            if stack.is_empty() {
                return found;
            }
            answer = Some(found);
        }
    }
}

/// The start tag at `p` (a `<`), or None where the start-tag alternative does not match there.
pub fn match_start_tag(s: &str, p: usize) -> Option<StartTagSpan> {
    let b = s.as_bytes();
    let name_end = p + 1 + run_without(b, p + 1, b"/>!?");
    if name_end == p + 1 {
        return None;
    }
    // the first path: each iteration's first end, until none, then the close
    let mut x = name_end;
    while let Some(end) = first_iteration_end(b, x) {
        x = end;
    }
    if let Some((end, self_closing)) = tag_close(b, x) {
        return Some(StartTagSpan { name_end, attrs_end: x, self_closing, end });
    }
    // every path, the name from longest to one character
    let mut search = Search { b, memo: FastMap::default() };
    let mut e = name_end;
    loop {
        if let Some((attrs_end, end, self_closing)) = search.from(e) {
            return Some(StartTagSpan { name_end: e, attrs_end, self_closing, end });
        }
        e -= 1;
        while (b[e] & 0xc0) == 0x80 {
            e -= 1;
        }
        if e == p + 1 {
            return None;
        }
    }
}

/// `_ATTR_RE.findall(raw)`: `(=[^\s=/>]*|[^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]*)))?`
/// — each (name, value); a missing value is empty. Nothing backtracks here: the bare value
/// matches whatever the quoted forms leave.
pub fn split_attrs(raw: &str) -> Vec<(&str, &str)> {
    let b = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let name_end = match b[i] {
            b'=' => i + 1 + run_without(b, i + 1, b"=/>"),
            b'/' | b'>' => {
                i += 1;
                continue;
            }
            _ if space_len(b, i) > 0 => {
                i += space_len(b, i);
                continue;
            }
            _ => i + run_without(b, i, b"=/>"),
        };
        let name = &raw[i..name_end];
        i = name_end;
        let eq = name_end + spaces(b, name_end);
        let mut value = "";
        if b.get(eq) == Some(&b'=') {
            let v = eq + 1 + spaces(b, eq + 1);
            let quoted = match b.get(v) {
                Some(&quote @ (b'"' | b'\'')) => {
                    b[v + 1..].iter().position(|&c| c == quote).map(|k| (v + 1, v + 1 + k, v + 1 + k + 1))
                }
                _ => None,
            };
            let (from, to, end) = quoted.unwrap_or_else(|| {
                let to = v + run_without(b, v, b">");
                (v, to, to)
            });
            value = &raw[from..to];
            i = end;
        }
        out.push((name, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(s: &str) -> Option<(String, String, bool, usize)> {
        match_start_tag(s, 0).map(|t| {
            (s[1..t.name_end].to_string(), s[t.name_end..t.attrs_end].to_string(), t.self_closing, t.end)
        })
    }

    #[test]
    fn serializer_tags() {
        assert_eq!(span("<a href=\"x\">"), Some(("a".into(), " href=\"x\"".into(), false, 12)));
        assert_eq!(span("<br/>x"), Some(("br".into(), "".into(), true, 5)));
        assert_eq!(span("<a!b c>"), Some(("a".into(), "!b c".into(), false, 7)));
        assert_eq!(span("< a>"), None);
    }

    #[test]
    fn backtracking_tags() {
        // "/" inside: the bare value takes it
        assert_eq!(span("<a b=c/d>"), Some(("a".into(), " b=c/d".into(), false, 9)));
        // "/" after white space: no path closes at the first ">"... the quoted value does
        assert_eq!(span("<a b / c>"), None);
        assert_eq!(span("<a b=\"x / y\" / c=\">\">"), None);
        // unclosed quote: the bare value takes the quote
        assert_eq!(span("<a b=\"c>"), Some(("a".into(), " b=\"c".into(), false, 8)));
        // no ">" at all
        assert_eq!(span("<a b"), None);
    }

    #[test]
    fn attributes() {
        assert_eq!(
            split_attrs(" a=\"1\" B='2' c=3 d =e f= \"g\" =h i=\"j"),
            vec![("a", "1"), ("B", "2"), ("c", "3"), ("d", "e"), ("f", "g"), ("=h", ""), ("i", "\"j")]
        );
    }
}
