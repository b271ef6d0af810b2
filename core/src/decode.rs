//! The first stage: a page's bytes and its transport's content type (an HTTP or WARC header, a
//! caller's `content_type`) in, its text, the encoding it was read with and how that encoding
//! was decided out. Every entry point reads page bytes through here.
//!
//! The decision, in order (the HTML standard's "determining the character encoding", with a
//! detector where it leaves the choice to the user agent):
//!
//! 1. A byte order mark (UTF-8, UTF-16LE, UTF-16BE). The standard puts it before everything,
//!    the transport's charset included: a page that starts with a BOM is read with the BOM's
//!    encoding whatever its header says, and the BOM is not part of the text.
//! 2. The transport's charset: `charset=` in the content type, resolved by the Encoding
//!    Standard's label table (`iso-8859-1`, `latin1` and `ascii` are windows-1252, `x-sjis` is
//!    Shift_JIS …). A bare label (`"windows-1251"`) is taken as the charset too.
//! 3. A `<meta charset>` or `<meta http-equiv="Content-Type" content="…charset=…">` in the
//!    page: the standard's prescan of the first 1024 bytes, then the same scan of the rest of
//!    the page (the standard's parser, meeting such a `<meta>` while the encoding is only
//!    guessed, changes to it; source `meta-late`).
//! 4. The detector (`detect.rs`).
//! 5. UTF-8 with replacement, for pages with no byte above 0x7F.
//!
//! Two contradictions between a declaration and the bytes are settled by the bytes, because
//! crawled pages show both often and the bytes leave no doubt:
//! - a declared legacy encoding (any but UTF-8 and UTF-16) on bytes that are valid UTF-8 and not
//!   all ASCII is read as UTF-8 (source `utf-8-content`): a template or server default such as
//!   `iso-8859-1` on a UTF-8 page. Legacy text is practically never valid UTF-8: of the 2,887
//!   re-encodings of 483 dev and train pages into the 18 legacy encodings their text fits,
//!   11 are (`python -m bench.detector`, "legacy pages valid as UTF-8"), and those
//!   11 are not legacy text either: ISO-8859-2 and ISO-8859-15 copies of 9 pages whose text
//!   already holds UTF-8 read as Latin-1 (`â` and the C1 controls U+0080–U+009F where `“`
//!   was), whose bytes in those encodings are the UTF-8 of the repaired text;
//! - a declared UTF-8 on bytes with invalid sequences and not one valid multi-byte sequence
//!   goes to the detector (source `detector`): the page is in a legacy encoding.
//!
//! A label naming the standard's `replacement` encoding (`iso-2022-kr`, `hz-gb-2312` …) is
//! passed over like an unknown label: the standard decodes such a page to a single U+FFFD,
//! which would leave nothing to extract.

use crate::detect::{self, Evidence};
use crate::encoding::{self, Encoding};

/// The standard's prescan reads this many bytes.
pub const PRESCAN_BYTES: usize = 1024;

/// How the encoding was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Bom,
    Transport,
    Meta,
    MetaLate,
    Utf8Content,
    Detector,
    Default,
}

impl Source {
    /// The name (the tests read it; C callers get `c_name`).
    #[cfg(test)]
    pub fn name(self) -> &'static str {
        let name = self.c_name();
        &name[..name.len() - 1]
    }

    /// The name, NUL-terminated (for C callers).
    pub fn c_name(self) -> &'static str {
        match self {
            Source::Bom => "bom\0",
            Source::Transport => "transport\0",
            Source::Meta => "meta\0",
            Source::MetaLate => "meta-late\0",
            Source::Utf8Content => "utf-8-content\0",
            Source::Detector => "detector\0",
            Source::Default => "default\0",
        }
    }
}

/// A page's text and how it was read.
#[derive(Debug, PartialEq, Eq)]
pub struct Decoded {
    pub text: String,
    pub encoding: Encoding,
    pub source: Source,
}

/// The encoding `bytes` are read with, and why (see the module's doc).
pub fn choose_encoding(bytes: &[u8], content_type: Option<&[u8]>) -> (Encoding, Source) {
    if let Some((bom_encoding, _)) = encoding::bom(bytes) {
        return (bom_encoding, Source::Bom);
    }
    let declared = content_type
        .and_then(charset_of_content_type)
        .and_then(usable)
        .map(|e| (e, Source::Transport))
        .or_else(|| {
            let found = encoding::prescan(bytes, |e| usable(e).is_some())?;
            let source = if found.label_end <= PRESCAN_BYTES { Source::Meta } else { Source::MetaLate };
            Some((found.encoding, source))
        });
    if let Some((declared, source)) = declared {
        if declared == Encoding::UTF_8 {
            let (valid, invalid) = detect::utf8_counts(bytes);
            if invalid > 0 && valid == 0 {
                return (detect::best_legacy(bytes), Source::Detector);
            }
        } else if declared.is_ascii_compatible() && !bytes.is_ascii() && std::str::from_utf8(bytes).is_ok() {
            return (Encoding::UTF_8, Source::Utf8Content);
        }
        return (declared, source);
    }
    match detect::detect(bytes) {
        (e, Evidence::Ascii) => (e, Source::Default),
        (e, _) => (e, Source::Detector),
    }
}

/// `bytes` decoded (see the module's doc); `content_type` is the transport's, if any.
pub fn decode_page(bytes: &[u8], content_type: Option<&[u8]>) -> Decoded {
    let (chosen, source) = choose_encoding(bytes, content_type);
    let body = match encoding::bom(bytes) {
        Some((bom_encoding, length)) if bom_encoding == chosen => &bytes[length..],
        _ => bytes,
    };
    let (text, _errors) = encoding::decode(body, chosen);
    Decoded { text, encoding: chosen, source }
}

/// A declared encoding the page can be read with (not the `replacement` encoding).
fn usable(declared: Encoding) -> Option<Encoding> {
    (declared != Encoding::REPLACEMENT).then_some(declared)
}

/// The encoding the `charset` parameter of a content type (`text/html; charset="Shift_JIS"`)
/// names; a bare label (no `/`, `;` or `=`) names one itself. The parameter is read as the
/// MIME Sniffing standard parses parameters: after a `;`, name up to `=` (ASCII
/// case-insensitive, surrounding whitespace trimmed), value up to the next `;` or quoted;
/// the first `charset` counts.
pub fn charset_of_content_type(content_type: &[u8]) -> Option<Encoding> {
    let trimmed = trim(content_type);
    if !trimmed.is_empty() && !trimmed.iter().any(|&b| matches!(b, b'/' | b';' | b'=')) {
        return Encoding::for_label(trimmed);
    }
    let mut rest = match trimmed.iter().position(|&b| b == b';') {
        Some(at) => &trimmed[at + 1..],
        None => return None,
    };
    loop {
        rest = trim_start(rest);
        let name_end = rest.iter().position(|&b| b == b';' || b == b'=').unwrap_or(rest.len());
        let name = trim(&rest[..name_end]);
        rest = &rest[name_end..];
        if rest.first() == Some(&b';') {
            rest = &rest[1..];
            continue;
        }
        if rest.is_empty() {
            return None;
        }
        rest = &rest[1..]; // '='
        let value: Vec<u8>;
        if rest.first() == Some(&b'"') {
            // a quoted string: backslash escapes the next byte; up to the closing quote, then
            // skip to the next ';'
            let mut v = Vec::new();
            let mut i = 1;
            while i < rest.len() && rest[i] != b'"' {
                if rest[i] == b'\\' && i + 1 < rest.len() {
                    i += 1;
                }
                v.push(rest[i]);
                i += 1;
            }
            value = v;
            rest = match rest[i.min(rest.len())..].iter().position(|&b| b == b';') {
                Some(at) => &rest[i + at + 1..],
                None => &[],
            };
        } else {
            let end = rest.iter().position(|&b| b == b';').unwrap_or(rest.len());
            value = trim(&rest[..end]).to_vec();
            rest = if end < rest.len() { &rest[end + 1..] } else { &[] };
        }
        if name.eq_ignore_ascii_case(b"charset") {
            return Encoding::for_label(&value);
        }
        if rest.is_empty() {
            return None;
        }
    }
}

fn is_http_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|&b| !is_http_whitespace(b)).unwrap_or(bytes.len());
    &bytes[start..]
}

fn trim(bytes: &[u8]) -> &[u8] {
    let bytes = trim_start(bytes);
    let end = bytes.iter().rposition(|&b| !is_http_whitespace(b)).map_or(0, |p| p + 1);
    &bytes[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decided(bytes: &[u8], content_type: Option<&str>) -> (String, &'static str, &'static str) {
        let d = decode_page(bytes, content_type.map(str::as_bytes));
        (d.text, d.encoding.name(), d.source.name())
    }

    #[test]
    fn content_type_charset() {
        let name = |ct: &str| charset_of_content_type(ct.as_bytes()).map(Encoding::name);
        assert_eq!(name("text/html; charset=Shift_JIS"), Some("Shift_JIS"));
        assert_eq!(name("text/html;charset=\"iso-8859-1\""), Some("windows-1252"));
        assert_eq!(name("TEXT/HTML ; Charset = utf-8 ; q=1"), Some("UTF-8"));
        assert_eq!(name("text/html; foo=\"a;b\"; charset=koi8-r"), Some("KOI8-R"));
        assert_eq!(name("text/html; charset=gbk; charset=big5"), Some("GBK"));
        assert_eq!(name("text/html; charset"), None);
        assert_eq!(name("text/html; charset=unknown-thing"), None);
        assert_eq!(name("text/html"), None);
        assert_eq!(name("windows-1251"), Some("windows-1251"));
        assert_eq!(name(""), None);
    }

    #[test]
    fn bom_beats_transport_and_meta() {
        let mut page = b"\xef\xbb\xbf<meta charset=windows-1252><p>".to_vec();
        page.extend_from_slice("café".as_bytes());
        let (text, enc, source) = decided(&page, Some("text/html; charset=iso-8859-2"));
        assert_eq!((enc, source), ("UTF-8", "bom"));
        assert_eq!(text, "<meta charset=windows-1252><p>café");
        let utf16: Vec<u8> =
            [0xFF, 0xFE].into_iter().chain("<p>é</p>".encode_utf16().flat_map(u16::to_le_bytes)).collect();
        assert_eq!(decided(&utf16, Some("text/html; charset=utf-8")), ("<p>é</p>".into(), "UTF-16LE", "bom"));
    }

    #[test]
    fn transport_beats_meta() {
        let page = b"<meta charset=windows-1251><p>\xe8\xe8";
        assert_eq!(decided(page, Some("text/html; charset=ISO-8859-2")).1, "ISO-8859-2");
        assert_eq!(decided(page, None).1, "windows-1251");
        assert_eq!(decided(page, None).2, "meta");
        // an unknown or replacement label in the header is passed over
        assert_eq!(decided(page, Some("text/html; charset=x-nonsense")).2, "meta");
        assert_eq!(decided(page, Some("text/html; charset=iso-2022-kr")).2, "meta");
    }

    #[test]
    fn meta_after_the_prescan_window() {
        let mut page = b"<html><head><script>".to_vec();
        page.extend(std::iter::repeat_n(b'x', 1100));
        page.extend_from_slice(b"</script><meta charset=koi8-r></head><p>\xf0\xd2\xc9\xd7\xc5\xd4");
        assert_eq!(decided(&page, None).1, "KOI8-R");
        assert_eq!(decided(&page, None).2, "meta-late");
        assert!(decided(&page, None).0.ends_with("<p>Привет"));
    }

    #[test]
    fn utf8_content_overrules_a_legacy_declaration() {
        let page = "<meta charset=iso-8859-1><p>Café crème".as_bytes();
        assert_eq!(
            decided(page, None),
            ("<meta charset=iso-8859-1><p>Café crème".into(), "UTF-8", "utf-8-content")
        );
        assert_eq!(decided(page, Some("text/html; charset=windows-1252")).2, "utf-8-content");
        // all ASCII: the declaration stands (nothing to tell them apart)
        assert_eq!(decided(b"<meta charset=iso-8859-1><p>plain", None).1, "windows-1252");
    }

    #[test]
    fn legacy_bytes_overrule_a_utf8_declaration() {
        let page = b"<meta charset=utf-8><p>Caf\xe9 cr\xe8me \xe0 la carte, na\xefve";
        let (text, enc, source) = decided(page, None);
        assert_eq!((enc, source), ("windows-1252", "detector"));
        assert!(text.ends_with("Café crème à la carte, naïve"));
        // one valid multi-byte sequence: UTF-8 stands, the bad byte is replaced
        let page =
            "<meta charset=utf-8><p>Café \u{0}".as_bytes().iter().copied().chain([0xE9]).collect::<Vec<u8>>();
        assert_eq!(decided(&page, None).0, "<meta charset=utf-8><p>Café \u{0}\u{FFFD}");
    }

    #[test]
    fn replacement_characters() {
        let page = "<p>é a".bytes().chain(*b"\xff\xfeb").collect::<Vec<u8>>();
        assert_eq!(decided(&page, Some("text/html; charset=utf-8")).0, "<p>é a\u{FFFD}\u{FFFD}b");
        assert_eq!(decided(b"<p>\x81 ", Some("text/html; charset=shift_jis")).0, "<p>\u{FFFD} ");
        assert_eq!(decided(b"", None), (String::new(), "UTF-8", "default"));
    }
}
