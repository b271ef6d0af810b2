//! The few Python string behaviours the page flow's output depends on, so the C path writes
//! the same bytes as `runtime/flow/pages.py`: `str.strip`, `str.splitlines`, `html.escape`,
//! `format(n, ",")` and the first line of an exception's message (`pages.describe`).

use crate::markdown::chars::{is_decimal, is_space};

/// `str.strip()`: Python's whitespace (`str.isspace`) removed at both ends.
pub fn strip(text: &str) -> &str {
    text.trim_matches(|c: char| is_space(c as u32))
}

/// `str.splitlines()` (no line ends kept): the boundaries Python splits at, `\r\n` as one.
pub fn splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let boundary = matches!(
            c,
            '\n' | '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}'
        );
        if !boundary {
            continue;
        }
        lines.push(&text[start..at]);
        start = at + c.len_utf8();
        if c == '\r' {
            if let Some(&(next, '\n')) = chars.peek() {
                chars.next();
                start = next + 1;
            }
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// `html.escape(text)` (quote=True).
pub fn escape_html(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            _ => out.push(c),
        }
    }
}

/// `f"{n:,}"`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// `pages.describe`: `"Type: first line"` of an exception's message (stripped), or `"Type"`
/// when the message is empty.
pub fn describe(kind: &str, message: &str) -> String {
    match splitlines(strip(message)).first() {
        Some(first) => format!("{kind}: {first}"),
        None => kind.to_string(),
    }
}

/// Python's `re` `\d` (a Unicode decimal digit).
pub fn is_re_digit(c: char) -> bool {
    is_decimal(c as u32)
}

/// Python's `repr` of a `str`: single quotes, or double quotes when the text holds a single
/// quote and no double one; backslashes, quotes and the usual control characters escaped.
pub fn repr_str(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `json.dumps(value)` with its default separators (`", "`, `": "`) and `ensure_ascii`.
pub fn json_dumps(value: &crate::json::Value) -> String {
    use crate::json::{Number, Value};
    fn string(text: &str, out: &mut String) {
        out.push('"');
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(Number::Int(i)) => out.push_str(&i.to_string()),
            Value::Number(Number::Float(f)) => out.push_str(&format!("{f:?}")),
            Value::String(s) => string(s, out),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write(item, out);
                }
                out.push(']');
            }
            Value::Object(members) => {
                out.push('{');
                for (i, (key, item)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    string(key, out);
                    out.push_str(": ");
                    write(item, out);
                }
                out.push('}');
            }
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitlines_splits_where_python_does() {
        assert_eq!(splitlines("a\r\nb\rc\nd\x0be\x1cf\u{2028}g\u{85}"), ["a", "b", "c", "d", "e", "f", "g"]);
        assert_eq!(splitlines(""), Vec::<&str>::new());
        assert_eq!(splitlines("\n\nx"), ["", "", "x"]);
        assert_eq!(splitlines("x\n"), ["x"]);
        assert_eq!(splitlines("x\x1fy"), ["x\x1fy"]); // \x1f is a space, not a line boundary
    }

    #[test]
    fn strip_escape_thousands_describe() {
        assert_eq!(strip("\x1c\u{3000} a b\u{a0}\x1f"), "a b");
        let mut out = String::new();
        escape_html("<a href=\"x\">'&'</a>", &mut out);
        assert_eq!(out, "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;&#x27;&lt;/a&gt;");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(16_777_216), "16,777,216");
        assert_eq!(thousands(131_072), "131,072");
        assert_eq!(describe("ValueError", "  \n first\nsecond"), "ValueError: first");
        assert_eq!(describe("AssertionError", " "), "AssertionError");
        assert!(is_re_digit('\u{661}') && is_re_digit('7') && !is_re_digit('x'));
    }
}
