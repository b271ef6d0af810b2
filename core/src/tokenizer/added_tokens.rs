//! Added tokens (`added_tokens` of `tokenizer.json`, special or not): `tokenizers` cuts them out
//! of the text before pre-tokenization, matching their content literally, leftmost match
//! first and the longest among matches that start at the same place (aho-corasick's
//! `LeftmostLongest`). Tokens with `normalized: false` are cut from the raw text first, then
//! those with `normalized: true` from what is left (with no normalizer, the same text).

/// A byte trie of token contents.
pub struct TokenTrie {
    /// node -> (byte, child) sorted by byte
    children: Vec<Vec<(u8, u32)>>,
    /// node -> the id of the token that ends there
    token: Vec<Option<u32>>,
    /// whether some token starts with this byte (a fast skip over the text)
    first_byte: [bool; 256],
}

impl TokenTrie {
    #[allow(clippy::new_without_default)] // an empty trie is made once per tokenizer, by name
    pub fn new() -> TokenTrie {
        TokenTrie { children: vec![Vec::new()], token: vec![None], first_byte: [false; 256] }
    }

    pub fn is_empty(&self) -> bool {
        self.children.len() == 1
    }

    pub fn insert(&mut self, content: &str, id: u32) {
        let mut node = 0;
        for &byte in content.as_bytes() {
            node = match self.children[node].binary_search_by_key(&byte, |&(b, _)| b) {
                Ok(i) => self.children[node][i].1 as usize,
                Err(i) => {
                    let child = self.children.len();
                    self.children.push(Vec::new());
                    self.token.push(None);
                    self.children[node].insert(i, (byte, child as u32));
                    child
                }
            };
        }
        self.token[node] = Some(id);
        if let Some(&first) = content.as_bytes().first() {
            self.first_byte[first as usize] = true;
        }
    }

    /// The longest token starting at `start`: its end and id.
    fn longest_at(&self, text: &[u8], start: usize) -> Option<(usize, u32)> {
        let mut node = 0;
        let mut found = None;
        for (i, byte) in text[start..].iter().enumerate() {
            match self.children[node].binary_search_by_key(byte, |&(b, _)| b) {
                Ok(k) => node = self.children[node][k].1 as usize,
                Err(_) => break,
            }
            if let Some(id) = self.token[node] {
                found = Some((start + i + 1, id));
            }
        }
        found
    }

    /// Calls `piece` with the parts of `text` in order: `Err(text)` for text between tokens
    /// (never empty), `Ok(id)` for a token.
    pub fn split<'t>(&self, text: &'t str, mut piece: impl FnMut(Result<u32, &'t str>)) {
        let bytes = text.as_bytes();
        let mut done = 0;
        let mut pos = 0;
        if !self.is_empty() {
            while pos < bytes.len() {
                if self.first_byte[bytes[pos] as usize] {
                    if let Some((end, id)) = self.longest_at(bytes, pos) {
                        if done < pos {
                            piece(Err(&text[done..pos]));
                        }
                        piece(Ok(id));
                        done = end;
                        pos = end;
                        continue;
                    }
                }
                pos += 1;
            }
        }
        if done < bytes.len() {
            piece(Err(&text[done..]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(trie: &TokenTrie, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        trie.split(text, |p| {
            out.push(match p {
                Ok(id) => format!("#{id}"),
                Err(t) => t.to_string(),
            })
        });
        out
    }

    #[test]
    fn leftmost_then_longest() {
        let mut trie = TokenTrie::new();
        trie.insert("<|sep|>", 1);
        trie.insert("<|s", 2);
        trie.insert("sep|>x", 3);
        trie.insert("é", 4);
        assert_eq!(parts(&trie, "a<|sep|>xb"), ["a", "#1", "xb"]); // longest at the leftmost start
        assert_eq!(parts(&trie, "<|s<|sep|><|sep|>"), ["#2", "#1", "#1"]);
        assert_eq!(parts(&trie, "<|se"), ["#2", "e"]);
        assert_eq!(parts(&trie, "café é"), ["caf", "#4", " ", "#4"]);
        assert_eq!(parts(&trie, ""), Vec::<String>::new());
        assert_eq!(parts(&TokenTrie::new(), "abc"), ["abc"]);
    }
}
