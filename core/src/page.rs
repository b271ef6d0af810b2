//! The whole `simplify` stage from the raw page: the rewrites of the raw page (`raw.rs`),
//! lexbor's parse and serialization (`lexbor.rs`), the `<?xml …>` removal, then the
//! segmentation (`simplify.rs`) with the two flags read off the raw page. The specification is
//! `tests/spec/simplify_spec.py` (`simplify`) on `tests/spec/dom_spec.py`
//! (`lexbor_serialization`).

use crate::lexbor;
use crate::raw;
use crate::simplify::{self, Flags};
use crate::tree::{Res, Unsupported};

/// A page as the core takes it: UTF-8, lone surrogates allowed (see `raw.rs`).
pub struct Page<'a> {
    bytes: &'a [u8],
    has_surrogates: bool,
}

impl<'a> Page<'a> {
    pub fn new(bytes: &'a [u8]) -> Res<Page<'a>> {
        match raw::check_page(bytes) {
            Ok(has_surrogates) => Ok(Page { bytes, has_surrogates }),
            Err(_) => Err(Unsupported("the page is not UTF-8")),
        }
    }
}

/// `lexbor_serialization(page)`: lexbor's serialization of the rewritten page, less its
/// `<?xml …>` declarations (the text whose libxml2-shaped tree the reference walks).
pub fn lexbor_serialization(page: &Page) -> Res<String> {
    let rewritten = raw::rewrite(page.bytes);
    let input = raw::lexbor_input(&rewritten, page.has_surrogates);
    let serialized = lexbor::selectolax_html(&input).map_err(|e| Unsupported(e.message()))?;
    // selectolax decodes it strictly (valid UTF-8 in gives valid UTF-8 out)
    let serialized =
        String::from_utf8(serialized).map_err(|_| Unsupported("lexbor's serialization is not UTF-8"))?;
    Ok(raw::remove_xml_declarations(serialized))
}

/// `simplify(page, cutoff)`: (simplified_html, map_html); `keep_hidden`, `drop_noscript`: see
/// `Flags::keep_hidden`, `Flags::drop_noscript` (both false: the reference's segmentation).
pub fn simplify_page(
    page: &Page,
    cutoff: usize,
    keep_hidden: bool,
    drop_noscript: bool,
) -> Res<(String, String)> {
    let serialized = lexbor_serialization(page)?;
    let flags = Flags {
        has_raw_text: raw::has_raw_text(page.bytes),
        has_non_xml_chars: raw::has_not_xml_chars(page.bytes),
        keep_hidden,
        drop_noscript,
    };
    simplify::simplify_serialized(&serialized, cutoff, &flags)
}
