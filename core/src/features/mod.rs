//! The default model's block features (`runtime/stages/features.py`, layout `blocks-v1`), read
//! from the core's tree of `map_html`: one row of `N_FEATURES` float32 values per block id.
//! `tests/spec/features_spec.py` is the specification, column by column; the comments here
//! say where a value's arithmetic follows numpy's (the order of operations and the precision
//! per column are the specification's, so that values are equal, not merely close).
//!
//! The specification reads selectolax/lexbor's tree of `map_html`; this reads the core's
//! libxml2-shaped tree of it, built as `simplify` builds its tree of lexbor's serialization
//! (`tree::parse` with `Reader::Spec`), so it is the tree the blocks were cut from, seen as
//! the HTML DOM sees a document (`DomView`): a `<template>`'s content is not part of the
//! document, and the elements HTML makes void hold nothing (libxml2's shape makes `source`,
//! `wbr` … containers of their following siblings). Both are what the specification's tree
//! gives, and the rescorer was trained on its values (read as libxml2 has them, template
//! blocks change the default model's labels on dev pages). Elsewhere the two trees of the
//! same text still differ where markup is misnested or a `<pre>` starts with a newline (a few
//! train pages, no dev page); there the core keeps its own tree, which is also libxml2's
//! (the reference's lxml reading of `map_html`). `python -m
//! parity.features_parity` measures all this; with `libxml2_tree` (the FFI flag
//! `FEATURES_LIBXML2_TREE`) the features are read from the tree as it is.
//!
//! Not `Reader::Libxml2` (`reconstruct`'s exact libxml2 2.14 reading): libxml2 drops
//! whitespace-only text between elements that lexbor keeps, and the specification's text
//! joins every text node with a space, so `chars`, `sentences` and `digit_ratio` would
//! differ on most pages (dev: 8,621 values on 206 of 254 pages, 23 labels). The reader
//! refuses nothing; what `Reader::Spec` reads unlike an HTML parser (a "/" inside a start tag
//! that does not end it, an unclosed quote) a serializer never writes into `map_html`.

pub mod context;
mod text;

pub use text::KEYWORDS;
use text::{count_words, is_digit, keyword_bits, letter_pair, lower, lower_words, LETTER_PAIRS};

use crate::hash::FastMap;
use crate::tree::{Reader, Tree, NONE};

pub const N_FEATURES: usize = 166;

/// The `extras-v1` columns that `block_features` appends to each row when asked (the `fast`
/// profile's layout `blocks-v2` = `blocks-v1` + these; the `accurate` rescorer reads
/// `blocks-v1`): the block's CJK characters (a `\w+` word there is a whole phrase, so `words`
/// alone makes Chinese, Japanese and Korean prose look like short menu items), and how many
/// levels up the nearest element (the block's own, 0, or an ancestor) carries each of
/// `DISTANCE_KEYWORDS` in its class/id/role/itemprop or is each of `DISTANCE_TAGS`
/// (`NO_DISTANCE` when none does): a comment thread or a related-links box is recognised by
/// how close its container is, which the ancestor flags of `blocks-v1` (any ancestor at all)
/// cannot tell from a page-wide `<body class="has-sidebar">`.
pub const DISTANCE_KEYWORDS: [&str; 23] = [
    "comment", "related", "share", "social", "sidebar", "footer", "nav", "menu", "header", "widget", "promo",
    "recommend", "newsletter", "reply", "author", "article", "content", "main", "post", "entry", "body",
    "text", "story",
];
pub const DISTANCE_TAGS: [&str; 9] =
    ["article", "aside", "nav", "footer", "header", "main", "form", "section", "li"];
pub const N_EXTRAS: usize = 1 + DISTANCE_KEYWORDS.len() + DISTANCE_TAGS.len();
pub const NO_DISTANCE: f32 = 40.0;

/// The container columns that layout `blocks-v3` (`blocks-v2` + these; the `fast` profile's
/// rescorer judges a block beside the other blocks of its DOM containers) appends after the
/// extras: for level k = 1..=`N_CONTAINERS`, the k-th element of the block's ancestor chain
/// (nearest first: the parent of the block's element, up to but not including `<html>`: the
/// chain that `depth` counts, but for a run wrapper starting at the wrapper's parent, the
/// element whose text it holds beside that element's other blocks), written as that element's
/// index in this tree (document order), `NO_CONTAINER` where the chain is shorter.
/// Identifiers, not measurements: only equality between rows of the same page means
/// anything (two blocks sharing a level-k value sit in the same element); the numbers
/// differ between trees (the specification's and this one) and between pages.
pub const N_CONTAINERS: usize = 8;
pub const NO_CONTAINER: f32 = -1.0;
/// The dialog columns that layout `blocks-v4` (`blocks-v3` + these) appends after the
/// container identifiers: how many levels up (the block's own element, 0, or an ancestor, as
/// `DISTANCE_TAGS` count) the nearest dialog is (`<dialog>`, or a `role` of `dialog` or
/// `alertdialog`), and the nearest modal (`aria-modal="true"`); `NO_DISTANCE` when none is.
/// Pages hold their privacy policies, terms, consent notices and sign-up forms in closed
/// dialogs, thousands of words of prose that no class or id word gives away (`modal`,
/// `popup`: half of the train pages' blocks under those words are main, under a dialog 3%).
pub const DIALOG_NAMES: [&str; 2] = ["distance_dialog", "distance_modal"];
pub const N_DIALOGS: usize = DIALOG_NAMES.len();
/// The rail columns that layout `blocks-v5` (`blocks-v4` + these) appends after the dialog
/// columns: what tells a rail of headlines, teasers or comments beside a story from the
/// story's own paragraphs. A block's item is the nearest element of its chain (its own
/// element, 0, then its ancestors up to `RAIL_LEVELS - 1` levels, as `DISTANCE_TAGS` count)
/// whose parent holds at least `RAIL_MIN_ITEMS` element children of its signature (the same
/// tag and the same `class` value): a run of structurally alike siblings, an MDR-style data
/// region. Its columns: how many items the run holds (0 where no item), the item's level
/// (`NO_DISTANCE` where none), the words of the page's blocks inside the item and the share
/// of them inside links (link ratio weighted by words), the share of the run's items that
/// hold a `<time>`; then how many levels up the nearest element whose class, id or
/// aria-label holds one of `RAIL_WORDS` and of `COMMENT_WORDS` (ASCII case aside) is.
pub const RAIL_NAMES: [&str; 7] = [
    "rail_items",
    "rail_level",
    "rail_item_words",
    "rail_item_link_share",
    "rail_items_time_share",
    "distance_rail_word",
    "distance_comment_word",
];
pub const N_RAILS: usize = RAIL_NAMES.len();
pub const RAIL_LEVELS: usize = 6;
pub const RAIL_MIN_ITEMS: usize = 3;
pub const RAIL_WORDS: [&str; 23] = [
    "trending", "popular", "most-read", "mostread", "most_read", "latest", "teaser", "outbrain", "taboola",
    "recirc", "headlines", "top-stories", "topstories", "more-from", "morefrom", "read-more", "readmore",
    "related", "recommend", "promo", "sponsor", "partner", "ranking",
];
pub const COMMENT_WORDS: [&str; 6] = ["comment", "poll", "survey", "disqus", "discussion", "vote"];

/// The teaser columns that layout `blocks-v6` (`blocks-v5` + these) appends after the rail
/// columns: what tells a teaser card or headline of another story from the page's own story.
/// First the page's kind, the same in every row (`metadata::PageKind`: `og:type` article or
/// website, a JSON-LD story, listing or product; 1 or 0): on a story's page a run of alike
/// linked cards is other stories, on a listing or a shop it is what the page is for. Then of
/// the block's run (the rail columns' item and its alike siblings; 0 where no item): the share
/// of its items holding a byline (an element whose class, id, rel or itemprop holds `author`
/// or `byline`), a heading (`h1`-`h6`), and most of their words inside links (a linked
/// headline), and the run's words as a share of the page's. Last the block's place against
/// the story (readability's candidate, `in_candidate`): 1 after its last block, -1 before its
/// first, 0 inside it or where the page has none; and how many levels up the block's nearest
/// element holding the candidate (or being it) is, `NO_DISTANCE` where none: a rail inside
/// the story's own container is near, a sidebar's is far.
pub const TEASER_NAMES: [&str; 11] = [
    "page_og_article",
    "page_og_website",
    "page_ld_article",
    "page_ld_listing",
    "page_ld_product",
    "rail_items_byline_share",
    "rail_items_heading_share",
    "rail_items_linked_share",
    "rail_run_word_share",
    "after_story",
    "story_level",
];
pub const N_TEASERS: usize = TEASER_NAMES.len();
/// An item is linked where this share of its words or more is inside links.
const LINKED_ITEM_SHARE: f64 = 0.5;
/// Words of a class, id, rel or itemprop that mark a byline.
const BYLINE_WORDS: [&str; 2] = ["author", "byline"];

/// Node indexes a float32 holds exactly (below 2^24); an element past them (a page of some
/// 50 MB of markup) is written `NO_CONTAINER`, so that no two containers share a value.
const EXACT_NODE_INDEXES: usize = 1 << 24;

/// Per bit of `keyword_flags` (a `KEYWORDS` index), its column among `DISTANCE_KEYWORDS`
/// (`NOT_A_DISTANCE` where none).
const DISTANCE_SLOTS: [u8; KEYWORDS.len()] = {
    let mut slots = [NOT_A_DISTANCE; KEYWORDS.len()];
    let mut slot = 0;
    while slot < DISTANCE_KEYWORDS.len() {
        slots[index_of(&KEYWORDS, DISTANCE_KEYWORDS[slot])] = slot as u8;
        slot += 1;
    }
    slots
};
const NOT_A_DISTANCE: u8 = u8::MAX;
/// The bits of `keyword_flags` that `DISTANCE_KEYWORDS` are.
const DISTANCE_KEYWORD_MASK: u64 = {
    let mut mask = 0u64;
    let mut k = 0;
    while k < KEYWORDS.len() {
        if DISTANCE_SLOTS[k] != NOT_A_DISTANCE {
            mask |= 1 << k;
        }
        k += 1;
    }
    mask
};

/// The place of `word` in `words`, at compile time (past the end, a compile error, where it
/// is none of them).
const fn index_of(words: &[&str], word: &str) -> usize {
    let mut index = 0;
    while !bytes_equal(words[index].as_bytes(), word.as_bytes()) {
        index += 1;
    }
    index
}

const fn bytes_equal(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Han ideographs, kana and Hangul syllables: the scripts written without spaces between
/// words (or, for Korean, with words far longer than a `\w+` count suggests).
fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF
        | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// Column offsets: block columns, own keywords, ancestors' keywords, ancestor tags, page
/// columns, text statistics (`np.concatenate` order of the specification).
const BLOCK: usize = 0;
const OWN_KW: usize = 12;
const ANCESTOR_KW: usize = OWN_KW + KEYWORDS.len();
const ANCESTOR_TAG: usize = ANCESTOR_KW + KEYWORDS.len();
const PAGE: usize = ANCESTOR_TAG + ANCESTOR_TAGS.len();
const TEXT_STATS: usize = PAGE + 17;
const _: () = assert!(TEXT_STATS + 3 == N_FEATURES);

const WINDOW: usize = 3;
const CANDIDATE_LEVELS: usize = 6;
const RUN_WRAPPER_TAG: &str = "cc-alg-uc-text";
const ITEM_ID_ATTR: &str = "_item_id";

/// `TAGS` of the specification: the categorical value of a tag (0: any other).
fn tag_id(tag: &str) -> u8 {
    match tag {
        "p" => 1,
        "div" => 2,
        "li" => 3,
        "ul" => 4,
        "ol" => 5,
        "h1" => 6,
        "h2" => 7,
        "h3" => 8,
        "h4" => 9,
        "h5" => 10,
        "h6" => 11,
        "a" => 12,
        "span" => 13,
        "td" => 14,
        "th" => 15,
        "tr" => 16,
        "table" => 17,
        "pre" => 18,
        "code" => 19,
        "img" => 20,
        "figure" => 21,
        "figcaption" => 22,
        "blockquote" => 23,
        "form" => 24,
        "button" => 25,
        "section" => 26,
        "article" => 27,
        "header" => 28,
        "footer" => 29,
        "nav" => 30,
        "aside" => 31,
        "main" => 32,
        "dl" => 33,
        "dt" => 34,
        "dd" => 35,
        "label" => 36,
        "select" => 37,
        "input" => 38,
        "time" => 39,
        "strong" => 40,
        "em" => 41,
        "b" => 42,
        "i" => 43,
        "small" => 44,
        "cc-alg-uc-text" => 45,
        "source" => 46,
        "picture" => 47,
        "video" => 48,
        "iframe" => 49,
        "address" => 50,
        _ => 0,
    }
}

const H1: u8 = 6;
/// `tag_id("figcaption")`.
const FIGCAPTION: u8 = 22;

/// A caption, as `continue_story` (`engine::decode`) reads a block's columns: a `<figcaption>`
/// (the block's tag or its own element's, `tag_id`) or a block under a `<figure>`
/// (`ancestor_figure`). `row` is the block's row of any layout (every one starts with the
/// `blocks-v1` columns).
pub(crate) fn is_caption(row: &[f32]) -> bool {
    row[BLOCK] == FIGCAPTION as f32 || row[BLOCK + 1] == FIGCAPTION as f32 || row[ANCESTOR_FIGURE] > 0.0
}

/// The `ancestor_figure` column.
const ANCESTOR_FIGURE: usize = ANCESTOR_TAG + index_of(&ANCESTOR_TAGS, "figure");

/// `ANCESTOR_TAGS` of the specification, in column order.
pub const ANCESTOR_TAGS: [&str; 20] = [
    "nav", "header", "footer", "aside", "article", "main", "form", "li", "table", "section", "ul", "ol", "a",
    "button", "h1", "h2", "h3", "figure", "blockquote", "dl",
];

fn ancestor_index(tag: &str) -> Option<usize> {
    ANCESTOR_TAGS.iter().position(|t| *t == tag)
}

/// `_keyword_flags`: the keywords in the node's class, id, role and itemprop values (those
/// present and not empty, joined by spaces, lowercased as `str.lower()` does). No keyword
/// holds a space, so no match crosses from one value to the next: each value is scanned on
/// its own.
fn keyword_flags(tree: &Tree, node: usize) -> u64 {
    let mut bits = 0;
    for (name, value) in &tree.attrs[tree.nodes[node].attrs] {
        if !matches!(name.as_str(), "class" | "id" | "role" | "itemprop") {
            continue;
        }
        bits |= if value.is_ascii() { keyword_bits(value) } else { keyword_bits(&lower(value)) };
    }
    bits
}

/// Whether `node` is a dialog (`<dialog>`, or a `role` token `dialog` or `alertdialog`) and
/// whether it is a modal (`aria-modal` is `true`), ASCII case aside.
fn dialog_kind(tree: &Tree, node: usize) -> (bool, bool) {
    let mut dialog = tree.nodes[node].tag.as_str() == "dialog";
    let mut modal = false;
    for (name, value) in &tree.attrs[tree.nodes[node].attrs] {
        match name.as_str() {
            "role" => {
                dialog |= value.split_ascii_whitespace().any(|role| {
                    role.eq_ignore_ascii_case("dialog") || role.eq_ignore_ascii_case("alertdialog")
                })
            }
            "aria-modal" => modal |= value.trim_ascii().eq_ignore_ascii_case("true"),
            _ => {}
        }
    }
    (dialog, modal)
}

/// Records `depth` in the dialog columns (`distances`: a row's `N_DIALOGS`) that the element
/// of `info` is the kind of, where no nearer element was.
fn set_dialog_distances(distances: &mut [f32], info: &NodeInfo, depth: usize) {
    for (slot, is) in distances.iter_mut().zip([info.dialog, info.modal]) {
        if is {
            record_nearest(slot, depth);
        }
    }
}

/// What the rows read of an element of a block's chain (its own element and its ancestors),
/// found once per element and page: the chains of a page's blocks share most of their
/// elements, and each would otherwise compare the element's tag with the column tags and
/// scan its attributes again.
#[derive(Clone, Copy, Default)]
struct NodeInfo {
    /// `keyword_flags`
    keywords: u64,
    /// its index in `ANCESTOR_TAGS`
    ancestor_tag: Option<u8>,
    /// its index in `DISTANCE_TAGS`
    distance_tag: Option<u8>,
    /// `dialog_kind`
    dialog: bool,
    modal: bool,
    is_link: bool,
    is_html: bool,
}

impl NodeInfo {
    fn of(tree: &Tree, node: usize) -> NodeInfo {
        let tag = tree.nodes[node].tag.as_str();
        let (dialog, modal) = dialog_kind(tree, node);
        NodeInfo {
            keywords: keyword_flags(tree, node),
            ancestor_tag: ancestor_index(tag).map(|i| i as u8),
            distance_tag: DISTANCE_TAGS.iter().position(|t| *t == tag).map(|i| i as u8),
            dialog,
            modal,
            is_link: tag == "a",
            is_html: tag == "html",
        }
    }
}

/// `NodeInfo` of each element of a page, found at the first asking.
struct NodeInfos {
    infos: Vec<Option<NodeInfo>>,
}

impl NodeInfos {
    fn new(size: usize) -> NodeInfos {
        NodeInfos { infos: vec![None; size] }
    }

    fn get(&mut self, tree: &Tree, node: usize) -> NodeInfo {
        *self.infos[node].get_or_insert_with(|| NodeInfo::of(tree, node))
    }
}

/// `depth` (capped at `NO_DISTANCE`) into a distance column that no nearer element filled
/// (the walk goes from the block up, so the first element found is the nearest).
fn record_nearest(slot: &mut f32, depth: usize) {
    if *slot == NO_DISTANCE {
        *slot = depth.min(NO_DISTANCE as usize) as f32;
    }
}

/// Elements the HTML parsing rules make void (lexbor closes them at once) that libxml2 reads
/// as containers of their following siblings.
fn is_html_only_void(tag: &str) -> bool {
    matches!(tag, "bgsound" | "embed" | "keygen" | "source" | "track" | "wbr")
}

/// How the features see libxml2's tree: as the HTML DOM (lexbor's tree, the specification's)
/// would have it, or as it is.
struct DomView {
    /// the parent in the view: an HTML-only void element's content belongs to its parent
    parent: Vec<usize>,
    /// inside a `<template>` (its content is a separate fragment in the DOM)
    inert: Vec<bool>,
    /// false: libxml2's tree as it is (`libxml2_tree`)
    html_dom: bool,
}

impl DomView {
    fn new(tree: &Tree, root: usize, html_dom: bool) -> DomView {
        let n = tree.nodes.len();
        let mut view = DomView { parent: vec![NONE; n], inert: vec![false; n], html_dom };
        if !html_dom {
            for (id, node) in tree.nodes.iter().enumerate() {
                view.parent[id] = node.parent;
            }
            return view;
        }
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            let node = &tree.nodes[id];
            let parent = if is_html_only_void(&node.tag) { view.parent[id] } else { id };
            let inert = view.inert[id] || node.tag.as_str() == "template";
            for &child in &node.children {
                view.parent[child] = parent;
                view.inert[child] = inert;
                stack.push(child);
            }
        }
        view
    }

    /// Whether the walk of a subtree enters `node`'s children.
    fn enters(&self, tree: &Tree, node: usize) -> bool {
        !self.html_dom || tree.nodes[node].tag.as_str() != "template"
    }

    /// Whether `node`'s children are its own (not an HTML-only void element's followers).
    fn holds_children(&self, tree: &Tree, node: usize) -> bool {
        !self.html_dom || !is_html_only_void(&tree.nodes[node].tag)
    }
}

/// What one walk of a block's subtree gives: `node.text(deep=True, separator=" ")` and the
/// counts of its `a` and `img` elements (selectolax's `node.css` includes the node itself).
struct Subtree {
    links: usize,
    link_words: usize,
    images: usize,
}

/// Writes the text of `node`'s subtree into `text` (its text nodes in document order joined
/// by one space, as selectolax's `text(deep=True, separator=" ")`: libxml2's text and tails
/// are lexbor's text nodes), and counts links, their words and images.
///
/// A link's words are `\w+` matches in its own text; a space is no word character, so that
/// count is the sum over the link's text nodes, and a text node inside k nested links counts
/// k times, as the specification counts each link's text.
fn walk_subtree(tree: &Tree, view: &DomView, node: usize, text: &mut String) -> Subtree {
    enum Visit {
        Node(usize, usize),
        Tail(usize, usize),
    }
    let mut out = Subtree { links: 0, link_words: 0, images: 0 };
    text.clear();
    let mut first = true;
    let mut push = |text: &mut String, part: &str, in_links: usize, out: &mut Subtree| {
        if !first {
            text.push(' ');
        }
        first = false;
        text.push_str(part);
        if in_links > 0 {
            out.link_words += in_links * count_words(part);
        }
    };
    if !view.holds_children(tree, node) {
        return out; // an HTML-only void element: no text, no links, no images
    }
    let mut stack = vec![Visit::Node(node, 0)];
    while let Some(visit) = stack.pop() {
        match visit {
            Visit::Tail(id, in_links) => {
                if let Some(tail) = &tree.nodes[id].tail {
                    push(text, tail, in_links, &mut out);
                }
            }
            Visit::Node(id, outer_links) => {
                let n = &tree.nodes[id];
                let tag = n.tag.as_str();
                let mut in_links = outer_links;
                if tag == "a" {
                    out.links += 1;
                    in_links += 1;
                } else if tag == "img" {
                    out.images += 1;
                }
                if !view.enters(tree, id) {
                    continue; // a template's content
                }
                if let Some(t) = &n.text {
                    push(text, t, in_links, &mut out);
                }
                for &child in n.children.iter().rev() {
                    stack.push(Visit::Tail(child, in_links));
                    stack.push(Visit::Node(child, in_links));
                }
            }
        }
    }
    out
}

/// What `char_counts` counts of a text.
#[derive(Debug, PartialEq)]
struct CharCounts {
    chars: usize,
    /// `[.,;:!?]` matches
    punct: usize,
    /// `str.isdigit()` characters
    digits: usize,
    /// `is_cjk` characters
    cjk: usize,
}

/// The characters of `text` and what of them the features count: a byte that is no
/// continuation byte starts a character, the punctuation and ASCII digits are bytes of their
/// own (counted a chunk of bytes at a time in bytes, which the compiler does 16 at once), and
/// only the characters of non-ASCII text that start with a lead byte are decoded, to ask
/// whether they are digits; CJK characters are all three or four bytes long in UTF-8 (U+3040
/// and above), so only those starting with a lead byte of such a length are asked about.
fn char_counts(text: &str) -> CharCounts {
    let bytes = text.as_bytes();
    let mut counts = CharCounts { chars: 0, punct: 0, digits: 0, cjk: 0 };
    for chunk in bytes.chunks(u8::MAX as usize) {
        let (mut c, mut p, mut d) = (0u8, 0u8, 0u8);
        for &b in chunk {
            c += u8::from(!(0x80..0xC0).contains(&b));
            p += u8::from(matches!(b, b'.' | b',' | b';' | b':' | b'!' | b'?'));
            d += u8::from(b.is_ascii_digit());
        }
        counts.chars += usize::from(c);
        counts.punct += usize::from(p);
        counts.digits += usize::from(d);
    }
    if text.is_ascii() {
        return counts;
    }
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] < 0xC0 {
            i += 1; // ASCII (counted above) or a continuation byte
            continue;
        }
        let c = text[i..].chars().next().expect("a character starts at a lead byte");
        counts.digits += usize::from(is_digit(c));
        if bytes[i] >= 0xE0 {
            counts.cjk += usize::from(is_cjk(c));
        }
        i += c.len_utf8();
    }
    counts
}

/// `text.count(". ")`: the pairs of a full stop and a space (two of them cannot overlap).
fn count_sentence_ends(text: &str) -> usize {
    text.as_bytes().windows(2).filter(|pair| pair == b". ").count()
}

/// `a / max(b, 1)` in Python floats (f64), stored as float32.
fn ratio(a: usize, b: usize) -> f32 {
    (a as f64 / b.max(1) as f64) as f32
}

/// `_shift`: `values` moved `by` places later (earlier when negative), zeros coming in.
fn shifted(values: &[f32], row: usize, by: isize) -> f32 {
    let from = row as isize - by;
    if from < 0 || from as usize >= values.len() {
        0.0
    } else {
        values[from as usize]
    }
}

/// `np.convolve(np.pad(values, WINDOW), np.ones(2 * WINDOW + 1, np.float32), "valid")` at
/// `row`: numpy's float32 dot product (OpenBLAS `sdot` below its vector length), a float32
/// sum from the window's first element to its last.
fn window_sum(values: &[f32], row: usize) -> f32 {
    let mut sum = 0.0f32;
    for k in 0..=2 * WINDOW {
        let index = row + k;
        // the padding adds zeros, which leave a sum of non-negative values as it is
        if index >= WINDOW && index - WINDOW < values.len() {
            sum += values[index - WINDOW];
        }
    }
    sum
}

/// `np.median` of float32 values (the middle value, or the float32 mean of the two middle
/// values), as f64.
fn median(values: &[f32]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f32::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2] as f64
    } else {
        ((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0) as f64
    }
}

/// One row of `N_FEATURES` per id of `item_ids` (rows of zeros for ids that `map_html` does
/// not hold, and for `None`), row-major.
///
/// `libxml2_tree`: read libxml2's tree as it is instead of as the HTML DOM sees it (see the
/// module's documentation; for measurements). The tests' shorthand: the library reads
/// `block_features_with`.
#[cfg(test)]
pub fn block_features(map_html: &str, item_ids: &[Option<&str>], libxml2_tree: bool) -> Vec<f32> {
    block_features_with(map_html, item_ids, libxml2_tree, false, false, false, false, false)
}

/// `block_features`, each row followed by the `N_EXTRAS` extras when `extras` (rows of
/// `N_FEATURES + N_EXTRAS`, layout `blocks-v2`), and then by the `N_CONTAINERS` container
/// identifiers when `containers` (layout `blocks-v3`, which holds the extras: `containers`
/// brings them along; rows of `N_FEATURES + N_EXTRAS + N_CONTAINERS`; all `NO_CONTAINER`
/// for ids that `map_html` does not hold, and for `None`), and then by the `N_DIALOGS` dialog
/// columns when `dialogs` (layout `blocks-v4`, which holds the extras and the containers;
/// `NO_DISTANCE` for ids that `map_html` does not hold, and for `None`), and then by the
/// `N_RAILS` rail columns when `rails` (layout `blocks-v5`, which holds all those; `rail_columns`),
/// and then by the `N_TEASERS` teaser columns when `teasers` (layout `blocks-v6`, which holds all
/// those).
#[allow(clippy::too_many_arguments)]
pub fn block_features_with(
    map_html: &str,
    item_ids: &[Option<&str>],
    libxml2_tree: bool,
    extras: bool,
    containers: bool,
    dialogs: bool,
    rails: bool,
    teasers: bool,
) -> Vec<f32> {
    if item_ids.is_empty() {
        return Vec::new();
    }
    // lexbor (the specification's parser) reads line ends as libxml2 does
    let map_html = crate::tree::normalize_newlines(map_html);
    let map_html = map_html.as_ref();
    let mut tree = Tree::default();
    let root = crate::tree::parse(&mut tree, map_html, Reader::Spec);
    block_features_of_tree(&tree, root, item_ids, libxml2_tree, extras, containers, dialogs, rails, teasers)
}

/// `block_features_with` of the tree the specification reads `map_html` as (`root` its
/// `<html>`, its nodes numbered in document order, as `tree::parse` and `tree::read_back`
/// number them): the rows without writing and reading `map_html`.
#[allow(clippy::too_many_arguments)]
pub fn block_features_of_tree(
    tree: &Tree,
    root: usize,
    item_ids: &[Option<&str>],
    libxml2_tree: bool,
    extras: bool,
    containers: bool,
    dialogs: bool,
    rails: bool,
    teasers: bool,
) -> Vec<f32> {
    if item_ids.is_empty() {
        return Vec::new();
    }
    let rails = rails || teasers;
    let dialogs = dialogs || rails;
    let containers = containers || dialogs;
    let extras = extras || containers;
    let n = item_ids.len();
    let mut x = vec![0.0f32; n * N_FEATURES];
    let mut extra = if extras { vec![0.0f32; n * N_EXTRAS] } else { Vec::new() };
    if extras {
        for (i, value) in extra.iter_mut().enumerate() {
            if i % N_EXTRAS != 0 {
                *value = NO_DISTANCE;
            }
        }
    }
    let mut dialog = if dialogs { vec![NO_DISTANCE; n * N_DIALOGS] } else { Vec::new() };
    let view = DomView::new(tree, root, !libxml2_tree);
    // `parse` numbers the nodes in document order: the first node with an id keeps it
    let mut by_id: FastMap<&str, usize> = Default::default();
    for node in 0..tree.nodes.len() {
        if view.inert[node] {
            continue;
        }
        if let Some(id) = tree.attr(node, ITEM_ID_ATTR) {
            by_id.entry(id).or_insert(node);
        }
    }

    let mut words = vec![0.0f32; n];
    let mut link_ratio = vec![0.0f32; n];
    let mut prose = vec![0.0f32; n];
    // the ancestors of each row's block, nearest first, one after another: row r's are
    // chain_nodes[chain_ends[r - 1]..chain_ends[r]]
    let mut chain_ends = vec![0usize; n];
    let mut chain_nodes: Vec<usize> = Vec::new();
    let mut texts: Vec<String> = vec![String::new(); n];
    // a run wrapper's parent (its `own` element), the first of its containers: the wrapper's
    // text and the `<p>`s beside it sit in that element, whose ancestors the chain starts with
    let mut wrapped_in = vec![NONE; n];
    let mut infos = NodeInfos::new(tree.nodes.len());
    let mut text = String::new();
    // each row's own element (the rail columns start their walks there), NONE where none
    let mut own_of = vec![NONE; n];

    for (row, item_id) in item_ids.iter().enumerate() {
        let found = item_id.and_then(|id| by_id.get(id).copied());
        let Some(node) = found else {
            chain_ends[row] = chain_nodes.len();
            continue;
        };
        let r = &mut x[row * N_FEATURES..(row + 1) * N_FEATURES];
        let tag = tree.nodes[node].tag.as_str();
        // a run wrapper stands for text inside its parent: the parent's tag and names matter
        let parent = view.parent[node];
        let own = if tag == RUN_WRAPPER_TAG && parent != NONE { parent } else { node };
        if own != node {
            wrapped_in[row] = own;
        }
        own_of[row] = own;
        let sub = walk_subtree(tree, &view, node, &mut text);
        let counts = char_counts(&text);
        let (n_chars, n_punct, n_digits) = (counts.chars, counts.punct, counts.digits);
        let w = lower_words(&text);
        let n_words = w.count;
        let mut link_words = sub.link_words;

        let mut depth = 0usize;
        let mut in_link = false;
        let mut ancestor_kw = 0u64;
        let mut parent = view.parent[own];
        let mut distances =
            if extras { Some(&mut extra[row * N_EXTRAS + 1..(row + 1) * N_EXTRAS]) } else { None };
        let own_info = infos.get(tree, own);
        if let Some(d) = distances.as_deref_mut() {
            set_distances(d, &own_info, 0);
        }
        let mut dialog_distances =
            if dialogs { Some(&mut dialog[row * N_DIALOGS..(row + 1) * N_DIALOGS]) } else { None };
        if let Some(d) = dialog_distances.as_deref_mut() {
            set_dialog_distances(d, &own_info, 0);
        }
        while parent != NONE {
            let info = infos.get(tree, parent);
            if info.is_html {
                break;
            }
            depth += 1;
            chain_nodes.push(parent);
            ancestor_kw |= info.keywords;
            if let Some(d) = distances.as_deref_mut() {
                set_distances(d, &info, depth);
            }
            if let Some(d) = dialog_distances.as_deref_mut() {
                set_dialog_distances(d, &info, depth);
            }
            if let Some(index) = info.ancestor_tag {
                r[ANCESTOR_TAG + index as usize] = 1.0;
            }
            in_link |= info.is_link;
            parent = view.parent[parent];
        }
        chain_ends[row] = chain_nodes.len();
        if in_link {
            link_words = n_words;
        }
        r[BLOCK] = tag_id(tag) as f32;
        r[BLOCK + 1] = tag_id(tree.nodes[own].tag.as_str()) as f32;
        r[BLOCK + 2] = n_words as f32;
        r[BLOCK + 3] = n_chars as f32;
        r[BLOCK + 4] = ratio(link_words, n_words);
        r[BLOCK + 5] = sub.links as f32;
        r[BLOCK + 6] = sub.images as f32;
        r[BLOCK + 7] = ratio(n_punct, n_words);
        r[BLOCK + 8] = n_punct as f32;
        r[BLOCK + 9] = depth as f32;
        r[BLOCK + 10] = in_link as u8 as f32;
        r[BLOCK + 11] = count_sentence_ends(&text) as f32;
        // the row is zeros: only the keywords found are written
        for (at, mut bits) in [(OWN_KW, own_info.keywords), (ANCESTOR_KW, ancestor_kw)] {
            while bits != 0 {
                r[at + bits.trailing_zeros() as usize] = 1.0;
                bits &= bits - 1;
            }
        }
        r[TEXT_STATS] = ratio(w.stopwords, n_words);
        r[TEXT_STATS + 1] = ratio(n_digits, n_chars);
        r[TEXT_STATS + 2] = ratio(w.chars, n_words);
        words[row] = r[BLOCK + 2];
        link_ratio[row] = r[BLOCK + 4];
        // `n_words - link_words` in Python ints, stored as float32
        prose[row] = (n_words as i64 - link_words as i64) as f32;
        texts[row] = w.joined;
        if extras {
            extra[row * N_EXTRAS] = counts.cjk as f32;
        }
    }

    let best = page_columns(
        &mut x,
        n,
        &words,
        &link_ratio,
        &prose,
        &chain_ends,
        &chain_nodes,
        &texts,
        tree.nodes.len(),
    );
    if !extras {
        return x;
    }
    let (rail, mut teaser) = if rails {
        rail_columns(tree, &view, &own_of, &chain_ends, &chain_nodes, &words, &link_ratio, teasers)
    } else {
        (Vec::new(), Vec::new())
    };
    if teasers {
        story_columns(&mut teaser, tree, root, &view, &x, &own_of, &chain_ends, &chain_nodes, best);
    }
    let width = N_FEATURES
        + N_EXTRAS
        + if containers { N_CONTAINERS } else { 0 }
        + if dialogs { N_DIALOGS } else { 0 }
        + if rails { N_RAILS } else { 0 }
        + if teasers { N_TEASERS } else { 0 };
    let mut rows = Vec::with_capacity(n * width);
    for row in 0..n {
        rows.extend_from_slice(&x[row * N_FEATURES..(row + 1) * N_FEATURES]);
        rows.extend_from_slice(&extra[row * N_EXTRAS..(row + 1) * N_EXTRAS]);
        if containers {
            let start = if row == 0 { 0 } else { chain_ends[row - 1] };
            let chain = &chain_nodes[start..chain_ends[row]];
            rows.extend(if wrapped_in[row] == NONE {
                container_columns(chain)
            } else {
                container_columns(&[&[wrapped_in[row]], chain].concat())
            });
        }
        if dialogs {
            rows.extend_from_slice(&dialog[row * N_DIALOGS..(row + 1) * N_DIALOGS]);
        }
        if rails {
            rows.extend_from_slice(&rail[row * N_RAILS..(row + 1) * N_RAILS]);
        }
        if teasers {
            rows.extend_from_slice(&teaser[row * N_TEASERS..(row + 1) * N_TEASERS]);
        }
    }
    rows
}

/// The teaser columns' page kind (the first 5) and place against the story (the last 2) of
/// every row of `teaser` (`N_TEASERS` a row), from the page's tree, the rows' `blocks-v1`
/// columns `x` (`in_candidate`), own elements and chains, and the candidate `best` (NONE: none).
#[allow(clippy::too_many_arguments)]
fn story_columns(
    teaser: &mut [f32],
    tree: &Tree,
    root: usize,
    view: &DomView,
    x: &[f32],
    own_of: &[usize],
    chain_ends: &[usize],
    chain_nodes: &[usize],
    best: usize,
) {
    let n = own_of.len();
    let kind = crate::metadata::page_kind(tree, root, |node| view.inert[node]);
    let page = [kind.og_article, kind.og_website, kind.ld_article, kind.ld_listing, kind.ld_product];
    let inside: Vec<usize> = (0..n).filter(|&row| x[row * N_FEATURES + PAGE + 11] == 1.0).collect();
    let (first, last) = (inside.first().copied(), inside.last().copied());
    // the candidate and its ancestors: a row's nearest element among them is where its chain
    // meets the story's
    let mut holds_best = vec![false; tree.nodes.len()];
    let mut up = best;
    while up != NONE {
        holds_best[up] = true;
        up = view.parent[up];
    }
    for row in 0..n {
        let r = &mut teaser[row * N_TEASERS..(row + 1) * N_TEASERS];
        for (slot, &value) in r.iter_mut().zip(&page) {
            *slot = f32::from(u8::from(value));
        }
        r[9] = match (first, last) {
            (Some(first), _) if row < first => -1.0,
            (_, Some(last)) if row > last => 1.0,
            _ => 0.0,
        };
        r[10] = NO_DISTANCE;
        if best == NONE || own_of[row] == NONE {
            continue;
        }
        let start = if row == 0 { 0 } else { chain_ends[row - 1] };
        let chain = &chain_nodes[start..chain_ends[row]];
        if let Some(level) = std::iter::once(&own_of[row]).chain(chain).position(|&e| holds_best[e]) {
            r[10] = level as f32;
        }
    }
}

/// Whether one of `RAIL_WORDS` (bit 0) and one of `COMMENT_WORDS` (bit 1) is in the node's
/// class, id or aria-label value (ASCII case aside): each value lowered once, and copied only
/// where it has an upper-case letter.
fn name_word_bits(tree: &Tree, node: usize) -> u8 {
    let mut bits = 0;
    for_each_lowered_value(tree, node, &["class", "id", "aria-label"], |value| {
        bits |= rail_and_comment_bits(value);
    });
    bits
}

/// `RAIL_WORDS` and then `COMMENT_WORDS`: the words `rail_and_comment_bits` looks for.
const NAME_WORDS: [&str; RAIL_WORDS.len() + COMMENT_WORDS.len()] = {
    let mut words = [""; RAIL_WORDS.len() + COMMENT_WORDS.len()];
    let mut k = 0;
    while k < words.len() {
        words[k] = if k < RAIL_WORDS.len() { RAIL_WORDS[k] } else { COMMENT_WORDS[k - RAIL_WORDS.len()] };
        k += 1;
    }
    words
};
const _: () = assert!(NAME_WORDS.len() <= 32);

/// Per pair of letters (`text::letter_pair`), the `NAME_WORDS` starting with them (bit k:
/// word k).
const NAME_WORDS_BY_FIRST_TWO: [u32; LETTER_PAIRS] = {
    let mut table = [0u32; LETTER_PAIRS];
    let mut k = 0;
    while k < NAME_WORDS.len() {
        let word = NAME_WORDS[k].as_bytes();
        assert!(word.len() >= 2 && word[0].is_ascii_lowercase() && word[1].is_ascii_lowercase());
        table[letter_pair(word[0], word[1])] |= 1 << k;
        k += 1;
    }
    table
};

/// `RAIL_WORDS.iter().any(|w| value.contains(w))` as bit 0 and the same of `COMMENT_WORDS` as
/// bit 1, in one pass over `value`: at each byte, the words starting with that byte and the
/// next are compared there (a word is in `value` where it starts at one of its bytes; every
/// word starts with two letters).
fn rail_and_comment_bits(value: &str) -> u8 {
    let bytes = value.as_bytes();
    let mut bits = 0u8;
    for i in 1..bytes.len() {
        let mut words = NAME_WORDS_BY_FIRST_TWO[letter_pair(bytes[i - 1], bytes[i])];
        while words != 0 {
            let k = words.trailing_zeros() as usize;
            words &= words - 1;
            if bytes[i - 1..].starts_with(NAME_WORDS[k].as_bytes()) {
                bits |= if k < RAIL_WORDS.len() { 1 } else { 2 };
                if bits == 3 {
                    return bits;
                }
            }
        }
    }
    bits
}

/// Each non-empty value of the node's attributes `names`, ASCII letters lowered (copied only
/// where it has an upper-case letter), to `visit`: where the words of class, id and the like
/// are looked for.
fn for_each_lowered_value(tree: &Tree, node: usize, names: &[&str], mut visit: impl FnMut(&str)) {
    for (name, value) in &tree.attrs[tree.nodes[node].attrs] {
        if value.is_empty() || !names.contains(&name.as_str()) {
            continue;
        }
        if value.bytes().any(|b| b.is_ascii_uppercase()) {
            visit(&value.to_ascii_lowercase());
        } else {
            visit(value);
        }
    }
}

/// The `N_RAILS` rail columns of every row (`RAIL_NAMES`), from each row's own element
/// (`own_of`, NONE where the page holds no element of its id: its columns are 0 items, no
/// level, 0 words and shares, no distance) and ancestor chain (`chain_nodes`), and the rows'
/// words and link ratios. An element's words are the sum over the rows whose own element or
/// chain holds it (float64, in row order), its linked words the sum of words x link ratio.
/// With `teasers`, also the teaser columns of the run (`TEASER_NAMES` 5 to 8; `N_TEASERS` a
/// row, the others 0 here: `story_columns` writes them).
#[allow(clippy::too_many_arguments)]
fn rail_columns(
    tree: &Tree,
    view: &DomView,
    own_of: &[usize],
    chain_ends: &[usize],
    chain_nodes: &[usize],
    words: &[f32],
    link_ratio: &[f32],
    teasers: bool,
) -> (Vec<f32>, Vec<f32>) {
    let n = own_of.len();
    let chain = |row: usize| {
        let start = if row == 0 { 0 } else { chain_ends[row - 1] };
        &chain_nodes[start..chain_ends[row]]
    };
    let size = tree.nodes.len();
    let (mut node_words, mut node_linked) = (vec![0.0f64; size], vec![0.0f64; size]);
    for row in 0..n {
        if own_of[row] == NONE {
            continue;
        }
        let (w, linked) = (f64::from(words[row]), f64::from(words[row]) * f64::from(link_ratio[row]));
        for &element in std::iter::once(&own_of[row]).chain(chain(row)) {
            node_words[element] += w;
            node_linked[element] += linked;
        }
    }
    // the elements holding a <time> (bit 0), a byline (bit 1), a heading (bit 2), itself or
    // below it, in the HTML DOM's view (the byline and heading only with `teasers`)
    let mut holds = vec![0u8; size];
    for (node, item) in tree.nodes.iter().enumerate() {
        if view.inert[node] {
            continue;
        }
        let tag = item.tag.as_str();
        let mut bits = u8::from(tag == "time");
        if teasers {
            bits |= u8::from(is_byline(tree, node)) << 1
                | u8::from(matches!(tag, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")) << 2;
        }
        let mut up = node;
        while bits != 0 && up != NONE && holds[up] & bits != bits {
            holds[up] |= bits;
            up = view.parent[up];
        }
    }
    // the view's element children of each element, once: element p's are
    // child_nodes[child_starts[p]..child_starts[p + 1]]
    let mut child_starts = vec![0usize; size + 1];
    for node in 0..size {
        if !view.inert[node] && view.parent[node] != NONE {
            child_starts[view.parent[node] + 1] += 1;
        }
    }
    for p in 0..size {
        child_starts[p + 1] += child_starts[p];
    }
    let mut child_nodes = vec![NONE; child_starts[size]];
    let mut filled = child_starts.clone();
    for node in 0..size {
        if !view.inert[node] && view.parent[node] != NONE {
            let parent = view.parent[node];
            child_nodes[filled[parent]] = node;
            filled[parent] += 1;
        }
    }
    let children = |p: usize| &child_nodes[child_starts[p]..child_starts[p + 1]];
    // per element, whether its names hold a rail word (bit 1) or a comment word (bit 2), once
    let mut names: Vec<u8> = vec![u8::MAX; size];
    let signature = |node: usize| (tree.nodes[node].tag.as_str(), tree.attr(node, "class").unwrap_or(""));
    // per element: its run (the siblings of its signature, itself among them), computed for
    // all of a parent's children at once
    let mut run: Vec<Option<Run>> = vec![None; size];
    let mut out = vec![0.0f32; n * N_RAILS];
    let mut teaser = if teasers { vec![0.0f32; n * N_TEASERS] } else { Vec::new() };
    let page_words: f64 = words.iter().map(|&w| f64::from(w)).sum::<f64>().max(1.0);
    for row in 0..n {
        let r = &mut out[row * N_RAILS..(row + 1) * N_RAILS];
        r[1] = NO_DISTANCE;
        r[5] = NO_DISTANCE;
        r[6] = NO_DISTANCE;
        if own_of[row] == NONE {
            continue;
        }
        let mut found = false;
        for (level, &element) in std::iter::once(&own_of[row]).chain(chain(row)).enumerate() {
            if !found && level < RAIL_LEVELS && view.parent[element] != NONE {
                let parent = view.parent[element];
                if run[element].is_none() {
                    let mut counts: FastMap<(&str, &str), Run> = Default::default();
                    for &child in children(parent) {
                        let count = counts.entry(signature(child)).or_default();
                        count.items += 1;
                        count.with_time += u32::from(holds[child] & 1 != 0);
                        count.with_byline += u32::from(holds[child] & 2 != 0);
                        count.with_heading += u32::from(holds[child] & 4 != 0);
                        let linked = node_words[child] > 0.0
                            && node_linked[child] / node_words[child] >= LINKED_ITEM_SHARE;
                        count.linked += u32::from(linked);
                        count.words += node_words[child];
                    }
                    for &child in children(parent) {
                        run[child] = Some(counts[&signature(child)]);
                    }
                }
                let stats = run[element].unwrap_or(Run { items: 1, ..Run::default() });
                let (items, with_time) = (stats.items, stats.with_time);
                if items as usize >= RAIL_MIN_ITEMS {
                    if teasers {
                        let t = &mut teaser[row * N_TEASERS..(row + 1) * N_TEASERS];
                        let share = |count: u32| (f64::from(count) / f64::from(items)) as f32;
                        t[5] = share(stats.with_byline);
                        t[6] = share(stats.with_heading);
                        t[7] = share(stats.linked);
                        t[8] = (stats.words / page_words) as f32;
                    }
                    found = true;
                    r[0] = items as f32;
                    r[1] = level as f32;
                    r[2] = node_words[element] as f32;
                    r[3] = if node_words[element] > 0.0 {
                        (node_linked[element] / node_words[element]) as f32
                    } else {
                        0.0
                    };
                    r[4] = (f64::from(with_time) / f64::from(items)) as f32;
                }
            }
            if names[element] == u8::MAX {
                names[element] = name_word_bits(tree, element);
            }
            if names[element] & 1 != 0 {
                record_nearest(&mut r[5], level);
            }
            if names[element] & 2 != 0 {
                record_nearest(&mut r[6], level);
            }
        }
    }
    (out, teaser)
}

/// A run of alike siblings (`rail_columns`): its items, and how many of them hold a `<time>`,
/// a byline, a heading, and are linked (`LINKED_ITEM_SHARE`); the words of its items.
#[derive(Clone, Copy, Default)]
struct Run {
    items: u32,
    with_time: u32,
    with_byline: u32,
    with_heading: u32,
    linked: u32,
    words: f64,
}

/// Whether the element's class, id, rel or itemprop holds one of `BYLINE_WORDS` (ASCII case
/// aside).
fn is_byline(tree: &Tree, node: usize) -> bool {
    let mut byline = false;
    for_each_lowered_value(tree, node, &["class", "id", "rel", "itemprop"], |value| {
        byline |= BYLINE_WORDS.iter().any(|w| value.contains(w));
    });
    byline
}

/// A row's `N_CONTAINERS` columns from its ancestor chain (nearest first).
fn container_columns(chain: &[usize]) -> [f32; N_CONTAINERS] {
    let mut columns = [NO_CONTAINER; N_CONTAINERS];
    for (slot, &node) in columns.iter_mut().zip(chain) {
        if node < EXACT_NODE_INDEXES {
            *slot = node as f32;
        }
    }
    columns
}

/// Records `depth` as the distance of each distance keyword and of the tag of the element of
/// `info`, where no nearer element had it (`distances`: a row's extras after the CJK column).
fn set_distances(distances: &mut [f32], info: &NodeInfo, depth: usize) {
    let (keywords, tags) = distances.split_at_mut(DISTANCE_KEYWORDS.len());
    let mut bits = info.keywords & DISTANCE_KEYWORD_MASK;
    while bits != 0 {
        let k = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        record_nearest(&mut keywords[DISTANCE_SLOTS[k] as usize], depth);
    }
    if let Some(t) = info.distance_tag {
        record_nearest(&mut tags[t as usize], depth);
    }
}

/// The page columns (`PAGE_COLUMNS` but the last three, which are per-block text
/// statistics), from the block columns and the ancestor chains.
#[allow(clippy::too_many_arguments)]
fn page_columns(
    x: &mut [f32],
    n: usize,
    words: &[f32],
    link_ratio: &[f32],
    prose: &[f32],
    chain_ends: &[usize],
    chain_nodes: &[usize],
    texts: &[String],
    tree_len: usize,
) -> usize {
    let chain = |row: usize| {
        let start = if row == 0 { 0 } else { chain_ends[row - 1] };
        &chain_nodes[start..chain_ends[row]]
    };
    // numpy's float32 sums: exact, the values being whole numbers (below 2^24 in all)
    let total_words: f32 = words.iter().sum();
    let total = (total_words as f64).max(1.0);
    let total32 = total as f32; // numpy: a float32 array divided by a Python float
    let link_words: Vec<f32> = words.iter().zip(link_ratio).map(|(w, r)| w * r).collect();

    // Readability's candidate: each block's prose scores its parent in full, its
    // grandparent half, further ancestors 1/(3 * level); f64 sums in the specification's
    // order, and its max() keeps the first of equal scores (dict order: first scored)
    let mut score = vec![0.0f64; tree_len];
    let mut scored = vec![false; tree_len];
    let mut order: Vec<usize> = Vec::new();
    for (row, &prose) in prose.iter().enumerate() {
        let value = prose as f64;
        for (level, &key) in chain(row).iter().take(CANDIDATE_LEVELS).enumerate() {
            let weight = if level == 0 {
                1.0
            } else if level == 1 {
                0.5
            } else {
                1.0 / (3 * level) as f64
            };
            if !scored[key] {
                scored[key] = true;
                order.push(key);
            }
            score[key] += value * weight;
        }
    }
    let mut best = NONE;
    for &key in &order {
        if best == NONE || score[key] > score[best] {
            best = key;
        }
    }
    let in_candidate: Vec<f32> =
        (0..n).map(|row| (best != NONE && chain(row).contains(&best)) as u8 as f32).collect();
    let candidate_words: f32 = words.iter().zip(&in_candidate).map(|(w, c)| w * c).sum();
    let candidate_share = (candidate_words as f64 / total) as f32;

    let mut counts: FastMap<&str, u32> = Default::default();
    for t in texts {
        *counts.entry(t.as_str()).or_insert(0) += 1;
    }
    let first_h1 = (0..n).find(|&row| x[row * N_FEATURES + BLOCK] == H1 as f32);
    let median = median(words).max(1.0) as f32;

    let mut words_before = 0.0f32; // np.cumsum(words) - words
    for row in 0..n {
        let r = &mut x[row * N_FEATURES..(row + 1) * N_FEATURES];
        let p = &mut r[PAGE..PAGE + 17];
        p[0] = (row as f64 / (n - 1).max(1) as f64) as f32;
        let cumsum = words_before + words[row];
        p[1] = (cumsum - words[row]) / total32;
        words_before = cumsum;
        p[2] = words[row] / total32;
        p[3] = n as f32;
        p[4] = total as f32;
        p[5] = shifted(words, row, 1);
        p[6] = shifted(words, row, -1);
        p[7] = shifted(link_ratio, row, 1);
        p[8] = shifted(link_ratio, row, -1);
        let window_words = window_sum(words, row);
        p[9] = window_words;
        p[10] = window_sum(&link_words, row) / window_words.max(1.0);
        p[11] = in_candidate[row];
        // max over the chain of the f64 scores (0 where none), then float32, then / total
        let best_ancestor = chain(row)
            .iter()
            .map(|&k| if scored[k] { score[k] } else { 0.0 })
            .fold(None, |m: Option<f64>, s| {
                Some(match m {
                    Some(m) if m >= s => m,
                    _ => s,
                })
            })
            .unwrap_or(0.0);
        p[12] = best_ancestor as f32 / total32;
        p[13] = candidate_share;
        p[14] = if texts[row].is_empty() { 0.0 } else { counts[texts[row].as_str()] as f32 };
        p[15] = match first_h1 {
            Some(h1) => ((row as f64 - h1 as f64) / n as f64) as f32,
            None => -2.0,
        };
        p[16] = words[row] / median;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(x: &[f32], name_offset: usize) -> Vec<f32> {
        x.chunks(N_FEATURES).map(|r| r[name_offset]).collect()
    }

    #[test]
    fn a_caption_is_a_figcaption_or_under_a_figure() {
        assert_eq!(tag_id("figcaption"), FIGCAPTION);
        assert_eq!(ANCESTOR_TAGS[ANCESTOR_FIGURE - ANCESTOR_TAG], "figure");
        let mut row = vec![0.0f32; N_FEATURES];
        row[BLOCK] = tag_id("p") as f32;
        assert!(!is_caption(&row));
        row[ANCESTOR_FIGURE] = 1.0;
        assert!(is_caption(&row));
        row[ANCESTOR_FIGURE] = 0.0;
        row[BLOCK + 1] = tag_id("figcaption") as f32;
        assert!(is_caption(&row));
        row[BLOCK + 1] = tag_id("figure") as f32;
        assert!(!is_caption(&row));
    }

    #[test]
    fn cjk_sentence_and_character_counts_are_those_of_the_characters() {
        for text in [
            "好的文章 ok ｶﾀｶﾅ 한국어 𠀀𪚥 é ß ΟΔΟΣ — ”",
            "plain ASCII. Two. 42!? a;b:c,",
            "١٢٣ ۴۵ ² ① Ⅻ ½ 7.",
            "..  . .. ",
            "ぁ゠ヿ㐀䶿一鿿가힯豈﫿\u{2fa1f}\u{2fa20}\u{303f}\u{3100}",
            "",
        ] {
            assert_eq!(count_sentence_ends(text), text.matches(". ").count(), "{text}");
            let expected = CharCounts {
                chars: text.chars().count(),
                punct: text.chars().filter(|c| ".,;:!?".contains(*c)).count(),
                digits: text.chars().filter(|&c| is_digit(c)).count(),
                cjk: text.chars().filter(|&c| is_cjk(c)).count(),
            };
            assert_eq!(char_counts(text), expected, "{text}");
        }
        // longer than a chunk of char_counts' byte counters (255 bytes), every count past 255
        let long = "9. ²,é!".repeat(300);
        let long = char_counts(&long);
        assert_eq!((long.chars, long.punct, long.digits, long.cjk), (7 * 300, 3 * 300, 2 * 300, 0));
        let ascii = char_counts(&"a1?".repeat(1000));
        assert_eq!((ascii.chars, ascii.punct, ascii.digits, ascii.cjk), (3000, 1000, 1000, 0));
        assert_eq!(char_counts("好的文章 ok 𠀀 \u{303f}").cjk, 5);
        assert_eq!(count_sentence_ends("a. b.. c. "), 3);
    }

    /// `python -m bench.feature_pages FILE` then `PULPIE_RT_FEATURE_PAGES=FILE cargo test -p
    /// pulpie_rt_core --release --lib feature_pages -- --ignored --nocapture`: the `fast`
    /// profile's block features (layout `blocks-v5`, off the tree simplify gives, as the engine
    /// reads them) and their context (`context-v6`) of each page of FILE (JSONL, an `html` member
    /// a line), segmented as that profile segments; the best of 7 rounds' CPU milliseconds
    /// (this thread's) of each pass and a digest of every value's bits (a measurement).
    #[test]
    #[ignore]
    fn feature_pages() {
        let Ok(path) = std::env::var("PULPIE_RT_FEATURE_PAGES") else {
            println!("PULPIE_RT_FEATURE_PAGES is not set: nothing measured");
            return;
        };
        let mut pages = Vec::new();
        for line in std::fs::read_to_string(path).unwrap().lines().filter(|l| !l.trim().is_empty()) {
            let record = crate::json::parse_str(line).unwrap();
            let html = record.get("html").and_then(|h| h.as_str()).unwrap().to_string();
            let Ok(page) = crate::page::Page::new(html.as_bytes()) else { continue };
            let Ok((simplified, _, Some(tree))) = crate::page::simplify_page_and_map(&page, 500, true, true)
            else {
                continue;
            };
            let ids = crate::engine::prepare::extract_blocks(&simplified).1;
            if !ids.is_empty() {
                pages.push((tree, ids));
            }
        }
        let clock = pulpie_rt_kernels::clock::thread_cpu_seconds;
        let digest = |digest: &mut u64, values: &[f32]| {
            for v in values {
                *digest = (*digest ^ u64::from(v.to_bits())).wrapping_mul(0x100_0000_01b3);
            }
        };
        let (mut features_s, mut context_s) = (f64::INFINITY, f64::INFINITY);
        let (mut features_digest, mut context_digest) = (0, 0);
        let blocks: usize = pages.iter().map(|(_, ids)| ids.len()).sum();
        for _ in 0..7 {
            let (mut rows, mut seconds) = (Vec::with_capacity(pages.len()), 0.0);
            features_digest = 0xcbf2_9ce4_8422_2325u64;
            for ((tree, root), ids) in &pages {
                let ids: Vec<Option<&str>> = ids.iter().map(Option::as_deref).collect();
                let start = clock();
                let page_rows =
                    block_features_of_tree(tree, *root, &ids, false, true, true, true, true, false);
                seconds += clock() - start;
                digest(&mut features_digest, &page_rows);
                rows.push(page_rows);
            }
            features_s = features_s.min(seconds);
            context_digest = 0xcbf2_9ce4_8422_2325u64;
            let start = clock();
            for page_rows in &rows {
                let context = context::context_features(page_rows, context::N_FEATURES_V5).unwrap();
                digest(&mut context_digest, &context);
            }
            context_s = context_s.min(clock() - start);
        }
        println!(
            "{} pages, {blocks} blocks: features {:.2} ms (digest {features_digest:016x}), context {:.2} ms \
             (digest {context_digest:016x})",
            pages.len(),
            features_s * 1e3,
            context_s * 1e3
        );
    }

    #[test]
    fn rail_and_comment_bits_are_the_words_contained() {
        let expected = |value: &str| {
            u8::from(RAIL_WORDS.iter().any(|w| value.contains(w)))
                | u8::from(COMMENT_WORDS.iter().any(|w| value.contains(w))) << 1
        };
        let mut values: Vec<String> =
            RAIL_WORDS.iter().chain(&COMMENT_WORDS).map(|w| w.to_string()).collect();
        values.extend(RAIL_WORDS.iter().chain(&COMMENT_WORDS).map(|w| format!("x-{}", &w[..w.len() - 1])));
        values.extend(
            [
                "",
                "col-md-4 most-read-box",
                "trendin",
                "xtrending",
                "commentpoll",
                "latest-comments",
                "re-vote",
                "mostreadcomment",
                "ab-promo-votes-\u{e9}",
                "héadlines disqus",
                "sponsorship",
                "pol",
            ]
            .iter()
            .map(|v| v.to_string()),
        );
        for value in &values {
            assert_eq!(rail_and_comment_bits(value), expected(value), "{value:?}");
        }
        assert_eq!(rail_and_comment_bits("latest-comments"), 3);
        assert_eq!(rail_and_comment_bits("x-trendin"), 0);
    }

    #[test]
    fn layout_has_166_columns() {
        assert_eq!(N_FEATURES, 12 + 57 + 57 + 20 + 17 + 3);
    }

    #[test]
    fn counts_words_links_and_keywords_of_a_small_page() {
        let html = "<html><body><div class=\"post-content\"><p _item_id=\"1\">One two, three. \
                    Four <a href=\"x\">five six</a></p>\
                    <p _item_id=\"2\">Ünïcödé wörds ΟΔΟΣ</p>\
                    </div><footer><p _item_id=\"3\">© 2026</p></footer></body></html>";
        let ids = [Some("1"), Some("2"), Some("3"), Some("9"), None];
        let x = block_features(html, &ids, false);
        assert_eq!(x.len(), 5 * N_FEATURES);
        assert_eq!(column(&x, BLOCK + 2), [6.0, 3.0, 1.0, 0.0, 0.0]); // words
        assert_eq!(column(&x, BLOCK + 5), [1.0, 0.0, 0.0, 0.0, 0.0]); // links
        assert_eq!(column(&x, BLOCK + 4)[0], (2.0f64 / 6.0) as f32); // link ratio
        assert_eq!(column(&x, BLOCK + 11)[0], 1.0); // ". "
        let content = KEYWORDS.iter().position(|k| *k == "content").unwrap();
        assert_eq!(column(&x, ANCESTOR_KW + content), [1.0, 1.0, 0.0, 0.0, 0.0]);
        let footer = ANCESTOR_TAGS.iter().position(|t| *t == "footer").unwrap();
        assert_eq!(column(&x, ANCESTOR_TAG + footer), [0.0, 0.0, 1.0, 0.0, 0.0]);
        assert_eq!(column(&x, PAGE + 3), [5.0; 5]); // page_blocks
        assert_eq!(column(&x, PAGE + 15), [-2.0; 5]); // no h1
                                                      // "© 2026": 6 characters of which 4 digits
        assert_eq!(column(&x, TEXT_STATS + 1)[2], (4.0f64 / 6.0) as f32);
    }

    #[test]
    fn template_content_is_outside_the_document_and_html_void_elements_hold_nothing() {
        let html = "<html><body><div><template><p _item_id=\"1\">hidden</p></template>\
                    <p _item_id=\"2\">a<template>b</template>c</p><picture>\
                    <source _item_id=\"3\"><img _item_id=\"4\"></source></picture></div>\
                    </body></html>";
        let ids = [Some("1"), Some("2"), Some("3"), Some("4")];
        let dom = block_features(html, &ids, false);
        assert_eq!(column(&dom, BLOCK + 2), [0.0, 2.0, 0.0, 0.0]); // words: "a c"
        assert_eq!(column(&dom, BLOCK + 3), [0.0, 3.0, 0.0, 0.0]); // chars
        assert_eq!(column(&dom, BLOCK + 6), [0.0, 0.0, 0.0, 1.0]); // images
        assert_eq!(column(&dom, BLOCK + 9), [0.0, 2.0, 3.0, 3.0]); // depth: img beside source
        let libxml2 = block_features(html, &ids, true);
        assert_eq!(column(&libxml2, BLOCK + 2), [1.0, 3.0, 0.0, 0.0]);
        assert_eq!(column(&libxml2, BLOCK + 6), [0.0, 0.0, 1.0, 1.0]);
        assert_eq!(column(&libxml2, BLOCK + 9), [3.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn markup_the_old_strict_reading_refused_is_read() {
        // non-ASCII names, an "&" that starts no reference, the Kelvin sign and long s: all of
        // them can be in `map_html` (names and values are the page's), and the reader refuses
        // nothing (the core's reader of core-features' time refused them)
        for html in [
            "<html><body><p _item_id=\"1\" \u{2014}=\"x\" class=\"nav\">one</p></body></html>",
            "<html><body><p _item_id=\"1\" class=\"nav &{x}\">one</p></body></html>",
            "<html><body><caf\u{e9} class=\"nav\"><p _item_id=\"1\">one</p></caf\u{e9}>\
             </body></html>",
            "<html><body><p _item_id=\"1\" class=\"nav\">\u{212a}elvin</p></body></html>",
            "<html><body><p _item_id=\"1\" class=\"NAV\u{17f}\">\u{17f}tyle</p></body></html>",
        ] {
            let x = block_features(html, &[Some("1")], false);
            assert_eq!(x[BLOCK + 2], 1.0, "{html}"); // one word
            let nav = KEYWORDS.iter().position(|k| *k == "nav").unwrap(); // own or an ancestor's
            assert_eq!(x[OWN_KW + nav].max(x[ANCESTOR_KW + nav]), 1.0, "{html}");
        }
    }

    #[test]
    fn an_empty_page_gives_rows_of_zeros_and_no_ids_no_rows() {
        assert!(block_features("", &[], false).is_empty());
        let x = block_features("", &[Some("1")], false);
        assert_eq!(x.len(), N_FEATURES);
        assert!(x[..PAGE].iter().all(|&v| v == 0.0));
    }

    #[test]
    fn extras_follow_each_row_with_cjk_characters_and_container_distances() {
        let html = concat!(
            r#"<html><body><div class="comments"><ul><li><p _item_id="1">好的文章 ok</p></li>"#,
            r#"</ul></div><article><p _item_id="2">Plain words.</p></article></body></html>"#,
        );
        let ids = [Some("1"), Some("2"), Some("9")];
        let plain = block_features(html, &ids, false);
        let x = block_features_with(html, &ids, false, true, false, false, false, false);
        let width = N_FEATURES + N_EXTRAS;
        assert_eq!(x.len(), 3 * width);
        let kw = |word: &str| 1 + DISTANCE_KEYWORDS.iter().position(|k| *k == word).unwrap();
        let tag = |t: &str| 1 + DISTANCE_KEYWORDS.len() + DISTANCE_TAGS.iter().position(|k| *k == t).unwrap();
        for row in 0..3 {
            let r = &x[row * width..(row + 1) * width];
            assert_eq!(&r[..N_FEATURES], &plain[row * N_FEATURES..(row + 1) * N_FEATURES]);
        }
        let extras = |row: usize| &x[row * width + N_FEATURES..(row + 1) * width];
        assert_eq!(extras(0)[0], 4.0); // 好的文章
        assert_eq!(extras(0)[kw("comment")], 3.0); // p < li < ul < div.comments
        assert_eq!(extras(0)[tag("li")], 1.0);
        assert_eq!(extras(0)[tag("article")], NO_DISTANCE);
        assert_eq!(extras(1)[0], 0.0);
        assert_eq!(extras(1)[tag("article")], 1.0);
        assert_eq!(extras(1)[kw("comment")], NO_DISTANCE);
        // an id the page does not hold: no characters, no container
        assert_eq!(extras(2)[0], 0.0);
        assert!(extras(2)[1..].iter().all(|&v| v == NO_DISTANCE));
    }

    #[test]
    fn containers_follow_the_extras_with_each_ancestors_node_nearest_first() {
        let html = concat!(
            r#"<html><body><div id="a"><p _item_id="1">one</p><p _item_id="2">two</p></div>"#,
            r#"<section><div><span _item_id="3">three</span></div></section>"#,
            r#"<div><div><div><div><div><div><div><div><div><p _item_id="4">deep</p>"#,
            r#"</div></div></div></div></div></div></div></div></div></body></html>"#,
        );
        let ids = [Some("1"), Some("2"), Some("3"), Some("4"), None, Some("9")];
        let v2 = block_features_with(html, &ids, false, true, false, false, false, false);
        // a run wrapper's chain starts at the element whose text it holds
        let wrapped = concat!(
            r#"<html><body><div id="a"><cc-alg-uc-text _item_id="1">loose</cc-alg-uc-text>"#,
            r#"<p _item_id="2">two</p></div></body></html>"#,
        );
        let w =
            block_features_with(wrapped, &[Some("1"), Some("2")], false, false, true, false, false, false);
        let wide = N_FEATURES + N_EXTRAS + N_CONTAINERS;
        assert_eq!(w[N_FEATURES + N_EXTRAS..wide], w[wide + N_FEATURES + N_EXTRAS..2 * wide]);
        let x = block_features_with(html, &ids, false, false, true, false, false, false); // brings the extras
        let (before, width) = (N_FEATURES + N_EXTRAS, N_FEATURES + N_EXTRAS + N_CONTAINERS);
        assert_eq!(x.len(), ids.len() * width);
        for row in 0..ids.len() {
            assert_eq!(&x[row * width..][..before], &v2[row * before..][..before]);
        }
        let containers = |row: usize| &x[row * width + before..(row + 1) * width];
        let (one, three, deep) = (containers(0), containers(2), containers(3));
        // <p> in div#a in <body>: the chain stops before <html>
        assert_eq!(containers(1), one);
        assert!(one[1] >= 0.0 && one[0] == one[1] + 1.0); // document order: <body>, div#a
        assert!(one[2..].iter().all(|&v| v == NO_CONTAINER));
        // <span> in a <div> in a <section> in the same <body>
        assert!(three[0] != one[0] && three[1] == three[0] - 1.0 && three[2] == one[1]);
        assert_eq!(three[3], NO_CONTAINER);
        // ten ancestors: the nearest eight, all different whole numbers
        assert!(deep.iter().all(|&v| v >= 0.0 && v.fract() == 0.0));
        assert!(deep.windows(2).all(|w| w[0] == w[1] + 1.0)); // each div in the one before
        assert!(deep[7] > one[1]);
        // None and an id the page does not hold
        assert!(containers(4).iter().chain(containers(5)).all(|&v| v == NO_CONTAINER));
        // an index no float32 holds exactly is no container
        let past = container_columns(&[3, EXACT_NODE_INDEXES, 1]);
        assert_eq!(past, [3.0, -1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0]);
    }
    #[test]
    fn dialogs_follow_the_containers_with_the_nearest_dialog_and_modal() {
        let html = concat!(
            r#"<html><body><div role="Dialog alert" aria-modal=" TRUE "><div><p _item_id="1">policy</p>"#,
            r#"</div></div><dialog><p _item_id="2">sign up</p></dialog>"#,
            r#"<div role="alertdialog" aria-modal="false"><p _item_id="3">sure?</p></div>"#,
            r#"<section aria-modal="true"><cc-alg-uc-text _item_id="4">loose</cc-alg-uc-text>"#,
            r#"</section><p _item_id="5">story</p></body></html>"#,
        );
        let ids = [Some("1"), Some("2"), Some("3"), Some("4"), Some("5"), Some("9")];
        let v3 = block_features_with(html, &ids, false, false, true, false, false, false);
        let x = block_features_with(html, &ids, false, false, false, true, false, false); // brings the rest
        let (before, width) =
            (N_FEATURES + N_EXTRAS + N_CONTAINERS, N_FEATURES + N_EXTRAS + N_CONTAINERS + N_DIALOGS);
        assert_eq!(x.len(), ids.len() * width);
        for row in 0..ids.len() {
            assert_eq!(&x[row * width..][..before], &v3[row * before..][..before]);
        }
        let dialogs: Vec<&[f32]> =
            (0..ids.len()).map(|row| &x[row * width + before..(row + 1) * width]).collect();
        assert_eq!(dialogs[0], [2.0, 2.0]); // p < div < div[role=dialog][aria-modal=true]
        assert_eq!(dialogs[1], [1.0, NO_DISTANCE]); // <dialog>
        assert_eq!(dialogs[2], [1.0, NO_DISTANCE]); // alertdialog, aria-modal="false"
        assert_eq!(dialogs[3], [NO_DISTANCE, 0.0]); // a run wrapper counts from its parent
        assert_eq!(dialogs[4], [NO_DISTANCE, NO_DISTANCE]);
        assert_eq!(dialogs[5], [NO_DISTANCE, NO_DISTANCE]); // an id the page does not hold
    }
    #[test]
    fn rails_follow_the_dialogs_with_each_block_s_run_of_alike_items() {
        let item = |i: usize, time: &str| {
            format!(
                r#"<li class="item"><a href="/{i}"><span _item_id="r{i}">Headline number {i} here</span></a>{time}</li>"#
            )
        };
        let rail: String = (0..4).map(|i| item(i, if i < 3 { "<time>today</time>" } else { "" })).collect();
        let html = format!(
            concat!(
                r#"<html><body><article><p _item_id="s1">One two three four five six.</p>"#,
                r#"<p _item_id="s2">Seven eight.</p></article>"#,
                r#"<aside id="Most-Read"><ul>{}</ul></aside>"#,
                r#"<div class="x"><div class="comments-list"><p _item_id="c">Nice</p></div></div>"#,
                r#"<li class="teaser"><p _item_id="lone">alone</p></li></body></html>"#,
            ),
            rail
        );
        let ids = [Some("s1"), Some("s2"), Some("r0"), Some("r3"), Some("c"), Some("lone"), Some("nope")];
        let v4 = block_features_with(&html, &ids, false, false, false, true, false, false);
        let x = block_features_with(&html, &ids, false, false, false, false, true, false); // brings the rest
        let (before, width) = (
            N_FEATURES + N_EXTRAS + N_CONTAINERS + N_DIALOGS,
            N_FEATURES + N_EXTRAS + N_CONTAINERS + N_DIALOGS + N_RAILS,
        );
        assert_eq!(x.len(), ids.len() * width);
        for row in 0..ids.len() {
            assert_eq!(&x[row * width..][..before], &v4[row * before..][..before]);
        }
        let rails: Vec<&[f32]> =
            (0..ids.len()).map(|row| &x[row * width + before..(row + 1) * width]).collect();
        // two <p>s of one <article>: no run of three
        assert_eq!(rails[0], [0.0, NO_DISTANCE, 0.0, 0.0, 0.0, NO_DISTANCE, NO_DISTANCE]);
        // span < a < li.item: four alike items, the third level up; three with a <time>;
        // each item's words (4) all linked; the aside's id says "most-read" 4 levels up
        assert_eq!(rails[2], [4.0, 2.0, 4.0, 1.0, 0.75, 4.0, NO_DISTANCE]);
        assert_eq!(rails[3], [4.0, 2.0, 4.0, 1.0, 0.75, 4.0, NO_DISTANCE]);
        assert_eq!(rails[4], [0.0, NO_DISTANCE, 0.0, 0.0, 0.0, NO_DISTANCE, 1.0]);
        // a teaser <li> alone under <body> is no run (its class is no rail word either)
        assert_eq!(rails[5], [0.0, NO_DISTANCE, 0.0, 0.0, 0.0, 1.0, NO_DISTANCE]);
        assert_eq!(rails[6], [0.0, NO_DISTANCE, 0.0, 0.0, 0.0, NO_DISTANCE, NO_DISTANCE]);
    }

    #[test]
    fn teasers_follow_the_rails_with_the_page_s_kind_each_run_s_cards_and_the_story_s_place() {
        let rail: String = (0..4)
            .map(|i| format!(r#"<li class="item"><a href="/{i}"><span _item_id="r{i}">Headline number {i} here</span></a></li>"#))
            .collect();
        let html = format!(
            concat!(
                r#"<html><head><meta name="og:type" content="article:news">"#,
                r#"<script type="application/ld+json"><!-- {{"@type": "BlogPosting"}} --></script></head>"#,
                r#"<body><article><p _item_id="s1">One two three four five six.</p>"#,
                r#"<p _item_id="s2">Seven eight.</p></article><aside><ul>{}</ul></aside>"#,
                r#"<div class="x"><div><p _item_id="c">Nice</p></div></div></body></html>"#,
            ),
            rail
        );
        let ids = [Some("s1"), Some("s2"), Some("r0"), Some("r3"), Some("c"), Some("nope")];
        let v5 = block_features_with(&html, &ids, false, false, false, false, true, false);
        let x = block_features_with(&html, &ids, false, false, false, false, false, true); // brings the rest
        let before = N_FEATURES + N_EXTRAS + N_CONTAINERS + N_DIALOGS + N_RAILS;
        let width = before + N_TEASERS;
        assert_eq!(x.len(), ids.len() * width);
        for row in 0..ids.len() {
            assert_eq!(&x[row * width..][..before], &v5[row * before..][..before]);
        }
        let teasers: Vec<&[f32]> =
            (0..ids.len()).map(|row| &x[row * width + before..(row + 1) * width]).collect();
        // og:type article:news (named by `name`), a BlogPosting in a commented-out script
        let page = [1.0, 0.0, 1.0, 0.0, 0.0];
        // the story, in readability's candidate (<article>, 1 up)
        assert_eq!(teasers[0], [&page[..], &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0]].concat());
        // four li.item, no byline or heading; of the asked blocks' 17 words the run holds 8,
        // in items 0 and 3 (linked), items 1 and 2 have none: half the items linked; after the
        // story, <body> (5 up) holds the <article>
        let run = [0.0, 0.0, 0.5, (8.0f64 / 17.0) as f32, 1.0, 5.0];
        assert_eq!(teasers[2], [&page[..], &run[..]].concat());
        assert_eq!(teasers[3], [&page[..], &run[..]].concat());
        assert_eq!(teasers[4], [&page[..], &[0.0, 0.0, 0.0, 0.0, 1.0, 3.0]].concat());
        assert_eq!(teasers[5], [&page[..], &[0.0, 0.0, 0.0, 0.0, 1.0, NO_DISTANCE]].concat());
    }
}
