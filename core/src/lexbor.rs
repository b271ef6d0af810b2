//! lexbor, linked in (`build.rs`): a page's bytes parsed as an HTML document and serialized
//! again, byte for byte what selectolax 0.4.10's `LexborHTMLParser(data).html` returns
//! (`lxb_html_serialize_tree_str` on the document node, read as a NUL-terminated C string, with
//! every `<-undef>` removed).
//!
//! Only the few lexbor functions called here are declared (lexbor's headers are not needed:
//! documents are opaque pointers, and a `lxb_html_document_t` starts with its DOM node, the
//! pointer selectolax passes to the serializer).

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

extern "C" {
    fn lxb_html_document_create() -> *mut Document;
    fn lxb_html_document_parse(document: *mut Document, html: *const u8, size: usize) -> Status;
    fn lxb_html_serialize_tree_cb(node: *mut c_void, cb: SerializeCallback, ctx: *mut c_void) -> Status;
    fn lxb_html_document_destroy(document: *mut Document) -> *mut Document;
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

/// lexbor's serialization of the document it parses from `html` (bytes as lexbor writes them:
/// UTF-8 when `html` is).
pub fn serialize_document(html: &[u8]) -> Result<Vec<u8>, Error> {
    // SAFETY: the document is created, used and destroyed (by `Parsed`) here only; lexbor reads
    // `html` during the parse call and keeps no pointer to it; the callback's context is `out`,
    // alive for the whole serialization.
    unsafe {
        let document = lxb_html_document_create();
        if document.is_null() {
            return Err(Error::Create);
        }
        let document = Parsed(document);
        let status = lxb_html_document_parse(document.0, html.as_ptr(), html.len());
        if status != STATUS_OK {
            return Err(Error::Parse(status));
        }
        // room for the tags and escapes lexbor adds: growing a buffer of a whole page copies it
        let mut out: Vec<u8> = Vec::with_capacity(html.len() + html.len() / 4 + 256);
        let status = lxb_html_serialize_tree_cb(
            document.0 as *mut c_void,
            append,
            &mut out as *mut Vec<u8> as *mut c_void,
        );
        if status != STATUS_OK {
            return Err(Error::Serialize(status));
        }
        Ok(out)
    }
}

/// What `LexborHTMLParser(html).html` returns, as bytes: the serialization up to its first NUL
/// (selectolax decodes lexbor's string as a C string) less every `<-undef>`.
pub fn selectolax_html(html: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = serialize_document(html)?;
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
}
