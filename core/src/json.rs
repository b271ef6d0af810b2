//! A small JSON reader (RFC 8259), std only: enough for `tokenizer.json` (tens of MB) and
//! bundle `manifest.json` files. `parse` builds a `Value` tree; errors name the byte offset
//! where the input stops being JSON.
//!
//! Choices where JSON leaves room, made as `serde_json` (which `tokenizers` reads these files
//! with) makes them: objects keep their members in input order and `get` answers the LAST
//! member of a repeated key (a map built from them keeps the last); integers without a
//! fraction or exponent that fit an `i64` stay exact, other numbers are `f64`; a `\u` escape
//! of a lone surrogate is an error; nesting deeper than `MAX_DEPTH` is an error (not a stack
//! overflow).

use std::fmt;

/// Deepest nesting of arrays and objects `parse` accepts (serde_json's default is 128).
pub const MAX_DEPTH: usize = 512;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    /// Members in input order (keys may repeat; `get` answers the last).
    Object(Vec<(String, Value)>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// An integer literal (no fraction, no exponent) that fits an `i64`.
    Int(i64),
    /// Any other number.
    Float(f64),
}

/// Where and why the input is not JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset into the input.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid JSON at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for JsonError {}

/// The JSON value of `bytes` (UTF-8, one value, white space around it allowed).
pub fn parse(bytes: &[u8]) -> Result<Value, JsonError> {
    let mut reader = Reader { bytes, pos: 0, depth: 0 };
    reader.skip_space();
    let value = reader.value()?;
    reader.skip_space();
    if reader.pos != bytes.len() {
        return Err(reader.error("trailing characters after the JSON value"));
    }
    Ok(value)
}

/// The text of the one member `name` of the object `bytes` holds (UTF-8, white space around
/// it allowed), written at the start of `text` (at least `bytes.len()` long: the text is never
/// longer than its line; None where shorter): its length, and the byte span of its string
/// token, quotes included: a JSONL line's page read without building the rest, one buffer
/// serving every line of a file (`pulpie_rt_json_string_member`: a page costs no allocation).
/// None where `bytes` is not one object as `parse` reads it, or holds no member `name`, or
/// several, or one that is not a string.
pub fn string_member(bytes: &[u8], name: &str, text: &mut [u8]) -> Option<(usize, std::ops::Range<usize>)> {
    if text.len() < bytes.len() {
        return None;
    }
    let mut reader = Reader { bytes, pos: 0, depth: 1 };
    reader.skip_space();
    if bytes.get(reader.pos) != Some(&b'{') {
        return None;
    }
    reader.pos += 1;
    let mut found = None;
    loop {
        reader.skip_space();
        if bytes.get(reader.pos) != Some(&b'"') {
            return None; // (an empty object has no such member)
        }
        let key = reader.string().ok()?;
        reader.skip_space();
        reader.expect(b':', "':'").ok()?;
        reader.skip_space();
        if key == name {
            if found.is_some() || bytes.get(reader.pos) != Some(&b'"') {
                return None;
            }
            let start = reader.pos;
            let (len, end) = long_string(bytes, start, text)?;
            reader.pos = end;
            found = Some((len, start..end));
        } else {
            reader.value().ok()?;
        }
        reader.skip_space();
        match bytes.get(reader.pos) {
            Some(b',') => reader.pos += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    reader.pos += 1;
    reader.skip_space();
    if reader.pos != bytes.len() {
        return None;
    }
    found
}

/// `parse` of a string.
pub fn parse_str(text: &str) -> Result<Value, JsonError> {
    parse(text.as_bytes())
}

impl Value {
    /// The member `key` of an object (the last one if it repeats); None for other values.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Object(members) => Some(members),
            _ => None,
        }
    }

    /// An integer value (a float only where it is a whole number within `i64`).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i),
            Value::Number(Number::Float(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => Some(*f as i64),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        self.as_i64().and_then(|i| u64::try_from(i).ok())
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i as f64),
            Value::Number(Number::Float(f)) => Some(*f),
            _ => None,
        }
    }

    /// The value's kind, for error messages: "null", "boolean", "number", "string", "array",
    /// "object".
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

/// Bit k set where byte k of `chunk` (16 bytes) is a backslash (the first mask) or a quote or
/// control character (the second): the bytes a JSON string's scan must stop at, SSE2's byte
/// comparisons and move-mask (every x86-64 processor has them).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn stop_masks(chunk: &[u8]) -> (u16, u16) {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    assert!(chunk.len() == 16);
    // SAFETY: SSE2 is part of x86-64; the load reads the 16 bytes checked above
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v); // b <= 0x1f
        (_mm_movemask_epi8(backslash) as u16, _mm_movemask_epi8(_mm_or_si128(quote, control)) as u16)
    }
}

/// `stop_masks` byte by byte (other processors).
#[cfg(not(target_arch = "x86_64"))]
fn stop_masks(chunk: &[u8]) -> (u16, u16) {
    chunk.iter().enumerate().fold((0u16, 0u16), |(backslashes, others), (k, &b)| {
        (backslashes | u16::from(b == b'\\') << k, others | u16::from(b == b'"' || b < 0x20) << k)
    })
}

/// Bit k set where byte k of `chunk` (16 bytes) is a quote, a backslash or a control character.
fn attention_mask(chunk: &[u8]) -> u32 {
    let (backslashes, others) = stop_masks(chunk);
    u32::from(backslashes | others)
}

/// `stop_masks` over 64 bytes: bit k set where byte k of `block` is a backslash (the first) or
/// a quote or control character (the second).
fn block_masks(block: &[u8; 64]) -> (u64, u64) {
    block.chunks_exact(16).enumerate().fold((0u64, 0u64), |(backslashes, others), (part, chunk)| {
        let (b, o) = stop_masks(chunk);
        (backslashes | u64::from(b) << (16 * part), others | u64::from(o) << (16 * part))
    })
}

/// What the byte after a backslash writes in a JSON string: the byte of each one-letter escape,
/// 0 for `u` (four hex digits follow) and for every byte that begins no escape. A table, not
/// a `match`: the pages' escapes (`\"`, `\n`, `\t`, `\/` mixed) would mispredict a jump.
const SIMPLE_ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 0x08;
    table[b'f' as usize] = 0x0c;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table
};

/// The string token at `at` (its `"`) as `Reader::string` reads it, written at the start of
/// `out` (at least `bytes.len() - at` long: the text is never longer than its token): its
/// length and the end of the token; None where `Reader::string` fails. Made for a page's HTML
/// (an escape every 17 bytes, where reading run by run costs as much as orjson): one pass,
/// 16 bytes at a time where none needs attention, each escape's byte from a table, the whole
/// text checked as UTF-8 once (an escape writes whole characters, so a broken sequence of the
/// input stays broken).
fn long_string(bytes: &[u8], at: usize, out: &mut [u8]) -> Option<(usize, usize)> {
    let hex4 = |from: usize| -> Option<u32> {
        let digits = bytes.get(from..from + 4)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let out = &mut out[..bytes.len() - at];
    let mut written = 0;
    let mut pos = at + 1;
    loop {
        // 64 bytes at a time while no quote or control character comes: the block's backslashes
        // found at once (two masks), each one-letter escape's byte written after the plain run
        // before it, the run copied 32 bytes at a time (whole, kept up to its end). Each escape
        // costs a few operations on the masks and no new search of the input: a page's HTML has
        // an escape every ~17 bytes, where a search from each escape's end for the next (below)
        // waits on each search's result before the next can start. The block loop leaves at the
        // first quote or control character, `\u` escape or byte that begins no escape, for
        // the loop below, which reads them; and 96 bytes before the end (the copies read
        // ahead). (written <= pos - at - 1 as below, and each copy of 32 from a place in the
        // block stays within the input's 96 bytes ahead and `out`'s len)
        'blocks: while let Some(block) = bytes.get(pos..pos + 96) {
            let (backslashes, others) = block_masks(block[..64].try_into().unwrap());
            let mut pending = backslashes | others;
            let mut from = 0; // the block's first byte not yet written
            loop {
                let k = if pending == 0 { 64 } else { pending.trailing_zeros() as usize };
                while from < k {
                    let run = (k - from).min(32);
                    out[written..written + 32].copy_from_slice(&block[from..from + 32]);
                    written += run;
                    from += run;
                }
                if k == 64 {
                    break;
                }
                let simple = SIMPLE_ESCAPES[usize::from(block[k + 1])];
                if others >> k & 1 == 1 || simple == 0 {
                    pos += k;
                    break 'blocks;
                }
                out[written] = simple;
                written += 1;
                from = k + 2;
                pending &= if from >= 64 { 0 } else { !0u64 << from };
            }
            pos += from;
        }
        // (written < pos - at: every escape is longer than what it writes, so a chunk of 16
        // copied at `written` stays inside `out`) 16 bytes at a time: the chunk is copied whole,
        // and kept up to its first byte that needs attention (a mask of the 16 tests, made
        // without branches: one vector comparison)
        while let Some(chunk) = bytes.get(pos..pos + 16) {
            let mask = attention_mask(chunk);
            out[written..written + 16].copy_from_slice(chunk);
            let plain = mask.trailing_zeros().min(16) as usize;
            written += plain;
            pos += plain;
            if plain < 16 {
                break;
            }
        }
        let b = *bytes.get(pos)?;
        if b == b'\\' {
            let simple = SIMPLE_ESCAPES[usize::from(*bytes.get(pos + 1)?)];
            if simple != 0 {
                out[written] = simple;
                written += 1;
                pos += 2;
                continue;
            }
            if bytes[pos + 1] != b'u' {
                return None;
            }
        } else if b == b'"' {
            break;
        } else if b < 0x20 {
            return None; // a control character
        } else {
            out[written] = b; // (the last 15 bytes: no chunk of 16 left)
            written += 1;
            pos += 1;
            continue;
        }
        let unit = hex4(pos + 2)?;
        pos += 6;
        let code = match unit {
            0xD800..=0xDBFF => {
                if bytes.get(pos..pos + 2) != Some(b"\\u") {
                    return None;
                }
                let low = hex4(pos + 2)?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return None;
                }
                pos += 6;
                0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => return None,
            unit => unit,
        };
        let mut utf8 = [0u8; 4];
        let encoded = char::from_u32(code)?.encode_utf8(&mut utf8).as_bytes();
        out[written..written + encoded.len()].copy_from_slice(encoded);
        written += encoded.len();
    }
    std::str::from_utf8(&out[..written]).ok()?;
    Some((written, pos + 1))
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Reader<'_> {
    fn error(&self, message: impl Into<String>) -> JsonError {
        JsonError { offset: self.pos, message: message.into() }
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Result<Value, JsonError> {
        match self.bytes.get(self.pos) {
            None => Err(self.error("unexpected end of input, expected a value")),
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error(format!("expected a value, found {}", self.found()))),
        }
    }

    /// What is at the current position, for messages.
    fn found(&self) -> String {
        match self.bytes.get(self.pos) {
            None => "the end of input".into(),
            Some(&b) if b.is_ascii_graphic() => format!("'{}'", b as char),
            Some(&b) => format!("byte 0x{b:02x}"),
        }
    }

    fn nested(&mut self, read: fn(&mut Self) -> Result<Value, JsonError>) -> Result<Value, JsonError> {
        if self.depth == MAX_DEPTH {
            return Err(self.error(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        let value = read(self);
        self.depth -= 1;
        value
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, JsonError> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error(format!("expected '{word}'")))
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), JsonError> {
        if self.bytes.get(self.pos) == Some(&byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(format!("expected {what}, found {}", self.found())))
        }
    }

    fn array(&mut self) -> Result<Value, JsonError> {
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_space();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_space();
            items.push(self.value()?);
            self.skip_space();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error(format!("expected ',' or ']', found {}", self.found()))),
            }
        }
    }

    fn object(&mut self) -> Result<Value, JsonError> {
        self.pos += 1; // '{'
        let mut members = Vec::new();
        self.skip_space();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_space();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return Err(self.error(format!("expected a member name, found {}", self.found())));
            }
            let key = self.string()?;
            self.skip_space();
            self.expect(b':', "':'")?;
            self.skip_space();
            let value = self.value()?;
            members.push((key, value));
            self.skip_space();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.error(format!("expected ',' or '}}', found {}", self.found()))),
            }
        }
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1; // '"'
        let mut out = String::new();
        loop {
            // copy the run up to the next quote, backslash or control character at once
            let start = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            if self.pos > start {
                match std::str::from_utf8(&self.bytes[start..self.pos]) {
                    Ok(run) => out.push_str(run),
                    Err(e) => {
                        self.pos = start + e.valid_up_to();
                        return Err(self.error("invalid UTF-8 in a string"));
                    }
                }
            }
            match self.bytes.get(self.pos) {
                None => return Err(self.error("unexpected end of input in a string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                Some(&b) => return Err(self.error(format!("control character 0x{b:02x} in a string"))),
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), JsonError> {
        let Some(&b) = self.bytes.get(self.pos) else {
            return Err(self.error("unexpected end of input in an escape"));
        };
        self.pos += 1;
        let c = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let at = self.pos - 2;
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        if !self.bytes[self.pos..].starts_with(b"\\u") {
                            return Err(JsonError {
                                offset: at,
                                message: "lone leading surrogate in a \\u escape".into(),
                            });
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(JsonError {
                                offset: at,
                                message: "lone leading surrogate in a \\u escape".into(),
                            });
                        }
                        let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        char::from_u32(code).expect("a surrogate pair is a scalar value")
                    }
                    0xDC00..=0xDFFF => {
                        return Err(JsonError {
                            offset: at,
                            message: "lone trailing surrogate in a \\u escape".into(),
                        })
                    }
                    _ => char::from_u32(unit).expect("not a surrogate"),
                }
            }
            _ => {
                self.pos -= 1;
                return Err(self.error(format!("invalid escape {}", self.found())));
            }
        };
        out.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut unit = 0;
        for _ in 0..4 {
            let digit = match self.bytes.get(self.pos) {
                Some(&b) => (b as char).to_digit(16),
                None => None,
            };
            let Some(digit) = digit else {
                return Err(self.error("expected four hexadecimal digits in a \\u escape"));
            };
            unit = unit * 16 + digit;
            self.pos += 1;
        }
        Ok(unit)
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.pos;
        let digits = |r: &mut Self| {
            let from = r.pos;
            while let Some(b'0'..=b'9') = r.bytes.get(r.pos) {
                r.pos += 1;
            }
            r.pos - from
        };
        if self.bytes[self.pos] == b'-' {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n = digits(self);
        if n == 0 {
            return Err(self.error("expected a digit"));
        }
        if n > 1 && self.bytes[int_start] == b'0' {
            return Err(JsonError { offset: int_start, message: "leading zero in a number".into() });
        }
        let mut integer = true;
        if self.bytes.get(self.pos) == Some(&b'.') {
            integer = false;
            self.pos += 1;
            if digits(self) == 0 {
                return Err(self.error("expected a digit after the decimal point"));
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            integer = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(self.error("expected a digit in the exponent"));
            }
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).expect("ASCII");
        if integer {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::Number(Number::Int(i)));
            }
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Value::Number(Number::Float(f))),
            _ => Err(JsonError { offset: start, message: "number out of range".into() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse_str(text).unwrap_err().to_string()
    }

    #[test]
    fn values() {
        let v = parse_str(r#" {"a": [1, -2.5e1, true, false, null], "b": "x\u00e9\ud83d\ude42\n", "a": 3} "#)
            .unwrap();
        assert_eq!(v.get("a").unwrap().as_i64(), Some(3)); // the last of a repeated key
        let Value::Object(members) = &v else { panic!() };
        assert_eq!(members.len(), 3);
        let first = members[0].1.as_array().unwrap();
        assert_eq!(first[0], Value::Number(Number::Int(1)));
        assert_eq!(first[1].as_f64(), Some(-25.0));
        assert_eq!(first[2].as_bool(), Some(true));
        assert!(first[4].is_null());
        assert_eq!(v.get("b").unwrap().as_str(), Some("xé🙂\n"));
        assert_eq!(parse_str("[]").unwrap(), Value::Array(vec![]));
        assert_eq!(parse_str("{}").unwrap(), Value::Object(vec![]));
        assert_eq!(parse(b"7").unwrap().as_u64(), Some(7));
        assert_eq!(parse_str("18446744073709551615").unwrap().as_f64(), Some(1.8446744073709552e19));
    }

    /// `string_member`'s text as a `String`, in a buffer of its own.
    fn member_text(bytes: &[u8], name: &str) -> Option<(String, std::ops::Range<usize>)> {
        let mut text = vec![0; bytes.len()];
        let (len, span) = string_member(bytes, name, &mut text)?;
        text.truncate(len);
        Some((String::from_utf8(text).expect("string_member checks its text is UTF-8"), span))
    }

    #[test]
    fn a_string_member_and_its_span() {
        let line = b" {\"id\": [1, {\"html\": 2}], \"html\": \"<p>a\\\"\\u00e9\\ud83d\\ude42\\n</p>\", \"n\": null}\n";
        let (text, span) = member_text(line, "html").unwrap();
        assert_eq!(text, "<p>a\"é🙂\n</p>");
        assert_eq!(&line[span], &b"\"<p>a\\\"\\u00e9\\ud83d\\ude42\\n</p>\""[..]);
        // not one object with the member once, as a string: read otherwise
        for line in [
            &b"{\"html\": \"a\", \"html\": \"b\"}"[..],
            b"{\"html\": 1}",
            b"{\"id\": 1}",
            b"{}",
            b"[\"html\"]",
            b"{\"html\": \"a\"} x",
            b"{\"html\": \"a\\ud800\"}",
            b"{\"html\": \"a\nb\"}",
            b"{\"html\": \"a\"",
            b"{\"id\": tru, \"html\": \"a\"}",
            b"{\"html\": \"\xff\"}",
        ] {
            assert_eq!(member_text(line, "html"), None, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn one_buffer_reads_every_line() {
        // a buffer written by a longer line before: only the text's length is read back
        let mut text = vec![b'x'; 64];
        let first = b"{\"html\": \"<p>a long page of plain text</p>\", \"id\": 1}";
        assert_eq!(string_member(first, "html", &mut text).map(|(len, _)| len), Some(32));
        let line = b"{\"id\": 2, \"html\": \"<b>\\u00e9</b>\"}";
        let (len, span) = string_member(line, "html", &mut text).unwrap();
        assert_eq!(&text[..len], "<b>\u{e9}</b>".as_bytes());
        assert_eq!(&line[span], &b"\"<b>\\u00e9</b>\""[..]);
        // a buffer shorter than the line is refused, not overrun
        assert_eq!(string_member(line, "html", &mut text[..line.len() - 1]), None);
    }

    #[test]
    fn a_long_string_reads_as_any_string() {
        // random strings of plain runs (longer and shorter than 16 bytes), escapes, non-ASCII
        // characters, control characters and broken UTF-8: long_string as Reader::string
        let pieces: [&[u8]; 14] = [
            b"plain text of more than sixteen bytes",
            b"ab",
            b"\\\"",
            b"\\n",
            b"\\/",
            b"\\u00e9",
            b"\\ud83d\\ude42",
            b"\\ud800",
            b"\\x",
            "\u{e9}\u{1f642}".as_bytes(),
            b"\n",
            b"\xff",
            b"<p class=\\\"a\\\">",
            b"0123456789abcdef",
        ];
        let mut state = 7u64;
        for _ in 0..3000 {
            let mut token = b"\"".to_vec();
            for _ in 0..state % 31 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let piece = pieces[(state >> 33) as usize % pieces.len()];
                if !(piece == b"\n" || piece == b"\xff" || piece == b"\\ud800" || piece == b"\\x")
                    || state.is_multiple_of(5)
                {
                    token.extend_from_slice(piece);
                }
            }
            token.extend_from_slice(b"\" ,");
            assert_reads_as_the_reader(&token);
        }
    }

    /// `long_string` of the string token at the start of `token` gives the text and the end
    /// `Reader::string` gives (or fails where it fails).
    fn assert_reads_as_the_reader(token: &[u8]) {
        let mut reader = Reader { bytes: token, pos: 0, depth: 0 };
        let expected = reader.string().ok().map(|text| (text, reader.pos));
        let mut out = vec![0; token.len()];
        let read = long_string(token, 0, &mut out)
            .map(|(len, end)| (String::from_utf8(out[..len].to_vec()).expect("checked as UTF-8"), end));
        assert_eq!(read, expected, "{}", String::from_utf8_lossy(token));
    }

    #[test]
    fn escapes_at_every_offset_of_a_block() {
        // each kind of escape, a quote, a control character, a non-ASCII character and broken
        // UTF-8 at every offset of long_string's 64-byte blocks and the 96 bytes it reads ahead,
        // after and before plain runs longer and shorter than its 32-byte copies
        let marks: [&[u8]; 12] = [
            b"\\\"",
            b"\\\\\"",
            b"\\\\",
            b"\\n\\t\\/",
            b"\\u00e9",
            b"\\ud83d\\ude42",
            b"\\ud800",
            b"\\q",
            "\u{e9}".as_bytes(),
            b"\xe9",
            b"\t",
            b"\"",
        ];
        for mark in marks {
            for before in 0..200 {
                for after in [0, 1, 31, 33, 70, 150] {
                    let mut token = b"\"".to_vec();
                    token.extend(std::iter::repeat_n(b'a', before));
                    token.extend_from_slice(mark);
                    token.extend(std::iter::repeat_n(b'b', after));
                    token.extend_from_slice(b"\\\"x\"]");
                    assert_reads_as_the_reader(&token);
                }
            }
        }
    }

    #[test]
    fn the_scans_stop_at_every_quote_backslash_and_control_byte_and_no_other() {
        // each byte value at each offset of a 64-byte block, among bytes that never stop a scan
        for value in 0..=255u8 {
            let (backslash, other) = (value == b'\\', value == b'"' || value < 0x20);
            for k in 0..64 {
                let mut block = [b'a'; 64];
                block[k] = value;
                let expected = |hit: bool| if hit { 1u64 << k } else { 0 };
                assert_eq!(
                    block_masks(&block),
                    (expected(backslash), expected(other)),
                    "byte {value} at {k}"
                );
                let chunk = &block[k / 16 * 16..][..16];
                assert_eq!(attention_mask(chunk), (expected(backslash || other) >> (k / 16 * 16)) as u32);
            }
        }
    }

    #[test]
    fn errors_name_the_offset() {
        assert_eq!(err("[1, 2"), "invalid JSON at byte 5: expected ',' or ']', found the end of input");
        assert_eq!(err("{\"a\" 1}"), "invalid JSON at byte 5: expected ':', found '1'");
        assert_eq!(err("[01]"), "invalid JSON at byte 1: leading zero in a number");
        assert_eq!(err("\"a\\ud800\""), "invalid JSON at byte 2: lone leading surrogate in a \\u escape");
        assert_eq!(err("\"a\nb\""), "invalid JSON at byte 2: control character 0x0a in a string");
        assert_eq!(err("[1] x"), "invalid JSON at byte 4: trailing characters after the JSON value");
        assert_eq!(err("tru"), "invalid JSON at byte 0: expected 'true'");
        assert_eq!(parse(b"[\"\xff\"]").unwrap_err().offset, 2);
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert_eq!(parse_str(&deep).unwrap_err().message, "nesting deeper than 512 levels");
    }
}
