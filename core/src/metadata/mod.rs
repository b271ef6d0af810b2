//! A page's metadata, read off the tree the simplify stage walks (no second parse): title,
//! authors, published and modified dates (ISO 8601), site name, language (ISO 639), canonical
//! URL and description. Each field takes the first value its sources give, in order of trust:
//!
//! - JSON-LD (`jsonld.rs`: schema.org's article, then its page, then the site);
//! - OpenGraph and `article:*` (`<meta property="og:title">`), then Twitter's cards;
//! - the other `<meta>` names (`author`, `description`, `date`, Dublin Core, `citation_*`,
//!   Parse.ly's, `itemprop` microdata);
//! - `<time datetime>` (one marked `pubdate` or `itemprop="datePublished"` first);
//! - the page's own heading: its first `<h1>`, or its `<title>` less the site's name.
//!
//! Language takes what the page declares first (`<html lang>`, `Content-Language`, then
//! JSON-LD's `inLanguage`, `og:locale`), else `language::detect` on the page's main content
//! (`Engine::finish`: the content is known only then). The canonical URL is
//! `<link rel="canonical">`, else `og:url`, resolved against `<base href>` (a relative one the
//! page gives no base for is given as written; the doors that know the page's own URL resolve
//! it against that, `runtime/flow/schema.py`). A value that is no value (an empty string, a
//! date that is no date, a URL as an author's name) is passed over: bad markup never fails a
//! page, it only leaves a field to the next source or empty.

mod dates;
mod jsonld;
pub mod language;
mod url;

use crate::tree::{py_isspace, Tree};

/// What the page's markup says of it (every field None or empty where it says nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageMetadata {
    pub title: Option<String>,
    pub authors: Vec<String>,
    pub published: Option<String>,
    pub modified: Option<String>,
    pub site_name: Option<String>,
    pub language: Option<String>,
    pub canonical_url: Option<String>,
    pub description: Option<String>,
}

/// Authors a page may name (more are a list of every contributor, or a page of bylines).
const MAX_AUTHORS: usize = 20;

/// `value` with its whitespace runs as one space, trimmed; None when nothing is left.
pub(crate) fn clean(value: &str) -> Option<String> {
    let mut out = String::with_capacity(value.len());
    for word in value.split(py_isspace).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    (!out.is_empty()).then_some(out)
}

/// The `<meta>` keys read, each as `property`, `name`, `itemprop` or `http-equiv` spell it
/// (lower case), by the field they give, in order of trust.
const TITLE_KEYS: &[&str] =
    &["og:title", "twitter:title", "dc.title", "dcterms.title", "citation_title", "parsely-title"];
const AUTHOR_KEYS: &[&str] = &[
    "author", "article:author", "dc.creator", "dcterms.creator", "citation_author", "parsely-author",
    "sailthru.author", "byl",
];
const PUBLISHED_KEYS: &[&str] = &[
    "article:published_time",
    "og:published_time",
    "datepublished",
    "pubdate",
    "publishdate",
    "publish-date",
    "publish_date",
    "date",
    "dc.date",
    "dc.date.issued",
    "dcterms.date",
    "dcterms.issued",
    "dcterms.created",
    "citation_publication_date",
    "citation_date",
    "sailthru.date",
    "parsely-pub-date",
    "citation_online_date",
    "published_at",
    "published_time",
    "publication_date",
    "date_published",
    "article.published",
    "article_date_original",
    "original-publish-date",
    "og:pubdate",
    "rnews:datepublished",
    "datecreated",
];
const MODIFIED_KEYS: &[&str] = &[
    "article:modified_time",
    "og:updated_time",
    "datemodified",
    "dcterms.modified",
    "last-modified",
    "lastmod",
];
const SITE_KEYS: &[&str] = &["og:site_name", "application-name"];
const LANGUAGE_KEYS: &[&str] = &["content-language", "language", "dc.language", "dcterms.language"];
const DESCRIPTION_KEYS: &[&str] =
    &["og:description", "description", "twitter:description", "dc.description", "dcterms.description"];

/// What one pass over the tree found, as written.
#[derive(Default)]
struct Found<'t> {
    html_lang: Option<&'t str>,
    base: Option<&'t str>,
    canonical: Option<&'t str>,
    /// (key, content) of the `<meta>` elements whose key is read, in page order
    meta: Vec<(String, &'t str)>,
    scripts: Vec<&'t str>,
    title: Option<String>,
    h1: Option<String>,
    time: Option<&'t str>,
    time_marked: Option<&'t str>,
    /// the first element but `<meta>` marked `itemprop="datePublished"` with a `content` or
    /// `datetime`
    itemprop_published: Option<&'t str>,
    /// the first date written in a short element whose class or id says it holds one
    /// (`class="post-date"`: `Feb 11, 2019`)
    text_date: Option<String>,
}

/// Words of a class or id that mark an element holding the page's date.
const DATE_CLASS_WORDS: [&str; 4] = ["date", "publish", "posted", "time"];
/// The longest text read for a date in such an element (a longer one is a container).
const DATE_TEXT_BYTES: usize = 120;

/// The text of `node`'s subtree, when it is at most `limit` bytes.
fn short_text_of(tree: &Tree, node: usize, limit: usize) -> Option<String> {
    let mut out = String::new();
    let mut stack = vec![(node, false)];
    while let Some((n, tail)) = stack.pop() {
        let element = &tree.nodes[n];
        let piece = if tail { element.tail.as_deref() } else { element.text.as_deref() };
        out.extend(piece);
        if out.len() > limit {
            return None;
        }
        if !tail {
            if n != node {
                stack.push((n, true));
            }
            stack.extend(element.children.iter().rev().map(|&c| (c, false)));
        }
    }
    Some(out)
}

fn is_read(key: &str) -> bool {
    [TITLE_KEYS, AUTHOR_KEYS, PUBLISHED_KEYS, MODIFIED_KEYS, SITE_KEYS, LANGUAGE_KEYS, DESCRIPTION_KEYS]
        .iter()
        .any(|keys| keys.contains(&key))
        || key == "og:url"
        || key == "og:locale"
}

/// The text of `node`'s subtree.
fn text_of(tree: &Tree, node: usize) -> String {
    let mut out = String::new();
    let mut stack = vec![(node, false)];
    while let Some((n, tail)) = stack.pop() {
        let element = &tree.nodes[n];
        if tail {
            out.extend(element.tail.as_deref());
            continue;
        }
        out.extend(element.text.as_deref());
        if n != node {
            stack.push((n, true));
        }
        stack.extend(element.children.iter().rev().map(|&c| (c, false)));
    }
    out
}

/// The text of a `<script type="application/ld+json">` (None for any other script).
fn json_ld(tree: &Tree, n: usize) -> Option<&str> {
    let json_ld = tree.attr(n, "type").is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"));
    json_ld.then(|| tree.nodes[n].text.as_deref()).flatten()
}

fn find(tree: &Tree, root: usize) -> Found<'_> {
    let mut found = Found::default();
    let attr = |n: usize, name: &str| tree.attr(n, name);
    found.html_lang = attr(root, "lang").or_else(|| attr(root, "xml:lang")).filter(|l| !l.trim().is_empty());
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        let node = &tree.nodes[n];
        match node.tag.as_str() {
            // an image's own <title> and <meta> say nothing of the page
            "svg" | "math" => continue,
            "meta" => {
                if let Some(content) = attr(n, "content") {
                    for key_attr in ["property", "name", "itemprop", "http-equiv"] {
                        if let Some(key) = attr(n, key_attr) {
                            let key = key.trim().to_ascii_lowercase();
                            if is_read(&key) {
                                found.meta.push((key, content));
                            }
                        }
                    }
                }
            }
            "link" => {
                let canonical = attr(n, "rel")
                    .is_some_and(|rel| rel.split(py_isspace).any(|r| r.eq_ignore_ascii_case("canonical")));
                if canonical && found.canonical.is_none() {
                    found.canonical = attr(n, "href");
                }
            }
            "base" if found.base.is_none() => found.base = attr(n, "href"),
            "script" => found.scripts.extend(json_ld(tree, n)),
            "title" if found.title.is_none() => found.title = clean(&text_of(tree, n)),
            "h1" if found.h1.is_none() => found.h1 = clean(&text_of(tree, n)),
            _ if found.itemprop_published.is_none()
                && attr(n, "itemprop").is_some_and(|p| p.eq_ignore_ascii_case("datePublished"))
                && (attr(n, "content").is_some() || attr(n, "datetime").is_some()) =>
            {
                found.itemprop_published = attr(n, "datetime").or_else(|| attr(n, "content"));
            }
            "time" | "span" | "div" | "p" | "li" | "small" | "abbr"
                if found.text_date.is_none()
                    && ["class", "id"].iter().any(|a| {
                        attr(n, a).is_some_and(|v| {
                            let v = v.to_ascii_lowercase();
                            DATE_CLASS_WORDS.iter().any(|w| v.contains(w))
                        })
                    })
                    && attr(n, "datetime").is_none() =>
            {
                found.text_date = short_text_of(tree, n, DATE_TEXT_BYTES).and_then(|t| dates::in_text(&t));
            }
            "time" => {
                if let Some(datetime) = attr(n, "datetime") {
                    let marked = attr(n, "pubdate").is_some()
                        || attr(n, "itemprop").is_some_and(|p| p.eq_ignore_ascii_case("datePublished"));
                    if marked && found.time_marked.is_none() {
                        found.time_marked = Some(datetime);
                    }
                    found.time.get_or_insert(datetime);
                }
            }
            _ => {}
        }
        stack.extend(node.children.iter().rev());
    }
    found
}

impl Found<'_> {
    /// The contents of the `<meta>` elements of `keys`, the keys in order of trust, each key's
    /// in page order.
    fn meta<'a>(&'a self, keys: &'a [&str]) -> impl Iterator<Item = &'a str> + 'a {
        keys.iter().flat_map(move |key| self.meta.iter().filter(move |(k, _)| k == key).map(|(_, v)| *v))
    }

    fn first_meta(&self, keys: &[&str]) -> Option<String> {
        self.meta(keys).find_map(clean)
    }
}

/// A byline's names: "By Ann Lee and Bo Chen" as two; a profile's URL or a handle is no name.
fn author_names(value: &str, out: &mut Vec<String>) {
    let Some(value) = clean(value) else { return };
    let lower = value.to_ascii_lowercase();
    let value = if lower.starts_with("by ") { &value[3..] } else { &value[..] };
    for part in value.split([';', '|', '&']).flat_map(|p| p.split(" and ")) {
        let Some(name) = clean(part) else { continue };
        let looks_like_url = name.contains("://") || name.starts_with("www.") || name.starts_with('@');
        if looks_like_url || name.len() > 100 {
            continue;
        }
        if out.len() < MAX_AUTHORS && !out.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
            out.push(name);
        }
    }
}

/// What separates a title from the site's name (`Story | Site`, `Site - Story`).
const TITLE_SEPARATORS: [&str; 8] = [" | ", " - ", " – ", " — ", " :: ", " · ", " « ", " » "];

/// The page's own heading: its `<h1>` where the `<title>` holds it (or there is no title),
/// else the `<title>` less the parts that name the site (`Story | Site`).
fn heading(found: &Found, site_name: Option<&str>) -> Option<String> {
    let title = found.title.as_deref();
    if let Some(h1) = found.h1.as_deref() {
        if title.is_none_or(|t| t.to_lowercase().contains(&h1.to_lowercase())) {
            return Some(h1.to_string());
        }
    }
    let title = title?;
    let mut parts: Vec<&str> = vec![title];
    for separator in TITLE_SEPARATORS {
        if title.contains(separator) {
            parts = title.split(separator).map(str::trim).filter(|p| !p.is_empty()).collect();
            break;
        }
    }
    if parts.len() > 1 {
        if let Some(site) = site_name {
            parts.retain(|p| !p.eq_ignore_ascii_case(site));
        }
        if let Some(longest) = parts.iter().max_by_key(|p| p.chars().count()) {
            return Some(longest.to_string());
        }
    }
    Some(title.to_string())
}

/// What kind of page its markup says it is (the block features' page columns, layout
/// `blocks-v6`): whether `og:type` is an article (`article`, or a type of it such as
/// `article:news`) and whether it is `website`; whether the JSON-LD holds a story, a listing,
/// a product (`jsonld::kinds`). A listing or a shop names its items in rails of alike cards
/// that are its main content; on a story's page, such rails are other stories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageKind {
    pub og_article: bool,
    pub og_website: bool,
    pub ld_article: bool,
    pub ld_listing: bool,
    pub ld_product: bool,
}

/// The page's `PageKind` from its tree (`root`: its `<html>`; `skip`: the elements not read,
/// with what they hold).
pub fn page_kind(tree: &Tree, root: usize, skip: impl Fn(usize) -> bool) -> PageKind {
    let mut kind = PageKind::default();
    let mut scripts: Vec<&str> = Vec::new();
    let mut og_type: Option<&str> = None;
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if skip(n) {
            continue;
        }
        let node = &tree.nodes[n];
        match node.tag.as_str() {
            "svg" | "math" => continue,
            "meta"
                if og_type.is_none()
                    && tree
                        .attr(n, "property")
                        .or_else(|| tree.attr(n, "name"))
                        .is_some_and(|k| k.trim().eq_ignore_ascii_case("og:type")) =>
            {
                og_type = tree.attr(n, "content");
            }
            "script" => scripts.extend(json_ld(tree, n)),
            _ => {}
        }
        stack.extend(node.children.iter().rev());
    }
    if let Some(value) = og_type {
        let value = value.trim().to_ascii_lowercase();
        kind.og_article =
            value == "article" || value.starts_with("article:") || value.starts_with("article.");
        kind.og_website = value == "website";
    }
    if !scripts.is_empty() {
        (kind.ld_article, kind.ld_listing, kind.ld_product) = jsonld::kinds(&scripts);
    }
    kind
}

/// The page's metadata from its tree (`root`: its `<html>`); `language` only where declared.
pub fn read(tree: &Tree, root: usize) -> PageMetadata {
    let found = find(tree, root);
    let linked = jsonld::read(&found.scripts);
    let site_name = linked.site_name.or_else(|| found.first_meta(SITE_KEYS));
    let title = linked
        .title
        .or_else(|| found.first_meta(TITLE_KEYS))
        .or_else(|| heading(&found, site_name.as_deref()));
    let mut authors = Vec::new();
    for name in &linked.authors {
        author_names(name, &mut authors);
    }
    if authors.is_empty() {
        // the first key that names anyone, all of its values (citation_author: one per author)
        for key in AUTHOR_KEYS {
            for value in found.meta(&[key]) {
                author_names(value, &mut authors);
            }
            if !authors.is_empty() {
                break;
            }
        }
    }
    let published = linked
        .published
        .or_else(|| found.meta(PUBLISHED_KEYS).find_map(dates::normalize))
        .or_else(|| {
            let marked = found.itemprop_published.into_iter().chain(found.time_marked);
            marked.chain(found.time).find_map(dates::normalize)
        })
        .or_else(|| found.text_date.clone());
    let modified = linked.modified.or_else(|| found.meta(MODIFIED_KEYS).find_map(dates::normalize));
    let language = found
        .html_lang
        .into_iter()
        .chain(found.meta(LANGUAGE_KEYS))
        .chain(linked.language.as_deref())
        .chain(found.meta(&["og:locale"]))
        .find_map(language::primary_subtag);
    let base = found.base.and_then(|b| url::resolve(b, None));
    let canonical_url = found.canonical.into_iter().chain(found.meta(&["og:url"])).find_map(|reference| {
        let reference = reference.trim();
        if reference.is_empty() {
            return None;
        }
        url::resolve(reference, base.as_deref())
            .or_else(|| (base.is_none() && !reference.contains(':')).then(|| reference.to_string()))
    });
    // a date the page's address holds (`/2024/03/05/story`), the last source
    let published = published.or_else(|| canonical_url.as_deref().and_then(dates::in_path));
    let description = linked.description.or_else(|| found.first_meta(DESCRIPTION_KEYS));
    PageMetadata { title, authors, published, modified, site_name, language, canonical_url, description }
}

#[cfg(test)]
mod tests;
