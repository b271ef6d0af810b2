//! lexbor's `encoding` module (the WHATWG Encoding Standard) and the HTML standard's `<meta>`
//! prescan from its `html` module (its tokenizer of the prescan), linked in (`build.rs`): encoding labels resolved by the
//! standard's label table, every encoding's decoder with replacement, the byte order mark.
//!
//! Only the lexbor functions called here are declared. lexbor's decoder context
//! (`lxb_encoding_decode_t`) stays opaque: its size comes from lexbor itself
//! (`lxb_encoding_decode_t_sizeof`) and it is handled through lexbor's non-inline accessors
//! (`*_noi`), so no C struct layout is copied here but `lxb_encoding_data_t`'s (the table entry
//! whose `decode` function is called).
//!
//! One decoder is not lexbor's: Shift_JIS. lexbor 3.0.0 takes only 0x81–0x9F, 0xE0 and 0xFC as
//! lead bytes where the standard takes 0x81–0x9F and 0xE0–0xFC, so every character whose lead
//! is 0xE1–0xFB (the second level of JIS X 0208 kanji from 0xE0 0x9F on, NEC and IBM
//! extensions) came out as U+FFFD; `decode_shift_jis` follows the standard's algorithm over
//! lexbor's own jis0208 index.

use std::ffi::{c_uint, c_void};

/// `lxb_status_t` values used here.
type Status = c_uint;
const STATUS_OK: Status = 0x0000;
const SMALL_BUFFER: Status = 0x000F;

type DecodeFn = unsafe extern "C" fn(ctx: *mut c_void, data: *mut *const u8, end: *const u8) -> Status;

/// `lxb_encoding_data_t`: one entry of lexbor's encoding table.
#[repr(C)]
struct EncodingData {
    encoding: c_uint,
    encode: *const c_void,
    decode: Option<DecodeFn>,
    encode_single: *const c_void,
    decode_single: *const c_void,
    name: *const std::ffi::c_char,
}

/// `lxb_html_encoding_entry_t`: where a declaration's label is in the prescanned bytes.
#[repr(C)]
struct MetaEntry {
    name: *const u8,
    end: *const u8,
}

/// `lxb_html_encoding_t`: opaque, allocated by lexbor.
#[repr(C)]
struct HtmlEncoding {
    _opaque: [u8; 0],
}

extern "C" {
    fn lxb_encoding_data_by_pre_name(name: *const u8, length: usize) -> *const EncodingData;
    fn lxb_encoding_data_noi(encoding: c_uint) -> *const EncodingData;
    fn lxb_encoding_decode_t_sizeof() -> usize;
    fn lxb_encoding_decode_init_noi(
        ctx: *mut c_void,
        data: *const EncodingData,
        buffer: *mut u32,
        length: usize,
    ) -> Status;
    fn lxb_encoding_decode_replace_set_noi(ctx: *mut c_void, replace: *const u32, length: usize) -> Status;
    fn lxb_encoding_decode_buf_used_noi(ctx: *mut c_void) -> usize;
    fn lxb_encoding_decode_buf_used_set_noi(ctx: *mut c_void, used: usize);
    fn lxb_encoding_decode_finish_noi(ctx: *mut c_void) -> Status;

    fn lxb_html_encoding_create_noi() -> *mut HtmlEncoding;
    fn lxb_html_encoding_init(em: *mut HtmlEncoding) -> Status;
    fn lxb_html_encoding_destroy(em: *mut HtmlEncoding, self_destroy: bool) -> *mut HtmlEncoding;
    fn lxb_html_encoding_determine(em: *mut HtmlEncoding, data: *const u8, end: *const u8) -> Status;
    fn lxb_html_encoding_meta_length_noi(em: *mut HtmlEncoding) -> usize;
    fn lxb_html_encoding_meta_entry_noi(em: *mut HtmlEncoding, index: usize) -> *const MetaEntry;

    static lxb_encoding_multi_jis0208_map: [u32; 11104];
}

/// An encoding of the Encoding Standard: lexbor's `lxb_encoding_t` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Encoding(c_uint);

// lexbor's `lxb_encoding_t` values (lexbor/encoding/const.h) for the encodings named in code
impl Encoding {
    pub const BIG5: Encoding = Encoding(0x03);
    pub const EUC_JP: Encoding = Encoding(0x04);
    pub const EUC_KR: Encoding = Encoding(0x05);
    pub const GBK: Encoding = Encoding(0x06);
    pub const IBM866: Encoding = Encoding(0x07);
    pub const ISO_2022_JP: Encoding = Encoding(0x08);
    pub const ISO_8859_15: Encoding = Encoding(0x0c);
    pub const ISO_8859_2: Encoding = Encoding(0x0e);
    pub const ISO_8859_5: Encoding = Encoding(0x11);
    pub const ISO_8859_7: Encoding = Encoding(0x13);
    pub const KOI8_R: Encoding = Encoding(0x16);
    pub const KOI8_U: Encoding = Encoding(0x17);
    pub const SHIFT_JIS: Encoding = Encoding(0x18);
    pub const UTF_16BE: Encoding = Encoding(0x19);
    pub const UTF_16LE: Encoding = Encoding(0x1a);
    pub const UTF_8: Encoding = Encoding(0x1b);
    pub const GB18030: Encoding = Encoding(0x1c);
    pub const REPLACEMENT: Encoding = Encoding(0x1e);
    pub const WINDOWS_1250: Encoding = Encoding(0x1f);
    pub const WINDOWS_1251: Encoding = Encoding(0x20);
    pub const WINDOWS_1252: Encoding = Encoding(0x21);
    pub const WINDOWS_1253: Encoding = Encoding(0x22);
    pub const WINDOWS_1254: Encoding = Encoding(0x23);
    pub const WINDOWS_1256: Encoding = Encoding(0x25);
    pub const X_USER_DEFINED: Encoding = Encoding(0x2a);

    /// The encoding a label names in the Encoding Standard's label table (ASCII case and
    /// surrounding ASCII whitespace ignored: `" Latin1 "` is windows-1252), or None.
    pub fn for_label(label: &[u8]) -> Option<Encoding> {
        if label.is_empty() {
            return None;
        }
        // SAFETY: lexbor reads `label` (length given) and returns a pointer into its static
        // table or null
        let data = unsafe { lxb_encoding_data_by_pre_name(label.as_ptr(), label.len()) };
        if data.is_null() {
            None
        } else {
            Some(Encoding(unsafe { (*data).encoding }))
        }
    }

    /// The standard's name of the encoding (`"windows-1252"`, `"Shift_JIS"`, `"UTF-8"` …).
    pub fn name(self) -> &'static str {
        // SAFETY: every `Encoding` holds a value lexbor gave or one of the constants above,
        // all indices of its static table, whose names are static NUL-terminated ASCII
        unsafe {
            let data = lxb_encoding_data_noi(self.0);
            assert!(!data.is_null(), "not a lexbor encoding: {}", self.0);
            let name = std::ffi::CStr::from_ptr((*data).name);
            name.to_str().expect("lexbor's encoding names are ASCII")
        }
    }

    /// The name as a static NUL-terminated string (lexbor's own), for C callers.
    pub fn c_name(self) -> *const u8 {
        // SAFETY: as for `name`
        unsafe {
            let data = lxb_encoding_data_noi(self.0);
            assert!(!data.is_null(), "not a lexbor encoding: {}", self.0);
            (*data).name as *const u8
        }
    }

    /// Whether the encoding reads ASCII bytes as ASCII (all but UTF-16 and ISO-2022-JP,
    /// whose escape sequences are ASCII bytes, and replacement).
    pub fn is_ascii_compatible(self) -> bool {
        !matches!(
            self,
            Encoding::UTF_16BE | Encoding::UTF_16LE | Encoding::ISO_2022_JP | Encoding::REPLACEMENT
        )
    }
}

/// The encoding a byte order mark at the start of `bytes` names, and the mark's length.
pub fn bom(bytes: &[u8]) -> Option<(Encoding, usize)> {
    match bytes {
        [0xEF, 0xBB, 0xBF, ..] => Some((Encoding::UTF_8, 3)),
        [0xFE, 0xFF, ..] => Some((Encoding::UTF_16BE, 2)),
        [0xFF, 0xFE, ..] => Some((Encoding::UTF_16LE, 2)),
        _ => None,
    }
}

/// `bytes` decoded with `encoding`, each error replaced by U+FFFD as the standard's decoders do,
/// and the number of errors.
pub fn decode(bytes: &[u8], encoding: Encoding) -> (String, usize) {
    match encoding {
        Encoding::UTF_8 => decode_utf8(bytes),
        Encoding::SHIFT_JIS => decode_shift_jis(bytes),
        _ => decode_lexbor(bytes, encoding),
    }
}

/// UTF-8 with replacement: Rust's own decoder replaces each maximal invalid subsequence with
/// one U+FFFD, which is what the standard's UTF-8 decoder does (a test checks it against
/// lexbor's on every short byte sequence).
fn decode_utf8(bytes: &[u8]) -> (String, usize) {
    let mut text = String::with_capacity(bytes.len());
    let mut errors = 0;
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            text.push('\u{FFFD}');
            errors += 1;
        }
    }
    (text, errors)
}

const REPLACEMENT: u32 = 0xFFFD;

fn decode_lexbor(bytes: &[u8], encoding: Encoding) -> (String, usize) {
    // SAFETY: the context is a zeroed, 8-byte aligned block of lexbor's own size for it, used
    // only through lexbor's functions, with `buffer` as its output for the whole call; the
    // decode function reads `bytes` between the two pointers it is given.
    unsafe {
        let data = lxb_encoding_data_noi(encoding.0);
        assert!(!data.is_null(), "not a lexbor encoding: {}", encoding.0);
        let decode_fn = (*data).decode.expect("lexbor's encodings all have a decoder");
        let words = lxb_encoding_decode_t_sizeof().div_ceil(8);
        let mut ctx_block = vec![0u64; words];
        let ctx = ctx_block.as_mut_ptr() as *mut c_void;
        // the input goes in slices small enough that the output buffer never fills: lexbor's
        // single-byte decoders lose the byte they stop at when it does (LXB_STATUS_SMALL_BUFFER
        // on a non-ASCII byte), and each of the standard's decoders writes at most two code
        // points per byte it reads
        const SLICE: usize = 4096;
        let mut buffer = vec![0u32; 2 * SLICE + 16];
        let replacement = [REPLACEMENT];
        let status = lxb_encoding_decode_init_noi(ctx, data, buffer.as_mut_ptr(), buffer.len());
        assert_eq!(status, STATUS_OK);
        let status = lxb_encoding_decode_replace_set_noi(ctx, replacement.as_ptr(), 1);
        assert_eq!(status, STATUS_OK);

        let mut text = String::with_capacity(bytes.len() + bytes.len() / 2);
        let mut errors = 0usize;
        let mut push = |codepoints: &[u32], text: &mut String| {
            for &cp in codepoints {
                if cp == REPLACEMENT {
                    errors += 1;
                }
                text.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
            }
        };
        for slice in bytes.chunks(SLICE) {
            let mut at = slice.as_ptr();
            let end = slice.as_ptr().add(slice.len());
            let status = decode_fn(ctx, &mut at, end);
            // (`at` may stop short of `end` after an error on the last byte: lexbor's
            // single-byte decoders do not move it past a replaced byte; the input is read)
            assert!(status != SMALL_BUFFER, "lexbor's {} decoder found its buffer full", encoding.name());
            let used = lxb_encoding_decode_buf_used_noi(ctx);
            push(&buffer[..used], &mut text);
            lxb_encoding_decode_buf_used_set_noi(ctx, 0);
        }
        // an incomplete sequence at the end is one more error
        lxb_encoding_decode_finish_noi(ctx);
        let used = lxb_encoding_decode_buf_used_noi(ctx);
        push(&buffer[..used], &mut text);
        // U+FFFD that the input itself encodes (UTF-16, gb18030) is no error
        if matches!(encoding, Encoding::UTF_16BE | Encoding::UTF_16LE | Encoding::GB18030 | Encoding::GBK) {
            errors = errors.saturating_sub(encoded_replacements(bytes, encoding));
        }
        (text, errors)
    }
}

/// How many U+FFFD the input spells out itself in the encodings able to (so they are not
/// counted as errors).
fn encoded_replacements(bytes: &[u8], encoding: Encoding) -> usize {
    let needle: &[u8] = match encoding {
        Encoding::UTF_16BE => &[0xFF, 0xFD],
        Encoding::UTF_16LE => &[0xFD, 0xFF],
        _ => &[0x84, 0x31, 0xA4, 0x37], // gb18030's four bytes for U+FFFD
    };
    bytes.windows(needle.len()).filter(|w| *w == needle).count()
}

/// Shift_JIS as the Encoding Standard decodes it (see the module's note on lexbor's decoder).
fn decode_shift_jis(bytes: &[u8]) -> (String, usize) {
    let mut text = String::with_capacity(bytes.len() + bytes.len() / 2);
    let mut errors = 0;
    let mut i = 0;
    while i < bytes.len() {
        let lead = bytes[i];
        i += 1;
        match lead {
            0x00..=0x80 => text.push(lead as char),
            0xA1..=0xDF => text.push(char::from_u32(0xFF61 - 0xA1 + lead as u32).unwrap()),
            0x81..=0x9F | 0xE0..=0xFC => {
                let Some(&byte) = bytes.get(i) else {
                    text.push('\u{FFFD}');
                    errors += 1;
                    break;
                };
                let offset = if byte < 0x7F { 0x40 } else { 0x41 };
                let lead_offset = if lead < 0xA0 { 0x81 } else { 0xC1 };
                let mut code = None;
                if matches!(byte, 0x40..=0x7E | 0x80..=0xFC) {
                    let pointer = (lead as u32 - lead_offset) * 188 + byte as u32 - offset;
                    code = if (8836..=10715).contains(&pointer) {
                        // the index's end-user-defined range maps to the Private Use Area
                        char::from_u32(0xE000 - 8836 + pointer)
                    } else {
                        // SAFETY: a static table of lexbor's, read only
                        let map = unsafe { &lxb_encoding_multi_jis0208_map };
                        map.get(pointer as usize).and_then(|&cp| char::from_u32(cp))
                    };
                }
                match code {
                    Some(c) => {
                        text.push(c);
                        i += 1;
                    }
                    None => {
                        text.push('\u{FFFD}');
                        errors += 1;
                        // an ASCII byte after the lead is read again on its own
                        if byte >= 0x80 {
                            i += 1;
                        }
                    }
                }
            }
            _ => {
                text.push('\u{FFFD}');
                errors += 1;
            }
        }
    }
    (text, errors)
}

/// A `<meta>` declaration found by the prescan: the encoding, and where its label ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaDeclaration {
    pub encoding: Encoding,
    pub label_end: usize,
}

/// The HTML standard's prescan of a byte stream for its encoding over `bytes`: the first
/// `<meta charset>` or `<meta http-equiv="content-type" content="…charset=…">` whose label
/// the label table resolves and `accept` takes (the standard moves on past an unknown label),
/// or a UTF-16 `<?xml` start. `utf-16` labels and `x-user-defined` come out as UTF-8 and
/// windows-1252, as the standard says.
///
/// lexbor finds the declarations (`lxb_html_encoding_determine`, its tokenizer of the
/// prescan); its `lxb_html_encoding_prescan` is not used because it gives up at the first
/// declaration, known label or not.
pub fn prescan(bytes: &[u8], accept: impl Fn(Encoding) -> bool) -> Option<MetaDeclaration> {
    match bytes {
        [0x3C, 0x00, 0x3F, 0x00, 0x78, 0x00, ..] => {
            return Some(MetaDeclaration { encoding: Encoding::UTF_16LE, label_end: 0 })
        }
        [0x00, 0x3C, 0x00, 0x3F, 0x00, 0x78, ..] => {
            return Some(MetaDeclaration { encoding: Encoding::UTF_16BE, label_end: 0 })
        }
        _ => {}
    }
    // SAFETY: the prescan object is created, used and destroyed here; lexbor reads `bytes`
    // between the two pointers, and its entries point into them
    unsafe {
        let em = lxb_html_encoding_create_noi();
        if em.is_null() {
            return None;
        }
        let mut found = None;
        let start = bytes.as_ptr();
        if lxb_html_encoding_init(em) == STATUS_OK
            && lxb_html_encoding_determine(em, start, start.add(bytes.len())) == STATUS_OK
        {
            for i in 0..lxb_html_encoding_meta_length_noi(em) {
                let entry = &*lxb_html_encoding_meta_entry_noi(em, i);
                let from = entry.name.offset_from(start) as usize;
                let to = entry.end.offset_from(start) as usize;
                let resolved = Encoding::for_label(&bytes[from..to]).map(|e| match e {
                    Encoding::UTF_16BE | Encoding::UTF_16LE => Encoding::UTF_8,
                    Encoding::X_USER_DEFINED => Encoding::WINDOWS_1252,
                    e => e,
                });
                if let Some(encoding) = resolved.filter(|&e| accept(e)) {
                    found = Some(MetaDeclaration { encoding, label_end: to });
                    break;
                }
            }
        }
        lxb_html_encoding_destroy(em, true);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_of_the_standard() {
        let cases: &[(&str, &str)] = &[
            ("utf-8", "UTF-8"),
            ("UTF8", "UTF-8"),
            ("unicode-1-1-utf-8", "UTF-8"),
            ("iso-8859-1", "windows-1252"),
            ("latin1", "windows-1252"),
            ("ascii", "windows-1252"),
            ("us-ascii", "windows-1252"),
            ("  ISO_8859-1:1987\t", "windows-1252"),
            ("x-sjis", "Shift_JIS"),
            ("ms_kanji", "Shift_JIS"),
            ("shift-jis", "Shift_JIS"),
            ("windows-31j", "Shift_JIS"),
            ("gb2312", "GBK"),
            ("x-gbk", "GBK"),
            ("gb18030", "gb18030"),
            ("big5-hkscs", "Big5"),
            ("ks_c_5601-1987", "EUC-KR"),
            ("cp1251", "windows-1251"),
            ("koi8", "KOI8-R"),
            ("iso-8859-2", "ISO-8859-2"),
            ("latin2", "ISO-8859-2"),
            ("iso-8859-9", "windows-1254"),
            ("tis-620", "windows-874"),
            ("iso-2022-kr", "replacement"),
            ("utf-16", "UTF-16LE"),
            ("x-user-defined", "x-user-defined"),
        ];
        for (label, name) in cases {
            assert_eq!(Encoding::for_label(label.as_bytes()).map(Encoding::name), Some(*name), "{label}");
        }
        for unknown in ["", " ", "utf-7", "latin-1", "windows-1252x", "utf-9"] {
            assert_eq!(Encoding::for_label(unknown.as_bytes()), None, "{unknown:?}");
        }
    }

    #[test]
    fn prescan_finds_meta_declarations() {
        let cases: &[(&[u8], Option<&str>)] = &[
            (b"<meta charset=\"windows-1252\">", Some("windows-1252")),
            (b"<html><head><META CHARSET=latin2>", Some("ISO-8859-2")),
            (
                b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">",
                Some("Shift_JIS"),
            ),
            (b"<meta content='text/html;charset=euc-kr' http-equiv=content-type>", Some("EUC-KR")),
            // content without http-equiv: no declaration
            (b"<meta content=\"text/html; charset=koi8-r\">", None),
            (b"<!-- <meta charset=big5> --><meta charset=gbk>", Some("GBK")),
            (b"<meta charset=utf-16>", Some("UTF-8")),
            (b"<meta charset=x-user-defined>", Some("windows-1252")),
            (b"<meta charset=nonsense>", None),
            // an unknown label is passed over
            (b"<meta charset=nonsense><meta charset=latin1>", Some("windows-1252")),
            (b"<\x00?\x00x\x00m\x00l\x00", Some("UTF-16LE")),
            (b"<p>no declaration</p>", None),
        ];
        for (bytes, name) in cases {
            let found = prescan(bytes, |_| true).map(|m| m.encoding.name());
            assert_eq!(found, *name, "{}", String::from_utf8_lossy(bytes));
        }
    }

    #[test]
    fn single_and_multi_byte_decoders() {
        assert_eq!(decode(b"Caf\xe9 cr\xe8me", Encoding::WINDOWS_1252), ("Café crème".into(), 0));
        assert_eq!(decode(b"\x80\x81", Encoding::WINDOWS_1252), ("€\u{81}".into(), 0));
        assert_eq!(decode(b"\xe8\xed\xf8", Encoding::WINDOWS_1250), ("číř".into(), 0));
        assert_eq!(decode(b"\xcf\xf0\xe8", Encoding::WINDOWS_1251), ("При".into(), 0));
        assert_eq!(decode(b"\xf0\xd2\xc9", Encoding::KOI8_R), ("При".into(), 0));
        assert_eq!(decode(b"\xc4\xe3\xba\xc3", Encoding::GBK), ("你好".into(), 0));
        assert_eq!(decode(b"\xa4\xa4\xa4\xe5", Encoding::BIG5), ("中文".into(), 0));
        assert_eq!(decode(b"\xc7\xd1\xb1\xb9", Encoding::EUC_KR), ("한국".into(), 0));
        assert_eq!(decode(b"\xc6\xfc\xcb\xdc", Encoding::EUC_JP), ("日本".into(), 0));
        assert_eq!(decode(b"\x93\xfa\x96\x7b", Encoding::SHIFT_JIS), ("日本".into(), 0));
        // leads 0xE0-0xFC (lexbor 3.0.0 refuses 0xE1-0xFB)
        assert_eq!(decode(b"\xe0\x40\xea\xa4\xfa\x40", Encoding::SHIFT_JIS), ("漾熙ⅰ".into(), 0));
        assert_eq!(decode(b"a\x81", Encoding::SHIFT_JIS), ("a\u{FFFD}".into(), 1));
        assert_eq!(decode(b"\x81 ", Encoding::SHIFT_JIS), ("\u{FFFD} ".into(), 1));
        assert_eq!(decode(b"\xff\xfeA\x00", Encoding::UTF_16LE).0, "\u{FEFF}A");
        assert_eq!(decode(b"\xc4\xe3\xba", Encoding::GBK), ("你\u{FFFD}".into(), 1));
        assert_eq!(decode(b"\x84\x31\xa4\x37", Encoding::GB18030), ("\u{FFFD}".into(), 0));
    }

    #[test]
    fn long_input_crosses_the_buffer() {
        let bytes: Vec<u8> = (0..10_000).map(|i| if i % 2 == 0 { 0xE9 } else { b'a' }).collect();
        let (text, errors) = decode(&bytes, Encoding::WINDOWS_1252);
        assert_eq!(errors, 0);
        assert_eq!(text, "éa".repeat(5_000));
        let bytes = "你好".repeat(5_000);
        let gbk: Vec<u8> = std::iter::repeat_n([0xC4u8, 0xE3, 0xBA, 0xC3], 5_000).flatten().collect();
        assert_eq!(decode(&gbk, Encoding::GBK), (bytes, 0));
    }

    /// Rust's UTF-8 replacement is the standard's: the same text as lexbor's UTF-8 decoder for
    /// every sequence of up to three bytes drawn from the bytes that matter.
    #[test]
    fn utf8_replacement_as_the_standard() {
        let interesting: Vec<u8> = vec![
            0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED,
            0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF,
        ];
        let mut sequences: Vec<Vec<u8>> = vec![vec![]];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> = sequences
                .iter()
                .filter(|s| s.len() < 4)
                .flat_map(|s| interesting.iter().map(move |&b| [s.as_slice(), &[b]].concat()))
                .collect();
            sequences.extend(longer);
            sequences.sort();
            sequences.dedup();
        }
        for bytes in &sequences {
            assert_eq!(decode_utf8(bytes), decode_lexbor(bytes, Encoding::UTF_8), "{bytes:02x?}");
        }
    }
}
