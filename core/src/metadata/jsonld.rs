//! What a page's JSON-LD (`<script type="application/ld+json">`) says of it: schema.org's
//! `Article` (and every `…Article`, `…Posting`, `Report`, `Review`, `Recipe`) first, then its
//! `WebPage` (and every `…Page`), then `WebSite` and the publisher for the site's name.
//! Scripts may hold one object, an array of them, or a `@graph`; a person or organization
//! may be named by `@id` elsewhere in the page's graphs. A script that is not JSON (a trailing
//! comma, raw newlines in strings, a CMS's `<!-- -->` around it) is read once more with its
//! control characters as spaces, then skipped: never a page's failure.

use super::PageMetadata;
use crate::json::Value;

/// How deep `@graph`s and arrays are followed for the page's objects.
const MAX_NESTING: usize = 4;

fn parse(script: &str) -> Option<Value> {
    let mut text = script.trim();
    for (open, close) in [("<!--", "-->"), ("//<![CDATA[", "//]]>"), ("<![CDATA[", "]]>")] {
        text = text.strip_prefix(open).unwrap_or(text).trim();
        text = text.strip_suffix(close).unwrap_or(text).trim();
    }
    crate::json::parse_str(text).ok().or_else(|| {
        let spaced: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        crate::json::parse_str(&spaced).ok()
    })
}

fn collect<'a>(value: &'a Value, out: &mut Vec<&'a Value>, depth: usize) {
    if depth > MAX_NESTING {
        return;
    }
    match value {
        Value::Array(items) => items.iter().for_each(|item| collect(item, out, depth + 1)),
        Value::Object(_) => {
            out.push(value);
            if let Some(graph) = value.get("@graph") {
                collect(graph, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// The object's `@type`s, without a `schema.org/` prefix.
fn types(object: &Value) -> impl Iterator<Item = &str> {
    let value = object.get("@type");
    let items: Vec<&str> = match value {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    items.into_iter().map(|t| t.rsplit('/').next().unwrap_or(t))
}

fn is_article(object: &Value) -> bool {
    types(object).any(|t| {
        t.ends_with("Article") || t.ends_with("Posting") || matches!(t, "Report" | "Review" | "Recipe")
    })
}

fn is_page(object: &Value) -> bool {
    types(object).any(|t| t.ends_with("Page"))
}

/// A string value (the first string of an array), its character references decoded and its
/// whitespace collapsed; None when empty.
fn text(value: Option<&Value>) -> Option<String> {
    let value = match value? {
        Value::Array(items) => items.iter().find_map(Value::as_str)?,
        v => v.as_str()?,
    };
    super::clean(&crate::charref::py_unescape(value))
}

/// The object `value` names: itself, or the object of its `@id` among the page's.
fn resolve<'a>(value: &'a Value, objects: &[&'a Value]) -> &'a Value {
    if value.get("name").is_none() {
        if let Some(id) = value.get("@id").and_then(Value::as_str) {
            let same =
                |o: &&&Value| o.get("@id").and_then(Value::as_str) == Some(id) && o.get("name").is_some();
            if let Some(found) = objects.iter().find(same) {
                return found;
            }
        }
    }
    value
}

/// The names of `value`: a string, a person or organization (`name`), or an array of them.
fn names(value: &Value, objects: &[&Value], out: &mut Vec<String>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| names(item, objects, out)),
        Value::String(_) => out.extend(text(Some(value))),
        Value::Object(_) => out.extend(text(resolve(value, objects).get("name"))),
        _ => {}
    }
}

/// The scripts that parse (a broken one says nothing).
fn parse_all(scripts: &[&str]) -> Vec<Value> {
    scripts.iter().filter_map(|s| parse(s)).collect()
}

/// Every object of the parsed scripts (`collect`: `@graph`s and arrays opened).
fn objects(parsed: &[Value]) -> Vec<&Value> {
    let mut objects = Vec::new();
    for value in parsed {
        collect(value, &mut objects, 0);
    }
    objects
}

/// What kind of page the JSON-LD scripts say this is: (a story: one of `is_article`'s types;
/// a listing: `CollectionPage`, `ItemList`, `SearchResultsPage`, `OfferCatalog`, `Blog`; a
/// product: `Product`, `ProductGroup`, `ProductModel`, `IndividualProduct`, `Offer`,
/// `AggregateOffer`), each true where any of the page's objects has such a type.
pub fn kinds(scripts: &[&str]) -> (bool, bool, bool) {
    let parsed = parse_all(scripts);
    let objects = objects(&parsed);
    let listing = |o: &&Value| {
        types(o).any(|t| {
            matches!(t, "CollectionPage" | "ItemList" | "SearchResultsPage" | "OfferCatalog" | "Blog")
        })
    };
    let product = |o: &&Value| {
        types(o).any(|t| {
            matches!(
                t,
                "Product"
                    | "ProductGroup"
                    | "ProductModel"
                    | "IndividualProduct"
                    | "Offer"
                    | "AggregateOffer"
            )
        })
    };
    (objects.iter().any(|o| is_article(o)), objects.iter().any(listing), objects.iter().any(product))
}

/// What the page's JSON-LD scripts say (no canonical URL: `mod.rs` reads that from links).
pub fn read(scripts: &[&str]) -> PageMetadata {
    let parsed = parse_all(scripts);
    let objects = objects(&parsed);
    let mut data = PageMetadata::default();
    if objects.is_empty() {
        return data;
    }
    // the article's own value first, its page's where the article has none
    let main: Vec<&Value> = objects
        .iter()
        .filter(|o| is_article(o))
        .take(1)
        .chain(objects.iter().filter(|o| is_page(o)).take(1))
        .copied()
        .collect();
    let first = |read: &dyn Fn(&Value) -> Option<String>| main.iter().find_map(|o| read(o));
    data.title = first(&|o| text(o.get("headline")).or_else(|| text(o.get("name"))));
    data.published = first(&|o| {
        ["datePublished", "dateCreated"]
            .iter()
            .find_map(|k| text(o.get(k)).and_then(|d| super::dates::normalize(&d)))
    });
    data.modified = first(&|o| text(o.get("dateModified")).and_then(|d| super::dates::normalize(&d)));
    data.language = first(&|o| {
        let value = o.get("inLanguage")?;
        text(Some(value)).or_else(|| text(value.get("alternateName")))
    });
    data.description = first(&|o| text(o.get("description")));
    for object in &main {
        if let Some(author) = object.get("author").or_else(|| object.get("creator")) {
            names(author, &objects, &mut data.authors);
        }
        if !data.authors.is_empty() {
            break;
        }
    }
    data.site_name = objects
        .iter()
        .filter(|o| types(o).any(|t| t == "WebSite"))
        .find_map(|o| text(o.get("name")))
        .or_else(|| {
            main.iter().find_map(|o| {
                let publisher = o.get("publisher")?;
                let publisher = match publisher {
                    Value::Array(items) => items.first()?,
                    p => p,
                };
                text(resolve(publisher, &objects).get("name"))
            })
        });
    data
}

#[cfg(test)]
mod tests {
    use super::read;

    #[test]
    fn an_articles_graph_gives_its_fields() {
        let graph = r##"{"@context": "https://schema.org", "@graph": [
            {"@type": "WebSite", "@id": "https://ex.org/#site", "name": "Example News"},
            {"@type": "WebPage", "name": "Page name", "datePublished": "2024-01-02T03:04:05+00:00",
             "inLanguage": "en-US", "description": "The page's description"},
            {"@type": ["NewsArticle"], "headline": "The headline &amp; more",
             "author": [{"@id": "https://ex.org/#p1"}, {"@type": "Person", "name": " Ann  Lee "}],
             "dateModified": "2024-01-03", "publisher": {"@id": "https://ex.org/#org"}},
            {"@type": "Person", "@id": "https://ex.org/#p1", "name": "Bo Chen"}
        ]}"##;
        let data = read(&[graph]);
        assert_eq!(data.title.as_deref(), Some("The headline & more"));
        assert_eq!(data.authors, ["Bo Chen", "Ann Lee"]);
        assert_eq!(data.published.as_deref(), Some("2024-01-02T03:04:05+00:00"));
        assert_eq!(data.modified.as_deref(), Some("2024-01-03"));
        assert_eq!(data.site_name.as_deref(), Some("Example News"));
        assert_eq!(data.language.as_deref(), Some("en-US"));
        assert_eq!(data.description.as_deref(), Some("The page's description"));
    }

    #[test]
    fn broken_scripts_are_skipped_or_read_leniently() {
        let broken = r#"{"@type": "Article", "headline": "Cut"#;
        let newline =
            "<!-- {\"@type\": \"BlogPosting\", \"headline\": \"Two\nlines\",\n \"author\": \"Di\"} -->";
        let array = r#"[{"@type": "Organization", "name": "Org"}, {"@type": "http://schema.org/Article", "name": "Named", "publisher": {"name": "Pub"}}]"#;
        let data = read(&[broken, "", "null", "[1, 2]", newline, array]);
        assert_eq!(data.title.as_deref(), Some("Two lines"));
        assert_eq!(data.authors, ["Di"]);
        let data = read(&[broken, array]);
        assert_eq!(data.title.as_deref(), Some("Named"));
        assert_eq!(data.site_name.as_deref(), Some("Pub"));
        let data = read(&[broken]);
        assert!(data.title.is_none() && data.authors.is_empty());
    }
}
