//! lexbor, linked in (`build.rs`): a page's bytes parsed as an HTML document and serialized
//! again, byte for byte what selectolax 0.4.10's `LexborHTMLParser(data).html` returns
//! (`lxb_html_serialize_tree_str` on the document node, read as a NUL-terminated C string, with
//! every `<-undef>` removed).
//!
//! Only the few lexbor functions called here are declared (lexbor's headers are not needed:
//! documents are opaque pointers, and a `lxb_html_document_t` starts with its DOM node, the
//! pointer selectolax passes to the serializer). `dom.rs` reads the parsed tree itself through
//! `Node` and the accessors below: the first fields of lexbor's `lxb_dom_node_t`, and the two
//! places past an element's or a text's node it reads (offsets of lexbor 2.x's structs, for
//! x86-64 and every other 64-bit target; `Document::template_content` checks its answer).

use std::ffi::c_void;

/// `lxb_status_t` (`unsigned int`); `LXB_STATUS_OK` is 0.
type Status = std::ffi::c_uint;
const STATUS_OK: Status = 0;
const STATUS_ERROR: Status = 1;

#[repr(C)]
struct Document {
    _opaque: [u8; 0],
}

type SerializeCallback = unsafe extern "C" fn(data: *const u8, len: usize, ctx: *mut c_void) -> Status;

/// The first fields of `lxb_dom_node_t` (dom/interfaces/node.h), which every DOM object
/// (element, text, comment, attribute, document) starts with.
#[repr(C)]
pub struct Node {
    _event_target: *mut c_void,
    /// the tag id of an element (`lxb_tag_id_enum_t`), or of an attribute's name
    pub local_name: usize,
    _prefix: usize,
    /// the namespace id (`lxb_ns_id_enum_t`)
    pub ns: usize,
    _owner_document: *mut c_void,
    pub next: *mut Node,
    _prev: *mut Node,
    pub parent: *mut Node,
    pub first_child: *mut Node,
    _last_child: *mut Node,
    _user: *mut c_void,
    /// `lxb_dom_node_type_t`
    pub kind: std::ffi::c_uint,
}

/// `lxb_dom_character_data_t`: a text's or comment's node, then its data.
#[repr(C)]
struct CharacterData {
    node: Node,
    data: *const u8,
    length: usize,
}

/// `lxb_html_template_element_t`: the element (`lxb_dom_element_t`, 176 bytes), then the
/// document fragment its content is parsed into (`lxb_dom_document_fragment_t`: a node, then
/// its host element).
#[repr(C)]
struct TemplateElement {
    _element: [u8; 176],
    content: *mut Node,
}

#[repr(C)]
struct DocumentFragment {
    node: Node,
    host: *mut Node,
}

/// `lxb_dom_node_type_t` values.
pub const ELEMENT: std::ffi::c_uint = 1;
pub const TEXT: std::ffi::c_uint = 3;
pub const COMMENT: std::ffi::c_uint = 8;
pub const DOCUMENT_TYPE: std::ffi::c_uint = 10;
const DOCUMENT_FRAGMENT: std::ffi::c_uint = 11;

/// `lxb_ns_id_enum_t` values an attribute's namespace takes.
pub const NS_UNDEF: usize = 0;
pub const NS_HTML: usize = 2;
pub const NS_XLINK: usize = 5;
pub const NS_XML: usize = 6;
pub const NS_XMLNS: usize = 7;

/// `lxb_tag_id_enum_t` values of the elements whose text the serializer writes unescaped
/// (`lxb_html_serialize_text_cb`; `noscript` only when the document runs scripts), and of
/// `template`.
pub const RAW_TEXT_TAGS: [usize; 7] = [0xad, 0xa1, 0xc5, 0x67, 0x89, 0x8a, 0x95];
pub const TAG_NOSCRIPT: usize = 0x8b;
pub const TAG_TEMPLATE: usize = 0xb5;

extern "C" {
    fn lxb_html_document_create() -> *mut Document;
    // src/lexbor_parse.c
    fn pulpie_rt_lexbor_parse(
        document: *mut Document,
        html: *const u8,
        size: usize,
        max_attributes: usize,
    ) -> Status;
    fn lxb_html_serialize_tree_cb(node: *mut c_void, cb: SerializeCallback, ctx: *mut c_void) -> Status;
    fn lxb_html_document_destroy(document: *mut Document) -> *mut Document;
    fn lxb_dom_document_scripting_noi(document: *mut Document) -> bool;
    fn lxb_html_node_is_void_noi(node: *mut Node) -> bool;
    fn lxb_dom_element_qualified_name(element: *const Node, len: *mut usize) -> *const u8;
    fn lxb_dom_element_first_attribute_noi(element: *mut Node) -> *mut Node;
    fn lxb_dom_element_next_attribute_noi(attr: *mut Node) -> *mut Node;
    fn lxb_dom_attr_local_name_noi(attr: *mut Node, len: *mut usize) -> *const u8;
    fn lxb_dom_attr_qualified_name(attr: *const Node, len: *mut usize) -> *const u8;
    fn lxb_dom_attr_value_noi(attr: *mut Node, len: *mut usize) -> *const u8;
}

/// Owns a lexbor document: destroyed when dropped, whatever happens in between.
struct Parsed(*mut Document);

impl Drop for Parsed {
    fn drop(&mut self) {
        // SAFETY: the pointer came from lxb_html_document_create and is destroyed once
        unsafe { lxb_html_document_destroy(self.0) };
    }
}

/// Appends each piece lexbor writes to the `Vec<u8>` behind `ctx`.
unsafe extern "C" fn append(data: *const u8, len: usize, ctx: *mut c_void) -> Status {
    // no unwinding out of a C callback: a failure is reported to lexbor as a status
    let appended = std::panic::catch_unwind(|| {
        let out = &mut *(ctx as *mut Vec<u8>);
        if len > 0 {
            out.extend_from_slice(std::slice::from_raw_parts(data, len));
        }
    });
    if appended.is_ok() {
        STATUS_OK
    } else {
        STATUS_ERROR
    }
}

/// Why lexbor gave no serialization.
#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    Create,
    Parse(u32),
    Serialize(u32),
}

impl Error {
    pub fn message(&self) -> &'static str {
        match self {
            Error::Create => "lexbor could not create a document (out of memory)",
            Error::Parse(_) => "lexbor could not parse the page",
            Error::Serialize(_) => "lexbor could not serialize the page",
        }
    }
}

/// The attributes an element keeps: its start tag's first `MAX_ATTRIBUTES`, the rest dropped
/// before lexbor's tree builder sees them (`lexbor_parse.c`; the header says why). A browser
/// keeps them all, so a page past the bound is the one place the tree is not selectolax's.
pub const MAX_ATTRIBUTES: usize = crate::abi::PULPIE_RT_MAX_ATTRIBUTES as usize;

/// A parsed page: lexbor's document, destroyed when dropped.
pub struct ParsedPage {
    document: Parsed,
    /// the input's length (a size hint for what is made of it)
    pub input_len: usize,
}

impl ParsedPage {
    /// lexbor's document of `html` (bytes as lexbor reads them: UTF-8 when `html` is), each
    /// element with at most `MAX_ATTRIBUTES` attributes.
    pub fn parse(html: &[u8]) -> Result<ParsedPage, Error> {
        // SAFETY: the document is created here and destroyed by `Parsed`; lexbor reads `html`
        // during the parse call and keeps no pointer to it.
        unsafe {
            let document = lxb_html_document_create();
            if document.is_null() {
                return Err(Error::Create);
            }
            let document = Parsed(document);
            let status = pulpie_rt_lexbor_parse(document.0, html.as_ptr(), html.len(), MAX_ATTRIBUTES);
            if status != STATUS_OK {
                return Err(Error::Parse(status));
            }
            Ok(ParsedPage { document, input_len: html.len() })
        }
    }

    /// lexbor's serialization of the document (UTF-8 when the input was).
    pub fn serialize(&self) -> Result<Vec<u8>, Error> {
        // room for the tags and escapes lexbor adds: growing a buffer of a whole page copies it
        let mut out: Vec<u8> = Vec::with_capacity(self.input_len + self.input_len / 4 + 256);
        // SAFETY: the callback's context is `out`, alive for the whole serialization
        let status = unsafe {
            lxb_html_serialize_tree_cb(
                self.document.0 as *mut c_void,
                append,
                &mut out as *mut Vec<u8> as *mut c_void,
            )
        };
        if status != STATUS_OK {
            return Err(Error::Serialize(status));
        }
        Ok(out)
    }

    /// What `LexborHTMLParser(html).html` returns, as bytes: the serialization up to its first
    /// NUL (selectolax decodes lexbor's string as a C string) less every `<-undef>`.
    pub fn selectolax_html(&self) -> Result<Vec<u8>, Error> {
        selectolax_cleanup(self.serialize()?)
    }

    /// The document's node (its children are the serialization's top level).
    pub fn root(&self) -> *mut Node {
        self.document.0 as *mut Node
    }

    /// Whether the document was parsed with scripting on (its `noscript` content is raw text).
    pub fn scripting(&self) -> bool {
        // SAFETY: a live document
        unsafe { lxb_dom_document_scripting_noi(self.document.0) }
    }

    /// The first node of a `template` element's content (its children come after), or Err
    /// where the element's content is not where `TemplateElement` says.
    ///
    /// # Safety
    /// `element` is an element of this document whose tag id is `TAG_TEMPLATE` in the HTML
    /// namespace (a `lxb_html_template_element_t`).
    pub unsafe fn template_content(&self, element: *mut Node) -> Result<*mut Node, ()> {
        let content = (*(element as *const TemplateElement)).content;
        if content.is_null() {
            return Ok(std::ptr::null_mut());
        }
        let fragment = &*(content as *const DocumentFragment);
        if fragment.node.kind != DOCUMENT_FRAGMENT || fragment.host != element {
            return Err(());
        }
        Ok(fragment.node.first_child)
    }
}

/// A text's or comment's data.
///
/// # Safety
/// `node` is a text or comment node of a live document.
pub unsafe fn character_data<'a>(node: *mut Node) -> &'a [u8] {
    let data = &*(node as *const CharacterData);
    if data.data.is_null() {
        return &[];
    }
    std::slice::from_raw_parts(data.data, data.length)
}

/// Whether the serializer writes no end tag and no content for an element (`lxb_html_node_is_void`).
///
/// # Safety
/// `node` is a node of a live document.
pub unsafe fn is_void(node: *mut Node) -> bool {
    lxb_html_node_is_void_noi(node)
}

/// An element's name as the serializer writes it (`lxb_dom_element_qualified_name`).
///
/// # Safety
/// `element` is an element of a live document.
pub unsafe fn element_name<'a>(element: *mut Node) -> &'a [u8] {
    let mut len = 0usize;
    let name = lxb_dom_element_qualified_name(element, &mut len);
    if name.is_null() {
        return &[];
    }
    std::slice::from_raw_parts(name, len)
}

/// An element's attributes in order: each one's name as the serializer writes it (its
/// namespace's prefix, then the local name; None for a namespace it has no rule for), and its
/// value (an attribute without one: empty, as the serializer writes `=""`).
///
/// # Safety
/// `element` is an element of a live document, alive while the iterator is.
pub unsafe fn attributes<'a>(
    element: *mut Node,
) -> impl Iterator<Item = (Option<(&'a str, &'a [u8])>, &'a [u8])> {
    let mut attr = lxb_dom_element_first_attribute_noi(element);
    std::iter::from_fn(move || {
        if attr.is_null() {
            return None;
        }
        let current = attr;
        attr = lxb_dom_element_next_attribute_noi(current);
        let mut len = 0usize;
        let local = lxb_dom_attr_local_name_noi(current, &mut len);
        let local: &[u8] = if local.is_null() { &[] } else { std::slice::from_raw_parts(local, len) };
        // lxb_html_serialize_attribute_cb: the namespace decides the prefix
        let name = match (*current).ns {
            NS_UNDEF => Some(("", local)),
            NS_XML => Some(("xml:", local)),
            NS_XMLNS if local == b"xmlns" => Some(("", local)),
            NS_XMLNS => Some(("xmlns:", local)),
            NS_XLINK => Some(("xlink:", local)),
            _ => {
                let qualified = lxb_dom_attr_qualified_name(current, &mut len);
                (!qualified.is_null()).then(|| ("", std::slice::from_raw_parts(qualified, len)))
            }
        };
        let value = lxb_dom_attr_value_noi(current, &mut len);
        let value: &[u8] = if value.is_null() { &[] } else { std::slice::from_raw_parts(value, len) };
        Some((name, value))
    })
}

/// lexbor's serialization of the document it parses from `html` (bytes as lexbor writes them:
/// UTF-8 when `html` is).
pub fn serialize_document(html: &[u8]) -> Result<Vec<u8>, Error> {
    ParsedPage::parse(html)?.serialize()
}

/// What `LexborHTMLParser(html).html` returns, as bytes: the serialization up to its first NUL
/// (selectolax decodes lexbor's string as a C string) less every `<-undef>`.
pub fn selectolax_html(html: &[u8]) -> Result<Vec<u8>, Error> {
    selectolax_cleanup(serialize_document(html)?)
}

/// A serialization as selectolax returns it: up to its first NUL, less every `<-undef>`.
fn selectolax_cleanup(mut out: Vec<u8>) -> Result<Vec<u8>, Error> {
    if let Some(nul) = crate::scan::find_byte(0, &out) {
        out.truncate(nul);
    }
    const UNDEF: &[u8] = b"<-undef>";
    if let Some(first) = crate::scan::find_bytes(&out, UNDEF) {
        // each occurrence, left to right, cut out (what Python's str.replace does)
        let mut kept = Vec::with_capacity(out.len());
        kept.extend_from_slice(&out[..first]);
        let mut i = first + UNDEF.len();
        while let Some(k) = crate::scan::find_bytes(&out[i..], UNDEF) {
            kept.extend_from_slice(&out[i..i + k]);
            i += k + UNDEF.len();
        }
        kept.extend_from_slice(&out[i..]);
        out = kept;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_is_completed_and_serialized() {
        let html = selectolax_html(b"<p>Hi<b>x</b><svg><path/></svg>").unwrap();
        assert_eq!(
            std::str::from_utf8(&html).unwrap(),
            "<html><head></head><body><p>Hi<b>x</b><svg><path></path></svg></p></body></html>"
        );
    }

    #[test]
    fn empty_page() {
        let html = selectolax_html(b"").unwrap();
        assert_eq!(html, b"<html><head></head><body></body></html>");
    }

    extern "C" {
        fn lxb_html_document_parse(document: *mut Document, html: *const u8, size: usize) -> Status;
    }

    /// lexbor's own parse, without the bound or the wider hashes, serialized.
    fn serialized_by_lexbor_alone(html: &[u8]) -> Vec<u8> {
        // SAFETY: as ParsedPage::parse
        let page = unsafe {
            let document = Parsed(lxb_html_document_create());
            assert_eq!(lxb_html_document_parse(document.0, html.as_ptr(), html.len()), STATUS_OK);
            ParsedPage { document, input_len: html.len() }
        };
        page.serialize().unwrap()
    }

    fn attributes(names: impl Iterator<Item = String>) -> String {
        names.map(|name| format!(" {name}=\"v\"")).collect()
    }

    #[test]
    fn an_element_keeps_its_first_max_attributes() {
        let over = format!(
            "<p{}>x</p><p{}>y</p>",
            attributes((0..MAX_ATTRIBUTES + 3).map(|i| format!("a{i}"))),
            attributes((0..MAX_ATTRIBUTES).map(|i| format!("b{i}")))
        );
        let page = ParsedPage::parse(over.as_bytes()).unwrap();
        let kept = format!(
            "<p{}>x</p><p{}>y</p>",
            attributes((0..MAX_ATTRIBUTES).map(|i| format!("a{i}"))),
            attributes((0..MAX_ATTRIBUTES).map(|i| format!("b{i}")))
        );
        assert_eq!(page.serialize().unwrap(), serialized_by_lexbor_alone(kept.as_bytes()));
        // a duplicate counts among the first: the tree builder drops it after the cut
        let duplicates =
            format!("<p a=\"1\" a=\"2\"{}>x</p>", attributes((0..MAX_ATTRIBUTES).map(|i| format!("c{i}"))));
        let page = ParsedPage::parse(duplicates.as_bytes()).unwrap();
        let kept =
            format!("<p a=\"1\"{}>x</p>", attributes((0..MAX_ATTRIBUTES - 2).map(|i| format!("c{i}"))));
        assert_eq!(page.serialize().unwrap(), serialized_by_lexbor_alone(kept.as_bytes()));
    }

    #[test]
    fn a_page_of_many_names_parses_as_lexbor_alone_parses_it() {
        // 30,000 tag names and 60,000 attribute names, a page past the size the wider hashes
        // start at, mixed case (the hashes fold it), some written twice
        let page: String = (0..30_000)
            .map(|i| format!("<X-T{i} data-A{i}=\"1\" data-b{}=\"2\">t</x-t{i}>", i / 2))
            .collect();
        let ours = ParsedPage::parse(page.as_bytes()).unwrap();
        assert_eq!(ours.serialize().unwrap(), serialized_by_lexbor_alone(page.as_bytes()));
    }
}
