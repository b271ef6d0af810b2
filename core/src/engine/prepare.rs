//! simplify → blocks → tokens → chunks for one page: `runtime/stages/{blocks,chunks}.py` and
//! `Preparer.prepare`'s limits (`cut_input`, `keep_chunks`) of `runtime/flow/pages.py`, with
//! the same results (same slices, same quirks).

use super::py;
use std::borrow::Cow;

/// `ITEM_ID_RE = re.compile(r'_item_id="(\d+)"')`: the next match at or after `from`, as
/// (match start, match end, the id).
fn next_item_id(text: &str, mut from: usize) -> Option<(usize, usize, &str)> {
    const OPEN: &str = "_item_id=\"";
    loop {
        let start = from + text.get(from..)?.find(OPEN)?;
        let digits_start = start + OPEN.len();
        let rest = &text[digits_start..];
        let digits_len: usize = rest.chars().take_while(|&c| py::is_re_digit(c)).map(char::len_utf8).sum();
        if digits_len > 0 && rest[digits_len..].starts_with('"') {
            let end = digits_start + digits_len + 1;
            return Some((start, end, &text[digits_start..digits_start + digits_len]));
        }
        from = start + 1;
    }
}

/// `blocks.extract_blocks`: the blocks of `simplified` in document order and each block's
/// `_item_id` (None when the block holds none).
pub fn extract_blocks(simplified: &str) -> (Vec<&str>, Vec<Option<String>>) {
    let mut attr_starts = Vec::new();
    let mut from = 0;
    while let Some((start, end, _)) = next_item_id(simplified, from) {
        attr_starts.push(start);
        from = end;
    }
    // rfind of -1 (no "<" before the attribute) slices from the last character, as Python's
    // s[-1:end] does (never seen: simplified HTML starts with "<html>")
    let last_char = simplified.char_indices().last().map_or(0, |(at, _)| at);
    let tag_starts: Vec<usize> =
        attr_starts.iter().map(|&start| simplified[..start].rfind('<').unwrap_or(last_char)).collect();
    let mut blocks = Vec::with_capacity(tag_starts.len());
    let mut item_ids = Vec::with_capacity(tag_starts.len());
    for (index, &start) in tag_starts.iter().enumerate() {
        let end = tag_starts.get(index + 1).copied().unwrap_or(simplified.len());
        let block = py::strip(simplified.get(start..end.max(start)).unwrap_or(""));
        blocks.push(block);
        item_ids.push(item_id(block).map(str::to_string));
    }
    (blocks, item_ids)
}

/// A block's `_item_id`: the first one in it (a slice of `block`).
pub fn item_id(block: &str) -> Option<&str> {
    next_item_id(block, 0).map(|(_, _, id)| id)
}

/// One model input: its token ids and the indices of the page's blocks it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub token_ids: Vec<i64>,
    pub block_indices: Vec<usize>,
}

/// `ids[:end]` with Python's slice rules (a negative end counts from the back).
fn py_prefix(ids: &[u32], end: isize) -> &[u32] {
    let len = ids.len() as isize;
    let end = if end < 0 { (len + end).max(0) } else { end.min(len) };
    &ids[..end as usize]
}

/// `chunks.pack_chunks`: `[BOS] block SEP … block SEP [EOS]` greedily, at most `max_tokens`
/// tokens with BOS/EOS counted; a block longer than the budget alone is cut to `budget - 1`
/// tokens and keeps its SEP.
pub fn pack_chunks(
    block_ids: &[&[u32]],
    max_tokens: usize,
    sep_id: i64,
    bos_id: Option<i64>,
    eos_id: Option<i64>,
) -> Vec<Chunk> {
    let head: Vec<i64> = bos_id.into_iter().collect();
    let tail: Vec<i64> = eos_id.into_iter().collect();
    let budget = max_tokens as isize - head.len() as isize - tail.len() as isize;
    let close = |body: &[i64], indices: Vec<usize>| {
        let mut token_ids = Vec::with_capacity(head.len() + body.len() + tail.len());
        token_ids.extend_from_slice(&head);
        token_ids.extend_from_slice(body);
        token_ids.extend_from_slice(&tail);
        Chunk { token_ids, block_indices: indices }
    };
    let mut chunks = Vec::new();
    let mut body: Vec<i64> = Vec::new();
    let mut indices: Vec<usize> = Vec::new();
    for (index, ids) in block_ids.iter().enumerate() {
        let cost = ids.len() as isize + 1;
        if body.len() as isize + cost > budget {
            if !body.is_empty() {
                chunks.push(close(&body, std::mem::take(&mut indices)));
            }
            body.clear();
            indices.clear();
            if cost > budget {
                body.extend(py_prefix(ids, budget - 1).iter().map(|&id| i64::from(id)));
                body.push(sep_id);
                indices.push(index);
                continue;
            }
        }
        body.extend(ids.iter().map(|&id| i64::from(id)));
        body.push(sep_id);
        indices.push(index);
    }
    if !body.is_empty() {
        chunks.push(close(&body, indices));
    }
    chunks
}

/// `pages.keep_chunks`: how many of the page's first chunks fit `max_page_tokens` (at least
/// one), and how many blocks they hold.
pub fn keep_chunks(chunks: &[Chunk], max_page_tokens: Option<usize>) -> (usize, usize) {
    if chunks.is_empty() {
        return (0, 0);
    }
    let mut kept = chunks.len();
    if let Some(limit) = max_page_tokens {
        let mut total = 0usize;
        for (index, chunk) in chunks.iter().enumerate() {
            total += chunk.token_ids.len();
            if total > limit && index > 0 {
                kept = index;
                break;
            }
        }
    }
    let n_classified = chunks[kept - 1].block_indices.iter().max().map_or(0, |&m| m + 1);
    (kept, n_classified)
}

/// `pages.cut_input`: `html` cut to its first `max_bytes` bytes, and what was cut. The page
/// may hold lone surrogates as 3-byte sequences (a Python `str`, `surrogatepass`): a cut page
/// keeps the valid UTF-8 of its first `max_bytes` bytes only, as Python's
/// `data[:max_bytes].decode("utf-8", "ignore")` does (a character cut in two and any lone
/// surrogate dropped).
pub fn cut_input(html: &[u8], max_bytes: Option<usize>) -> (Cow<'_, [u8]>, Option<String>) {
    let Some(max_bytes) = max_bytes else { return (Cow::Borrowed(html), None) };
    if html.len() <= max_bytes {
        return (Cow::Borrowed(html), None);
    }
    let mut kept = Vec::with_capacity(max_bytes);
    for chunk in html[..max_bytes].utf8_chunks() {
        kept.extend_from_slice(chunk.valid().as_bytes());
    }
    let why = format!(
        "the input was cut to its first {} of {} bytes",
        py::thousands(max_bytes as u64),
        py::thousands(html.len() as u64)
    );
    (Cow::Owned(kept), Some(why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_run_from_their_tag_to_the_next_and_take_the_first_id() {
        let html = "<html><body><p _item_id=\"1\">a</p> <div _item_id=\"2\"><b>x</b></div>\
                    <td _item_id=\"3\" _item_id=\"4\">t</td>\n</body></html>";
        let (blocks, ids) = extract_blocks(html);
        assert_eq!(blocks[0], "<p _item_id=\"1\">a</p>");
        assert_eq!(blocks[1], "<div _item_id=\"2\"><b>x</b></div>");
        assert_eq!(blocks[2], "");
        assert_eq!(blocks[3], "<td _item_id=\"3\" _item_id=\"4\">t</td>\n</body></html>");
        assert_eq!(ids, [Some("1".into()), Some("2".into()), None, Some("3".into())]);
        // Unicode digits are \d for Python's re; a bad candidate does not hide the next one
        let (_, ids) = extract_blocks("<p _item_id=\"\u{661}2\">a<i _item_id=\"x\" _item_id=\"7\">");
        assert_eq!(ids, [Some("\u{661}2".into()), Some("7".into())]);
        assert_eq!(extract_blocks("<p>no ids</p>").0.len(), 0);
    }

    #[test]
    fn packing_as_the_reference_packs() {
        let a = [10u32, 11];
        let b = [20u32, 21, 22];
        let long = [1u32, 2, 3, 4, 5, 6, 7, 8];
        let blocks: Vec<&[u32]> = vec![&a, &b, &long, &a];
        let chunks = pack_chunks(&blocks, 8, 4, Some(0), Some(1));
        let ids: Vec<Vec<i64>> = chunks.iter().map(|c| c.token_ids.clone()).collect();
        assert_eq!(
            ids,
            vec![
                vec![0, 10, 11, 4, 1],
                vec![0, 20, 21, 22, 4, 1],
                vec![0, 1, 2, 3, 4, 5, 4, 1],
                vec![0, 10, 11, 4, 1],
            ]
        );
        assert_eq!(chunks[2].block_indices, vec![2]);
        // a budget of 0: every block alone, cut to ids[:-1] (Python's slice)
        let chunks = pack_chunks(&blocks[..1], 2, 4, Some(0), Some(1));
        assert_eq!(chunks[0].token_ids, vec![0, 10, 4, 1]);
    }

    #[test]
    fn limits_cut_chunks_and_input() {
        let chunk = |n: usize, blocks: Vec<usize>| Chunk { token_ids: vec![0; n], block_indices: blocks };
        let chunks = vec![chunk(10, vec![0, 1]), chunk(10, vec![2]), chunk(10, vec![3, 4])];
        assert_eq!(keep_chunks(&chunks, Some(20)), (2, 3));
        assert_eq!(keep_chunks(&chunks, Some(5)), (1, 2));
        assert_eq!(keep_chunks(&chunks, None), (3, 5));
        assert_eq!(keep_chunks(&[], Some(5)), (0, 0));
        let cut = |text: &[u8], max| {
            let (kept, why) = cut_input(text, max);
            (kept.into_owned(), why)
        };
        assert_eq!(
            cut("aé".as_bytes(), Some(2)),
            (b"a".to_vec(), Some("the input was cut to its first 2 of 3 bytes".into()))
        );
        assert_eq!(cut("aé".as_bytes(), Some(3)), ("aé".as_bytes().to_vec(), None));
        assert_eq!(cut("aé".as_bytes(), None), ("aé".as_bytes().to_vec(), None));
        // a lone surrogate (surrogatepass bytes) is dropped from a cut page, kept in a whole one
        let odd = b"a\xed\xa0\x80b\xc3\xa9";
        assert_eq!(
            cut(odd, Some(6)),
            (b"ab".to_vec(), Some("the input was cut to its first 6 of 7 bytes".into()))
        );
        assert_eq!(cut(odd, Some(7)).0, odd.to_vec());
    }
}
