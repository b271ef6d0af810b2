//! The libxml2-shaped tree of lexbor's serialization and libxml2's HTML serializer: the
//! compiled twin of `runtime/dom.py` (`parse_serialized`, `serialize_html`). Every rule here
//! is that module's rule; comments there say why each exists.
//!
//! Input outside the regular shape a serializer writes (a start tag the greedy reading cannot
//! close, non-ASCII names, entities other than the five a serializer emits, characters that
//! Python's case-insensitive matching folds onto ASCII) is refused with `Unsupported`: the
//! caller then runs the Python implementation, so output is identical either way.

pub const NONE: usize = usize::MAX;

#[derive(Debug)]
pub struct Unsupported(pub &'static str);

pub type Res<T> = Result<T, Unsupported>;

/// An element name: shared between an element and its copies (no allocation per copy).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Tag(std::rc::Rc<str>);

impl Tag {
    pub fn new(name: &str) -> Tag {
        Tag(std::rc::Rc::from(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Tag {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for Tag {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<str> for Tag {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

pub struct Node {
    pub tag: Tag,
    /// index into `Tree::attrs`: copies share one attribute list until it is replaced, as
    /// the Python tree shares attribute dicts
    pub attrs: usize,
    pub text: Option<Text>,
    pub tail: Option<Text>,
    pub children: Vec<usize>,
    pub parent: usize,
    pub orig: usize,
    pub flags: u8,
}

pub type Attrs = Vec<(String, String)>;

/// Text and tail strings: shared between an element and its copies (the page is copied once
/// for processing and again block by block; a change makes a new string).
pub type Text = std::rc::Rc<str>;

/// `slot += s` (Python's `text + s` on an optional string).
pub fn append(slot: &mut Option<Text>, s: &str) {
    *slot = Some(match slot.take() {
        Some(t) => Text::from(format!("{t}{s}")),
        None => Text::from(s),
    });
}

#[derive(Default)]
pub struct Tree {
    pub nodes: Vec<Node>,
    pub attrs: Vec<Attrs>,
    /// the page has an element whose text blocks carry escaped (xmp, noembed, noframes,
    /// plaintext): exactly when `simplify._HAS_RAW_TEXT_RE` matters, since such an element
    /// only comes from such a start tag in the raw page
    pub has_raw_text_in_blocks: bool,
    /// `parse` reads what it otherwise refuses (non-ASCII names, "!"/"?" in tag names, a
    /// stray "/" in a start tag, character references beyond the serializer's five, long s
    /// and Kelvin sign) the way an HTML parser does, instead of refusing the page. The
    /// refusals protect output that must equal the Python reading's; the block features read
    /// only ASCII tag names and a few attribute values, where those readings agree.
    pub lenient: bool,
}

/// Python's `str.isspace` (also what `\s` matches in a `str` pattern).
#[inline]
pub fn py_isspace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\x0b' | '\x0c' | '\r' | '\x1c'..='\x1f' | ' ' | '\u{85}' | '\u{a0}'
            | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}'
            | '\u{205f}' | '\u{3000}'
    )
}

/// Python's `str.strip()`.
#[inline]
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// Whether `s.strip()` is non-empty.
#[inline]
pub fn has_non_space(s: &str) -> bool {
    s.chars().any(|c| !py_isspace(c))
}

/// Byte length of the whitespace character (Python's `\s`) at byte `i`, 0 if none.
#[inline]
fn ws_len(src: &str, i: usize) -> usize {
    let b = src.as_bytes()[i];
    if b < 0x80 {
        return matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1c..=0x1f | b' ') as usize;
    }
    if b < 0xc0 {
        return 0; // inside a character (scans step byte by byte through names)
    }
    let c = src[i..].chars().next().unwrap();
    if py_isspace(c) {
        c.len_utf8()
    } else {
        0
    }
}

impl Tree {
    pub fn new_attrs(&mut self, attrs: Attrs) -> usize {
        self.attrs.push(attrs);
        self.attrs.len() - 1
    }

    pub fn new_node(&mut self, tag: Tag, attrs: usize) -> usize {
        let id = self.nodes.len();
        self.nodes.push(Node {
            tag,
            attrs,
            text: None,
            tail: None,
            children: Vec::new(),
            parent: NONE,
            orig: id,
            flags: 0,
        });
        id
    }

    pub fn attr(&self, node: usize, name: &str) -> Option<&str> {
        self.attrs[self.nodes[node].attrs]
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Set an attribute in place (every node sharing the list sees it, as in Python).
    pub fn set_attr(&mut self, node: usize, name: &str, value: &str) {
        let list = &mut self.attrs[self.nodes[node].attrs];
        if let Some(entry) = list.iter_mut().find(|(k, _)| k == name) {
            entry.1 = value.to_string();
        } else {
            list.push((name.to_string(), value.to_string()));
        }
    }

    /// Document-order pre-order of `node`'s subtree (the node itself first).
    pub fn iter(&self, node: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            out.push(n);
            stack.extend(self.nodes[n].children.iter().rev());
        }
        out
    }

    /// `dom.deep_copy`: copies keep `orig` and share attribute lists; with `skip_removed`,
    /// descendants whose tag is in `REMOVED_TAGS` are left out.
    pub fn deep_copy(&mut self, node: usize, skip_removed: bool) -> usize {
        let top = self.copy_one(node);
        let mut stack = vec![(node, top)];
        while let Some((src, dst)) = stack.pop() {
            for k in 0..self.nodes[src].children.len() {
                let child = self.nodes[src].children[k];
                if skip_removed && crate::simplify::is_removed_tag(&self.nodes[child].tag) {
                    continue;
                }
                let copy = self.copy_one(child);
                self.nodes[copy].parent = dst;
                self.nodes[dst].children.push(copy);
                if !self.nodes[child].children.is_empty() {
                    stack.push((child, copy));
                }
            }
        }
        top
    }

    fn copy_one(&mut self, node: usize) -> usize {
        let n = &self.nodes[node];
        let (tag, attrs, orig) = (n.tag.clone(), n.attrs, n.orig);
        let (text, tail) = (n.text.clone(), n.tail.clone());
        let copy = self.new_node(tag, attrs);
        let c = &mut self.nodes[copy];
        c.orig = orig;
        c.text = text;
        c.tail = tail;
        copy
    }
}

// ── libxml2's tree construction ────────────────────────────────────────────────────────

pub fn is_libxml_void(tag: &str) -> bool {
    matches!(
        tag,
        "area" | "base" | "basefont" | "br" | "col" | "frame" | "hr" | "img" | "input"
            | "isindex" | "link" | "meta" | "param"
    )
}

fn is_html5_void(tag: &str) -> bool {
    matches!(
        tag,
        "area" | "base" | "basefont" | "bgsound" | "br" | "col" | "embed" | "frame" | "hr"
            | "img" | "input" | "keygen" | "link" | "meta" | "param" | "source" | "track"
            | "wbr"
    )
}

fn is_select_content(tag: &str) -> bool {
    matches!(tag, "option" | "optgroup" | "hr" | "script" | "template")
}

/// Elements whose content libxml2 2.14 reads as text, character references decoded, when it
/// parses a page itself (see `parse`).
pub fn is_rcdata(tag: &str) -> bool {
    tag == "textarea" || tag == "title"
}

pub fn is_raw_text(tag: &str) -> bool {
    matches!(tag, "script" | "style" | "xmp" | "iframe" | "noembed" | "noframes" | "plaintext")
}

const P_CLOSERS: &[&str] = &[
    "address", "blockquote", "caption", "center", "colgroup", "dd", "dir", "div", "dl", "dt",
    "fieldset", "form", "h1", "h2", "h3", "h4", "h5", "h6", "li", "listing", "menu", "ol", "p",
    "pre", "table", "tbody", "td", "tfoot", "th", "tr", "ul",
];
const HEADING_CLOSERS: &[&str] = &["fieldset", "form", "li", "p", "table"];

/// `dom._CLOSED_BY`: the start tags that close an open element of this name.
fn closed_by(open: &str) -> Option<&'static [&'static str]> {
    Some(match open {
        "a" => &["a", "fieldset", "table", "td", "th"],
        "address" => &["dd", "dl", "dt", "form", "li", "ul"],
        "b" => &["center", "p", "td", "th"],
        "big" => &["p"],
        "caption" => &["colgroup", "tbody", "tfoot", "thead", "tr"],
        "colgroup" => &["colgroup", "tbody", "tfoot", "thead", "tr"],
        "dd" => &["dt"],
        "dir" => &["dd", "dl", "dt", "form", "ul"],
        "dl" => &["form", "li"],
        "dt" => &["dd", "dl"],
        "font" => &["center", "td", "th"],
        "form" => &["form"],
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => HEADING_CLOSERS,
        "head" => &["body"],
        "i" => &["center", "p", "td", "th"],
        "legend" => &["fieldset"],
        "li" => &["li"],
        "listing" => &["dd", "dl", "dt", "fieldset", "form", "li", "table", "ul"],
        "menu" => &["dd", "dl", "dt", "form", "ul"],
        "ol" => &["form"],
        "option" => &["optgroup", "option"],
        "p" => P_CLOSERS,
        "pre" => &["dd", "dl", "dt", "fieldset", "form", "li", "table", "ul"],
        "s" => &["p"],
        "small" => &["p"],
        "span" => &["td", "th"],
        "strike" => &["p"],
        "tbody" => &["tbody", "tfoot"],
        "td" => &["tbody", "td", "tfoot", "th", "tr"],
        "tfoot" => &["tbody"],
        "th" => &["tbody", "td", "tfoot", "th", "tr"],
        "thead" => &["tbody", "tfoot"],
        "tr" => &["tbody", "tfoot", "tr"],
        "tt" => &["p"],
        "u" => &["p", "td", "th"],
        "ul" => &["address", "form", "menu", "pre"],
        _ => return None,
    })
}

fn end_priority(tag: &str) -> u32 {
    match tag {
        "div" => 150,
        "td" | "th" => 160,
        "tr" => 170,
        "thead" | "tbody" | "tfoot" => 180,
        "table" => 190,
        "head" | "body" => 200,
        "html" => 220,
        _ => 100,
    }
}

pub const NAMELESS_ATTR_MARK: &str = "pulpie-rt-nameless";

/// `html.unescape` for what a serializer writes: the five entities it emits; any other
/// character reference (which `html.unescape` would resolve through its table) is refused.
pub fn unescape(s: &str) -> Res<String> {
    unescape_with(s, false)
}

/// `unescape`, or with `lenient` any other "&" left as it is (what an HTML parser does with
/// an "&" that starts no character reference; the serializer writes no other reference).
fn unescape_with(s: &str, lenient: bool) -> Res<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (rep, used) = if after.starts_with("amp;") {
            ('&', 4)
        } else if after.starts_with("lt;") {
            ('<', 3)
        } else if after.starts_with("gt;") {
            ('>', 3)
        } else if after.starts_with("quot;") {
            ('"', 5)
        } else if after.starts_with("nbsp;") {
            ('\u{a0}', 5)
        } else {
            match after.chars().next() {
                // html.unescape leaves "&" alone before these (and at the end)
                None | Some('\t') | Some('\n') | Some('\x0c') | Some(' ') | Some('<')
                | Some('&') | Some(';') => ('&', 0),
                _ if lenient => ('&', 0),
                _ => return Err(Unsupported("character reference")),
            }
        };
        out.push(rep);
        rest = &after[used..];
    }
    out.push_str(rest);
    Ok(out)
}

fn find_char(hay: &str, from: usize, needle: char) -> Option<usize> {
    hay[from..].find(needle).map(|i| i + from)
}

fn find_from(hay: &str, from: usize, needle: &str) -> Option<usize> {
    hay[from..].find(needle).map(|i| i + from)
}

/// `dom._script_end`: offset of the `</script` that ends a script's content at `pos`.
fn script_end(s: &str, pos: usize) -> usize {
    let b = s.as_bytes();
    let n = b.len();
    let (mut escaped, mut double) = (false, false);
    let mut i = pos;
    while i < n {
        let c = b[i];
        if c == b'<' {
            if b[i..].starts_with(b"<!--") {
                if !escaped {
                    escaped = true;
                }
                i += 4;
                continue;
            }
            let slash = i + 1 < n && b[i + 1] == b'/';
            let name_at = i + 1 + slash as usize;
            if name_at + 6 < n
                && b[name_at..name_at + 6].eq_ignore_ascii_case(b"script")
                && (b[name_at + 6] == b'/' || b[name_at + 6] == b'>' || ws_len(s, name_at + 6) > 0)
            {
                let len = name_at + 6 - i + ws_len(s, name_at + 6).max(1);
                if slash {
                    if double {
                        double = false;
                    } else {
                        return i;
                    }
                } else if escaped {
                    double = true;
                }
                i += len;
                continue;
            }
        } else if c == b'-' && b[i..].starts_with(b"-->") {
            escaped = false;
            double = false;
            i += 3;
            continue;
        }
        i += 1;
    }
    n
}

/// The start of `</tag[\s/>]` (ASCII case-insensitive) at or after `from`, or the end.
fn raw_end(s: &str, from: usize, tag: &str) -> usize {
    let b = s.as_bytes();
    let t = tag.as_bytes();
    let mut i = from;
    while let Some(at) = find_from(s, i, "</") {
        let name_at = at + 2;
        let after = name_at + t.len();
        if after < b.len()
            && b[name_at..after].eq_ignore_ascii_case(t)
            && (b[after] == b'/' || b[after] == b'>' || ws_len(s, after) > 0)
        {
            return at;
        }
        i = at + 2;
    }
    b.len()
}

/// One start tag read the way `dom._TOKEN_RE` reads a serializer's start tag, greedily:
/// (name, attributes as `_parse_attrs` gives them, self-closing, end offset).
struct StartTag {
    name: String,
    attrs: Attrs,
    self_closing: bool,
    end: usize,
}

fn is_name_stop(src: &str, i: usize, extra: &[u8]) -> bool {
    let c = src.as_bytes()[i];
    c == b'/' || c == b'>' || extra.contains(&c) || ws_len(src, i) > 0
}

/// `None`: no start tag here (the regex falls through to text `<`); `Err`: a start tag the
/// greedy reading does not close (the regex would backtrack): refused, or with `lenient`
/// read as an HTML parser reads it (an unclosed tag is text).
fn read_start_tag(s: &str, pos: usize, lenient: bool) -> Res<Option<StartTag>> {
    let b = s.as_bytes();
    let n = b.len();
    let mut i = pos + 1;
    let name_stops: &[u8] = if lenient { b"" } else { b"!?" };
    while i < n && !is_name_stop(s, i, name_stops) {
        i += 1;
    }
    if i == pos + 1 {
        return Ok(None);
    }
    let raw_name = &s[pos + 1..i];
    if !raw_name.is_ascii() && !lenient {
        return Err(Unsupported("non-ASCII tag name"));
    }
    if i < n && (b[i] == b'!' || b[i] == b'?') {
        return Err(Unsupported("tag name with ! or ?"));
    }
    let name = raw_name.to_ascii_lowercase();
    let mut attrs: Attrs = Vec::new();
    loop {
        // \s* then either the end (/?>) or another attribute
        while i < n {
            let w = ws_len(s, i);
            if w == 0 {
                break;
            }
            i += w;
        }
        if i >= n {
            return if lenient { Ok(None) } else { Err(Unsupported("unterminated start tag")) };
        }
        if b[i] == b'>' {
            return Ok(Some(StartTag { name, attrs, self_closing: false, end: i + 1 }));
        }
        if b[i] == b'/' {
            if i + 1 < n && b[i + 1] == b'>' {
                return Ok(Some(StartTag { name, attrs, self_closing: true, end: i + 2 }));
            }
            if lenient {
                i += 1; // HTML: a "/" not before ">" is ignored
                continue;
            }
            return Err(Unsupported("'/' inside a start tag"));
        }
        // attribute name: "=" [^\s=/>]* | [^\s=/>]+
        let name_start = i;
        if b[i] == b'=' {
            i += 1;
        }
        while i < n && !is_name_stop(s, i, b"=") {
            i += 1;
        }
        let attr_name = &s[name_start..i];
        if !attr_name.is_ascii() && !lenient {
            return Err(Unsupported("non-ASCII attribute name"));
        }
        // (\s*=\s*("…"|'…'|[^\s>]*))?
        let mut j = i;
        while j < n {
            let w = ws_len(s, j);
            if w == 0 {
                break;
            }
            j += w;
        }
        let mut value: Option<&str> = None;
        if j < n && b[j] == b'=' {
            j += 1;
            while j < n {
                let w = ws_len(s, j);
                if w == 0 {
                    break;
                }
                j += w;
            }
            if j < n && (b[j] == b'"' || b[j] == b'\'') {
                let quote = b[j] as char;
                match s[j + 1..].find(quote) {
                    Some(k) => {
                        value = Some(&s[j + 1..j + 1 + k]);
                        i = j + 1 + k + 1;
                    }
                    None if lenient => return Ok(None),
                    None => return Err(Unsupported("unclosed attribute quote")),
                }
            } else {
                let v0 = j;
                while j < n && b[j] != b'>' && ws_len(s, j) == 0 {
                    j += 1;
                }
                value = Some(&s[v0..j]);
                i = j;
            }
        }
        let mut key = attr_name.to_ascii_lowercase();
        if key == NAMELESS_ATTR_MARK {
            key.clear();
        }
        if !attrs.iter().any(|(k, _)| *k == key) {
            let v = value.unwrap_or("");
            let v = if v.contains('&') { unescape_with(v, lenient)? } else { v.to_string() };
            attrs.push((key, v));
        }
    }
}

/// `dom.parse_serialized`: the libxml2-shaped tree of a serializer's output; returns the
/// `<html>` root.
pub fn parse_serialized(tree: &mut Tree, s: &str) -> Res<usize> {
    parse(tree, s, false)
}

/// `parse_serialized`, or with `map_html` the tree libxml2 2.14 builds of a page it parses
/// itself (the reference's parse of `map_html` in reconstruct), which differs in two places:
/// the content of `<textarea>` and `<title>` is text up to the end tag, character references
/// decoded (in lexbor's serialization such content is escaped text anyway; in `map_html` these
/// elements can hold elements); and a `<select>` keeps what it holds (the "in select" rule
/// reproduces the reference's Modest parse of the raw page, which only simplify sees).
pub fn parse(tree: &mut Tree, s: &str, map_html: bool) -> Res<usize> {
    if !tree.lenient && (s.contains('\u{17f}') || s.contains('\u{212a}')) {
        // Python's case-insensitive matching folds these onto "s" and "k"
        return Err(Unsupported("long s or Kelvin sign"));
    }
    let empty = tree.new_attrs(Vec::new());
    let root = tree.new_node(Tag::new("html"), empty);
    // one shared name per distinct tag of the page
    let mut names: std::collections::HashMap<String, Tag> = Default::default();
    let mut stack: Vec<usize> = vec![root];
    let (mut seen_head, mut seen_body, mut seen_html) = (false, false, false);
    let mut open_selects = 0usize;
    let mut dropped_in_select: std::collections::HashMap<String, usize> = Default::default();
    let b = s.as_bytes();
    let n = b.len();
    let mut pos = 0usize;
    while pos < n {
        if b[pos] == b'<' {
            // comments, declarations, processing instructions: dropped
            if b[pos..].starts_with(b"<!--") {
                if let Some(e) = find_from(s, pos + 4, "-->") {
                    pos = e + 3;
                    continue;
                }
            }
            if pos + 1 < n && (b[pos + 1] == b'!' || b[pos + 1] == b'?') {
                if let Some(e) = find_char(s, pos + 2, '>') {
                    pos = e + 1;
                    continue;
                }
                add_text(tree, &stack, "<");
                pos += 1;
                continue;
            }
            if pos + 1 < n && b[pos + 1] == b'/' {
                let mut i = pos + 2;
                while i < n && !is_name_stop(s, i, b"") {
                    i += 1;
                }
                let close = if i > pos + 2 { find_char(s, i, '>') } else { None };
                let Some(close) = close else {
                    add_text(tree, &stack, "<");
                    pos += 1;
                    continue;
                };
                let raw = &s[pos + 2..i];
                if !raw.is_ascii() && !tree.lenient {
                    return Err(Unsupported("non-ASCII end tag name"));
                }
                pos = close + 1;
                let tag = raw.to_ascii_lowercase();
                if tag == "html" || tag == "body" {
                    continue;
                }
                if let Some(count) = dropped_in_select.get_mut(&tag) {
                    if *count > 0 {
                        *count -= 1;
                        continue;
                    }
                }
                let priority = end_priority(&tag);
                let mut k = stack.len() - 1;
                while k > 0 {
                    let open_tag = &tree.nodes[stack[k]].tag;
                    if open_tag.as_str() == tag {
                        if open_selects > 0 {
                            for &closed in &stack[k..] {
                                if tree.nodes[closed].tag == "select" {
                                    open_selects -= 1;
                                }
                            }
                        }
                        stack.truncate(k);
                        break;
                    }
                    if end_priority(open_tag) > priority {
                        break;
                    }
                    k -= 1;
                }
                continue;
            }
            let Some(st) = read_start_tag(s, pos, tree.lenient)? else {
                add_text(tree, &stack, "<");
                pos += 1;
                continue;
            };
            pos = st.end;
            let tag = st.name;
            if tag == "html" {
                if !seen_html {
                    let a = tree.new_attrs(st.attrs);
                    tree.nodes[root].attrs = a;
                    seen_html = true;
                }
                continue;
            }
            if tag == "head" {
                if seen_head || seen_body {
                    continue;
                }
                seen_head = true;
            } else if tag == "body" {
                if seen_body {
                    continue;
                }
                seen_body = true;
            }
            if open_selects > 0 && !map_html && !is_select_content(&tag) {
                if !is_html5_void(&tag) {
                    *dropped_in_select.entry(tag).or_insert(0) += 1;
                }
                continue;
            }
            while stack.len() > 1 {
                match closed_by(&tree.nodes[*stack.last().unwrap()].tag) {
                    Some(closers) if closers.contains(&tag.as_str()) => {
                        stack.pop();
                    }
                    _ => break,
                }
            }
            let a = tree.new_attrs(st.attrs);
            let name = match names.get(&tag) {
                Some(name) => name.clone(),
                None => names.entry(tag.clone()).or_insert_with(|| Tag::new(&tag)).clone(),
            };
            let node = tree.new_node(name, a);
            if crate::simplify::is_raw_text_in_blocks(&tag) {
                tree.has_raw_text_in_blocks = true;
            }
            let parent = *stack.last().unwrap();
            tree.nodes[node].parent = parent;
            tree.nodes[parent].children.push(node);
            let tag = tree.nodes[node].tag.as_str();
            if is_libxml_void(tag) || st.self_closing {
                continue;
            }
            stack.push(node);
            if tag == "select" {
                open_selects += 1;
            }
            if is_raw_text(tag) {
                let start = pos;
                let stop = if tag == "script" { script_end(s, start) } else { raw_end(s, start, tag) };
                if stop > start {
                    tree.nodes[node].text = Some(Text::from(&s[start..stop]));
                }
                pos = stop;
            } else if map_html && is_rcdata(tag) {
                let start = pos;
                let stop = raw_end(s, start, tag);
                if stop > start {
                    let raw = &s[start..stop];
                    let text =
                        if raw.contains('&') { unescape_with(raw, tree.lenient)? } else { raw.to_string() };
                    tree.nodes[node].text = Some(Text::from(text));
                }
                pos = stop;
            }
        } else {
            let stop = find_char(s, pos, '<').unwrap_or(n);
            let raw = &s[pos..stop];
            if raw.contains('&') {
                let text = unescape_with(raw, tree.lenient)?;
                add_text(tree, &stack, &text);
            } else {
                add_text(tree, &stack, raw);
            }
            pos = stop;
        }
    }
    Ok(root)
}

fn add_text(tree: &mut Tree, stack: &[usize], text: &str) {
    let parent = *stack.last().unwrap();
    let target = match tree.nodes[parent].children.last() {
        Some(&last) => &mut tree.nodes[last].tail,
        None => &mut tree.nodes[parent].text,
    };
    append(target, text);
}

// ── libxml2's HTML serializer ──────────────────────────────────────────────────────────

pub fn is_boolean_attr(name: &str) -> bool {
    matches!(
        name,
        "checked" | "compact" | "declare" | "defer" | "disabled" | "ismap" | "multiple"
            | "nohref" | "noresize" | "noshade" | "nowrap" | "readonly" | "selected"
    )
}

/// Text as libxml2's HTML serializer writes it: `&`, `<`, `>` escaped.
pub fn escape_text_into(out: &mut String, text: &str) {
    escape_into(out, text, false);
}

/// `&` (unless before `{` in an attribute value), `<`, `>` escaped.
fn escape_into(out: &mut String, text: &str, attribute: bool) {
    let b = text.as_bytes();
    let mut last = 0;
    for (i, &c) in b.iter().enumerate() {
        let rep = match c {
            b'&' if !(attribute && b.get(i + 1) == Some(&b'{')) => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            _ => continue,
        };
        out.push_str(&text[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&text[last..]);
}

fn is_uri_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.!~*'()\"#$%&+,/:;<=>?@[\\]^`{|}".contains(&b)
}

pub fn escape_uri(value: &str) -> String {
    let value = value.trim_start_matches([' ', '\t', '\n', '\r']);
    if value.bytes().all(is_uri_safe) {
        return value.to_string();
    }
    let mut out = String::with_capacity(value.len() * 2);
    for b in value.bytes() {
        if is_uri_safe(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn attr_escape_into(out: &mut String, value: &str) {
    escape_into(out, value, true);
}

/// `dom.escape_attr_value`: whole `<!-- … -->` runs are left as they are.
pub fn escape_attr_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 8);
    if !value.contains("<!--") {
        attr_escape_into(&mut out, value);
        return out;
    }
    let mut pos = 0;
    while let Some(start) = find_from(value, pos, "<!--") {
        let Some(stop) = find_from(value, start + 4, "-->") else { break };
        attr_escape_into(&mut out, &value[pos..start]);
        out.push_str(&value[start..stop + 3]);
        pos = stop + 3;
    }
    attr_escape_into(&mut out, &value[pos..]);
    out
}

/// ` name="value"` (or `'value'`), the value already escaped.
pub fn push_attr(out: &mut String, name: &str, quote: char, value: &str) {
    out.push(' ');
    out.push_str(name);
    out.push('=');
    out.push(quote);
    out.push_str(value);
    out.push(quote);
}

fn serialize_attr(out: &mut String, tag: &str, name: &str, value: &str) {
    if is_boolean_attr(name) {
        out.push(' ');
        out.push_str(name);
        return;
    }
    let is_uri = matches!(name, "href" | "action" | "src") || (name == "name" && tag == "a");
    if !is_uri && !value.bytes().any(|c| matches!(c, b'&' | b'<' | b'>' | b'"')) {
        push_attr(out, name, '"', value);
        return;
    }
    let uri;
    let value = if is_uri {
        uri = escape_uri(value);
        uri.as_str()
    } else {
        value
    };
    let escaped = escape_attr_value(value);
    if !escaped.contains('"') {
        push_attr(out, name, '"', &escaped);
    } else if escaped.contains('\'') {
        push_attr(out, name, '"', &escaped.replace('"', "&quot;"));
    } else {
        push_attr(out, name, '\'', &escaped);
    }
}

/// `dom.serialize_html`: `lxml.etree.tostring(node, method="html", with_tail=False)`.
pub fn serialize_html(tree: &Tree, top: usize, out: &mut String) {
    enum Item {
        Open(usize),
        Close(usize),
    }
    let mut stack = vec![Item::Open(top)];
    while let Some(item) = stack.pop() {
        let id = match item {
            Item::Close(id) => {
                let node = &tree.nodes[id];
                out.push_str("</");
                out.push_str(&node.tag);
                out.push('>');
                if id != top {
                    if let Some(tail) = &node.tail {
                        escape_text_into(out, tail);
                    }
                }
                continue;
            }
            Item::Open(id) => id,
        };
        let node = &tree.nodes[id];
        let tag = node.tag.as_str();
        out.push('<');
        out.push_str(tag);
        for (name, value) in &tree.attrs[node.attrs] {
            serialize_attr(out, tag, name, value);
        }
        out.push('>');
        let tail = if id != top { node.tail.as_deref() } else { None };
        if is_libxml_void(tag) {
            if let Some(t) = tail {
                escape_text_into(out, t);
            }
            continue;
        }
        match &node.text {
            Some(text) if !text.is_empty() => {
                if tag == "script" || tag == "style" {
                    out.push_str(text);
                } else {
                    escape_text_into(out, text);
                }
            }
            None if tag == "li" && node.children.is_empty() => {
                // libxml2 omits the end tag of an empty <li>
                if let Some(t) = tail {
                    escape_text_into(out, t);
                }
                continue;
            }
            _ => {}
        }
        stack.push(Item::Close(id));
        stack.extend(node.children.iter().rev().map(|&c| Item::Open(c)));
    }
}
