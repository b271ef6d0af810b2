//! The libxml2-shaped tree of a page read straight off lexbor's tree: what
//! `tree::parse_serialized(lexbor's serialization)` builds, without writing the serialization
//! and reading it back.
//!
//! The walk follows lexbor's serializer (`lxb_html_serialize_node_cb`) node by node and hands
//! `tree::Builder` each token the serialization would hold, as the specification's reader
//! would read it: a start tag (name and attribute names as the reader lowers them, values as
//! they are: every `&` and `"` of a value is escaped in the serialization and unescaped again),
//! text (likewise), an end tag for every element but the serializer's void ones, a template's
//! content before its own children, the text of a raw-text element (`script`, `style` …) as the
//! element's text. Comments and the doctype give no token.
//!
//! Where the serialization would read back as something else than its tokens, the walk gives
//! up (`None`) and the caller reads the serialization (`page.rs`): a name the reader would cut
//! or read otherwise (an element's: not an ASCII letter then letters, digits, `-`, `_`, `.`,
//! `:`; an attribute's: not ASCII, a space, `=`, `/`, `>`, a quote), a NUL
//! (selectolax cuts the serialization there), a `<?xml` the specification removes from it, a
//! raw-text element whose text would end early or whose start tag the reader drops, a comment
//! holding `-->`, a node kind lexbor's HTML parser does not make, bytes that are not UTF-8.
//! `tests/test_simplify.py` checks both ways give the same tree on every dev and train page.

use crate::lexbor::{self, Node, ParsedPage};
use crate::tree::{AttrLists, Builder, Names, Reader, StartTag, Tag, Text, Tree, NAMELESS_ATTR_MARK};

/// An element name the reader reads back as it is written (then lowers its ASCII letters).
fn plain_name(name: &[u8]) -> bool {
    name.first().is_some_and(u8::is_ascii_alphabetic)
        && name.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// An attribute name the reader reads back as it is written before `="…"` (then lowers its
/// ASCII letters): ASCII, none of what ends a name there (`\s`, `=`, `/`, `>`), no quote.
fn plain_attribute_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name.iter().all(|&b| b.is_ascii_graphic() && !matches!(b, b'=' | b'/' | b'>' | b'"' | b'\''))
}

/// Text the serialization holds as it is (after its escapes are read back).
fn plain_text(bytes: &[u8]) -> Option<&str> {
    if crate::scan::ascii_without(bytes, [0]) {
        // SAFETY: ASCII is UTF-8 (checked in the same pass as the NUL, as most text is)
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    if crate::scan::find_byte(0, bytes).is_some() {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// An attribute value the serialization holds as it is, and without a `<?xml` (see
/// `holds_xml_declaration`).
fn plain_value(bytes: &[u8]) -> Option<&str> {
    if crate::scan::ascii_without(bytes, [0, b'<']) {
        // SAFETY: ASCII is UTF-8 (checked in the same pass as the NUL and the `<` a
        // declaration begins with, as most values are)
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    plain_text(bytes).filter(|value| !holds_xml_declaration(value))
}

/// `s` holds the `<?xml` of a declaration `raw::remove_xml_declarations` would remove (any
/// `<?xml`: the walk does not decide which).
fn holds_xml_declaration(s: &str) -> bool {
    crate::scan::find_bytes(s.as_bytes(), b"<?xml").is_some()
}

/// A lower-case ASCII name as the parse's shared name.
fn lower_name(name: &[u8], names: &mut Names) -> Tag {
    // plain_name checked it is ASCII
    let name = std::str::from_utf8(name).unwrap_or_default();
    Reader::Spec.name(name, names)
}

/// The names a walk has read, by where lexbor keeps them: lexbor gives each distinct element
/// and attribute name of a document one string of its own, alive with the document, so an
/// address and a length name the same bytes for the whole walk, and a name met again (nearly
/// every one: a page has a few dozen over thousands of elements) is had without checking,
/// lowering, hashing and comparing its bytes again. Direct-mapped: a slot holds the last name
/// whose address falls in it. One for element names, one for attribute names (read apart).
struct SeenNames {
    slots: Vec<(*const u8, usize, Option<Tag>)>,
}

impl SeenNames {
    const SLOTS: usize = 256;

    fn new() -> SeenNames {
        SeenNames { slots: vec![(std::ptr::null(), 0, None); Self::SLOTS] }
    }

    fn slot(name: &[u8]) -> usize {
        (name.as_ptr() as usize >> 3) % Self::SLOTS
    }

    fn get(&self, name: &[u8]) -> Option<Tag> {
        match &self.slots[Self::slot(name)] {
            (at, len, Some(tag)) if *at == name.as_ptr() && *len == name.len() => Some(tag.clone()),
            _ => None,
        }
    }

    fn put(&mut self, name: &[u8], tag: &Tag) {
        self.slots[Self::slot(name)] = (name.as_ptr(), name.len(), Some(tag.clone()));
    }
}

/// The start tag the reader reads off an element's serialization, or None where it would not
/// read it back as written.
///
/// # Safety
/// `element` is an element of a live document, the one `seen` was filled from (element
/// names, attribute names).
unsafe fn start_tag(
    element: *mut Node,
    names: &mut Names,
    seen: &mut [SeenNames; 2],
    lists: &mut AttrLists,
) -> Option<StartTag> {
    let [seen_tags, seen_attrs] = seen;
    let name = lexbor::element_name(element);
    let tag = match seen_tags.get(name) {
        Some(tag) => tag,
        None => {
            if !plain_name(name) {
                return None;
            }
            let tag = lower_name(name, names);
            seen_tags.put(name, &tag);
            tag
        }
    };
    let start = lists.begin();
    for (attr_name, value) in lexbor::attributes(element) {
        let (prefix, local) = attr_name?;
        let cached = if prefix.is_empty() { seen_attrs.get(local) } else { None };
        if cached.is_none() && !plain_attribute_name(local) {
            return None;
        }
        let value = plain_value(value)?;
        let key = match cached {
            Some(key) => key,
            None if prefix.is_empty() => {
                let mut key = lower_name(local, names);
                if key == NAMELESS_ATTR_MARK {
                    key = names.get("");
                }
                seen_attrs.put(local, &key);
                key
            }
            None => {
                let mut full = String::with_capacity(prefix.len() + local.len());
                full.push_str(prefix);
                full.push_str(std::str::from_utf8(local).ok()?);
                lower_name(full.as_bytes(), names)
            }
        };
        lists.add_first(start, key, Text::from(value));
    }
    Some(StartTag { name: tag, attrs: lists.finish(start), self_closing: false, end: 0 })
}

/// A raw-text element's text: its text children's, joined (None where it has another child
/// or text the serialization does not hold as it is). Borrowed from the document where it is
/// one text (nearly always): a script or style is not copied into a string of its own and
/// then again into the tree.
///
/// # Safety
/// `element` is an element of a live document, alive while the text is read.
unsafe fn raw_text<'a>(element: *mut Node) -> Option<std::borrow::Cow<'a, str>> {
    let first = (*element).first_child;
    if first.is_null() {
        return Some(std::borrow::Cow::Borrowed(""));
    }
    let mut text = std::borrow::Cow::Borrowed("");
    let mut child = first;
    while !child.is_null() {
        if (*child).kind != lexbor::TEXT {
            return None;
        }
        let part = plain_text(lexbor::character_data(child))?;
        if child == first {
            text = std::borrow::Cow::Borrowed(part);
        } else {
            text.to_mut().push_str(part);
        }
        child = (*child).next;
    }
    Some(text)
}

/// What is left to do at a place of the walk.
enum Step {
    /// a node and its subtree
    Enter(*mut Node),
    /// an element's end tag
    Close(Tag),
}

/// `parse_serialized(lexbor's serialization of page)`'s tree in `tree`, built from the parsed
/// page itself: its `<html>` root, or None where the walk gives up (see the module's comment;
/// `tree` then holds a part of a tree, to be dropped).
pub fn spec_tree(page: &ParsedPage, tree: &mut Tree) -> Option<usize> {
    let mut builder = Builder::new(tree, Reader::Spec);
    let mut names = Names::default();
    let mut seen = [SeenNames::new(), SeenNames::new()];
    let scripting = page.scripting();
    let mut steps: Vec<Step> = Vec::new();
    // SAFETY: every node read is one of the page's, alive as long as `page`; lexbor's own
    // serializer walks the same pointers
    unsafe {
        let mut children: Vec<*mut Node> = Vec::new();
        let mut child = (*page.root()).first_child;
        while !child.is_null() {
            children.push(child);
            child = (*child).next;
        }
        steps.extend(children.iter().rev().map(|&c| Step::Enter(c)));
        while let Some(step) = steps.pop() {
            let node = match step {
                Step::Close(tag) => {
                    builder.end(tree, &tag);
                    continue;
                }
                Step::Enter(node) => node,
            };
            match (*node).kind {
                lexbor::TEXT => {
                    let text = plain_text(lexbor::character_data(node))?;
                    if !text.is_empty() {
                        builder.text(tree, text);
                    }
                }
                lexbor::COMMENT => {
                    let data = lexbor::character_data(node);
                    if crate::scan::find_bytes(data, b"-->").is_some()
                        || holds_xml_declaration(plain_text(data)?)
                    {
                        return None;
                    }
                }
                lexbor::DOCUMENT_TYPE => {}
                lexbor::ELEMENT => {
                    let st = start_tag(node, &mut names, &mut seen, &mut tree.attrs)?;
                    let tag = st.name.clone();
                    let id = (*node).local_name;
                    let html = (*node).ns == lexbor::NS_HTML;
                    let raw =
                        lexbor::RAW_TEXT_TAGS.contains(&id) || (scripting && id == lexbor::TAG_NOSCRIPT);
                    let void = lexbor::is_void(node);
                    let made = builder.start(tree, st);
                    let open = made.is_some_and(|n| builder.current() == n);
                    if raw || (open && crate::tree::is_raw_text(&tag)) {
                        // the serializer writes the text as it is, the reader reads it as the
                        // element's text up to its end tag: both, or give up
                        let made = made.filter(|_| raw && open && crate::tree::is_raw_text(&tag))?;
                        let text = raw_text(node)?;
                        if !crate::tree::raw_text_reads_back(&text, &tag) || holds_xml_declaration(&text) {
                            return None;
                        }
                        if !text.is_empty() {
                            tree.nodes[made].text = Some(Text::from(&*text));
                        }
                        builder.end(tree, &tag);
                        continue;
                    }
                    if void {
                        continue;
                    }
                    steps.push(Step::Close(tag));
                    let first = if html && id == lexbor::TAG_TEMPLATE {
                        // its content (a document fragment) first, then its own children
                        page.template_content(node).ok()?
                    } else {
                        std::ptr::null_mut()
                    };
                    children.clear();
                    for mut child in [first, (*node).first_child] {
                        while !child.is_null() {
                            children.push(child);
                            child = (*child).next;
                        }
                    }
                    steps.extend(children.iter().rev().map(|&c| Step::Enter(c)));
                }
                _ => return None,
            }
        }
    }
    Some(builder.root)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree both ways, written back with libxml2's serializer (None: the walk gave up).
    fn both(html: &str) -> (Option<String>, String) {
        let page = ParsedPage::parse(html.as_bytes()).unwrap();
        let mut walked = Tree::default();
        let walked = spec_tree(&page, &mut walked).map(|root| {
            let mut out = String::new();
            crate::tree::serialize_html(&walked, root, &mut out);
            out
        });
        let serialized = String::from_utf8(page.selectolax_html().unwrap()).unwrap();
        let mut read = Tree::default();
        let root = crate::tree::parse_serialized(&mut read, &serialized);
        let mut out = String::new();
        crate::tree::serialize_html(&read, root, &mut out);
        (walked, out)
    }

    #[test]
    fn the_walk_builds_what_the_serialization_reads_back_as() {
        for html in [
            "<p>Hi<b>x</b><svg><path/><foreignObject>f</foreignObject></svg>",
            // a table in a <p> (quirks mode): the reader closes the <p> at the <table>
            "<p>a<table><tr><td>1</td></tr></table>b",
            // an <embed> has no end tag, so the reader puts what follows inside it
            "<div><embed src=x>after<span>s</span></div>",
            "<p title='a &amp; &quot;b&quot; &lt;c&gt;' DATA-X=Y>t&amp;u&nbsp;v&lt;w</p><!-- c -->z",
            "<script>if (a < b) { x = '</scr' + 'ipt>'; }</script><style>p > a {}</style>",
            "<select><option>o<style>s</style></select>",
            "<template><p>in template</p></template><textarea>&lt;b&gt;</textarea>",
            "<ul><li>one<li>two</ul><dl><dt>t<dd>d</dl>",
        ] {
            let (walked, read) = both(html);
            if let Some(walked) = walked {
                assert_eq!(walked, read, "{html}");
            }
        }
    }

    #[test]
    fn the_walk_gives_up_where_the_serialization_reads_back_otherwise() {
        for html in [
            "<div a\"b=1>x</div>",                             // a name the reader cuts
            "<ahref=\"x\">a</ahref=\"x\">",                    // an element's name
            "<script>s = \"<?xml version='1.0'?>\";</script>", // a <?xml the specification removes
            "<script><!--<script>x",                           // the end tag would only end the escape
            "<select><style>s</style></select>",               // a raw-text element the reader drops
        ] {
            assert_eq!(both(html).0, None, "{html}");
        }
        assert!(both("<p>plain</p>").0.is_some());
    }
}
