//! A byte-level BPE tokenizer loaded from a `tokenizer.json`: the ids it gives equal those of
//! `tokenizers.Tokenizer.encode_batch_fast(texts, add_special_tokens=False)` for the
//! configurations our models use, and loading refuses every other one with a message that
//! names what it does not support:
//!
//! - no normalizer;
//! - pre-tokenizer `ByteLevel(add_prefix_space=false, use_regex=true)` (the GPT-2 regex), or
//!   `Sequence[Split(regex, Isolated), ByteLevel(add_prefix_space=false, use_regex=false)]`
//!   with the GPT-2 or the Llama-3 regex (`pretokenize`);
//! - model `BPE` without dropout, byte fallback, subword prefix or suffix (`bpe`);
//! - added tokens without `single_word`, `lstrip` or `rstrip` (`added_tokens`).
//!
//! Post-processor, decoder, truncation and padding play no part in these ids (no special
//! tokens are added; `runtime/stages/tokens.py` turns truncation and padding off) and are ignored.
//!
//! Encoding, as `tokenizers` does it: added tokens are cut out of the text first; the rest is
//! split by the pre-tokenizer's regexes into pieces; each piece's bytes go through BPE.

pub mod added_tokens;
pub mod bpe;
pub mod pretokenize;
#[rustfmt::skip] // generated: core/tools/gen_unicode.py writes it
mod unicode_tables;

use std::collections::BTreeMap;

use crate::json::{self, Value};
use added_tokens::TokenTrie;
use bpe::{byte_level_bytes, byte_level_char, Bpe, FastMap, Merge, WordCache};
use pretokenize::SplitPattern;

pub use unicode_tables::UNICODE_VERSION;

/// One entry of `added_tokens` (its flags as far as they matter here).
#[derive(Clone, Debug, PartialEq, Eq)]
struct AddedToken {
    content: String,
    special: bool,
    normalized: bool,
}

pub struct Tokenizer {
    /// the model's vocabulary (`token_to_id`, and the ids of added tokens it already holds)
    vocab: FastMap<String, u32>,
    bpe: Bpe,
    /// the regex splits of the pre-tokenizer, applied in order before the byte-level mapping
    splits: Vec<SplitPattern>,
    /// added tokens by content (`tokenizers`' `added_tokens_map`)
    added_ids: FastMap<String, u32>,
    /// added tokens by id (`added_tokens_map_r`): what the tries are built from
    added_tokens: BTreeMap<u32, AddedToken>,
    /// added tokens with `normalized: false`, cut from the raw text first
    raw_trie: TokenTrie,
    /// added tokens with `normalized: true`, cut from what is left
    normalized_trie: TokenTrie,
}

// one tokenizer serves several threads at once (the C ABI hands out one handle)
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<Tokenizer>()
};

type Res<T> = Result<T, String>;

fn field<'v>(value: &'v Value, key: &str, within: &str) -> Res<&'v Value> {
    value.get(key).ok_or_else(|| format!("{within} has no \"{key}\""))
}

fn bool_field(value: &Value, key: &str, within: &str) -> Res<bool> {
    let found = field(value, key, within)?;
    found.as_bool().ok_or_else(|| format!("{within}: \"{key}\" is a {}, not a boolean", found.kind()))
}

fn str_field<'v>(value: &'v Value, key: &str, within: &str) -> Res<&'v str> {
    let found = field(value, key, within)?;
    found.as_str().ok_or_else(|| format!("{within}: \"{key}\" is a {}, not a string", found.kind()))
}

/// A `u32` id.
fn id_value(value: &Value, what: impl Fn() -> String) -> Res<u32> {
    value
        .as_u64()
        .and_then(|id| u32::try_from(id).ok())
        .ok_or_else(|| format!("{}: id {} is not an integer in 0..2^32", what(), json_text(value)))
}

/// A short rendering of a value for messages.
fn json_text(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => value.as_f64().map(|f| f.to_string()).unwrap_or_default(),
        Value::String(s) => format!("{s:?}"),
        other => other.kind().into(),
    }
}

impl Tokenizer {
    /// The tokenizer of a `tokenizer.json` file's content.
    pub fn from_json(bytes: &[u8]) -> Res<Tokenizer> {
        let root = json::parse(bytes).map_err(|e| e.to_string())?;
        if root.as_object().is_none() {
            return Err(format!("the top level is a {}, not an object", root.kind()));
        }
        if let Some(version) = root.get("version") {
            if version.as_str() != Some("1.0") {
                return Err(format!(
                    "tokenizer.json version {} is not supported (only \"1.0\")",
                    json_text(version)
                ));
            }
        }
        if let Some(normalizer) = root.get("normalizer").filter(|n| !n.is_null()) {
            let kind = normalizer.get("type").map(json_text).unwrap_or_else(|| json_text(normalizer));
            return Err(format!("normalizer {kind} is not supported (only null)"));
        }
        let splits = pre_tokenizer_splits(root.get("pre_tokenizer").unwrap_or(&Value::Null))?;
        let model = field(&root, "model", "tokenizer.json")?;
        let (vocab, bpe) = bpe_model(model)?;
        let mut tokenizer = Tokenizer {
            vocab,
            bpe,
            splits,
            added_ids: FastMap::default(),
            added_tokens: BTreeMap::new(),
            raw_trie: TokenTrie::new(),
            normalized_trie: TokenTrie::new(),
        };
        let mut added = Vec::new();
        if let Some(entries) = root.get("added_tokens").filter(|v| !v.is_null()) {
            let entries = entries
                .as_array()
                .ok_or_else(|| format!("\"added_tokens\" is a {}, not an array", entries.kind()))?;
            for (i, entry) in entries.iter().enumerate() {
                added.push(added_token(entry, &format!("added_tokens[{i}]"))?);
            }
        }
        tokenizer.add_tokens(added);
        Ok(tokenizer)
    }

    /// The id of a token: an added token's, else the model vocabulary's.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.added_ids.get(token).or_else(|| self.vocab.get(token)).copied()
    }

    /// How many tokens there are, as `tokenizers`' `get_vocab_size` counts them: the model
    /// vocabulary's, and with `with_added_tokens` the added tokens it does not hold too.
    pub fn vocab_size(&self, with_added_tokens: bool) -> usize {
        let added = if with_added_tokens {
            self.added_ids.keys().filter(|token| !self.vocab.contains_key(*token)).count()
        } else {
            0
        };
        self.vocab.len() + added
    }

    /// Adds `content` as a special token (not normalized) unless the tokenizer already has a
    /// token of that content: `runtime/stages/tokens.load_tokenizer`'s `<|sep|>`, added as
    /// `tokenizers`' `add_special_tokens` adds it. Returns its id.
    pub fn ensure_special_token(&mut self, content: &str) -> Option<u32> {
        if let Some(id) = self.token_to_id(content) {
            return Some(id);
        }
        self.add_tokens(vec![AddedToken { content: content.into(), special: true, normalized: false }]);
        self.token_to_id(content)
    }

    /// `tokenizers`' `AddedVocabulary::add_tokens`: a token the vocabularies hold keeps its
    /// id, a new one takes the next id after the model's vocabulary and earlier added tokens
    /// (the ids written in `added_tokens` are not read, as `tokenizers` does not read them).
    fn add_tokens(&mut self, tokens: Vec<AddedToken>) {
        let vocab_size = self.vocab.len() as u32;
        let mut next_id = match self.added_tokens.keys().next_back() {
            None => vocab_size,
            Some(&max) if max >= vocab_size || vocab_size == 0 => max + 1,
            Some(_) => vocab_size,
        };
        for token in tokens {
            if token.content.is_empty() {
                continue;
            }
            if let Some(id) = self.added_ids.get(&token.content) {
                if self.added_tokens.get(id) == Some(&token) {
                    continue;
                }
            }
            let id = match self.token_to_id(&token.content) {
                Some(id) => id,
                None => {
                    next_id += 1;
                    next_id - 1
                }
            };
            self.added_ids.insert(token.content.clone(), id);
            self.added_tokens.insert(id, token);
        }
        self.raw_trie = TokenTrie::new();
        self.normalized_trie = TokenTrie::new();
        for (&id, token) in &self.added_tokens {
            let trie = if token.normalized { &mut self.normalized_trie } else { &mut self.raw_trie };
            trie.insert(&token.content, id);
        }
    }

    /// A word cache for a run of `encode` calls on this thread (None: all are in use by other
    /// threads; encoding then goes without).
    pub fn word_cache(&self) -> Option<std::sync::MutexGuard<'_, WordCache>> {
        self.bpe.free_cache()
    }

    /// Appends the ids of `text` to `out`.
    pub fn encode(&self, text: &str, mut cache: Option<&mut WordCache>, out: &mut Vec<u32>) {
        self.raw_trie.split(text, |part| match part {
            Ok(id) => out.push(id),
            Err(rest) => self.normalized_trie.split(rest, |part| match part {
                Ok(id) => out.push(id),
                Err(rest) => self.pre_tokenize(&self.splits, rest, &mut |piece| {
                    self.bpe.encode_word(piece.as_bytes(), cache.as_deref_mut(), out)
                }),
            }),
        });
    }

    /// The ids of each text, flat, and where each text's ids end.
    pub fn encode_all<'t>(&self, texts: impl IntoIterator<Item = &'t str>) -> (Vec<u32>, Vec<u32>) {
        let mut cache = self.word_cache();
        let mut ids = Vec::new();
        let mut ends = Vec::new();
        for text in texts {
            self.encode(text, cache.as_deref_mut(), &mut ids);
            ends.push(ids.len() as u32);
        }
        (ids, ends)
    }

    fn pre_tokenize(&self, splits: &[SplitPattern], text: &str, piece: &mut dyn FnMut(&str)) {
        match splits.split_first() {
            None => piece(text),
            Some((first, rest)) => first.split(text, |part| self.pre_tokenize(rest, part, piece)),
        }
    }
}

fn added_token(entry: &Value, within: &str) -> Res<AddedToken> {
    let content = str_field(entry, "content", within)?;
    for flag in ["single_word", "lstrip", "rstrip"] {
        if bool_field(entry, flag, within)? {
            return Err(format!("added token {content:?}: {flag}=true is not supported"));
        }
    }
    Ok(AddedToken {
        content: content.into(),
        special: bool_field(entry, "special", within)?,
        normalized: bool_field(entry, "normalized", within)?,
    })
}

/// The regex splits of a pre-tokenizer; it must end with the byte-level mapping.
fn pre_tokenizer_splits(pre_tokenizer: &Value) -> Res<Vec<SplitPattern>> {
    let mut steps = Vec::new();
    flatten_sequence(pre_tokenizer, &mut steps)?;
    let mut splits = Vec::new();
    let mut byte_level = false;
    for step in steps {
        if byte_level {
            return Err("a pre_tokenizer after ByteLevel is not supported".into());
        }
        let kind = str_field(step, "type", "pre_tokenizer")?;
        match kind {
            "ByteLevel" => {
                if bool_field(step, "add_prefix_space", "ByteLevel pre_tokenizer")? {
                    return Err("ByteLevel pre_tokenizer with add_prefix_space=true is not supported".into());
                }
                let use_regex = match step.get("use_regex") {
                    None => true,
                    Some(_) => bool_field(step, "use_regex", "ByteLevel pre_tokenizer")?,
                };
                if use_regex {
                    splits.push(SplitPattern::Gpt2);
                }
                byte_level = true;
            }
            "Split" => {
                let pattern = field(step, "pattern", "Split pre_tokenizer")?;
                let Some(regex) = pattern.get("Regex").and_then(Value::as_str) else {
                    return Err(format!(
                        "Split pre_tokenizer pattern {} is not supported (only a Regex)",
                        pattern_text(pattern)
                    ));
                };
                let Some(split) = SplitPattern::from_regex(regex) else {
                    return Err(format!("Split pre_tokenizer regex {regex:?} is not supported (only the GPT-2 and Llama-3 regexes)"));
                };
                let behavior = str_field(step, "behavior", "Split pre_tokenizer")?;
                if behavior != "Isolated" {
                    return Err(format!(
                        "Split pre_tokenizer behavior {behavior:?} is not supported (only \"Isolated\")"
                    ));
                }
                if bool_field(step, "invert", "Split pre_tokenizer")? {
                    return Err("Split pre_tokenizer with invert=true is not supported".into());
                }
                splits.push(split);
            }
            other => {
                return Err(format!(
                    "pre_tokenizer {other:?} is not supported (only ByteLevel, Split and Sequence)"
                ))
            }
        }
    }
    if !byte_level {
        return Err(
            "a pre_tokenizer without ByteLevel is not supported (the model must be byte-level BPE)".into()
        );
    }
    Ok(splits)
}

fn pattern_text(pattern: &Value) -> String {
    match pattern.as_object() {
        Some([(kind, value)]) => format!("{kind} {}", json_text(value)),
        _ => json_text(pattern),
    }
}

fn flatten_sequence<'v>(pre_tokenizer: &'v Value, steps: &mut Vec<&'v Value>) -> Res<()> {
    if pre_tokenizer.is_null() {
        return Ok(());
    }
    if pre_tokenizer.get("type").and_then(Value::as_str) == Some("Sequence") {
        let items = field(pre_tokenizer, "pretokenizers", "Sequence pre_tokenizer")?;
        let items = items.as_array().ok_or("Sequence pre_tokenizer: \"pretokenizers\" is not an array")?;
        for item in items {
            flatten_sequence(item, steps)?;
        }
    } else {
        steps.push(pre_tokenizer);
    }
    Ok(())
}

/// The vocabulary and the BPE model of `model`.
fn bpe_model(model: &Value) -> Res<(FastMap<String, u32>, Bpe)> {
    let kind = str_field(model, "type", "model")?;
    if kind != "BPE" {
        return Err(format!("model {kind:?} is not supported (only \"BPE\")"));
    }
    let set = |key: &str| model.get(key).filter(|v| !v.is_null());
    if let Some(dropout) = set("dropout") {
        if dropout.as_f64() != Some(0.0) {
            return Err(format!("BPE dropout {} is not supported (only null)", json_text(dropout)));
        }
    }
    for key in ["continuing_subword_prefix", "end_of_word_suffix"] {
        if let Some(value) = set(key) {
            return Err(format!("BPE {key} {} is not supported (only null)", json_text(value)));
        }
    }
    if set("byte_fallback").and_then(Value::as_bool) == Some(true) {
        return Err("BPE byte_fallback=true is not supported".into());
    }
    let ignore_merges = set("ignore_merges").and_then(Value::as_bool).unwrap_or(false);

    let entries = field(model, "vocab", "model")?;
    let entries = entries
        .as_object()
        .ok_or_else(|| format!("model: \"vocab\" is a {}, not an object", entries.kind()))?;
    let mut vocab: FastMap<String, u32> = FastMap::default();
    vocab.reserve(entries.len());
    for (token, id) in entries {
        vocab.insert(token.clone(), id_value(id, || format!("vocab token {token:?}"))?);
    }

    let mut byte_ids = [None; 256];
    for (byte, slot) in byte_ids.iter_mut().enumerate() {
        *slot = vocab.get(byte_level_char(byte as u8).to_string().as_str()).copied();
    }
    if let Some(unk) = set("unk_token") {
        // it would stand for bytes outside the vocabulary; with all 256 there are none
        if byte_ids.iter().any(Option::is_none) {
            return Err(format!(
                "BPE unk_token {} is not supported where the vocabulary lacks byte-level characters",
                json_text(unk)
            ));
        }
    }
    let char_to_byte: FastMap<char, u8> = (0..=255u8).map(|b| (byte_level_char(b), b)).collect();
    let mut ids_by_bytes: FastMap<Box<[u8]>, u32> = FastMap::default();
    if ignore_merges {
        ids_by_bytes.reserve(vocab.len());
        for (token, &id) in &vocab {
            if let Some(bytes) = byte_level_bytes(token, &char_to_byte) {
                ids_by_bytes.insert(bytes.into_boxed_slice(), id);
            }
        }
    }

    let merges = merge_pairs(field(model, "merges", "model")?)?;
    let mut merge_map: FastMap<u64, Merge> = FastMap::default();
    merge_map.reserve(merges.len());
    let mut joined = String::new();
    for (rank, (left, right)) in merges.iter().enumerate() {
        let id_of = |token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| format!("merges[{rank}]: token {token:?} is not in the vocabulary"))
        };
        let (left_id, right_id) = (id_of(left)?, id_of(right)?);
        joined.clear();
        joined.push_str(left);
        joined.push_str(right);
        let new_id = id_of(&joined)?;
        // a repeated pair keeps its last rank, as the map `tokenizers` builds does
        merge_map
            .insert((u64::from(left_id) << 32) | u64::from(right_id), Merge { rank: rank as u32, new_id });
    }
    Ok((vocab, Bpe::new(byte_ids, ids_by_bytes, merge_map, ignore_merges)))
}

/// The merges as pairs: `[["a", "b"], ...]` or the older `["a b", ...]` (where lines starting
/// with "#version" are skipped and each other must be two tokens separated by one space).
fn merge_pairs(merges: &Value) -> Res<Vec<(&str, &str)>> {
    let items =
        merges.as_array().ok_or_else(|| format!("model: \"merges\" is a {}, not an array", merges.kind()))?;
    let mut pairs = Vec::with_capacity(items.len());
    if items.first().is_some_and(|item| item.as_str().is_some()) {
        for item in items {
            let line = item.as_str().ok_or("model: \"merges\" mixes strings and pairs")?;
            if line.starts_with("#version") {
                continue;
            }
            let mut parts = line.split(' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(left), Some(right), None) => pairs.push((left, right)),
                _ => {
                    return Err(format!(
                        "merges line {}: {line:?} is not two tokens separated by one space",
                        pairs.len() + 1
                    ))
                }
            }
        }
    } else {
        for (i, item) in items.iter().enumerate() {
            match item.as_array() {
                Some([left, right]) => match (left.as_str(), right.as_str()) {
                    (Some(left), Some(right)) => pairs.push((left, right)),
                    _ => return Err(format!("merges[{i}] is not a pair of strings")),
                },
                _ => return Err(format!("merges[{i}] is not a pair of strings")),
            }
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny tokenizer.json: bytes a, b, c, space (Ġ) and merges a+b, Ġ+ab.
    fn tiny(pre_tokenizer: &str, added: &str) -> String {
        format!(
            r#"{{"version": "1.0", "added_tokens": [{added}], "normalizer": null,
               "pre_tokenizer": {pre_tokenizer}, "post_processor": null, "decoder": null,
               "model": {{"type": "BPE", "dropout": null, "unk_token": null,
                 "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false,
                 "byte_fallback": false, "ignore_merges": false,
                 "vocab": {{"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "Ġab": 5, "'": 6}},
                 "merges": ["a b", "Ġ ab"]}}}}"#
        )
    }

    const BYTE_LEVEL: &str =
        r#"{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}"#;

    fn ids(tokenizer: &Tokenizer, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        tokenizer.encode(text, None, &mut out);
        out
    }

    #[test]
    fn encodes_with_added_tokens_first() {
        let added = r#"{"id": 9, "content": "<x>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}"#;
        let mut t = Tokenizer::from_json(tiny(BYTE_LEVEL, added).as_bytes()).unwrap();
        // the written id 9 is not read: a new added token comes after the 7-token vocabulary
        assert_eq!(t.token_to_id("<x>"), Some(7));
        assert_eq!((t.vocab_size(false), t.vocab_size(true)), (7, 8));
        assert_eq!(ids(&t, "ab ab<x>c"), [4, 5, 7, 2]);
        assert_eq!(ids(&t, ""), Vec::<u32>::new());
        assert_eq!(t.ensure_special_token("<|sep|>"), Some(8));
        assert_eq!(t.ensure_special_token("ab"), Some(4)); // known: not added
        assert_eq!(ids(&t, "ab<|sep|>ab"), [4, 8, 4]);
        let (flat, ends) = t.encode_all(["ab", "", "c<x>"]);
        assert_eq!((flat, ends), (vec![4, 2, 7], vec![1, 1, 3]));
    }

    #[test]
    fn refuses_what_it_does_not_support() {
        let err = |json: String| Tokenizer::from_json(json.as_bytes()).err().unwrap();
        assert_eq!(
            err(tiny(r#"{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true}"#, "")),
            "ByteLevel pre_tokenizer with add_prefix_space=true is not supported"
        );
        assert_eq!(
            err(tiny("null", "")),
            "a pre_tokenizer without ByteLevel is not supported (the model must be byte-level BPE)"
        );
        assert_eq!(
            err(tiny(
                r#"{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]}"#,
                ""
            )),
            r#"Split pre_tokenizer regex "\\s+" is not supported (only the GPT-2 and Llama-3 regexes)"#
        );
        assert_eq!(
            err(tiny(r#"{"type": "Whitespace"}"#, "")),
            r#"pre_tokenizer "Whitespace" is not supported (only ByteLevel, Split and Sequence)"#
        );
        let lstrip = r#"{"id": 9, "content": "<x>", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true}"#;
        assert_eq!(err(tiny(BYTE_LEVEL, lstrip)), r#"added token "<x>": lstrip=true is not supported"#);
        assert_eq!(
            err(tiny(BYTE_LEVEL, "").replace("\"dropout\": null", "\"dropout\": 0.1")),
            "BPE dropout 0.1 is not supported (only null)"
        );
        assert_eq!(
            err(tiny(BYTE_LEVEL, "").replace("\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}")),
            r#"normalizer "NFC" is not supported (only null)"#
        );
        assert_eq!(
            err(tiny(BYTE_LEVEL, "").replace("\"a b\"", "\"a  b\"")),
            r#"merges line 1: "a  b" is not two tokens separated by one space"#
        );
        assert_eq!(
            err(tiny(BYTE_LEVEL, "").replace("\"Ġ ab\"", "\"Ġ c\"")),
            r#"merges[1]: token "Ġc" is not in the vocabulary"#
        );
        assert_eq!(
            err("{\"model\": ".into()),
            "invalid JSON at byte 10: unexpected end of input, expected a value"
        );
    }
}
