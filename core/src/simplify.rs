//! The segmentation: the compiled twin of `runtime/simplify.py` (`simplify` after the
//! parse). Same steps, same order, same quirks; comments there say why each exists.

use crate::hash::{FastMap, FastSet};
use crate::tree::{append, has_non_space, py_strip, Attrs, Res, Tag, Text, Tree, NONE};

pub fn is_inline_tag(tag: &str) -> bool {
    matches!(
        tag,
        "map"
            | "optgroup"
            | "span"
            | "input"
            | "time"
            | "u"
            | "strong"
            | "small"
            | "sub"
            | "samp"
            | "blink"
            | "b"
            | "code"
            | "nobr"
            | "strike"
            | "bdo"
            | "basefont"
            | "abbr"
            | "var"
            | "i"
            | "cccode-inline"
            | "s"
            | "pic"
            | "label"
            | "mark"
            | "object"
            | "ccmath-inline"
            | "svg"
            | "button"
            | "a"
            | "font"
            | "dfn"
            | "sup"
            | "kbd"
            | "q"
            | "script"
            | "acronym"
            | "option"
            | "img"
            | "big"
            | "cite"
            | "em"
            | "marked-tail"
            | "marked-text"
    )
}

fn is_table_tag(tag: &str) -> bool {
    matches!(tag, "caption" | "colgroup" | "col" | "thead" | "tbody" | "tfoot" | "tr" | "td" | "th" | "br")
}

fn is_no_block(tag: &str) -> bool {
    tag == "math"
}

fn is_no_length(tag: &str) -> bool {
    tag == "math" || tag == "table"
}

fn invisible_style(key: &str) -> Option<&'static str> {
    Some(match key {
        "display" => "none",
        "font-size" => "0px",
        "color" => "transparent",
        "visibility" => "hidden",
        "opacity" => "0",
        _ => return None,
    })
}

const TAIL_BLOCK_TAG: &str = "cc-alg-uc-text";
const ITEM_ID_ATTR: &str = "_item_id";
const ELLIPSIS: &str = "...";
const NO_BLOCK_FLAG: u8 = 1;

pub fn is_raw_text_in_blocks(tag: &str) -> bool {
    matches!(tag, "xmp" | "noembed" | "noframes" | "plaintext")
}

/// `_NOT_XML_CHAR_RE` (surrogates cannot occur in Rust strings).
fn is_not_xml_char(c: char) -> bool {
    matches!(c, '\x00'..='\x08' | '\x0b' | '\x0c' | '\x0e'..='\x1f' | '\u{fffe}' | '\u{ffff}')
}

/// Whether `s` holds a character of `is_not_xml_char`, read off its UTF-8 bytes (it also
/// runs over whole serializations): the C0 controls but tab, LF and CR, and U+FFFE/U+FFFF.
pub fn has_not_xml(s: &str) -> bool {
    crate::raw::has_not_xml_bytes(s.as_bytes(), false)
}

fn replace_not_xml(s: &str) -> String {
    s.chars().map(|c| if is_not_xml_char(c) { '\u{fffd}' } else { c }).collect()
}

fn bad_name(tag: &str) -> bool {
    tag.bytes().any(|b| b"&<>/\"'\t\n\x0b\x0c\r ".contains(&b))
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// Where `node` is among `parent`'s children, looking first at and after `hint` (blocks come
/// in document order, so the next one's children usually follow the last one found: a page of
/// 60,000 inline runs in one element stays linear instead of quadratic). A node is at most
/// once in a child list, so the answer does not depend on the hint.
fn index_of_near(tree: &Tree, parent: usize, node: usize, hint: usize) -> Option<usize> {
    let children = &tree.nodes[parent].children;
    let hint = hint.min(children.len());
    children[hint..]
        .iter()
        .position(|&c| c == node)
        .map(|i| i + hint)
        .or_else(|| children[..hint].iter().position(|&c| c == node))
}

// ── cleaning the page ──────────────────────────────────────────────────────────────────

fn is_hidden(tree: &Tree, node: usize) -> bool {
    is_hidden_under(tree, node, tree.nodes[node].parent)
}

/// `is_hidden` of `node` as a child of `parent` (`hidden_blocks` reads `map_html`, where a run
/// wrapper may stand between an element and the parent the segmentation saw).
fn is_hidden_under(tree: &Tree, node: usize, parent: usize) -> bool {
    let n = &tree.nodes[node];
    let attrs = &tree.attrs[n.attrs];
    if !attrs.is_empty() {
        let get = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
        if (get("class") == Some("nav") || get("id") == Some("nav"))
            && parent != NONE
            && tree.nodes[parent].tag == "body"
        {
            return true;
        }
        if let Some(style) = get("style") {
            for declaration in style.split(';') {
                let Some((key, value)) = declaration.split_once(':') else { continue };
                if invisible_style(py_strip(key)) == Some(py_strip(value)) {
                    return true;
                }
            }
        }
    }
    if parent != NONE && tree.nodes[parent].tag == "details" {
        if n.tag == "summary" {
            return false;
        }
        return tree.attr(parent, "open").is_none();
    }
    false
}

fn remove_hidden(tree: &mut Tree, root: usize) {
    let mut order = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        order.push(node);
        stack.extend(tree.nodes[node].children.iter().copied());
    }
    for &node in order.iter().rev() {
        let parent = tree.nodes[node].parent;
        if parent == NONE || !is_hidden(tree, node) {
            continue;
        }
        let tail = tree.nodes[node].tail.take();
        let tail = tail.as_deref().unwrap_or("");
        let index = index_of_near(tree, parent, node, 0).expect("node is a child of its parent");
        if index > 0 {
            let prev = tree.nodes[parent].children[index - 1];
            let p = &mut tree.nodes[prev];
            if p.tail.is_some() {
                append(&mut p.tail, tail);
            } else {
                append(&mut p.text, tail); // sic: into the previous sibling's leading text
            }
        } else {
            append(&mut tree.nodes[parent].text, tail);
        }
        tree.nodes[parent].children.remove(index);
        tree.nodes[node].parent = NONE;
    }
}

/// Whether `node` holds nothing but text and inline elements (no element of its own block).
fn holds_only_inline(tree: &Tree, node: usize) -> bool {
    tree.iter(node).into_iter().skip(1).all(|d| is_inline_tag(&tree.nodes[d].tag))
}

/// Remove each `noscript` element under `root` that holds nothing but text and inline
/// elements, with all it holds (`Flags::drop_noscript`): a tracking pixel's `<img>`, markup
/// escaped as text, "please enable JavaScript". One that holds blocks stays (its inner
/// `noscript`s are judged alike): Discourse and Flarum forums serve the whole thread there,
/// the main content of the page as scraped. Its tail text stays where it was: after the
/// previous sibling, or first in the parent (not `remove_hidden`'s placement, which puts a
/// tail into the previous sibling's leading text when that sibling has no tail: a reference
/// quirk kept for parity only).
fn remove_noscript(tree: &mut Tree, root: usize) {
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node != root && tree.nodes[node].tag == "noscript" && holds_only_inline(tree, node) {
            found.push(node); // what it holds goes with it: not searched
            continue;
        }
        stack.extend(tree.nodes[node].children.iter().copied());
    }
    for node in found {
        let parent = tree.nodes[node].parent;
        let index = index_of_near(tree, parent, node, 0).expect("node is a child of its parent");
        if let Some(tail) = tree.nodes[node].tail.take().filter(|t| !t.is_empty()) {
            if index > 0 {
                let prev = tree.nodes[parent].children[index - 1];
                append(&mut tree.nodes[prev].tail, &tail);
            } else {
                append(&mut tree.nodes[parent].text, &tail);
            }
        }
        tree.nodes[parent].children.remove(index);
        tree.nodes[node].parent = NONE;
    }
}

// ── block structure ────────────────────────────────────────────────────────────────────

fn nearest(tree: &Tree, node: usize, tags: &[&str]) -> usize {
    let mut current = node;
    while current != NONE && !tags.contains(&tree.nodes[current].tag.as_str()) {
        current = tree.nodes[current].parent;
    }
    current
}

fn owned_by(tree: &Tree, table: usize, node: usize) -> bool {
    let mut ancestor = tree.nodes[node].parent;
    while ancestor != NONE {
        if ancestor == table {
            return true;
        }
        if tree.nodes[ancestor].tag == "table" {
            return false;
        }
        ancestor = tree.nodes[ancestor].parent;
    }
    false
}

fn is_data_table(tree: &Tree, table: usize) -> bool {
    let all = tree.iter(table);
    let descendants = &all[1..];
    for &node in descendants {
        let tag = tree.nodes[node].tag.as_str();
        if (matches!(tag, "caption" | "col" | "colgroup")
            || (matches!(tag, "td" | "th") && tree.attr(node, "headers").is_some()))
            && owned_by(tree, table, node)
        {
            return true;
        }
    }
    if tree.attr(table, "role") == Some("table")
        || tree.attr(table, "data-table").is_some_and(|v| !v.is_empty())
    {
        return true;
    }
    descendants.iter().all(|&node| {
        let tag = tree.nodes[node].tag.as_str();
        is_table_tag(tag) || is_inline_tag(tag)
    })
}

fn lxml_accepts(tree: &Tree, node: usize) -> bool {
    let n = &tree.nodes[node];
    !bad_name(&n.tag) && !tree.attrs[n.attrs].iter().any(|(_, v)| has_not_xml(v))
}

fn replace_non_xml_chars(tree: &mut Tree, root: usize) {
    for node in tree.iter(root).into_iter().skip(1) {
        let n = &mut tree.nodes[node];
        if let Some(t) = &n.text {
            if has_not_xml(t) {
                n.text = Some(replace_not_xml(t).into());
            }
        }
        if let Some(t) = &n.tail {
            if has_not_xml(t) {
                n.tail = Some(replace_not_xml(t).into());
            }
        }
        let a = n.attrs;
        if tree.attrs[a].iter().any(|(_, v)| has_not_xml(v)) {
            let fresh: Attrs =
                tree.attrs[a].iter().map(|(k, v)| (k.clone(), Text::from(replace_not_xml(v)))).collect();
            let id = tree.new_attrs(fresh);
            tree.nodes[node].attrs = id;
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum ContentType {
    UnwrappedText,
    InlineElements,
    Mixed,
    BlockElement,
}

enum Content {
    Element(usize),
    DirectText(String),
    TailText(String),
}

/// One frame of `_process`: a node, the index of its next child, inline content so far.
struct Frame {
    node: usize,
    index: usize,
    content: Vec<Content>,
}

#[derive(Hash, PartialEq, Eq)]
enum KeyPart {
    Block,
    Id(usize),
    Text(String),
}

struct Segmenter<'a> {
    tree: &'a mut Tree,
    table_types: FastMap<usize, bool>,
    list_types: FastMap<usize, bool>,
    paragraphs: Vec<(usize, ContentType, usize)>,
    seen: FastSet<Vec<KeyPart>>,
    memo: Option<FastMap<usize, bool>>,
    /// scratch stack of has_block_descendants (kept to spare an allocation per call)
    scratch: Vec<usize>,
}

impl Segmenter<'_> {
    /// `is_block_element`: None where a cell or item has no table or list.
    fn is_block(&self, node: usize) -> bool {
        let tree = &*self.tree;
        let tag = tree.nodes[node].tag.as_str();
        let owner_type = |owner: usize, types: &FastMap<usize, bool>| {
            owner != NONE && !types.get(&owner).copied().unwrap_or(false)
        };
        match tag {
            "td" | "th" => owner_type(nearest(tree, node, &["table"]), &self.table_types),
            "li" => owner_type(nearest(tree, node, &["ul", "ol"]), &self.list_types),
            "dt" | "dd" => owner_type(nearest(tree, node, &["dl"]), &self.list_types),
            _ => !(is_no_block(tag) || is_inline_tag(tag)),
        }
    }

    fn has_block_descendants(&mut self, node: usize) -> bool {
        if let Some(memo) = &self.memo {
            if let Some(&cached) = memo.get(&node) {
                return cached;
            }
        }
        let result = self.has_block_descendants_uncached(node);
        if let Some(memo) = &mut self.memo {
            memo.insert(node, result);
        }
        result
    }

    fn has_block_descendants_uncached(&mut self, node: usize) -> bool {
        if is_no_block(&self.tree.nodes[node].tag) {
            return false;
        }
        // lazy pre-order, as the Python iterator (it stops at the first block)
        let mut stack = std::mem::take(&mut self.scratch);
        stack.clear();
        stack.extend(self.tree.nodes[node].children.iter().rev());
        let found = self.find_block_descendant(node, &mut stack);
        self.scratch = stack;
        found
    }

    fn find_block_descendant(&mut self, node: usize, stack: &mut Vec<usize>) -> bool {
        while let Some(child) = stack.pop() {
            let parent = self.tree.nodes[child].parent;
            if parent != NONE {
                let p = &self.tree.nodes[parent];
                if is_no_block(&p.tag) || p.flags & NO_BLOCK_FLAG != 0 {
                    self.tree.nodes[child].flags |= NO_BLOCK_FLAG;
                }
            }
            if self.tree.nodes[child].flags & NO_BLOCK_FLAG == 0 && self.is_block(child) {
                if is_inline_tag(&self.tree.nodes[node].tag) {
                    let orig = self.tree.nodes[node].orig;
                    self.tree.set_attr(orig, "cc-block-type", "true");
                }
                return true;
            }
            stack.extend(self.tree.nodes[child].children.iter().rev());
        }
        false
    }

    fn is_content_list(&mut self, lst: usize) -> bool {
        let tree = &*self.tree;
        let n = &tree.nodes[lst];
        let allowed: &[&str] = if matches!(n.tag.as_str(), "ul" | "ol") { &["li"] } else { &["dt", "dd"] };
        let items: Vec<usize> = n
            .children
            .iter()
            .copied()
            .filter(|&c| matches!(tree.nodes[c].tag.as_str(), "li" | "dt" | "dd"))
            .collect();
        if items.is_empty() {
            return false;
        }
        if n.children.iter().any(|&c| !allowed.contains(&tree.nodes[c].tag.as_str())) {
            return false;
        }
        if n.text.as_deref().is_some_and(has_non_space) {
            return false;
        }
        if n.children.iter().any(|&c| tree.nodes[c].tail.as_deref().is_some_and(has_non_space)) {
            return false;
        }
        items.into_iter().all(|item| !self.has_block_descendants(item))
    }

    fn run(&mut self, root: usize) {
        let mut tables = Vec::new();
        let mut lists = Vec::new();
        for node in self.tree.iter(root).into_iter().skip(1) {
            match self.tree.nodes[node].tag.as_str() {
                "table" => tables.push(node),
                "ul" | "ol" | "dl" => lists.push(node),
                _ => {}
            }
        }
        for table in tables {
            let data = is_data_table(self.tree, table);
            self.table_types.insert(table, data);
        }
        for lst in lists {
            let content = self.is_content_list(lst);
            self.list_types.insert(lst, content);
        }
        self.memo = Some(FastMap::default());
        self.process(root);
    }

    fn emit(&mut self, root: usize, content_type: ContentType, original: usize, key: Vec<KeyPart>) {
        if self.seen.contains(&key) {
            return;
        }
        self.seen.insert(key);
        self.paragraphs.push((root, content_type, original));
    }

    fn start_content(&self, node: usize) -> Vec<Content> {
        match self.tree.nodes[node].text.as_deref() {
            Some(t) if has_non_space(t) => vec![Content::DirectText(py_strip(t).to_string())],
            _ => Vec::new(),
        }
    }

    fn flush(&mut self, node: usize, content: &[Content], final_: bool) {
        let all_direct = content.iter().all(|c| matches!(c, Content::DirectText(_)));
        let all_elements = content.iter().all(|c| matches!(c, Content::Element(_)));
        let no_elements = content.iter().all(|c| !matches!(c, Content::Element(_)));
        let content_type = if all_direct {
            ContentType::UnwrappedText
        } else if all_elements {
            ContentType::InlineElements
        } else if final_ && no_elements {
            ContentType::UnwrappedText
        } else {
            ContentType::Mixed
        };
        if !lxml_accepts(self.tree, node) {
            return;
        }
        let (tag, attrs, orig) = {
            let n = &self.tree.nodes[node];
            (n.tag.clone(), n.attrs, n.orig)
        };
        let clone = self.tree.new_node(tag, attrs);
        self.tree.nodes[clone].orig = orig;
        let mut key = vec![KeyPart::Id(orig)];
        let mut last_inserted = NONE;
        let last_index = content.len().wrapping_sub(1);
        for (index, item) in content.iter().enumerate() {
            let text = match item {
                Content::Element(element) => {
                    let element = *element;
                    let copy = self.tree.deep_copy(element, false);
                    if index == last_index && self.tree.nodes[copy].tag == "br" {
                        self.tree.nodes[copy].tail = None;
                    }
                    self.tree.nodes[copy].parent = clone;
                    self.tree.nodes[clone].children.push(copy);
                    key.push(KeyPart::Id(self.tree.nodes[element].orig));
                    last_inserted = element;
                    continue;
                }
                Content::DirectText(t) | Content::TailText(t) => t,
            };
            if has_not_xml(text) {
                return; // lxml refuses the text: the reference drops this block
            }
            if last_inserted == NONE {
                let c = &mut self.tree.nodes[clone];
                c.text = Some(match c.text.take() {
                    Some(t) if !t.is_empty() => Text::concat(&[&t, " ", text]),
                    _ => Text::from(text.as_str()),
                });
                key.push(KeyPart::Text(text.clone()));
            } else {
                // sic: onto the tail of the processing tree's element, not the copy
                let n = &mut self.tree.nodes[last_inserted];
                n.tail = Some(match n.tail.take() {
                    None => Text::from(text.as_str()),
                    Some(t) => Text::concat(&[&t, " ", text]),
                });
            }
        }
        self.emit(clone, content_type, orig, key);
    }

    fn push_tail(&self, frame: &mut Frame, child: usize) {
        if let Some(t) = self.tree.nodes[child].tail.as_deref() {
            if has_non_space(t) {
                frame.content.push(Content::TailText(py_strip(t).to_string()));
            }
        }
    }

    fn process(&mut self, top: usize) {
        let first = self.start_content(top);
        let mut stack = vec![Frame { node: top, index: 0, content: first }];
        while let Some(frame) = stack.last_mut() {
            let node = frame.node;
            let index = frame.index;
            if index >= self.tree.nodes[node].children.len() {
                let frame = stack.pop().unwrap();
                if !frame.content.is_empty() {
                    self.flush(node, &frame.content, true);
                }
                if let Some(parent) = stack.last_mut() {
                    if let Some(t) = self.tree.nodes[node].tail.as_deref() {
                        if has_non_space(t) {
                            parent.content.push(Content::TailText(py_strip(t).to_string()));
                        }
                    }
                }
                continue;
            }
            let child = self.tree.nodes[node].children[index];
            frame.index = index + 1;
            let child_is_br = self.tree.nodes[child].tag == "br";
            if self.is_block(child) || self.has_block_descendants(child) {
                let frame = stack.last_mut().unwrap();
                if child_is_br {
                    frame.content.push(Content::Element(child));
                }
                if !frame.content.is_empty() {
                    let content = std::mem::take(&mut frame.content);
                    self.flush(node, &content, false);
                }
                if !child_is_br {
                    if self.table_types.get(&child).copied().unwrap_or(false)
                        || !self.has_block_descendants(child)
                    {
                        self.emit_block(child);
                    } else {
                        let content = self.start_content(child);
                        stack.push(Frame { node: child, index: 0, content });
                        continue;
                    }
                }
                self.push_tail(stack.last_mut().unwrap(), child);
            } else {
                let frame = stack.last_mut().unwrap();
                frame.content.push(Content::Element(child));
                self.push_tail(frame, child);
            }
        }
    }

    fn emit_block(&mut self, child: usize) {
        if !lxml_accepts(self.tree, child) || self.tree.nodes[child].text.as_deref().is_some_and(has_not_xml)
        {
            return;
        }
        let (tag, attrs, orig, text, children) = {
            let n = &self.tree.nodes[child];
            (n.tag.clone(), n.attrs, n.orig, n.text.clone(), n.children.clone())
        };
        let clone = self.tree.new_node(tag, attrs);
        self.tree.nodes[clone].orig = orig;
        self.tree.nodes[clone].text = text.filter(|t| !t.is_empty());
        for grandchild in children {
            let copy = self.tree.deep_copy(grandchild, false);
            self.tree.nodes[copy].parent = clone;
            self.tree.nodes[clone].children.push(copy);
        }
        self.emit(clone, ContentType::BlockElement, orig, vec![KeyPart::Block, KeyPart::Id(orig)]);
    }
}

// ── blocks: clean, mark the map, write ─────────────────────────────────────────────────

fn fragment_root(tree: &mut Tree, root: usize) -> Option<usize> {
    match tree.nodes[root].tag.as_str() {
        "body" => {
            let r = &tree.nodes[root];
            if r.text.as_deref().is_some_and(has_non_space) || r.children.len() != 1 {
                return None;
            }
            let element = r.children[0];
            if tree.nodes[element].tail.as_deref().is_some_and(has_non_space) {
                return None;
            }
            tree.nodes[element].tail = None;
            tree.nodes[element].parent = NONE;
            Some(element)
        }
        "html" => None,
        _ => Some(root),
    }
}

fn escape_raw_text(tree: &mut Tree, root: usize) {
    for node in tree.iter(root) {
        let n = &mut tree.nodes[node];
        if is_raw_text_in_blocks(&n.tag) {
            if let Some(t) = &n.text {
                if !t.is_empty() {
                    let escaped = t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
                    n.text = Some(escaped.into());
                }
            }
        }
    }
}

/// `_prepare_block`: (holds a long list, meaningful, length upper bound).
fn prepare_block(tree: &mut Tree, root: usize) -> (bool, bool, usize) {
    let (mut long_list, mut meaningful, mut length) = (false, false, 0usize);
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        // src, alt, class, id: the attributes a block keeps, in this order
        let mut kept: [Option<(Tag, Text)>; 4] = Default::default();
        {
            let n = &tree.nodes[node];
            let attrs = &tree.attrs[n.attrs];
            if !attrs.is_empty() {
                // the value stripped: the element's own string where stripping leaves it whole
                // (shared, not copied), None where nothing is left
                let get = |k: &str| {
                    let value = attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v)?;
                    let stripped = py_strip(value.as_str());
                    match stripped.len() {
                        0 => None,
                        len if len == value.len() => Some(value.clone()),
                        _ => Some(Text::from(stripped)),
                    }
                };
                if n.tag == "img" {
                    if let Some(src) = get("src").filter(|src| !src.starts_with("data:image/")) {
                        kept[0] = Some((Tag::known("src"), src));
                    }
                    kept[1] = get("alt").map(|alt| (Tag::known("alt"), alt));
                }
                kept[2] = get("class").map(|class| (Tag::known("class"), class));
                kept[3] = get("id").map(|id| (Tag::known("id"), id));
            }
        }
        let has_src = kept[0].is_some();
        let a = tree.new_attrs(kept.into_iter().flatten());
        let n = &mut tree.nodes[node];
        n.attrs = a;
        if n.text.as_deref() == Some("") {
            n.text = None;
        }
        if n.tail.as_deref() == Some("") {
            n.tail = None;
        }
        if let Some(text) = &n.text {
            length += char_len(text);
            if !meaningful && has_non_space(text) {
                meaningful = true;
            }
        }
        if let Some(tail) = &n.tail {
            length += char_len(tail);
        }
        if !meaningful {
            if n.tag == "img" {
                meaningful = has_src;
            } else if n.tail.as_deref().is_some_and(has_non_space) {
                meaningful = true;
            }
        }
        if !n.children.is_empty() {
            if n.children.len() > 2 && matches!(n.tag.as_str(), "ul" | "ol" | "dl") {
                long_list = true;
            }
            stack.extend(n.children.iter().copied());
        }
    }
    (long_list, meaningful, length)
}

fn ellipsis_span(tree: &mut Tree, parent: usize) -> usize {
    let a = tree.new_attrs(Vec::new());
    let span = tree.new_node(Tag::known("span"), a);
    tree.nodes[span].text = Some(ELLIPSIS.into());
    tree.nodes[span].parent = parent;
    span
}

fn simplify_lists(tree: &mut Tree, root: usize) {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        let children = tree.nodes[node].children.clone();
        let tag = tree.nodes[node].tag.clone();
        let mut new_children = children.clone();
        if (tag == "ul" || tag == "ol") && children.len() > 2 {
            let span = ellipsis_span(tree, node);
            new_children = vec![children[0], span, *children.last().unwrap()];
        } else if tag == "dl" && children.len() > 2 {
            let dts: Vec<usize> = children
                .iter()
                .enumerate()
                .filter(|(_, &c)| tree.nodes[c].tag == "dt")
                .map(|(i, _)| i)
                .collect();
            if dts.len() > 1 {
                let span = ellipsis_span(tree, node);
                let mut v: Vec<usize> = children[dts[0]..dts[1]].to_vec();
                v.push(span);
                v.extend_from_slice(&children[*dts.last().unwrap()..]);
                new_children = v;
            }
        }
        stack.extend(new_children.iter().rev());
        tree.nodes[node].children = new_children;
    }
}

fn drop_following(tree: &mut Tree, mut node: usize, root: usize) {
    while node != root && tree.nodes[node].parent != NONE {
        let parent = tree.nodes[node].parent;
        let index = index_of_near(tree, parent, node, 0).expect("node is a child of its parent");
        tree.nodes[parent].children.truncate(index + 1);
        node = parent;
    }
}

fn truncate(tree: &mut Tree, root: usize, max_length: usize) {
    enum Item {
        Node(usize),
        Tail(usize),
    }
    let mut excluded: FastMap<usize, bool> = FastMap::default();
    excluded.insert(root, is_no_length(&tree.nodes[root].tag));
    let mut total = 0usize;
    let mut entries: Vec<(usize, bool, bool)> = Vec::new(); // (node, is_tail, can_modify)
    let mut stack = vec![Item::Node(root)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Tail(node) => {
                if let Some(tail) = tree.nodes[node].tail.as_deref().filter(|t| !t.is_empty()) {
                    total += char_len(tail);
                    let parent = tree.nodes[node].parent;
                    let can_modify = !(parent != NONE && excluded.get(&parent).copied().unwrap_or(false));
                    entries.push((node, true, can_modify));
                }
            }
            Item::Node(node) => {
                let node_excluded = excluded[&node];
                let n = &tree.nodes[node];
                if let Some(text) = n.text.as_deref().filter(|t| !t.is_empty()) {
                    if !node_excluded {
                        total += char_len(text);
                        entries.push((node, false, true));
                    }
                }
                if node != root || n.tail.as_deref().is_some_and(|t| !t.is_empty()) {
                    stack.push(Item::Tail(node));
                }
                for &child in n.children.iter().rev() {
                    excluded.insert(child, node_excluded || is_no_length(&tree.nodes[child].tag));
                    stack.push(Item::Node(child));
                }
            }
        }
    }
    if total <= max_length {
        return;
    }
    let mut current = 0usize;
    let mut done = false;
    for (node, is_tail, can_modify) in entries {
        if done {
            if is_tail {
                tree.nodes[node].tail = None;
            } else {
                tree.nodes[node].text = None;
            }
            continue;
        }
        let n = &tree.nodes[node];
        let text = if is_tail { n.tail.as_deref() } else { n.text.as_deref() }.unwrap_or("");
        let len = char_len(text);
        if current + len <= max_length {
            current += len;
        } else if can_modify {
            let keep = max_length.saturating_sub(current);
            let mut cut: String = text.chars().take(keep).collect();
            if max_length < current {
                // Python's text[:negative]: all but the last (current - max_length) chars
                let drop = current - max_length;
                cut = text.chars().take(len.saturating_sub(drop)).collect();
            }
            cut.push_str(ELLIPSIS);
            if is_tail {
                tree.nodes[node].tail = Some(cut.into());
            } else {
                tree.nodes[node].text = Some(cut.into());
            }
            current = max_length;
            done = true;
            drop_following(tree, node, root);
        } else {
            current += len;
        }
    }
}

fn copy_cc_select(tree: &mut Tree, target: usize, source: usize) {
    if let Some(value) = tree.attr(source, "cc-select").map(str::to_string) {
        tree.set_attr(target, "cc-select", &value);
    }
}

fn wrapper(tree: &mut Tree, item_id: &str) -> usize {
    let a = tree.new_attrs([(Tag::known(ITEM_ID_ATTR), item_id.into())]);
    tree.new_node(Tag::known(TAIL_BLOCK_TAG), a)
}

fn wrap_text(tree: &mut Tree, item_id: &str, parent: usize, index: usize, text: Text) {
    let w = wrapper(tree, item_id);
    copy_cc_select(tree, w, parent);
    tree.nodes[w].text = Some(text);
    tree.nodes[w].parent = parent;
    tree.nodes[parent].children.insert(index, w);
}

#[allow(clippy::too_many_arguments)]
fn mark_map(
    tree: &mut Tree,
    item_id: &str,
    content_type: ContentType,
    original_parent: usize,
    root_orig: usize,
    root_tag: &str,
    root_children: &[usize],
    root_text: Option<&str>,
    hints: &mut FastMap<usize, usize>,
) -> bool {
    if original_parent == NONE {
        return true;
    }
    if content_type == ContentType::BlockElement {
        tree.set_attr(original_parent, ITEM_ID_ATTR, item_id);
        for node in tree.iter(original_parent).into_iter().skip(1) {
            if let Some(v) = tree.attr(node, "cc-select").map(str::to_string) {
                tree.set_attr(original_parent, "cc-select", &v);
                break;
            }
        }
        return true;
    }
    if !root_children.is_empty() {
        if is_inline_tag(root_tag)
            && tree.nodes[root_orig].tag != "body"
            && tree.attr(root_orig, "cc-block-type") != Some("true")
        {
            tree.set_attr(root_orig, ITEM_ID_ATTR, item_id);
            return true;
        }
        let first = root_children[0];
        let last = *root_children.last().unwrap();
        let hint = hints.get(&original_parent).copied().unwrap_or(0);
        let start = index_of_near(tree, original_parent, first, hint);
        let stop = start.and_then(|i| index_of_near(tree, original_parent, last, i));
        let (Some(start), Some(stop)) = (start, stop) else {
            return false;
        };
        let w = wrapper(tree, item_id);
        copy_cc_select(tree, w, original_parent);
        let trailing = tree.nodes[last].tail.clone();
        let leading = if start == 0 {
            tree.nodes[original_parent].text.clone()
        } else {
            tree.nodes[tree.nodes[original_parent].children[start - 1]].tail.clone()
        };
        if let Some(leading) = leading.filter(|t| !t.is_empty()) {
            tree.nodes[w].text = Some(leading);
            if start == 0 {
                tree.nodes[original_parent].text = None;
            } else {
                let prev = tree.nodes[original_parent].children[start - 1];
                tree.nodes[prev].tail = None;
            }
        }
        // Python's siblings[start:stop + 1] (empty when stop < start)
        let to_wrap: Vec<usize> = if stop >= start {
            tree.nodes[original_parent].children[start..=stop].to_vec()
        } else {
            Vec::new()
        };
        for &node in &to_wrap {
            tree.nodes[node].parent = w;
        }
        tree.nodes[w].children = to_wrap;
        tree.nodes[w].parent = original_parent;
        let end = if stop >= start { stop + 1 } else { start };
        tree.nodes[original_parent].children.splice(start..end, [w]);
        hints.insert(original_parent, start + 1);
        if tree.nodes[last].tag == "br" {
            if let Some(t) = trailing.filter(|t| !t.is_empty()) {
                tree.nodes[w].tail = Some(t);
                tree.nodes[last].tail = None;
            }
        }
        return true;
    }
    if content_type == ContentType::InlineElements {
        tree.set_attr(root_orig, ITEM_ID_ATTR, item_id);
        return true;
    }
    let Some(wanted) = root_text.map(py_strip).filter(|t| !t.is_empty()) else {
        return true;
    };
    if let Some(text) = tree.nodes[original_parent].text.clone() {
        if !text.is_empty() && py_strip(&text) == wanted {
            wrap_text(tree, item_id, original_parent, 0, text);
            tree.nodes[original_parent].text = None;
            return true;
        }
    }
    let children = tree.nodes[original_parent].children.clone();
    for (index, child) in children.into_iter().enumerate() {
        if let Some(tail) = tree.nodes[child].tail.clone() {
            if !tail.is_empty() && py_strip(&tail) == wanted {
                wrap_text(tree, item_id, original_parent, index + 1, tail);
                tree.nodes[child].tail = None;
                break;
            }
        }
    }
    true
}

/// `_collapse_whitespace`: runs of whitespace outside tags become one space, then strip.
/// Text is read a byte at a time (a character is decoded only where a byte is not ASCII) and
/// copied in runs: a run of whitespace that is one plain space is left in the run as it is,
/// any other is cut out and one space written in its place.
fn collapse_whitespace(html: &str) -> String {
    let b = html.as_bytes();
    let mut out = String::with_capacity(html.len());
    let mut pos = 0;
    while pos < b.len() {
        if b[pos] == b'<' {
            // <[^>]+>: kept as it is
            if pos + 1 < b.len() && b[pos + 1] != b'>' {
                if let Some(k) = crate::scan::find_byte(b'>', &b[pos + 1..]) {
                    let end = pos + 1 + k + 1;
                    out.push_str(&html[pos..end]);
                    pos = end;
                    continue;
                }
            }
            out.push('<');
            pos += 1;
            continue;
        }
        let stop = crate::scan::find_byte(b'<', &b[pos..]).map_or(b.len(), |k| pos + k);
        let mut in_space = false;
        let mut run = pos;
        let mut k = pos;
        while k < stop {
            // (printable ASCII but the space, most of a text: passed over in a tight loop)
            if b[k].wrapping_sub(0x21) < 0x5F {
                k += 1;
                while k < stop && b[k].wrapping_sub(0x21) < 0x5F {
                    k += 1;
                }
                in_space = false;
                continue;
            }
            let (space, len) = if b[k] < 0x80 {
                (crate::tree::py_isspace(b[k] as char), 1)
            } else {
                let c = html[k..].chars().next().expect("a character starts at a lead byte");
                (crate::tree::py_isspace(c), c.len_utf8())
            };
            if !space {
                in_space = false;
            } else if !in_space && b[k] == b' ' {
                in_space = true; // the run's one space, where it is
            } else {
                out.push_str(&html[run..k]);
                run = k + len;
                if !in_space {
                    out.push(' ');
                    in_space = true;
                }
            }
            k += len;
        }
        out.push_str(&html[run..stop]);
        pos = stop;
    }
    let stripped = py_strip(&out);
    if stripped.len() == out.len() {
        out
    } else {
        stripped.to_string()
    }
}

/// What the segmentation reads off the raw page (`raw.rs`), and how it segments.
pub struct Flags {
    /// `_HAS_RAW_TEXT_RE`: raw-text elements' text in blocks comes back escaped
    pub has_raw_text: bool,
    /// `_NOT_XML_CHAR_RE`: characters XML does not allow are replaced in blocks
    pub has_non_xml_chars: bool,
    /// keep the elements `is_hidden` would remove (inline `display:none`, `opacity:0` …, a
    /// closed `<details>`' content, a `nav` body child): not the reference's segmentation,
    /// an option for a model trained on it (pages fade their main content in or fold it
    /// into accordions); false everywhere parity with the reference matters
    pub keep_hidden: bool,
    /// remove each `noscript` element that holds no block (only text and inline elements),
    /// with all it holds (a browser running scripts never renders one; pages put tracking
    /// pixels there, as `<img>` or as escaped markup): not the reference's segmentation, an
    /// option for a model trained on it; false everywhere parity with the reference matters
    pub drop_noscript: bool,
}

/// `simplify.simplify` after the parse: (simplified_html, map_html) of lexbor's
/// serialization of the page.
#[cfg(test)]
pub fn simplify_serialized(serialized: &str, cutoff: usize, flags: &Flags) -> Res<(String, String)> {
    let mut tree = Tree::default();
    let original = crate::tree::parse_serialized(&mut tree, serialized);
    simplify_tree(tree, original, serialized.len(), cutoff, flags)
}

/// `simplify.simplify` after the parse: (simplified_html, map_html) of the tree the
/// specification reads lexbor's serialization as (`original`, its root, in `tree`);
/// `size_hint`: about the serialization's length (buffers are sized by it).
pub fn simplify_tree(
    tree: Tree,
    original: usize,
    size_hint: usize,
    cutoff: usize,
    flags: &Flags,
) -> Res<(String, String)> {
    let (simplified, map_html, _) = segment(tree, original, size_hint, cutoff, flags)?;
    Ok((simplified, map_html))
}

/// (simplified_html, map_html) and the tree the specification reads map_html as, where had.
pub type WithMapTree = (String, String, Option<crate::tree::MapTree>);

/// `simplify_tree`, and the tree the specification reads `map_html` as (`tree::read_back`;
/// None where it is to be read from `map_html`): the features' input without a parse.
pub fn simplify_tree_and_map(
    tree: Tree,
    original: usize,
    size_hint: usize,
    cutoff: usize,
    flags: &Flags,
) -> Res<WithMapTree> {
    let (simplified, map_html, mut tree) = segment(tree, original, size_hint, cutoff, flags)?;
    let map_tree = crate::tree::read_back(&mut tree, original);
    Ok((simplified, map_html, map_tree))
}

/// The segmentation: (simplified_html, map_html) and the tree, marked as map_html is.
fn segment(
    mut tree: Tree,
    original: usize,
    size_hint: usize,
    cutoff: usize,
    flags: &Flags,
) -> Res<(String, String, Tree)> {
    let processing = tree.deep_copy(original, true);
    if flags.drop_noscript {
        remove_noscript(&mut tree, processing);
    }
    if !flags.keep_hidden {
        remove_hidden(&mut tree, processing);
    }
    let paragraphs = {
        let mut seg = Segmenter {
            tree: &mut tree,
            table_types: FastMap::default(),
            list_types: FastMap::default(),
            paragraphs: Vec::new(),
            seen: FastSet::default(),
            memo: None,
            scratch: Vec::new(),
        };
        seg.run(processing);
        seg.paragraphs
    };

    // (sized once: growing a buffer of half a page copies it)
    let mut out = String::with_capacity(size_hint / 2 + 64);
    out.push_str("<html><head><meta charset=\"utf-8\"></head><body>");
    let mut block = String::new();
    let mut item_id = 1usize;
    let mut hints = FastMap::default();
    for (para_root, content_type, original_parent) in paragraphs {
        let Some(root) = fragment_root(&mut tree, para_root) else { continue };
        let root_orig = tree.nodes[root].orig;
        let root_tag = tree.nodes[root].tag.clone();
        let root_children: Vec<usize> =
            tree.nodes[root].children.iter().map(|&c| tree.nodes[c].orig).collect();
        let root_text = tree.nodes[root].text.clone();
        if flags.has_raw_text {
            escape_raw_text(&mut tree, root);
        }
        if flags.has_non_xml_chars {
            replace_non_xml_chars(&mut tree, root);
        }
        let (long_list, mut meaningful, mut length) = prepare_block(&mut tree, root);
        if long_list {
            simplify_lists(&mut tree, root);
            (_, meaningful, length) = prepare_block(&mut tree, root);
        }
        if !meaningful {
            continue;
        }
        if length > cutoff {
            truncate(&mut tree, root, cutoff);
        }
        let current = item_id.to_string();
        tree.set_attr(root, ITEM_ID_ATTR, &current);
        if !mark_map(
            &mut tree,
            &current,
            content_type,
            original_parent,
            root_orig,
            &root_tag,
            &root_children,
            root_text.as_deref(),
            &mut hints,
        ) {
            continue;
        }
        item_id += 1;
        block.clear();
        crate::tree::serialize_html(&tree, root, &mut block);
        out.push_str(py_strip(&block));
    }
    out.push_str("</body></html>");
    let simplified = collapse_whitespace(&out);
    // (the ids and run wrappers make map_html longer than the serialization)
    let mut map_html = String::with_capacity(size_hint + size_hint / 4 + 256);
    crate::tree::serialize_html(&tree, original, &mut map_html);
    Ok((simplified, map_html, tree))
}

/// The element `is_hidden` would test in place of a node of `map_html`'s tree: a run wrapper
/// (`<cc-alg-uc-text _item_id>`, which `mark_map` added) is not in the segmentation's tree.
fn is_run_wrapper(tree: &Tree, node: usize) -> bool {
    tree.nodes[node].tag == TAIL_BLOCK_TAG && tree.attr(node, ITEM_ID_ATTR).is_some()
}

/// A node's parent as the segmentation saw it: past any run wrapper.
fn segmentation_parent(tree: &Tree, node: usize) -> usize {
    let mut parent = tree.nodes[node].parent;
    while parent != NONE && is_run_wrapper(tree, parent) {
        parent = tree.nodes[parent].parent;
    }
    parent
}

/// Per id of `item_ids`, 1 when the element carrying it in `map_html` (for a run wrapper: the
/// element the run stands in) or one of its ancestors is one `remove_hidden` removes (so the
/// block exists only when the page is segmented with `Flags::keep_hidden`), else 0; 0 for ids
/// `map_html` does not hold and for None. A wrapped run counts as hidden only through its
/// parent: its own hidden elements leave visible text beside them.
pub fn hidden_blocks(map_html: &str, item_ids: &[Option<&str>]) -> Vec<u8> {
    let mut flags = vec![0u8; item_ids.len()];
    if item_ids.is_empty() {
        return flags;
    }
    let map_html = crate::tree::normalize_newlines(map_html);
    let mut tree = Tree::default();
    let root = crate::tree::parse_serialized(&mut tree, map_html.as_ref());
    // the first node with an id keeps it (as block_features finds blocks)
    let mut by_id: FastMap<&str, usize> = FastMap::default();
    for node in tree.iter(root) {
        if let Some(id) = tree.attr(node, ITEM_ID_ATTR) {
            by_id.entry(id).or_insert(node);
        }
    }
    // whether a node or one of its ancestors is hidden, memoized per node
    let mut memo: FastMap<usize, bool> = FastMap::default();
    for (flag, id) in flags.iter_mut().zip(item_ids) {
        let Some(&found) = id.and_then(|id| by_id.get(id)) else { continue };
        let mut node = if is_run_wrapper(&tree, found) { segmentation_parent(&tree, found) } else { found };
        let mut path = Vec::new();
        let mut hidden = false;
        while node != NONE {
            if let Some(&known) = memo.get(&node) {
                hidden = known;
                break;
            }
            path.push(node);
            let parent = segmentation_parent(&tree, node);
            if parent != NONE && is_hidden_under(&tree, node, parent) {
                hidden = true;
                break;
            }
            node = parent;
        }
        // every node on the path below a hidden one is hidden; without one, none is
        for node in path {
            memo.insert(node, hidden);
        }
        *flag = u8::from(hidden);
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `_collapse_whitespace` written plainly: `re.sub(r"\s+", " ", text)` between tags
    /// (`<[^>]+>` kept as they are), then `strip()`.
    fn collapse_whitespace_plainly(html: &str) -> String {
        let mut out = String::new();
        let mut rest = html;
        while !rest.is_empty() {
            if rest.starts_with('<') {
                if let Some(end) = rest[1..].find('>').filter(|&k| k > 0) {
                    out.push_str(&rest[..end + 2]);
                    rest = &rest[end + 2..];
                    continue;
                }
                out.push('<');
                rest = &rest[1..];
                continue;
            }
            let stop = rest.find('<').unwrap_or(rest.len());
            let mut in_space = false;
            for c in rest[..stop].chars() {
                if crate::tree::py_isspace(c) {
                    if !in_space {
                        out.push(' ');
                    }
                    in_space = true;
                } else {
                    out.push(c);
                    in_space = false;
                }
            }
            rest = &rest[stop..];
        }
        py_strip(&out).to_string()
    }

    #[test]
    fn whitespace_runs_between_tags_become_one_space() {
        for html in [
            "",
            " ",
            "a b",
            "a  b",
            " a\tb \n c\u{a0}\u{a0}d\u{3000} e \u{85}",
            "<p class=\"a  b\">x \r\n y</p>  <br> z",
            "<> a  <  b",
            "x\u{2028}y \u{2000}\u{200a} z é  ü\x1c\x1f.",
            "<html><body>  <p> one </p>\n\n<p>two\t\tthree</p> </body></html>",
            "<unclosed a  b",
        ] {
            assert_eq!(collapse_whitespace(html), collapse_whitespace_plainly(html), "{html:?}");
        }
        assert_eq!(collapse_whitespace("<p>a \n\t b</p>"), "<p>a b</p>");
    }

    fn segment(html: &str, keep_hidden: bool) -> (String, String) {
        let flags =
            Flags { has_raw_text: false, has_non_xml_chars: false, keep_hidden, drop_noscript: false };
        simplify_serialized(html, 500, &flags).unwrap()
    }

    const PAGE: &str = "<html><head></head><body><div class=\"nav\"><p>menu</p></div>\
        <div style=\"opacity:0\"><p>faded in</p></div><p>shown</p>\
        <details><summary>more</summary><p>folded</p></details>\
        <div>run <b style=\"display: none\">x</b> end<p>after</p></div></body></html>";

    #[test]
    fn keep_hidden_keeps_what_the_reference_removes() {
        let (simplified, _) = segment(PAGE, false);
        assert!(!simplified.contains("faded in") && !simplified.contains("folded"));
        assert!(!simplified.contains("menu") && simplified.contains("shown"));
        assert!(simplified.contains("run end"), "{simplified}");
        let (simplified, map_html) = segment(PAGE, true);
        for text in ["menu", "faded in", "shown", "more", "folded", "run<b>x</b> end"] {
            assert!(simplified.contains(text), "{text} missing from {simplified}");
        }
        let ids: Vec<String> = (1..=7).map(|i| i.to_string()).collect();
        let mut item_ids: Vec<Option<&str>> = ids.iter().map(|i| Some(i.as_str())).collect();
        item_ids.push(None);
        item_ids.push(Some("99"));
        // menu, faded in, shown, more, folded, the run with its hidden <b>, after
        assert_eq!(hidden_blocks(&map_html, &item_ids), vec![1, 1, 0, 0, 1, 0, 0, 0, 0]);
    }

    fn segment_without_noscript(html: &str, keep_hidden: bool) -> (String, String) {
        let flags = Flags { has_raw_text: false, has_non_xml_chars: false, keep_hidden, drop_noscript: true };
        simplify_serialized(html, 500, &flags).unwrap()
    }

    // a tracking pixel's markup escaped as text, "enable scripts" inside a hidden element, a
    // pixel's <img> between two runs, text after each; a forum thread served in a noscript
    // (it holds blocks: it stays), with a pixel in it
    const NOSCRIPT_PAGE: &str = "<html><head></head><body><div><p>story</p>\
        <noscript>&lt;img src=\"http://b.example/b?P=1\"&gt;</noscript>after the pixel</div>\
        <div style=\"display:none\"><noscript>enable <b>scripts</b></noscript></div>\
        <p>first <noscript><img src=\"p.gif\"></noscript>second</p>\
        <noscript data-path=\"/t/1\"><div><p>thread</p><noscript><a><img src=\"q.gif\"></a>\
        </noscript></div></noscript></body></html>";

    #[test]
    fn drop_noscript_removes_noscript_elements_and_keeps_their_tail_text() {
        let (simplified, map_html) = segment(NOSCRIPT_PAGE, false);
        assert_eq!(
            simplified,
            "<html><head><meta charset=\"utf-8\"></head><body><p _item_id=\"1\">story</p>\
             <noscript _item_id=\"2\">&lt;img src=\"http://b.example/b?P=1\"&gt;</noscript>\
             <div _item_id=\"3\">after the pixel</div><p _item_id=\"4\">first</p>\
             <noscript _item_id=\"5\"><img src=\"p.gif\"></noscript><p _item_id=\"6\">second</p>\
             <p _item_id=\"7\">thread</p><noscript _item_id=\"8\"><a><img src=\"q.gif\"></a>\
             </noscript></body></html>"
        );
        assert!(map_html.contains("<noscript _item_id=\"2\">"), "{map_html}");
        let (simplified, map_html) = segment_without_noscript(NOSCRIPT_PAGE, false);
        assert_eq!(
            simplified,
            "<html><head><meta charset=\"utf-8\"></head><body><p _item_id=\"1\">story</p>\
             <div _item_id=\"2\">after the pixel</div><p _item_id=\"3\">first second</p>\
             <p _item_id=\"4\">thread</p></body></html>"
        );
        // map_html keeps the page: the removed noscript elements are there, without ids
        assert!(map_html.contains("<noscript>&lt;img src="), "{map_html}");
        assert!(map_html.contains("first <noscript><img src=\"p.gif\"></noscript>second"), "{map_html}");
        assert!(map_html.contains("<noscript><a><img src=\"q.gif\"></a></noscript>"), "{map_html}");
        // with keep_hidden too: the hidden div's noscript goes, the div has nothing left
        let (kept, _) = segment(NOSCRIPT_PAGE, true);
        assert!(kept.contains("<noscript _item_id=\"4\">enable <b>scripts</b></noscript>"), "{kept}");
        let (simplified, _) = segment_without_noscript(NOSCRIPT_PAGE, true);
        assert!(!simplified.contains("scripts") && !simplified.contains("noscript"), "{simplified}");
        assert!(
            simplified.contains("after the pixel") && simplified.contains("first second"),
            "{simplified}"
        );
        assert!(simplified.contains("<p _item_id=\"4\">thread</p>"), "{simplified}");
    }

    #[test]
    fn a_run_wrappers_content_is_judged_under_the_wrappers_parent() {
        // the <b> is a child of the closed <details>, wrapped in map_html with its run
        let page = "<html><head></head><body><details><summary>s</summary>text <b>a</b> tail\
                    <p>x</p></details></body></html>";
        let (simplified, map_html) = segment(page, true);
        assert!(
            map_html.contains("<cc-alg-uc-text _item_id=\"2\">text <b>a</b> tail</cc-alg-uc-text>"),
            "{map_html}"
        );
        assert!(simplified.contains("<b>a</b>"), "{simplified}");
        let (reference, _) = segment(page, false);
        assert!(reference.contains("text tail") && !reference.contains("<b>"), "{reference}");
        // the run's own block is judged by its parent (the text stays in the reference); an
        // id on the <b> shows it judged as the <details>' child it is in the segmentation
        let map_html = map_html.replace("<b>a", "<b _item_id=\"9\">a");
        let ids = [Some("1"), Some("2"), Some("3"), Some("9")];
        assert_eq!(hidden_blocks(&map_html, &ids), vec![0, 0, 1, 1]);
    }
}
