//! Element names and what the stages know about them: the `Tag` every tree node carries, a
//! parse's `Names`, attributes, and the tag predicates the tree, the segmentation and the
//! reconstruction share (libxml2's raw text and RCDATA elements and its `allowPCData` list, the
//! elements the reference's segmentation removes). A leaf but for the crate's hasher (`hash`),
//! so `tree`, `html5`, `simplify` and `reconstruct` read it without importing one another in a
//! circle.

use crate::hash::FastSet;

/// An element name: shared between an element and its copies (no allocation per copy).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Tag(std::rc::Rc<str>);

impl Tag {
    pub fn new(name: &str) -> Tag {
        Tag(std::rc::Rc::from(name))
    }

    /// A name the stages write themselves (`_item_id`, `class`, `span` …): one `Tag` of it per
    /// thread, shared by every page's elements (not an allocation for each block).
    pub fn known(name: &'static str) -> Tag {
        thread_local! {
            static KNOWN: std::cell::RefCell<Names> = std::cell::RefCell::new(Names::default());
        }
        KNOWN.with(|names| names.borrow_mut().get(name))
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

impl From<&str> for Tag {
    fn from(name: &str) -> Tag {
        Tag::new(name)
    }
}

impl std::borrow::Borrow<str> for Tag {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// The distinct names of one parse (tags and attribute names), one shared `Tag` each: an
/// element or an attribute gets its name without an allocation of its own (a page has a few
/// dozen names over thousands of elements and attributes).
///
/// A name met again is looked up first in a small direct-mapped table keyed by its length and
/// end bytes (a page's few dozen names nearly all fall in slots of their own): one compare of a
/// few bytes in place of hashing the name and probing the set, which the reader of `map_html`
/// (`html5`) does for every tag and attribute it reads.
#[derive(Default)]
pub struct Names {
    all: FastSet<Tag>,
    recent: RecentNames,
}

struct RecentNames([Option<Tag>; RecentNames::SLOTS]);

impl Default for RecentNames {
    fn default() -> RecentNames {
        RecentNames(std::array::from_fn(|_| None))
    }
}

impl RecentNames {
    const SLOTS: usize = 64;

    #[inline]
    fn slot(name: &[u8]) -> usize {
        let (first, last) = match name {
            [] => (0, 0),
            [first, .., last] => (*first as usize, *last as usize),
            [only] => (*only as usize, 0),
        };
        (name.len().wrapping_mul(7) ^ first.wrapping_mul(3) ^ (last << 1)) % Self::SLOTS
    }
}

impl Names {
    pub fn get(&mut self, name: &str) -> Tag {
        let slot = RecentNames::slot(name.as_bytes());
        if let Some(tag) = &self.recent.0[slot] {
            if tag.as_str() == name {
                return tag.clone();
            }
        }
        let tag = match self.all.get(name) {
            Some(tag) => tag.clone(),
            None => {
                let tag = Tag::new(name);
                self.all.insert(tag.clone());
                tag
            }
        };
        self.recent.0[slot] = Some(tag.clone());
        tag
    }
}

pub type Attrs = Vec<(Tag, crate::text::Text)>;

/// The value `Reader::Libxml2` gives an attribute written without one (libxml2 writes it
/// bare). A NUL never reaches a value otherwise: libxml2 reads it as U+FFFD.
pub const VALUELESS: &str = "\0";

/// Elements whose content libxml2 2.14 reads as text, character references decoded, when it
/// parses a page itself (see `parse`).
pub fn is_rcdata(tag: &str) -> bool {
    tag == "textarea" || tag == "title"
}

pub fn is_raw_text(tag: &str) -> bool {
    matches!(tag, "script" | "style" | "xmp" | "iframe" | "noembed" | "noframes" | "plaintext")
}

pub fn is_removed_tag(tag: &str) -> bool {
    matches!(tag, "title" | "head" | "style" | "script" | "link" | "meta" | "iframe" | "frame" | "nav")
}

/// Elements whose whitespace-only text libxml2 keeps (its `allowPCData` list).
pub fn allows_pcdata(tag: &str) -> bool {
    matches!(
        tag,
        "a" | "abbr"
            | "acronym"
            | "address"
            | "applet"
            | "b"
            | "bdo"
            | "big"
            | "blockquote"
            | "body"
            | "button"
            | "caption"
            | "center"
            | "cite"
            | "code"
            | "dd"
            | "del"
            | "dfn"
            | "div"
            | "dt"
            | "em"
            | "font"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "i"
            | "iframe"
            | "ins"
            | "kbd"
            | "label"
            | "legend"
            | "li"
            | "noframes"
            | "noscript"
            | "object"
            | "p"
            | "pre"
            | "q"
            | "s"
            | "samp"
            | "small"
            | "span"
            | "strike"
            | "strong"
            | "td"
            | "th"
            | "tt"
            | "u"
            | "var"
    )
}
