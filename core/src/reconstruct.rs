//! Main-content HTML from `map_html` and the main-labelled block ids: the compiled twin of
//! `tests/spec/reconstruct_spec.py` (`extract_main_html`), the specification. The Python code
//! walks lexbor's tree of `map_html` and reproduces where libxml2's tree (the reference's)
//! differs; here `tree::parse` builds libxml2's tree itself (`Reader::Libxml2`), so those
//! differences (lexbor-only void elements, `<template>` content, foreign attribute names) need
//! no handling. A `map_html` that is not a whole document is read as the reference's
//! `lxml.html.fromstring` reads it (`fragment_top`).

use crate::hash::{FastMap, FastSet};
use std::borrow::Cow;
use std::collections::HashSet;

use crate::tags::allows_pcdata;
use crate::tree::{
    escape_attr_value, escape_text_into, escape_uri, is_boolean_attr, is_libxml_void, push_attr, MapTree,
    Tree, NONE,
};

/// Raw-text / RCDATA content in libxml2: never dropped as blank.
fn is_raw_content(tag: &str) -> bool {
    crate::tree::is_raw_text(tag) || crate::tree::is_rcdata(tag)
}

const RUN_WRAPPER_TAG: &str = "cc-alg-uc-text";
const ITEM_ID_ATTR: &str = "_item_id";
const HTTP_PREFIXES: [&str; 7] = ["http://", "https://", "ftp://", "HTTP://", "HTTPS://", "FTP://", "//"];

/// Whether libxml2 drops this text as blank (`remove_blank_text`): only " \t\n\f\r", and
/// no `allowPCData` element before it (or as its parent when it comes first).
fn is_dropped_blank(text: &str, parent_tag: &str, prev: Option<&str>) -> bool {
    if !text.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\x0c' | b'\r')) {
        return false;
    }
    if parent_tag == "html" || parent_tag == "head" {
        return true;
    }
    match prev {
        None => !allows_pcdata(parent_tag),
        Some(prev) => !allows_pcdata(prev),
    }
}

/// The reference's URL pattern (`(?:href|src)="`, any case) in a text.
fn has_url_attr_start(text: &str) -> bool {
    if !holds_attr_start(text.as_bytes()) {
        return false;
    }
    let lower = text.to_ascii_lowercase();
    lower.contains("href=\"") || lower.contains("src=\"")
}

/// `text` holds `="`: quotes are rare in text, so memchr to each '"' and a look at the byte
/// before it (in place of a substring search over every text run written).
fn holds_attr_start(text: &[u8]) -> bool {
    let mut from = 0;
    while let Some(k) = crate::scan::find_byte(b'"', &text[from..]) {
        let at = from + k;
        if at > 0 && text[at - 1] == b'=' {
            return true;
        }
        from = at + 1;
    }
    false
}

/// `reconstruct._attr_html`, with the URL decoding applied when `w.decode`; a value holding
/// `="` sets `w.rescan` (the reference's pattern may match inside it).
fn write_attrs(w: &mut Writer, tree: &Tree, node: usize, tag: &str) {
    let out = &mut w.out;
    for (raw_name, value) in &tree.attrs[tree.nodes[node].attrs] {
        let name = raw_name.as_str();
        if is_boolean_attr(name)
            || value == crate::tree::VALUELESS
            || (value.is_empty() && name.starts_with('='))
        {
            out.push(' ');
            out.push_str(name);
            continue;
        }
        // borrowed until a rule changes it (most values are written as they are); which of
        // the bytes the rules look for it holds, read in one pass (again only if it changed)
        let mut marks = ValueMarks::of(value);
        let mut value: Cow<str> = if marks.any(ValueMarks::AMP | ValueMarks::ANGLE) {
            Cow::Owned(escape_attr_value(value))
        } else {
            Cow::Borrowed(value)
        };
        if matches!(name, "href" | "src" | "action") || (name == "name" && tag == "a") {
            let changed = match escape_uri(&value) {
                Cow::Borrowed(uri) if uri.len() == value.len() => None,
                uri => Some(uri.into_owned()),
            };
            if let Some(uri) = changed {
                value = Cow::Owned(uri);
            }
        }
        if let Cow::Owned(changed) = &value {
            marks = ValueMarks::of(changed);
        }
        if marks.any(ValueMarks::DOUBLE_QUOTE) {
            if marks.any(ValueMarks::SINGLE_QUOTE) {
                // from here on it holds '&' and no '"' (so no `="` either)
                value = Cow::Owned(value.replace('"', "&quot;"));
                marks = ValueMarks(marks.0 | ValueMarks::AMP);
            } else {
                if value.contains("=\"") {
                    w.rescan = true;
                }
                push_attr(out, name, '\'', &value);
                continue;
            }
        }
        // no '"' here (written in single quotes above, or replaced): never a `="` to rescan for
        if w.decode
            && marks.any(ValueMarks::AMP)
            && (name.ends_with("href") || name.ends_with("src"))
            && HTTP_PREFIXES.iter().any(|p| value.starts_with(p))
        {
            // the reference's decode_http_urls_only, in place
            value = Cow::Owned(crate::charref::py_unescape(&value).into_owned());
        }
        push_attr(out, name, '"', &value);
    }
}

/// The bytes of an attribute value `write_attrs`'s rules turn on, as bits.
#[derive(Clone, Copy)]
struct ValueMarks(u8);

impl ValueMarks {
    const AMP: u8 = 1;
    const ANGLE: u8 = 2;
    const DOUBLE_QUOTE: u8 = 4;
    const SINGLE_QUOTE: u8 = 8;

    fn of(value: &str) -> ValueMarks {
        ValueMarks(value.bytes().fold(0, |marks, b| {
            marks
                | match b {
                    b'&' => Self::AMP,
                    b'<' | b'>' => Self::ANGLE,
                    b'"' => Self::DOUBLE_QUOTE,
                    b'\'' => Self::SINGLE_QUOTE,
                    _ => 0,
                }
        }))
    }

    fn any(self, bits: u8) -> bool {
        self.0 & bits != 0
    }
}

fn is_drop_meta(tree: &Tree, node: usize) -> bool {
    matches!(tree.attrs[tree.nodes[node].attrs].first(),
             Some((name, value)) if name == "http-equiv" && value == "Content-Type")
}

struct Selection {
    // node indices: the crate's hasher (keys ours)
    main: FastSet<usize>,
    ancestors: FastSet<usize>,
    recalled: FastSet<usize>,
}

impl Selection {
    /// The elements kept under `root` (the reference's `id_to_element` and `elements_to_remain`
    /// over `root.iter()`).
    fn new(tree: &Tree, root: usize, main_ids: &HashSet<&str>) -> Selection {
        let mut first: FastMap<&str, usize> = Default::default();
        let order = tree.iter(root);
        for &node in &order {
            if let Some(iid) = tree.attr(node, ITEM_ID_ATTR) {
                first.entry(iid).or_insert(node);
            }
        }
        let mut main = FastSet::default();
        let mut ancestors = FastSet::default();
        for iid in main_ids {
            let Some(&node) = first.get(iid) else { continue };
            main.insert(node);
            let mut parent = tree.nodes[node].parent;
            while parent != NONE && ancestors.insert(parent) {
                parent = tree.nodes[parent].parent;
            }
        }
        let mut selection = Selection { main, ancestors, recalled: FastSet::default() };
        if !selection.main.is_empty() {
            selection.recalled = selection.recall_brs(tree, &order, root);
        }
        selection
    }

    /// `node` stays: a main element, an ancestor of one, or inside one.
    fn in_main(&self, tree: &Tree, node: usize) -> bool {
        if self.main.contains(&node) || self.ancestors.contains(&node) {
            return true;
        }
        let mut parent = tree.nodes[node].parent;
        while parent != NONE {
            if self.main.contains(&parent) {
                return true;
            }
            if self.ancestors.contains(&parent) {
                return false;
            }
            parent = tree.nodes[parent].parent;
        }
        false
    }

    fn next_element(tree: &Tree, node: usize) -> usize {
        let parent = tree.nodes[node].parent;
        if parent == NONE {
            return NONE;
        }
        let siblings = &tree.nodes[parent].children;
        match siblings.iter().position(|&c| c == node) {
            Some(i) if i + 1 < siblings.len() => siblings[i + 1],
            _ => NONE,
        }
    }

    /// `<br>`s whose neighbouring element in document order (under `root`) stays and is no
    /// `<br>`.
    fn recall_brs(&self, tree: &Tree, order: &[usize], root: usize) -> FastSet<usize> {
        let mut recalled = FastSet::default();
        for &br in order {
            if tree.nodes[br].tag != "br" || br == root {
                continue;
            }
            let parent = tree.nodes[br].parent;
            if parent == NONE || !self.ancestors.contains(&parent) {
                continue;
            }
            let siblings = &tree.nodes[parent].children;
            let index = siblings.iter().position(|&c| c == br).unwrap_or(0);
            let mut prev = if index > 0 { siblings[index - 1] } else { parent };
            if index > 0 {
                // the deepest last element of the previous sibling
                while let Some(&last) = tree.nodes[prev].children.last() {
                    prev = last;
                }
            }
            if tree.nodes[prev].tag != "br" && self.in_main(tree, prev) {
                recalled.insert(br);
                continue;
            }
            // the next element in document order outside the <br>: its next sibling, else
            // the next sibling of its nearest ancestor that has one (the Python loop's stop at
            // the grandparent compares fresh selectolax wrappers by identity, so it never
            // stops there; this is the behaviour the reference parity was measured with)
            let mut next = NONE;
            let mut node = br;
            while node != NONE && node != root {
                next = Self::next_element(tree, node);
                if next != NONE {
                    break;
                }
                node = tree.nodes[node].parent;
            }
            if next != NONE && tree.nodes[next].tag != "br" && self.in_main(tree, next) {
                recalled.insert(br);
            }
        }
        recalled
    }
}

struct Frame {
    node: usize,
    /// index of the next child to visit
    index: usize,
    /// inside a main-labelled element: everything stays
    full: bool,
    /// writes an end tag (the run wrapper has none)
    end: bool,
    /// anything written inside (an empty `<li>` gets no end tag)
    written: bool,
}

struct Writer {
    out: String,
    /// decode URLs in attribute values as they are written
    decode: bool,
    /// the reference's URL pattern shows in a text or a value: its last step, a pass over
    /// the whole output, would rewrite more than the values
    rescan: bool,
}

/// What lxml's `document_fromstring` gives the reference where libxml2 made no document.
const EMPTY_DOCUMENT: &str = "<HtmlElement></HtmlElement>";

/// The element the reference reconstructs from (`lxml.html.fromstring(map_html)`) and the tag
/// it is written with.
struct Top<'a> {
    node: usize,
    tag: &'a str,
}

/// `lxml.html.fromstring`'s test `^\s*<(?:html|!doctype)` (any case). The reference hands
/// lxml bytes when `map_html` holds "<?xml", "<meta charset" or "encoding=": `\s` is ASCII
/// white space then.
fn looks_like_full_html(map_html: &str) -> bool {
    let ascii_trimmed = map_html.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    // Unicode white space takes more only where more white space follows the ASCII one: only
    // then does the choice matter (and the whole page get searched for those three strings)
    let trimmed = if ascii_trimmed.starts_with(crate::tree::py_isspace)
        && !(map_html.contains("<?xml")
            || map_html.contains("<meta charset")
            || map_html.contains("encoding="))
    {
        ascii_trimmed.trim_start_matches(crate::tree::py_isspace)
    } else {
        ascii_trimmed
    };
    let head = trimmed.as_bytes();
    let starts =
        |prefix: &[u8]| head.len() >= prefix.len() && head[..prefix.len()].eq_ignore_ascii_case(prefix);
    starts(b"<html") || starts(b"<!doctype")
}

/// lxml.html's `defs.block_tags` (lxml 6.1): a fragment of several elements is wrapped in
/// `<div>` when it holds one of them, else in `<span>`.
fn is_lxml_block_tag(tag: &str) -> bool {
    matches!(
        tag,
        "address"
            | "blockquote"
            | "caption"
            | "center"
            | "col"
            | "colgroup"
            | "dd"
            | "del"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "hr"
            | "ins"
            | "isindex"
            | "legend"
            | "li"
            | "menu"
            | "noscript"
            | "ol"
            | "optgroup"
            | "option"
            | "p"
            | "pre"
            | "table"
            | "tbody"
            | "td"
            | "tfoot"
            | "th"
            | "thead"
            | "tr"
            | "ul"
    )
}

/// What `lxml.html.fromstring` returns for a string that is not a whole document: the whole
/// document where libxml2 made a `<head>` or no `<body>`; the body's one element when it holds
/// only that (white space around it aside); otherwise the body itself, as `<div>` or `<span>`.
fn fragment_top(tree: &Tree, root: usize) -> Top<'_> {
    let children = &tree.nodes[root].children;
    let whole = Top { node: root, tag: "html" };
    if children.iter().any(|&c| tree.nodes[c].tag == "head") {
        return whole;
    }
    let Some(&body) = children.iter().find(|&&c| tree.nodes[c].tag == "body") else {
        return whole;
    };
    let b = &tree.nodes[body];
    let blank = |t: &Option<crate::tree::Text>| t.as_deref().is_none_or(|t| !crate::tree::has_non_space(t));
    if b.children.len() == 1 && blank(&b.text) && blank(&tree.nodes[b.children[0]].tail) {
        let only = b.children[0];
        return Top { node: only, tag: tree.nodes[only].tag.as_str() };
    }
    let block = tree.iter(body).into_iter().any(|n| is_lxml_block_tag(&tree.nodes[n].tag));
    Top { node: body, tag: if block { "div" } else { "span" } }
}

/// `reconstruct.extract_main_html`.
pub fn extract_main_html(map_html: &str, main_ids: &HashSet<&str>) -> String {
    let full = looks_like_full_html(map_html);
    let map_html = crate::tree::normalize_newlines(map_html);
    let map_html = map_html.as_ref();
    let mut tree = Tree::default();
    let root = crate::tree::parse(&mut tree, map_html, crate::tree::Reader::Libxml2);
    main_html(&tree, root, full, map_html.len(), main_ids)
}

/// `extract_main_html(map_html, main_ids)` off `map_tree`, the tree libxml2 reads `map_html`
/// as (`libxml2_tree`): no parse.
pub fn extract_main_html_of_tree(map_html: &str, map_tree: &MapTree, main_ids: &HashSet<&str>) -> String {
    let (tree, root) = map_tree;
    main_html(tree, *root, looks_like_full_html(map_html), map_html.len(), main_ids)
}

/// The reconstruction off libxml2's tree of `map_html` (`root` its `<html>`; `full`:
/// `looks_like_full_html(map_html)`; `size`: about `map_html`'s length).
fn main_html(tree: &Tree, root: usize, full: bool, size: usize, main_ids: &HashSet<&str>) -> String {
    if !tree.has_document {
        return EMPTY_DOCUMENT.to_string();
    }
    let top = if full { Top { node: root, tag: "html" } } else { fragment_top(tree, root) };
    let sel = Selection::new(tree, top.node, main_ids);
    let mut w = Writer { out: String::with_capacity(size / 4), decode: true, rescan: false };
    write(&mut w, tree, &top, &sel);
    if !w.rescan {
        return w.out;
    }
    // written again undecoded, then decoded the way the reference does, over everything
    let mut w = Writer { out: String::with_capacity(w.out.len()), decode: false, rescan: false };
    write(&mut w, tree, &top, &sel);
    decode_http_urls(&w.out)
}

/// The tree libxml2 reads `map_html` as (`tree::parse` with `Reader::Libxml2`: the nodes
/// `extract_main_html` reconstructs from), made of `map_tree`, the tree simplify wrote
/// `map_html` from as the specification reads it back (`tree::read_back`), without reading
/// `map_html`. Of a serialization both readers build the same elements, texts and attributes
/// but where libxml2 drops blank text (in `<html>` and `<head>`, and after or first in an
/// element that allows no character data), reads a boolean attribute (written bare) as
/// valueless and a NUL in a value as U+FFFD: those are done here, in place. None (the caller
/// parses `map_html`) where libxml2 builds other elements: an element whose start tag closes
/// its parent (`tree::libxml2_closed_by`), anything in `<html>` but a `<head>` then a `<body>`,
/// text that is not blank in `<html>` or `<head>` (both imply or close elements), an
/// `<html>`, a `<head>` or a `<body>` elsewhere, a `<title>` or `<textarea>` holding elements
/// (their content is text to libxml2), a name longer than libxml2 keeps, an attribute named
/// twice, a script or style whose text libxml2 ends elsewhere.
pub fn libxml2_tree(map_tree: MapTree) -> Option<MapTree> {
    let (mut tree, root) = map_tree;
    if !read_as_libxml2(&mut tree, root) {
        return None;
    }
    tree.has_document = true; // (its `<html>` start tag)
    Some((tree, root))
}

/// `libxml2_tree`'s changes to `tree` (`root` its `<html>`, every node under it): whether
/// libxml2 reads the serialization as the changed tree.
fn read_as_libxml2(tree: &mut Tree, root: usize) -> bool {
    use crate::tree::{is_raw_text, is_rcdata, libxml2_closed_by};
    let blank = |text: &str| crate::scan::all_of(text.as_bytes(), crate::tree::LIBXML2_BLANKS);
    if tree.nodes[root].tag != "html" || tree.nodes[root].parent != NONE {
        return false;
    }
    // a <head> then a <body>, each at most once
    let mut seen = 0u8;
    for &child in &tree.nodes[root].children {
        seen = match (tree.nodes[child].tag.as_str(), seen) {
            ("head", 0) => 1,
            ("body", 0 | 1) => 2,
            _ => return false,
        };
    }
    // each node with the start tags that close its parent (none for <html>'s children: the
    // root is never closed)
    let mut stack: Vec<(usize, &[&str])> = vec![(root, &[])];
    while let Some((id, closes_parent)) = stack.pop() {
        let node = &tree.nodes[id];
        let tag = node.tag.as_str();
        if tag.len() > crate::html5::NAME_BUFFER || closes_parent.contains(&tag) {
            return false;
        }
        let text_only = is_raw_text(tag) || is_rcdata(tag);
        if text_only && !node.children.is_empty() {
            return false;
        }
        let in_html_or_head = id == root || tag == "head";
        // raw text and RCDATA (written escaped) are read to their end tag as they are
        let text_reads_otherwise = matches!(tag, "script" | "style")
            && node.text.as_deref().is_some_and(|text| {
                !text.is_ascii()
                    && !crate::tree::raw_text_reads_back_in(text, tag, crate::tree::Reader::Libxml2)
            });
        if text_reads_otherwise {
            return false;
        }
        let mut drop_tail = false;
        if id != root {
            let parent = node.parent;
            let parent_tag = tree.nodes[parent].tag.as_str();
            if tag == "html" || (matches!(tag, "head" | "body") && parent != root) {
                return false;
            }
            // the tail: read with `parent` the open element and this node its last child
            if let Some(tail) = node.tail.as_deref() {
                let parent_in_html_or_head = parent == root || parent_tag == "head";
                if !blank(tail) {
                    if parent_in_html_or_head {
                        return false;
                    }
                } else {
                    drop_tail = parent_in_html_or_head || !allows_pcdata(tag);
                }
            }
        }
        // the text: read with this node the open element, before any child
        let mut drop_text = false;
        if let Some(text) = node.text.as_deref().filter(|_| !text_only) {
            if !blank(text) {
                if in_html_or_head {
                    return false;
                }
            } else {
                drop_text = in_html_or_head || !allows_pcdata(tag);
            }
        }
        let closes_this = libxml2_closed_by(tag).unwrap_or(&[]);
        let node = &mut tree.nodes[id];
        if drop_tail {
            node.tail = None;
        }
        if drop_text {
            node.text = None;
        }
        let attrs = &mut tree.attrs[node.attrs];
        for k in 0..attrs.len() {
            let (name, value) = &attrs[k];
            if name.len() > crate::html5::NAME_BUFFER || attrs[..k].iter().any(|(other, _)| other == name) {
                return false;
            }
            if is_boolean_attr(name) {
                if value != crate::tree::VALUELESS {
                    attrs[k].1 = crate::tree::Text::from(crate::tree::VALUELESS);
                }
            } else if crate::scan::find_byte(0, value.as_bytes()).is_some() {
                attrs[k].1 = crate::tree::Text::from(value.replace('\0', "\u{fffd}"));
            }
        }
        let children = &node.children;
        stack.extend(children.iter().map(|&child| (child, if id == root { &[][..] } else { closes_this })));
    }
    true
}

/// Where the subtrees of `a`'s node `ra` and `b`'s node `rb` first differ (document order:
/// a tag, an attribute list, a text, a tail or a children count), None where they hold the
/// same nodes; `ra`'s and `rb`'s own tails are not compared (a check of `libxml2_tree`).
#[cfg(any(test, feature = "python-ffi"))]
pub fn first_difference(a: &Tree, ra: usize, b: &Tree, rb: usize) -> Option<String> {
    let mut stack = vec![(ra, rb)];
    while let Some((x, y)) = stack.pop() {
        let (m, n) = (&a.nodes[x], &b.nodes[y]);
        let attrs = |tree: &Tree, node: usize| -> Vec<(String, String)> {
            let list = &tree.attrs[tree.nodes[node].attrs];
            list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let tails_differ = x != ra && m.tail.as_deref() != n.tail.as_deref();
        if m.tag != n.tag
            || attrs(a, x) != attrs(b, y)
            || m.text.as_deref() != n.text.as_deref()
            || tails_differ
            || m.children.len() != n.children.len()
        {
            return Some(format!(
                "<{}> {:?} {:?} {:?} {} children, read <{}> {:?} {:?} {:?} {} children",
                m.tag.as_str(),
                attrs(a, x),
                m.text.as_deref(),
                m.tail.as_deref(),
                m.children.len(),
                n.tag.as_str(),
                attrs(b, y),
                n.text.as_deref(),
                n.tail.as_deref(),
                n.children.len()
            ));
        }
        stack.extend(m.children.iter().copied().zip(n.children.iter().copied()).rev());
    }
    None
}

/// `reconstruct._decode_http_urls`: entities decoded in every `href="…"`/`src="…"` (any
/// case, also inside longer names and in text) whose value holds "&" and is an http(s)/ftp/
/// `//` URL.
fn decode_http_urls(html: &str) -> String {
    if !html.contains('&') {
        return html.to_string();
    }
    let b = html.as_bytes();
    let mut out = String::with_capacity(html.len());
    let (mut last, mut i) = (0usize, 0usize);
    while i < b.len() {
        let name_len = if b[i..].len() >= 6 && b[i..i + 6].eq_ignore_ascii_case(b"href=\"") {
            6
        } else if b[i..].len() >= 5 && b[i..i + 5].eq_ignore_ascii_case(b"src=\"") {
            5
        } else {
            i += 1;
            continue;
        };
        let start = i + name_len;
        let Some(k) = html[start..].find('"') else { break };
        let url = &html[start..start + k];
        if !url.contains('&') {
            i += 1; // (?:href|src)=" then [^"&]*&[^"]*" fails here: the search moves on
            continue;
        }
        if HTTP_PREFIXES.iter().any(|p| url.starts_with(p)) {
            out.push_str(&html[last..start]);
            out.push_str(&crate::charref::py_unescape(url));
            last = start + k;
        }
        i = start + k + 1;
    }
    out.push_str(&html[last..]);
    out
}

/// The kept part of `top`'s subtree as libxml2 writes it, run wrappers unwrapped — except
/// where `top` is not the document and nothing in it is kept: the reference then detaches it,
/// keeps it whole and writes it with its tail (its wrappers stay: its search for them runs over
/// the document it left).
fn write(w: &mut Writer, tree: &Tree, top: &Top, sel: &Selection) {
    let root = top.node;
    let is_document = tree.nodes[root].parent == NONE;
    let keep_all = !is_document && !sel.in_main(tree, root);
    w.out.push('<');
    w.out.push_str(top.tag);
    write_attrs(w, tree, root, top.tag);
    w.out.push('>');
    let own_tag = tree.nodes[root].tag.as_str();
    if !is_document && is_libxml_void(own_tag) {
        write_top_tail(w, tree, root);
        return;
    }
    if !is_document && !keep_all && own_tag == RUN_WRAPPER_TAG {
        // the reference's drop_tag moves the wrapper's children out of it, not its text
        if let Some(text) = tree.nodes[root].text.as_deref().filter(|t| !t.is_empty()) {
            write_run(w, text, own_tag, None);
        }
        w.out.push_str("</");
        w.out.push_str(top.tag);
        w.out.push('>');
        write_top_tail(w, tree, root);
        return;
    }
    let mut stack = vec![Frame {
        node: root,
        index: 0,
        full: keep_all || sel.main.contains(&root),
        end: true,
        written: false,
    }];
    write_text(w, tree, &mut stack);
    while let Some(frame) = stack.last_mut() {
        let node = frame.node;
        let n = &tree.nodes[node];
        if frame.index >= n.children.len() {
            let frame = stack.pop().unwrap();
            if frame.end && (frame.written || n.tag != "li") {
                w.out.push_str("</");
                w.out.push_str(if stack.is_empty() { top.tag } else { &n.tag });
                w.out.push('>');
            }
            if !stack.is_empty() {
                write_tail(w, tree, node, &mut stack);
            }
            continue;
        }
        let child = n.children[frame.index];
        frame.index += 1;
        let tag = tree.nodes[child].tag.as_str();
        let full = if frame.full || sel.main.contains(&child) {
            true
        } else if sel.ancestors.contains(&child) || (tag == "br" && sel.recalled.contains(&child)) {
            false
        } else {
            continue; // dropped, and its tail with it
        };
        frame.written = true;
        if tag == "meta" && is_drop_meta(tree, child) {
            write_tail(w, tree, child, &mut stack);
            continue;
        }
        let wrapper = tag == RUN_WRAPPER_TAG && !keep_all;
        if !wrapper {
            w.out.push('<');
            w.out.push_str(tag);
            write_attrs(w, tree, child, tag);
            w.out.push('>');
            if is_libxml_void(tag) {
                write_tail(w, tree, child, &mut stack);
                continue;
            }
        }
        stack.push(Frame { node: child, index: 0, full, end: !wrapper, written: false });
        write_text(w, tree, &mut stack);
    }
    if !is_document {
        write_top_tail(w, tree, root);
    }
}

/// The tail of a fragment's top element (lxml writes an element with its tail).
fn write_top_tail(w: &mut Writer, tree: &Tree, top: usize) {
    let n = &tree.nodes[top];
    let Some(tail) = n.tail.as_deref().filter(|t| !t.is_empty()) else { return };
    let parent_tag = tree.nodes[n.parent].tag.as_str();
    write_run(w, tail, parent_tag, Some(n.tag.as_str()));
}

/// The text of the element of the top frame (before its first child).
fn write_text(w: &mut Writer, tree: &Tree, stack: &mut [Frame]) {
    let frame = stack.last_mut().expect("a frame");
    let n = &tree.nodes[frame.node];
    let Some(text) = n.text.as_deref().filter(|t| !t.is_empty()) else { return };
    if write_run(w, text, &n.tag, None) {
        frame.written = true;
    }
}

/// The tail of `child`, a kept child of the element of the top frame.
fn write_tail(w: &mut Writer, tree: &Tree, child: usize, stack: &mut [Frame]) {
    let n = &tree.nodes[child];
    let Some(tail) = n.tail.as_deref().filter(|t| !t.is_empty()) else { return };
    let frame = stack.last_mut().expect("a parent frame");
    let parent_tag = tree.nodes[frame.node].tag.as_str();
    if write_run(w, tail, parent_tag, Some(n.tag.as_str())) {
        frame.written = true;
    }
}

/// One text run of an element `parent_tag` (after element `prev`); whether it was written.
fn write_run(w: &mut Writer, text: &str, parent_tag: &str, prev: Option<&str>) -> bool {
    if is_raw_content(parent_tag) {
        if parent_tag == "script" || parent_tag == "style" {
            w.out.push_str(text);
        } else {
            escape_text_into(&mut w.out, text);
        }
    } else if is_dropped_blank(text, parent_tag, prev) {
        return false;
    } else {
        escape_text_into(&mut w.out, text);
    }
    if has_url_attr_start(text) {
        w.rescan = true;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{parse, read_back, serialize_html, Reader};

    /// `html` read as the specification reads a serialization and copied as simplify copies
    /// its tree (`read_back`); the copy's serialization (map_html) and libxml2's parse of it.
    fn copied_and_parsed(html: &str) -> (MapTree, String, Tree, usize) {
        let mut tree = Tree::default();
        let root = parse(&mut tree, html, Reader::Spec);
        let mut map_html = String::new();
        serialize_html(&tree, root, &mut map_html);
        let copy = read_back(&mut tree, root).unwrap_or_else(|| panic!("read_back gave up on {html}"));
        let mut parsed = Tree::default();
        let parsed_root = parse(&mut parsed, &map_html, Reader::Libxml2);
        (copy, map_html, parsed, parsed_root)
    }

    #[test]
    fn libxml2_tree_holds_the_nodes_libxml2_reads_map_html_as() {
        for html in [
            // blank text in <html>, in <head> and where no character data is allowed: dropped
            "<html> <head>\n <title> a &amp; b </title>\n <meta charset=utf-8>\n</head>\n<body>\n<ul> <li>a</li> \
             <li>b</li> </ul><p> <b>c</b> </p><table> <tr> <td> d </td> </tr> </table></body></html>",
            // boolean attributes (written bare) valueless, a NUL in a value U+FFFD
            "<html><head><script defer src='/a b/x.js'></script></head><body><input checked name=q>\
             <select><option selected>o</option></select><div title=\"a\0b\">e</div></body></html>",
            // empty <li>s (written without their end tags), void elements and their tails
            "<html><body><ul><li></li> <li>x</li><li></li></ul><p>a<br> b<img src=i.png> c</p></body></html>",
            "<html><body><p class=\"a 'b'\" title='say \"hi\"'>&lt;tag&gt; &amp;{x}</p></body></html>",
        ] {
            let (copy, map_html, parsed, parsed_root) = copied_and_parsed(html);
            let tree = libxml2_tree(copy).unwrap_or_else(|| panic!("gave up on {html}"));
            assert_eq!(first_difference(&tree.0, tree.1, &parsed, parsed_root), None, "{html}");
            let ids: HashSet<&str> = HashSet::new();
            assert_eq!(extract_main_html_of_tree(&map_html, &tree, &ids), extract_main_html(&map_html, &ids));
        }
    }

    #[test]
    fn libxml2_tree_gives_up_where_libxml2_reads_map_html_otherwise() {
        for html in [
            "<html><body><p>a<hr>b</p></body></html>", // <hr> closes the <p>
            "<html><head>t<title>x</title></head><body></body></html>", // text closes <head>
            "<html><div>x</div><body></body></html>",  // a <body> implied
            "<html><body><svg><title><b>x</b></title></svg></body></html>", // <title> is text
            "<html><head><div>x</div></head><body></body></html>", // <div> closes <head>
        ] {
            let (copy, _, parsed, parsed_root) = copied_and_parsed(html);
            assert!(first_difference(&copy.0, copy.1, &parsed, parsed_root).is_some(), "{html}");
            let (copy, ..) = copied_and_parsed(html);
            assert!(libxml2_tree(copy).is_none(), "{html}");
        }
        // a name longer than libxml2 keeps
        let long =
            format!("<html><body><p {}=1>x</p></body></html>", "a".repeat(crate::html5::NAME_BUFFER + 1));
        let (copy, ..) = copied_and_parsed(&long);
        assert!(libxml2_tree(copy).is_none());
    }
}
