//! The whole `simplify` stage from the raw page: the rewrites of the raw page (`raw.rs`),
//! lexbor's parse (`lexbor.rs`), the tree the specification reads lexbor's serialization as
//! (read off lexbor's tree, `dom.rs`; or lexbor's serialization, less its `<?xml …>`
//! declarations, read by `tree.rs`), then the segmentation (`simplify.rs`) with the two flags
//! read off the raw page. The specification is
//! `tests/spec/simplify_spec.py` (`simplify`) on `tests/spec/dom_spec.py`
//! (`lexbor_serialization`).

use crate::lexbor;
use crate::raw;
use crate::simplify::{self, Flags};
use crate::tree::{Res, Tree, Unsupported};

/// A page as the core takes it: UTF-8, lone surrogates allowed (see `raw.rs`).
pub struct Page<'a> {
    bytes: &'a [u8],
    has_surrogates: bool,
    /// what the rewrites and the flags search the raw page for, found in one pass
    marks: raw::Marks,
}

impl<'a> Page<'a> {
    pub fn new(bytes: &'a [u8]) -> Res<Page<'a>> {
        match raw::check_page(bytes) {
            Ok(has_surrogates) => Ok(Page { bytes, has_surrogates, marks: raw::Marks::of(bytes) }),
            Err(_) => Err(Unsupported("the page is not UTF-8")),
        }
    }
}

/// `lexbor_serialization(page)`: lexbor's serialization of the rewritten page, less its
/// `<?xml …>` declarations (the text whose libxml2-shaped tree the reference walks).
pub fn lexbor_serialization(page: &Page) -> Res<String> {
    serialization_of(&parse(page)?)
}

/// lexbor's document of the rewritten page.
fn parse(page: &Page) -> Res<lexbor::ParsedPage> {
    let rewritten = raw::rewrite(page.bytes, &page.marks);
    let input = raw::lexbor_input(&rewritten, page.has_surrogates);
    lexbor::ParsedPage::parse(&input).map_err(|e| Unsupported(e.message()))
}

/// `lexbor_serialization` of a parsed page.
fn serialization_of(parsed: &lexbor::ParsedPage) -> Res<String> {
    let serialized = parsed.selectolax_html().map_err(|e| Unsupported(e.message()))?;
    // selectolax decodes it strictly (valid UTF-8 in gives valid UTF-8 out)
    let serialized =
        String::from_utf8(serialized).map_err(|_| Unsupported("lexbor's serialization is not UTF-8"))?;
    Ok(raw::remove_xml_declarations(serialized))
}

/// How the tree of lexbor's serialization is had: read off lexbor's tree (`dom.rs`), unless
/// the walk gives up, or always through the serialization (for tests and benchmarks).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Read {
    Walk,
    Serialization,
}

/// `parse_serialized(lexbor_serialization(page))`: the tree (its `<html>` root), and whether it
/// was read through the serialization.
pub fn spec_tree(page: &Page, read: Read) -> Res<(Tree, usize, bool)> {
    let parsed = parse(page)?;
    if read == Read::Walk {
        let mut tree = Tree::default();
        if let Some(root) = crate::dom::spec_tree(&parsed, &mut tree) {
            return Ok((tree, root, false));
        }
    }
    let serialized = serialization_of(&parsed)?;
    drop(parsed);
    let mut tree = Tree::default();
    let root = crate::tree::parse_serialized(&mut tree, &serialized);
    Ok((tree, root, true))
}

/// `simplify(page, cutoff)`: (simplified_html, map_html); `keep_hidden`, `drop_noscript`: see
/// `Flags::keep_hidden`, `Flags::drop_noscript` (both false: the reference's segmentation).
pub fn simplify_page(
    page: &Page,
    cutoff: usize,
    keep_hidden: bool,
    drop_noscript: bool,
) -> Res<(String, String)> {
    simplify_page_read(page, cutoff, keep_hidden, drop_noscript, Read::Walk)
}

/// `simplify_page` with the tree the specification reads `map_html` as, where it is had
/// without reading `map_html` (`simplify::simplify_tree_and_map`): the block features' input.
pub fn simplify_page_and_map(
    page: &Page,
    cutoff: usize,
    keep_hidden: bool,
    drop_noscript: bool,
) -> Res<simplify::WithMapTree> {
    let (tree, root, _) = spec_tree(page, Read::Walk)?;
    simplify::simplify_tree_and_map(
        tree,
        root,
        page.bytes.len(),
        cutoff,
        &flags(page, keep_hidden, drop_noscript),
    )
}

fn flags(page: &Page, keep_hidden: bool, drop_noscript: bool) -> Flags {
    Flags {
        has_raw_text: page.marks.raw_text,
        has_non_xml_chars: raw::has_not_xml_chars(page.bytes),
        keep_hidden,
        drop_noscript,
    }
}

/// `simplify_page`, the tree had as `read` says.
pub fn simplify_page_read(
    page: &Page,
    cutoff: usize,
    keep_hidden: bool,
    drop_noscript: bool,
    read: Read,
) -> Res<(String, String)> {
    let (tree, root, _) = spec_tree(page, read)?;
    simplify::simplify_tree(tree, root, page.bytes.len(), cutoff, &flags(page, keep_hidden, drop_noscript))
}

/// `simplify_page` (`with_map` false) or `simplify_page_and_map` (true), with the page's
/// metadata read off the same tree before the segmentation takes it (`metadata.rs`).
pub fn simplify_page_with_metadata(
    page: &Page,
    cutoff: usize,
    keep_hidden: bool,
    drop_noscript: bool,
    with_map: bool,
) -> Res<(simplify::WithMapTree, crate::metadata::PageMetadata)> {
    let (tree, root, _) = spec_tree(page, Read::Walk)?;
    let metadata = crate::metadata::read(&tree, root);
    let flags = flags(page, keep_hidden, drop_noscript);
    let simplified = if with_map {
        simplify::simplify_tree_and_map(tree, root, page.bytes.len(), cutoff, &flags)?
    } else {
        let (simplified, map_html) = simplify::simplify_tree(tree, root, page.bytes.len(), cutoff, &flags)?;
        (simplified, map_html, None)
    };
    Ok((simplified, metadata))
}
