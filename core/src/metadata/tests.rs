//! Exact values on small pages: each source alone, then the trust order between them.

use super::{read, PageMetadata};
use crate::page::{spec_tree, Page, Read};

fn metadata(html: &str) -> PageMetadata {
    let page = Page::new(html.as_bytes()).expect("UTF-8");
    let (tree, root, _) = spec_tree(&page, Read::Walk).expect("a tree");
    read(&tree, root)
}

const JSON_LD: &str = r#"<script type="application/ld+json">{"@context": "https://schema.org",
 "@type": "NewsArticle", "headline": "JSON-LD headline", "author": {"@type": "Person", "name": "Ann Lee"},
 "datePublished": "2024-05-01T08:00:00+02:00", "dateModified": "2024-05-02T09:30:00Z",
 "publisher": {"@type": "Organization", "name": "JSON-LD Times"}, "inLanguage": "fr",
 "description": "JSON-LD description"}</script>"#;
const OPEN_GRAPH: &str = r#"<meta property="og:title" content="OG title">
<meta property="og:site_name" content="OG Site"><meta property="og:url" content="https://og.example/story">
<meta property="og:description" content="OG description"><meta property="og:locale" content="de_DE">
<meta property="article:published_time" content="2023-11-20T10:00:00Z">
<meta property="article:modified_time" content="2023-11-21">
<meta property="article:author" content="https://www.facebook.com/someone">"#;
const META: &str = r#"<meta name="author" content="By Carl Moe and Dee Roy"><meta name="date" content="2022/07/04">
<meta name="description" content="Meta description"><meta name="twitter:title" content="Twitter title">"#;
const HEADING: &str = "<title>Story heading | Heading Site</title>";
const BODY: &str = r#"<body><h1>Story heading</h1><time datetime="2021-01-02">Jan 2</time>
<p>Text.</p></body>"#;

fn page(lang: &str, head: &[&str]) -> String {
    format!("<!DOCTYPE html><html{lang}><head>{}</head>{BODY}</html>", head.concat())
}

#[test]
fn json_ld_alone() {
    let m = metadata(&page("", &[JSON_LD]));
    assert_eq!(m.title.as_deref(), Some("JSON-LD headline"));
    assert_eq!(m.authors, ["Ann Lee"]);
    assert_eq!(m.published.as_deref(), Some("2024-05-01T08:00:00+02:00"));
    assert_eq!(m.modified.as_deref(), Some("2024-05-02T09:30:00Z"));
    assert_eq!(m.site_name.as_deref(), Some("JSON-LD Times"));
    assert_eq!(m.language.as_deref(), Some("fr"));
    assert_eq!(m.description.as_deref(), Some("JSON-LD description"));
    assert_eq!(m.canonical_url, None);
}

#[test]
fn open_graph_alone() {
    let m = metadata(&page("", &[OPEN_GRAPH]));
    assert_eq!(m.title.as_deref(), Some("OG title"));
    // article:author is a profile's URL here: no name
    assert!(m.authors.is_empty());
    assert_eq!(m.published.as_deref(), Some("2023-11-20T10:00:00Z"));
    assert_eq!(m.modified.as_deref(), Some("2023-11-21"));
    assert_eq!(m.site_name.as_deref(), Some("OG Site"));
    assert_eq!(m.language.as_deref(), Some("de"));
    assert_eq!(m.canonical_url.as_deref(), Some("https://og.example/story"));
    assert_eq!(m.description.as_deref(), Some("OG description"));
}

#[test]
fn other_meta_alone() {
    let m = metadata(&page("", &[META]));
    assert_eq!(m.title.as_deref(), Some("Twitter title"));
    assert_eq!(m.authors, ["Carl Moe", "Dee Roy"]);
    assert_eq!(m.published.as_deref(), Some("2022-07-04"));
    assert_eq!(m.description.as_deref(), Some("Meta description"));
    assert_eq!((m.modified, m.site_name, m.language, m.canonical_url), (None, None, None, None));
}

#[test]
fn the_pages_own_heading_and_time_alone() {
    let m = metadata(&page(" lang=\"en-GB\"", &[HEADING]));
    assert_eq!(m.title.as_deref(), Some("Story heading"));
    assert_eq!(m.published.as_deref(), Some("2021-01-02"));
    assert_eq!(m.language.as_deref(), Some("en"));
    // the <title> less the site's name, where no <h1> is in it
    let m = metadata("<html><head><title>Heading Site | Another story</title>\
                      <meta property=og:site_name content='Heading Site'></head><body><h1>Menu</h1></body></html>");
    assert_eq!(m.title.as_deref(), Some("Another story"));
    let m = metadata("<html><head><title> A  plain\n title </title></head><body><p>x</body></html>");
    assert_eq!(m.title.as_deref(), Some("A plain title"));
}

#[test]
fn sources_are_read_in_order_of_trust() {
    let all = page(" lang=\"es\"", &[HEADING, META, OPEN_GRAPH, JSON_LD]);
    let m = metadata(&all);
    assert_eq!(m.title.as_deref(), Some("JSON-LD headline"));
    assert_eq!(m.authors, ["Ann Lee"]);
    assert_eq!(m.published.as_deref(), Some("2024-05-01T08:00:00+02:00"));
    assert_eq!(m.site_name.as_deref(), Some("JSON-LD Times"));
    // the declared lang first, then what JSON-LD says
    assert_eq!(m.language.as_deref(), Some("es"));
    assert_eq!(m.description.as_deref(), Some("JSON-LD description"));
    let without_json_ld = metadata(&page("", &[HEADING, META, OPEN_GRAPH]));
    assert_eq!(without_json_ld.title.as_deref(), Some("OG title"));
    assert_eq!(without_json_ld.authors, ["Carl Moe", "Dee Roy"]);
    assert_eq!(without_json_ld.published.as_deref(), Some("2023-11-20T10:00:00Z"));
    assert_eq!(without_json_ld.description.as_deref(), Some("OG description"));
    assert_eq!(without_json_ld.language.as_deref(), Some("de"));
    let meta_and_heading = metadata(&page("", &[HEADING, META]));
    assert_eq!(meta_and_heading.title.as_deref(), Some("Twitter title"));
    assert_eq!(meta_and_heading.published.as_deref(), Some("2022-07-04"));
}

#[test]
fn broken_json_ld_and_odd_values_leave_fields_to_the_next_source() {
    let broken = r#"<script type="application/ld+json">{"@type": "Article", "headline": "Cut", </script>
<script type="application/ld+json">{"@type": "Article", "datePublished": "not a date",
 "author": [null, 3, {"name": ""}]}</script>"#;
    let m = metadata(&page("", &[broken, OPEN_GRAPH, "<meta name=date content='2024-02-30'>"]));
    assert_eq!(m.title.as_deref(), Some("OG title"));
    assert_eq!(m.published.as_deref(), Some("2023-11-20T10:00:00Z"));
    assert!(m.authors.is_empty());
    let m = metadata("<html lang='x-default'><head><meta property=og:locale content='en_US'></head></html>");
    assert_eq!(m.language.as_deref(), Some("en"));
    assert_eq!(metadata("<html><body></body></html>"), PageMetadata::default());
    assert_eq!(metadata(""), PageMetadata::default());
}

#[test]
fn canonical_urls_resolve_against_the_pages_base() {
    let m = metadata(
        "<head><base href='https://site.example/news/'><link rel='canonical' href='a.html'>\
                      <meta property=og:url content='https://og.example/x'></head>",
    );
    assert_eq!(m.canonical_url.as_deref(), Some("https://site.example/news/a.html"));
    let m = metadata("<head><link rel='alternate canonical' href='/a'></head>");
    assert_eq!(m.canonical_url.as_deref(), Some("/a"));
    let m = metadata("<head><link rel='canonical' href='javascript:void(0)'><meta property=og:url content='https://og.example/x'></head>");
    assert_eq!(m.canonical_url.as_deref(), Some("https://og.example/x"));
}

#[test]
fn an_images_title_is_not_the_pages() {
    let m = metadata("<body><svg><title>icon</title></svg><h1>Real</h1></body>");
    assert_eq!(m.title.as_deref(), Some("Real"));
}

#[test]
fn the_last_sources_of_a_date_microdata_then_the_address() {
    let m = metadata("<body><span itemprop=datePublished content='2020-02-02'>2 Feb</span><time datetime='2021-01-01'></time></body>");
    assert_eq!(m.published.as_deref(), Some("2020-02-02"));
    let m = metadata("<head><link rel=canonical href='https://a.example/2019/05/06/story'></head>");
    assert_eq!(m.published.as_deref(), Some("2019-05-06"));
    let m = metadata("<head><link rel=canonical href='https://a.example/2019/05/06/story'></head><body><time datetime='2018-01-01'></body>");
    assert_eq!(m.published.as_deref(), Some("2018-01-01"));
}

#[test]
fn a_date_written_where_the_page_marks_one() {
    let m = metadata(
        "<body><div class='byline'><span class='post-date'>Feb 11, 2019 · 3 min read</span></div></body>",
    );
    assert_eq!(m.published.as_deref(), Some("2019-02-11"));
    // a container of the class is not read (its text is the page's, not a date's)
    let long = "word ".repeat(40);
    let m = metadata(&format!("<body><div class='date-wrapper'>{long} May 5, 2020</div></body>"));
    assert_eq!(m.published, None);
    // a <time datetime> comes first
    let m = metadata("<body><span class=date>Feb 11, 2019</span><time datetime='2018-01-01'></time></body>");
    assert_eq!(m.published.as_deref(), Some("2018-01-01"));
}
