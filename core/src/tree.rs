//! The libxml2-shaped tree of lexbor's serialization and libxml2's HTML serializer: the
//! compiled twin of `tests/spec/dom_spec.py` (`parse_serialized`, `serialize_html`). Every rule
//! here is that module's rule; comments there say why each exists.
//!
//! A serialization is read one of two ways (`Reader`): as the specification reads lexbor's
//! (Python's `str.lower` for names, `html.unescape` for references, `re.IGNORECASE` for the
//! end of raw text), or as libxml2 2.14 reads `map_html` for the reference's `reconstruct`
//! (ASCII case, HTML5 character references).

pub const NONE: usize = usize::MAX;

/// Input the core cannot take (a page that is not UTF-8, say); the reason is for the caller.
#[derive(Debug)]
pub struct Unsupported(pub &'static str);

pub type Res<T> = Result<T, Unsupported>;

pub use crate::tags::{is_raw_text, is_rcdata, Attrs, Names, Tag, VALUELESS};

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

/// Text and tail strings: shared between an element and its copies (the page is copied once
/// for processing and again block by block; a change makes a new string).
pub use crate::text::Text;

/// `slot += s` (Python's `text + s` on an optional string).
pub fn append(slot: &mut Option<Text>, s: &str) {
    match slot {
        Some(t) => t.push_str(s),
        None => *slot = Some(Text::from(s)),
    }
}

/// The attribute lists of a tree, one after another in one `Vec` (not a `Vec` each: a page
/// has thousands): a list is its span there, `lists[id]` reads it as a slice.
#[derive(Default)]
pub struct AttrLists {
    spans: Vec<(u32, u32)>,
    items: Vec<(Tag, Text)>,
}

impl AttrLists {
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// A new list of `attrs`: its id.
    pub fn push(&mut self, attrs: impl IntoIterator<Item = (Tag, Text)>) -> usize {
        let start = self.begin();
        self.items.extend(attrs);
        self.finish(start)
    }

    /// Start a new list (`add_first`, then `finish` with what this returns).
    pub fn begin(&self) -> usize {
        self.items.len()
    }

    /// Add an attribute to the list begun last.
    pub fn add(&mut self, name: Tag, value: Text) {
        self.items.push((name, value));
    }

    /// Add `name` to the list begun at `start` unless it holds the name already.
    pub fn add_first(&mut self, start: usize, name: Tag, value: Text) {
        if !self.items[start..].iter().any(|(k, _)| *k == name) {
            self.items.push((name, value));
        }
    }

    /// The list begun at `start`: its id.
    pub fn finish(&mut self, start: usize) -> usize {
        self.spans.push((start as u32, (self.items.len() - start) as u32));
        self.spans.len() - 1
    }

    /// Set `name` in list `id`: its value replaced, or the attribute added at the end (the
    /// list moved to the end of `items` first where it is not there).
    fn set(&mut self, id: usize, name: &'static str, value: Text) {
        if let Some(entry) = self[id].iter_mut().find(|(k, _)| k == name) {
            entry.1 = value;
            return;
        }
        let (start, len) = (self.spans[id].0 as usize, self.spans[id].1 as usize);
        if start + len != self.items.len() {
            let moved = self.items.len();
            self.items.extend_from_within(start..start + len);
            self.spans[id].0 = moved as u32;
        }
        self.items.push((Tag::known(name), value));
        self.spans[id].1 += 1;
    }
}

impl std::ops::Index<usize> for AttrLists {
    type Output = [(Tag, Text)];

    fn index(&self, id: usize) -> &[(Tag, Text)] {
        let (start, len) = self.spans[id];
        &self.items[start as usize..(start + len) as usize]
    }
}

impl std::ops::IndexMut<usize> for AttrLists {
    fn index_mut(&mut self, id: usize) -> &mut [(Tag, Text)] {
        let (start, len) = self.spans[id];
        &mut self.items[start as usize..(start + len) as usize]
    }
}

pub struct Tree {
    pub nodes: Vec<Node>,
    pub attrs: AttrLists,
    /// (`Reader::Libxml2`) libxml2 made a document: the input held a start tag or text that
    /// is not blank (otherwise lxml reports "Document is empty")
    pub has_document: bool,
}

/// The storage of the trees a thread has dropped, emptied and kept for its next trees: a page
/// makes three or four trees of thousands of nodes each (lexbor's tree and its copy, the tree
/// `map_html` reads back as, the reconstruction's), so its trees grow into vectors already
/// allocated (no copies as they grow). A tree larger than `Spare::MOST_NODES` is freed as it
/// was (a huge page keeps nothing behind). Nodes' children lists are not kept: handing them
/// out again to new nodes made the segmentation slower (`bench.check`'s simplify stage).
struct Spare {
    nodes: Vec<Node>,
    spans: Vec<(u32, u32)>,
    items: Vec<(Tag, Text)>,
}

impl Spare {
    /// trees kept by a thread (as many as a page has live at once)
    const TREES: usize = 3;
    /// nodes a kept tree holds room for at most (about 7 MB of nodes)
    const MOST_NODES: usize = 1 << 16;
}

thread_local! {
    static SPARE: std::cell::RefCell<Vec<Spare>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Default for Tree {
    /// An empty tree, in the storage of one the thread dropped where it kept one (the largest).
    fn default() -> Tree {
        let spare = SPARE
            .try_with(|spare| {
                let mut spare = spare.borrow_mut();
                let largest = (0..spare.len()).max_by_key(|&i| spare[i].nodes.capacity())?;
                Some(spare.swap_remove(largest))
            })
            .ok()
            .flatten();
        match spare {
            Some(Spare { nodes, spans, items }) => {
                Tree { nodes, attrs: AttrLists { spans, items }, has_document: false }
            }
            None => Tree { nodes: Vec::new(), attrs: AttrLists::default(), has_document: false },
        }
    }
}

impl Drop for Tree {
    /// Emptied, and its storage kept for the thread's next tree (see `Spare`).
    fn drop(&mut self) {
        if self.nodes.capacity() > Spare::MOST_NODES {
            return;
        }
        let mut nodes = std::mem::take(&mut self.nodes);
        nodes.clear();
        let AttrLists { mut spans, mut items } = std::mem::take(&mut self.attrs);
        spans.clear();
        items.clear();
        let _ = SPARE.try_with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.len() < Spare::TREES {
                spare.push(Spare { nodes, spans, items });
            }
        });
    }
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
    pub fn new_attrs(&mut self, attrs: impl IntoIterator<Item = (Tag, Text)>) -> usize {
        self.attrs.push(attrs)
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
        self.attrs[self.nodes[node].attrs].iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Set an attribute in place (every node sharing the list sees it, as in Python).
    pub fn set_attr(&mut self, node: usize, name: &'static str, value: &str) {
        self.attrs.set(self.nodes[node].attrs, name, Text::from(value));
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
            let count = self.nodes[src].children.len();
            self.nodes[dst].children.reserve_exact(count);
            for k in 0..count {
                let child = self.nodes[src].children[k];
                if skip_removed && crate::tags::is_removed_tag(&self.nodes[child].tag) {
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
        "area"
            | "base"
            | "basefont"
            | "br"
            | "col"
            | "frame"
            | "hr"
            | "img"
            | "input"
            | "isindex"
            | "link"
            | "meta"
            | "param"
    )
}

fn is_html5_void(tag: &str) -> bool {
    matches!(
        tag,
        "area"
            | "base"
            | "basefont"
            | "bgsound"
            | "br"
            | "col"
            | "embed"
            | "frame"
            | "hr"
            | "img"
            | "input"
            | "keygen"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
    )
}

fn is_select_content(tag: &str) -> bool {
    matches!(tag, "option" | "optgroup" | "hr" | "script" | "template")
}

const P_CLOSERS: &[&str] = &[
    "address", "blockquote", "caption", "center", "colgroup", "dd", "dir", "div", "dl", "dt", "fieldset",
    "form", "h1", "h2", "h3", "h4", "h5", "h6", "li", "listing", "menu", "ol", "p", "pre", "table", "tbody",
    "td", "tfoot", "th", "tr", "ul",
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

/// libxml2 2.14's start tags that close an open element of this name (`htmlStartClose`), for
/// `Reader::Libxml2`; `closed_by` is the specification's measured subset, which lexbor's
/// serializations never get past (elements that are void or raw text are left out: they are
/// never open when a tag starts).
pub fn libxml2_closed_by(open: &str) -> Option<&'static [&'static str]> {
    Some(match open {
        "caption" => &["col", "colgroup", "tbody", "tfoot", "thead", "tr"],
        "head" => &[
            "a", "abbr", "acronym", "address", "b", "bdo", "big", "blockquote", "body", "br", "center",
            "cite", "code", "dd", "dfn", "dir", "div", "dl", "dt", "em", "fieldset", "font", "form",
            "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "iframe", "img", "kbd", "li",
            "listing", "map", "menu", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike",
            "strong", "sub", "sup", "table", "tt", "u", "ul", "var", "xmp",
        ],
        "p" => &[
            "address", "blockquote", "body", "caption", "center", "col", "colgroup", "dd", "dir", "div",
            "dl", "dt", "fieldset", "form", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr",
            "li", "listing", "menu", "ol", "p", "pre", "table", "tbody", "td", "tfoot", "th", "title", "tr",
            "ul", "xmp",
        ],
        other => return closed_by(other),
    })
}

/// The blank characters of libxml2's HTML parser.
pub const LIBXML2_BLANKS: [u8; 5] = [b' ', b'\t', b'\n', b'\r', b'\x0c'];

fn is_libxml2_blank(c: u8) -> bool {
    LIBXML2_BLANKS.contains(&c)
}

/// libxml2's `areBlanks` (lxml's `remove_blank_text`) for a blank text run before a `<` (at
/// the end of the input it is always dropped): dropped in `<html>` and `<head>`, kept after
/// text, else kept only where the element before it (or the parent, when it comes first)
/// allows character data.
fn libxml2_drops_blank(tree: &Tree, stack: &[usize]) -> bool {
    let parent = &tree.nodes[*stack.last().unwrap()];
    if parent.tag == "html" || parent.tag == "head" {
        return true;
    }
    match parent.children.last() {
        Some(&last) => {
            let last = &tree.nodes[last];
            last.tail.as_deref().is_none_or(str::is_empty) && !crate::tags::allows_pcdata(&last.tag)
        }
        None => parent.text.as_deref().is_none_or(str::is_empty) && !crate::tags::allows_pcdata(&parent.tag),
    }
}

/// What libxml2's `htmlCheckImplied` remembers: whether the first element was made, and
/// whether a `<head>` or `<body>` was ever open.
#[derive(Default)]
struct Libxml2State {
    started: bool,
    head_pushed: bool,
    body_pushed: bool,
}

impl Libxml2State {
    fn pushed(&mut self, tag: &str) {
        self.head_pushed |= tag == "head";
        self.body_pushed |= tag == "body";
    }

    /// `htmlCheckImplied(tag)`: a `<head>` for the head's elements while only `<html>` is
    /// open and no head or body was, a `<body>` for other elements (but frames) while no body
    /// was open and none or no head is open now.
    fn imply(&mut self, tree: &mut Tree, stack: &mut Vec<usize>, tag: &str) {
        if tag == "head" || tag == "body" {
            return;
        }
        let implied =
            if stack.len() <= 1 && matches!(tag, "script" | "style" | "meta" | "link" | "title" | "base") {
                if self.head_pushed || self.body_pushed {
                    return;
                }
                "head"
            } else if !matches!(tag, "noframes" | "frame" | "frameset") {
                if self.body_pushed
                    || stack.iter().any(|&n| tree.nodes[n].tag == "body" || tree.nodes[n].tag == "head")
                {
                    return;
                }
                "body"
            } else {
                return;
            };
        let empty = tree.new_attrs(Vec::new());
        let node = tree.new_node(Tag::new(implied), empty);
        let parent = *stack.last().unwrap();
        tree.nodes[node].parent = parent;
        tree.nodes[parent].children.push(node);
        stack.push(node);
        self.pushed(implied);
    }

    /// A start tag `tag` closes the open elements it closes (`htmlAutoClose`), then implies
    /// a head or a body (`htmlCheckImplied`).
    fn close_and_imply(&mut self, tree: &mut Tree, stack: &mut Vec<usize>, tag: &str) {
        while stack.len() > 1 {
            match libxml2_closed_by(&tree.nodes[*stack.last().unwrap()].tag) {
                Some(closers) if closers.contains(&tag) => {
                    stack.pop();
                }
                _ => break,
            }
        }
        self.imply(tree, stack, tag);
    }

    /// `htmlStartCharData`: text that is not blank closes an open `<head>` (as a `<p>` would)
    /// and implies a `<body>`.
    fn char_data(&mut self, tree: &mut Tree, stack: &mut Vec<usize>) {
        self.started = true;
        if stack.len() > 1 && tree.nodes[*stack.last().unwrap()].tag == "head" {
            stack.pop();
        }
        self.imply(tree, stack, "p");
    }
}

pub const NAMELESS_ATTR_MARK: &str = "pulpie-rt-nameless";

/// How a serialization is read (see the module's comment).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reader {
    /// lexbor's serialization, as the specification reads it
    Spec,
    /// `map_html`, as libxml2 2.14 reads a page (the reference's `extract_main_html`)
    Libxml2,
}

impl Reader {
    /// A tag or attribute name in lower case: Python's `str.lower`, or libxml2's ASCII-only.
    fn lower(self, name: &str) -> String {
        if self == Reader::Libxml2 || name.is_ascii() {
            name.to_ascii_lowercase()
        } else {
            name.to_lowercase()
        }
    }

    /// `lower(name)` as the parse's shared name (no allocation for a name already in lower
    /// case, as nearly every name of a serialization is).
    pub fn name(self, name: &str, names: &mut Names) -> Tag {
        if name.bytes().any(|b| b.is_ascii_uppercase() || b >= 0x80) {
            names.get(&self.lower(name))
        } else {
            names.get(name)
        }
    }

    /// Text or an attribute value with its character references decoded, borrowed where `raw`
    /// holds no reference.
    fn unescape_cow(self, raw: &str, in_attribute: bool) -> std::borrow::Cow<'_, str> {
        match self {
            Reader::Spec => crate::charref::py_unescape(raw),
            Reader::Libxml2 => crate::charref::libxml2_unescape(raw, in_attribute),
        }
    }

    /// The lower-case ASCII `name` at byte `i`, in the case-insensitive matching of this reader:
    /// its end, or None. Python's `re.IGNORECASE` also matches "i" with U+0130 and U+0131, "k"
    /// with U+212A and "s" with U+017F.
    fn name_at(self, b: &[u8], i: usize, name: &[u8]) -> Option<usize> {
        match self {
            Reader::Spec => crate::raw::ignorecase_word_at(b, i, name),
            Reader::Libxml2 => {
                let end = i + name.len();
                (end <= b.len() && b[i..end].eq_ignore_ascii_case(name)).then_some(end)
            }
        }
    }
}

/// The first ASCII `needle` at or after `from` (glibc's vectorized `memchr`).
fn find_char(hay: &str, from: usize, needle: u8) -> Option<usize> {
    crate::scan::find_byte(needle, &hay.as_bytes()[from..]).map(|i| i + from)
}

/// The first `needle` (two bytes or more) at or after `from`.
fn find_from(hay: &str, from: usize, needle: &str) -> Option<usize> {
    crate::scan::find_bytes(&hay.as_bytes()[from..], needle.as_bytes()).map(|i| i + from)
}

/// `_script_end`: offset of the `</script` that ends a script's content at `pos`
/// (`_SCRIPT_MARK_RE`: `<!--|-->|</?script[\s/>]`, case-insensitive).
fn script_end(s: &str, pos: usize, reader: Reader) -> usize {
    let b = s.as_bytes();
    let n = b.len();
    let (mut escaped, mut double) = (false, false);
    let mut i = pos;
    // (only a `<` or, inside `<!--`, a `-` can start a mark: the bytes between are skipped
    // with memchr; `double` is only ever set while `escaped` is)
    let mut next_dash = pos;
    while i < n {
        let next_lt = crate::scan::find_byte(b'<', &b[i..]).map_or(n, |k| i + k);
        i = if escaped {
            if next_dash < i {
                next_dash = crate::scan::find_byte(b'-', &b[i..]).map_or(n, |k| i + k);
            }
            next_lt.min(next_dash)
        } else {
            next_lt
        };
        if i >= n {
            break;
        }
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
            if let Some(end) = reader.name_at(b, name_at, b"script") {
                let stop = if end < n {
                    if b[end] == b'/' || b[end] == b'>' {
                        1
                    } else {
                        ws_len(s, end)
                    }
                } else {
                    0
                };
                if stop > 0 {
                    if slash {
                        if double {
                            double = false;
                        } else {
                            return i;
                        }
                    } else if escaped {
                        double = true;
                    }
                    i = end + stop;
                    continue;
                }
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

/// Whether the specification's reader, reading the text of a raw-text element `tag`
/// (`is_raw_text`) followed by its end tag, ends the text where it ends (and not at a
/// `</tag` inside it, nor past its end tag, as a script's escaped `<!--<script>` would).
pub fn raw_text_reads_back(text: &str, tag: &str) -> bool {
    raw_text_reads_back_in(text, tag, Reader::Spec)
}

/// `raw_text_reads_back` as `reader` reads raw text (`Reader::Libxml2` matches the tag's
/// name in ASCII case only).
pub fn raw_text_reads_back_in(text: &str, tag: &str, reader: Reader) -> bool {
    let mut s = String::with_capacity(text.len() + tag.len() + 3);
    s.push_str(text);
    s.push_str("</");
    s.push_str(tag);
    s.push('>');
    let stop = if tag == "script" { script_end(&s, 0, reader) } else { raw_end(&s, 0, tag, reader) };
    stop == text.len()
}

/// The start of `</tag[\s/>]` (case-insensitive) at or after `from`, or the end.
fn raw_end(s: &str, from: usize, tag: &str, reader: Reader) -> usize {
    let b = s.as_bytes();
    let mut i = from;
    while let Some(at) = find_char(s, i, b'<') {
        if b.get(at + 1) != Some(&b'/') {
            i = at + 1;
            continue;
        }
        if let Some(after) = reader.name_at(b, at + 2, tag.as_bytes()) {
            if after < b.len() && (b[after] == b'/' || b[after] == b'>' || ws_len(s, after) > 0) {
                return at;
            }
        }
        i = at + 2;
    }
    b.len()
}

/// One start tag as `_TOKEN_RE` reads it (`token.rs`): lower-case name, attributes as
/// `_parse_attrs` gives them (first of each name; the nameless mark read as the empty name),
/// self-closing, end offset.
pub struct StartTag {
    pub name: Tag,
    /// its list in the tree's `attrs`
    pub attrs: usize,
    pub self_closing: bool,
    pub end: usize,
}

/// The start tag at `pos` (a `<`), or None where the regex falls through to the text `<`.
fn read_start_tag(
    s: &str,
    pos: usize,
    reader: Reader,
    names: &mut Names,
    lists: &mut AttrLists,
) -> Option<StartTag> {
    let span = crate::token::match_start_tag(s, pos)?;
    let start = lists.begin();
    for (raw_name, value) in crate::token::split_attrs(&s[span.name_end..span.attrs_end]) {
        let mut key = reader.name(raw_name, names);
        if key == NAMELESS_ATTR_MARK {
            key = names.get("");
        }
        lists.add_first(start, key, Text::from(&*reader.unescape_cow(value, true)));
    }
    Some(StartTag {
        name: reader.name(&s[pos + 1..span.name_end], names),
        attrs: lists.finish(start),
        self_closing: span.self_closing,
        end: span.end,
    })
}

/// What a `<` starts.
enum Token {
    /// the text "<"
    Text,
    /// a comment, a declaration, a processing instruction (dropped): read on from here
    Skip(usize),
    End {
        name: Tag,
        end: usize,
    },
    Start(StartTag),
    /// (libxml2) a start tag cut by the end of the input
    CutStart(Tag),
}

/// The token at `pos` (a `<`) as `_TOKEN_RE` reads it: a comment, a declaration or processing
/// instruction, an end tag, a start tag, or the text "<".
fn spec_token(s: &str, pos: usize, reader: Reader, names: &mut Names, lists: &mut AttrLists) -> Token {
    let b = s.as_bytes();
    let n = b.len();
    if b[pos..].starts_with(b"<!--") {
        if let Some(e) = find_from(s, pos + 4, "-->") {
            return Token::Skip(e + 3);
        }
    }
    if pos + 1 < n && (b[pos + 1] == b'!' || b[pos + 1] == b'?') {
        return match find_char(s, pos + 2, b'>') {
            Some(e) => Token::Skip(e + 1),
            None => Token::Text,
        };
    }
    if pos + 1 < n && b[pos + 1] == b'/' {
        // </([^\s/>]+)[^>]*>
        let mut i = pos + 2;
        while i < n && b[i] != b'/' && b[i] != b'>' && ws_len(s, i) == 0 {
            i += 1;
        }
        let close = if i > pos + 2 { find_char(s, i, b'>') } else { None };
        return match close {
            Some(close) => Token::End { name: reader.name(&s[pos + 2..i], names), end: close + 1 },
            None => Token::Text,
        };
    }
    match read_start_tag(s, pos, reader, names, lists) {
        Some(st) => Token::Start(st),
        None => Token::Text,
    }
}

/// The token at `pos` (a `<`) as libxml2's tokenizer reads it (`html5.rs`).
fn libxml2_token(s: &str, pos: usize, names: &mut Names, attrs: &mut Attrs, lists: &mut AttrLists) -> Token {
    match crate::html5::markup_at(s, pos, names, attrs) {
        crate::html5::Markup::Text => Token::Text,
        crate::html5::Markup::Skip(end) => Token::Skip(end),
        crate::html5::Markup::EndTag { name, end } => Token::End { name, end },
        crate::html5::Markup::StartTag { name, self_closing, end } => {
            Token::Start(StartTag { name, attrs: lists.push(attrs.drain(..)), self_closing, end })
        }
        crate::html5::Markup::CutStartTag { name } => Token::CutStart(name),
    }
}

/// `dom_spec.parse_serialized`: the libxml2-shaped tree of a serializer's output; returns the
/// `<html>` root.
pub fn parse_serialized(tree: &mut Tree, s: &str) -> usize {
    parse(tree, s, Reader::Spec)
}

/// `parse_serialized`, or with `Reader::Libxml2` the tree libxml2 2.14 builds of a page it
/// parses itself (the reference's parse of `map_html` in reconstruct), which differs in two
/// places besides names and references:
/// the content of `<textarea>` and `<title>` is text up to the end tag, character references
/// decoded (in lexbor's serialization such content is escaped text anyway; in `map_html` these
/// elements can hold elements); and a `<select>` keeps what it holds (the "in select" rule
/// reproduces the reference's Modest parse of the raw page, which only simplify sees).
pub fn parse(tree: &mut Tree, s: &str, reader: Reader) -> usize {
    let map_html = reader == Reader::Libxml2;
    let mut builder = Builder::new(tree, reader);
    let root = builder.root;
    // one shared name per distinct tag and attribute name of the page
    let mut names = Names::default();
    let mut libxml2 = Libxml2State::default();
    // a start tag's attributes as the tokenizer reads them, before they go to `tree.attrs`
    let mut read_attrs: Attrs = Vec::new();
    let b = s.as_bytes();
    let n = b.len();
    let mut pos = 0usize;
    while pos < n {
        if b[pos] == b'<' {
            let token = if map_html {
                libxml2_token(s, pos, &mut names, &mut read_attrs, &mut tree.attrs)
            } else {
                spec_token(s, pos, reader, &mut names, &mut tree.attrs)
            };
            let st = match token {
                Token::Text => {
                    if map_html {
                        libxml2.char_data(tree, &mut builder.stack);
                    }
                    builder.text(tree, "<");
                    pos += 1;
                    continue;
                }
                Token::Skip(end) => {
                    pos = end;
                    continue;
                }
                Token::Start(st) => st,
                Token::CutStart(tag) => {
                    // its element is never made, but the elements it closes and implies are
                    libxml2.started = true;
                    libxml2.close_and_imply(tree, &mut builder.stack, &tag);
                    break;
                }
                Token::End { name: tag, end } => {
                    pos = end;
                    if map_html && tag == "html" && libxml2.started {
                        break; // libxml2 reads nothing after </html> (once <html> is open)
                    }
                    builder.end(tree, &tag);
                    continue;
                }
            };
            pos = st.end;
            let node = if map_html {
                // libxml2's own rules: the <html> start tag counts only as the first element;
                // start tags close open elements (its full table), imply a <head> or <body>
                // where none is open yet; a misplaced <head> or nested <body> is dropped
                let tag = &st.name;
                if tag == "html" {
                    if !libxml2.started {
                        tree.nodes[root].attrs = st.attrs;
                    }
                    libxml2.started = true;
                    continue;
                }
                libxml2.started = true;
                libxml2.close_and_imply(tree, &mut builder.stack, tag);
                let stack = &builder.stack;
                if (tag == "head" && stack.len() != 1)
                    || (tag == "body" && stack.iter().any(|&n| tree.nodes[n].tag == "body"))
                {
                    continue;
                }
                let node = builder.append(tree, st);
                if builder.stack.last() == Some(&node) {
                    libxml2.pushed(&tree.nodes[node].tag);
                }
                node
            } else {
                match builder.start(tree, st) {
                    Some(node) => node,
                    None => continue,
                }
            };
            if builder.stack.last() != Some(&node) {
                continue; // void: no content
            }
            let tag = tree.nodes[node].tag.as_str();
            if is_raw_text(tag) {
                let start = pos;
                let stop = if tag == "script" {
                    script_end(s, start, reader)
                } else {
                    raw_end(s, start, tag, reader)
                };
                if stop > start {
                    tree.nodes[node].text = Some(Text::from(&s[start..stop]));
                }
                pos = stop;
            } else if map_html && is_rcdata(tag) {
                let start = pos;
                let stop = raw_end(s, start, tag, reader);
                if stop > start {
                    let raw = &s[start..stop];
                    tree.nodes[node].text = Some(Text::from(&*reader.unescape_cow(raw, false)));
                }
                pos = stop;
            }
        } else {
            let stop = find_char(s, pos, b'<').unwrap_or(n);
            let raw = &s[pos..stop];
            if map_html {
                // libxml2 decides on the text as decoded
                let decoded = reader.unescape_cow(raw, false);
                let mut text: &str = &decoded;
                pos = stop;
                if builder.stack.len() == 1 {
                    // (text before any element, or right in <html> after </body>: its leading
                    // blanks are dropped)
                    text = text.trim_start_matches(|c: char| c.is_ascii() && is_libxml2_blank(c as u8));
                }
                let blank = text.bytes().all(is_libxml2_blank);
                if blank && (stop == n || libxml2_drops_blank(tree, &builder.stack)) {
                    continue;
                }
                if !blank {
                    libxml2.char_data(tree, &mut builder.stack);
                }
                if !text.is_empty() {
                    builder.text(tree, text);
                }
                continue;
            }
            builder.text(tree, &reader.unescape_cow(raw, false));
            pos = stop;
        }
    }
    tree.has_document = libxml2.started;
    root
}

/// The tree construction of `parse` token by token, less what only `Reader::Libxml2` does
/// (its implied and auto-closed elements, `Libxml2State`): the open elements, and the
/// specification's rules for a serialization (`Reader::Spec`: the first `<html>`'s
/// attributes on the root, one `<head>` and one `<body>`, `closed_by`, what a `<select>`
/// drops). `parse` feeds it the tokens it reads; `dom.rs` feeds it lexbor's tree as the tokens
/// of its serialization, without the serialization.
pub struct Builder {
    pub root: usize,
    stack: Vec<usize>,
    libxml2: bool,
    seen_head: bool,
    seen_body: bool,
    seen_html: bool,
    open_selects: usize,
    dropped_in_select: std::collections::HashMap<Tag, usize>,
}

impl Builder {
    /// A builder of `tree` whose root, an `<html>` element, it makes.
    pub fn new(tree: &mut Tree, reader: Reader) -> Builder {
        let empty = tree.new_attrs(Vec::new());
        let root = tree.new_node(Tag::new("html"), empty);
        Builder {
            root,
            stack: vec![root],
            libxml2: reader == Reader::Libxml2,
            seen_head: false,
            seen_body: false,
            seen_html: false,
            open_selects: 0,
            dropped_in_select: Default::default(),
        }
    }

    /// The element of a start tag under the current one, open unless void or self-closing.
    fn append(&mut self, tree: &mut Tree, st: StartTag) -> usize {
        let node = tree.new_node(st.name, st.attrs);
        let parent = *self.stack.last().unwrap();
        tree.nodes[node].parent = parent;
        tree.nodes[parent].children.push(node);
        let tag = tree.nodes[node].tag.as_str();
        if !(is_libxml_void(tag) || st.self_closing) {
            self.stack.push(node);
            if tag == "select" {
                self.open_selects += 1;
            }
        }
        node
    }

    /// A start tag as the specification reads a serialization's: the element made (open,
    /// unless void: then it is not the last open element), or None where the tag is dropped.
    pub fn start(&mut self, tree: &mut Tree, st: StartTag) -> Option<usize> {
        let tag = &st.name;
        if tag == "html" {
            if !self.seen_html {
                tree.nodes[self.root].attrs = st.attrs;
                self.seen_html = true;
            }
            return None;
        }
        if tag == "head" {
            if self.seen_head || self.seen_body {
                return None;
            }
            self.seen_head = true;
        } else if tag == "body" {
            if self.seen_body {
                return None;
            }
            self.seen_body = true;
        }
        if self.open_selects > 0 && !is_select_content(tag) {
            if !is_html5_void(tag) {
                *self.dropped_in_select.entry(st.name).or_insert(0) += 1;
            }
            return None;
        }
        while self.stack.len() > 1 {
            match closed_by(&tree.nodes[*self.stack.last().unwrap()].tag) {
                Some(closers) if closers.contains(&tag.as_str()) => {
                    self.stack.pop();
                }
                _ => break,
            }
        }
        Some(self.append(tree, st))
    }

    /// An end tag: closes the nearest open element of its name, unless an element of a
    /// higher end priority is open above it (or it closes an element a `<select>` dropped).
    pub fn end(&mut self, tree: &Tree, tag: &Tag) {
        if tag == "html" || (tag == "body" && !self.libxml2) {
            return;
        }
        if let Some(count) = self.dropped_in_select.get_mut(tag) {
            if *count > 0 {
                *count -= 1;
                return;
            }
        }
        let priority = end_priority(tag);
        let mut k = self.stack.len() - 1;
        while k > 0 {
            let open_tag = &tree.nodes[self.stack[k]].tag;
            if open_tag.as_str() == tag.as_str() {
                if self.open_selects > 0 {
                    for &closed in &self.stack[k..] {
                        if tree.nodes[closed].tag == "select" {
                            self.open_selects -= 1;
                        }
                    }
                }
                self.stack.truncate(k);
                break;
            }
            if end_priority(open_tag) > priority {
                break;
            }
            k -= 1;
        }
    }

    /// Text: the current element's text, or its last child's tail, `+= text`.
    pub fn text(&self, tree: &mut Tree, text: &str) {
        add_text(tree, &self.stack, text);
    }

    /// The element text goes into now (the last open one).
    pub fn current(&self) -> usize {
        *self.stack.last().unwrap()
    }
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
        "checked"
            | "compact"
            | "declare"
            | "defer"
            | "disabled"
            | "ismap"
            | "multiple"
            | "nohref"
            | "noresize"
            | "noshade"
            | "nowrap"
            | "readonly"
            | "selected"
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
    let mut i = 0;
    // (16 bytes tested at once: most text has none of the three)
    while let Some(k) = crate::scan::find_any(&b[i..], [b'&', b'<', b'>']) {
        i += k;
        let rep = match b[i] {
            b'&' if attribute && b.get(i + 1) == Some(&b'{') => {
                i += 1;
                continue;
            }
            b'&' => "&amp;",
            b'<' => "&lt;",
            _ => "&gt;",
        };
        out.push_str(&text[last..i]);
        out.push_str(rep);
        i += 1;
        last = i;
    }
    out.push_str(&text[last..]);
}

/// The bytes libxml2 leaves as they are in a URI attribute, as a table (every byte of every
/// `href`/`src` is looked up).
const URI_SAFE: [bool; 256] = {
    let mut table = [false; 256];
    let marks = b"-_.!~*'()\"#$%&+,/:;<=>?@[\\]^`{|}";
    let mut i = 0;
    while i < marks.len() {
        table[marks[i] as usize] = true;
        i += 1;
    }
    let mut c = 0;
    while c < 256 {
        if (c as u8).is_ascii_alphanumeric() {
            table[c] = true;
        }
        c += 1;
    }
    table
};

#[inline]
fn is_uri_safe(b: u8) -> bool {
    URI_SAFE[b as usize]
}

/// libxml2's escaping of a URI attribute: leading blanks dropped, every byte it does not
/// leave as it is written `%XX`; borrowed where nothing is escaped (nearly every URI).
pub fn escape_uri(value: &str) -> std::borrow::Cow<'_, str> {
    let value = value.trim_start_matches([' ', '\t', '\n', '\r']);
    if value.bytes().all(is_uri_safe) {
        return std::borrow::Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len() * 2);
    for b in value.bytes() {
        if is_uri_safe(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    std::borrow::Cow::Owned(out)
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
    let plain = |value: &str| crate::scan::find_any(value.as_bytes(), [b'&', b'<', b'>', b'"']).is_none();
    if !is_uri && plain(value) {
        push_attr(out, name, '"', value);
        return;
    }
    let uri;
    let value = if is_uri {
        uri = escape_uri(value);
        if plain(&uri) {
            push_attr(out, name, '"', &uri);
            return;
        }
        uri.as_ref()
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

/// `s` with "\r\n" and each lone "\r" read as "\n", as libxml2 and an HTML5 parser read line
/// ends (a raw "\r" reaches map_html from a character reference in the page).
pub fn normalize_newlines(s: &str) -> std::borrow::Cow<'_, str> {
    // (memchr: `str::contains(char)` went a byte at a time, ~1 instruction a byte of a page)
    if crate::scan::find_byte(b'\r', s.as_bytes()).is_some() {
        std::borrow::Cow::Owned(s.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// The tree the specification reads `map_html` as, and its `<html>`.
pub type MapTree = (Tree, usize);

/// `parse(normalize_newlines(serialize_html(tree, root)), Reader::Spec)` — the tree the
/// specification reads `map_html` as — had without writing and reading it: `root`'s subtree
/// copied in document order (the numbering `parse` gives), its empty texts none (a reader
/// makes no empty text), its attribute lists moved out of `tree`. None where the text would
/// not read back as this tree (the caller writes and reads it then): a `\r` (read as `\n`),
/// an empty `<li>` (written without its end tag), a raw-text element holding elements or, but
/// for `script` and `style`, text that is escaped when written, a void element holding
/// anything, an element in a `<select>` the reader drops, anything after `<body>` (its end
/// tag is not read), a name the reader reads otherwise, an attribute value written otherwise
/// than read (a URI escaped, a boolean attribute's value dropped, a `<!--` left unescaped).
pub fn read_back(tree: &mut Tree, root: usize) -> Option<MapTree> {
    fn plain_text(text: &Option<Text>) -> Option<Option<Text>> {
        match text {
            Some(t) if t.contains('\r') => None,
            Some(t) if t.is_empty() => Some(None),
            other => Some(other.clone()),
        }
    }
    fn plain_element_name(name: &str) -> bool {
        let b = name.as_bytes();
        b.first().is_some_and(u8::is_ascii_lowercase)
            && b.iter().all(|&c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'-' | b'_' | b'.' | b':')
            })
    }
    // the value the reader reads back, or None where it reads the attribute otherwise
    fn read_back_attribute(tag: &str, name: &str, value: &mut Text) -> Option<()> {
        let plain_name = !name.is_empty()
            && name.bytes().all(|c| {
                c.is_ascii_graphic()
                    && !c.is_ascii_uppercase()
                    && !matches!(c, b'=' | b'/' | b'>' | b'"' | b'\'')
            });
        if !plain_name || value.contains('\r') || value.contains("<!--") {
            return None;
        }
        if is_boolean_attr(name) {
            // written bare, read as no value
            *value = Text::from("");
        } else if matches!(name, "href" | "action" | "src") || (name == "name" && tag == "a") {
            let changed = match escape_uri(value) {
                std::borrow::Cow::Borrowed(uri) if uri.len() == value.len() => None,
                uri => Some(Text::from(&*uri)),
            };
            if let Some(uri) = changed {
                *value = uri;
            }
        }
        Some(())
    }
    let mut out = Tree::default();
    let mut moved = vec![false; tree.attrs.len()];
    let mut stack: Vec<(usize, usize, bool)> = vec![(root, NONE, false)];
    while let Some((id, parent, in_select)) = stack.pop() {
        let node = &tree.nodes[id];
        let tag = node.tag.as_str();
        if !plain_element_name(tag) || (in_select && !is_select_content(tag)) {
            return None;
        }
        let raw = is_raw_text(tag);
        let escaped_raw = raw && tag != "script" && tag != "style";
        let void = is_libxml_void(tag);
        let mut text = plain_text(&node.text)?;
        let mut tail = plain_text(&node.tail)?;
        // an empty <li> is written without its end tag: read back as one whose text is its
        // tail where nothing else follows it before its parent's end or the next <li>, which
        // close it
        let empty_li = tag == "li" && node.text.is_none() && node.children.is_empty();
        let next_sibling = || {
            let siblings = &tree.nodes[node.parent].children;
            siblings.iter().position(|&c| c == id).and_then(|at| siblings.get(at + 1)).copied()
        };
        if (raw && !node.children.is_empty())
            || (escaped_raw && text.as_deref().is_some_and(|t| t.contains(['&', '<', '>'])))
            || (void && (text.is_some() || !node.children.is_empty()))
            || (empty_li
                && (node.parent == NONE
                    || next_sibling().is_some_and(|next| tree.nodes[next].tag.as_str() != "li")))
            || (tag == "body"
                && (tail.is_some()
                    || node.parent == NONE
                    || tree.nodes[node.parent].children.last() != Some(&id)))
            || std::mem::replace(&mut moved[node.attrs], true)
        {
            return None; // (an attribute list two nodes share: not in a page's tree)
        }
        if empty_li {
            text = tail.take();
        }
        let start = out.attrs.begin();
        for (name, value) in &tree.attrs[node.attrs] {
            let mut value = value.clone();
            read_back_attribute(tag, name.as_str(), &mut value)?;
            out.attrs.add(name.clone(), value);
        }
        let a = out.attrs.finish(start);
        let copy = out.new_node(node.tag.clone(), 0);
        let c = &mut out.nodes[copy];
        c.attrs = a;
        c.text = text;
        c.tail = if parent == NONE { None } else { tail };
        c.parent = parent;
        if parent != NONE {
            out.nodes[parent].children.push(copy);
        }
        let in_select = in_select || tag == "select";
        let node = &tree.nodes[id];
        out.nodes[copy].children.reserve_exact(node.children.len());
        stack.extend(node.children.iter().rev().map(|&child| (child, copy, in_select)));
    }
    Some((out, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each node under `root` in document order: its depth, tag, attributes, text and tail
    /// (`root`'s tail left out: it is not written).
    fn shape(tree: &Tree, root: usize) -> Vec<String> {
        tree.iter(root)
            .into_iter()
            .map(|n| {
                let node = &tree.nodes[n];
                let mut depth = 0;
                let mut up = node.parent;
                while up != NONE && n != root {
                    depth += 1;
                    up = tree.nodes[up].parent;
                }
                let attrs: Vec<(&str, &str)> =
                    tree.attrs[node.attrs].iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                let tail = if n == root { None } else { node.tail.as_deref() };
                format!("{depth} {} {attrs:?} {:?} {tail:?}", node.tag.as_str(), node.text.as_deref())
            })
            .collect()
    }

    /// `tree` written and read back as the specification reads `map_html`.
    fn written_and_read(tree: &Tree, root: usize) -> Vec<String> {
        let mut written = String::new();
        serialize_html(tree, root, &mut written);
        let mut read = Tree::default();
        let read_root = parse(&mut read, &normalize_newlines(&written), Reader::Spec);
        shape(&read, read_root)
    }

    #[test]
    fn escaping_skips_clean_runs_and_escapes_as_byte_by_byte() {
        // the rule byte by byte, against escape_into's 16-byte steps on random texts
        fn by_byte(text: &str, attribute: bool) -> String {
            let mut out = String::new();
            for (i, c) in text.char_indices() {
                match c {
                    '&' if !(attribute && text[i + 1..].starts_with('{')) => out.push_str("&amp;"),
                    '<' => out.push_str("&lt;"),
                    '>' => out.push_str("&gt;"),
                    c => out.push(c),
                }
            }
            out
        }
        let pieces =
            ["a", "plain text of more than sixteen bytes", "&", "&{", "<", ">", "é", "0123456789abcdef"];
        let mut state = 11u64;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..state % 12 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            for attribute in [false, true] {
                let mut out = String::from("x");
                escape_into(&mut out, &text, attribute);
                assert_eq!(out[1..], by_byte(&text, attribute), "{text:?}");
            }
        }
        assert_eq!(escape_uri(" \t/a?b=c"), std::borrow::Cow::Borrowed("/a?b=c"));
        assert_eq!(escape_uri("/a b\u{e9}"), "/a%20b%C3%A9");
    }

    #[test]
    fn read_back_copies_the_tree_as_its_serialization_reads_back() {
        for html in [
            "<p>a &amp; b <b>c</b> d</p><div id=x class='y z'>e</div>",
            // empty <li>s: written without their end tags, their tails become their text
            "<ul><li></li><li>b</li><li></li>\n <li></li></ul><ol><li></li> </ol>",
            // boolean attributes written bare, URIs escaped
            "<script defer=defer src='/a b/ü'>x</script><input checked=checked><a href=' /é?q=1'>t</a>",
            "<select><option selected=selected>o</option></select><p>after</p>",
        ] {
            let mut tree = Tree::default();
            let root = parse(&mut tree, html, Reader::Spec);
            let expected = written_and_read(&tree, root);
            let (copy, copy_root) = read_back(&mut tree, root).unwrap_or_else(|| panic!("gave up on {html}"));
            assert_eq!(shape(&copy, copy_root), expected, "{html}");
        }
    }

    #[test]
    fn read_back_gives_up_where_the_serialization_reads_back_otherwise() {
        for html in [
            "<p>a&#13;b</p>",                 // a \r: read back as \n
            "<p a\"b=1>x</p>",                // an attribute name the reader splits
            "<ul><li></li><div>d</div></ul>", // an empty <li> the <div> is read into
            "<p title='a <!-- b'>x</p>",      // a <!-- in a value
        ] {
            let mut tree = Tree::default();
            let root = parse(&mut tree, html, Reader::Spec);
            assert!(read_back(&mut tree, root).is_none(), "{html}");
        }
    }

    #[test]
    fn a_tree_in_the_storage_of_dropped_ones_reads_as_a_new_tree() {
        // the tree, its node and attribute counts and its children lists' lengths
        fn read(html: &str) -> (Vec<String>, usize, usize, Vec<usize>) {
            let mut tree = Tree::default();
            let root = parse(&mut tree, html, Reader::Spec);
            let children = tree.nodes.iter().map(|n| n.children.len()).collect();
            (shape(&tree, root), tree.nodes.len(), tree.attrs.len(), children)
        }
        let small = "<p class=a>x<b>y</b></p><ul><li>1</li></ul>";
        let large: String =
            (0..500).map(|i| format!("<div id=d{i}><p>t{i}<a href=#{i}>l</a></p></div>")).collect();
        // a thread with no trees dropped before: nothing kept
        let new = std::thread::spawn(move || read(small)).join().unwrap();
        for _ in 0..2 * Spare::TREES {
            let mut a = Tree::default();
            let mut b = Tree::default();
            let root = parse(&mut a, &large, Reader::Spec);
            a.deep_copy(root, false);
            parse(&mut b, &large, Reader::Spec);
        }
        assert!(SPARE.with(|spare| spare.borrow().len()) > 0);
        assert_eq!(read(small), new);
        assert_eq!(read(&large), std::thread::spawn(move || read(&large)).join().unwrap());
    }
}
