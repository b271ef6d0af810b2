//! Compiled core of `pulpie_rt.runtime.simplify` and `.reconstruct`: lexbor's serialization
//! of a page in, `(simplified_html, map_html)` out, through the same libxml2-shaped tree and
//! the same segmentation as the Python implementation (`runtime/dom.py`,
//! `runtime/simplify.py`); and `map_html` plus the main-labelled ids in, the main-content HTML
//! out (`runtime/reconstruct.py`). The Python code stays the specification: tests compare
//! the two on every real page (`runtime/native.py` loads this library).
//!
//! std only (no crates), C ABI, loaded with ctypes. Status codes: 0 done, 1 input this core
//! does not handle (the caller runs the Python implementation), 2 a panic (caught; the caller
//! runs the Python implementation too, so one page never takes the process down), 3 the raw
//! page's `FLAG_NON_XML_CHARS` is needed (see `FLAG_NON_XML_UNKNOWN`).

pub mod ort;
mod reconstruct;
mod simplify;
mod tree;

use std::panic::{catch_unwind, AssertUnwindSafe};

#[repr(C)]
pub struct SimplifyOutput {
    pub simplified_ptr: *mut u8,
    pub simplified_len: usize,
    pub map_ptr: *mut u8,
    pub map_len: usize,
    /// static, NUL-terminated reason for status 1 (or null)
    pub reason: *const u8,
}

/// The raw page has characters XML does not allow (`simplify._NOT_XML_CHAR_RE`).
pub const FLAG_NON_XML_CHARS: u32 = 2;
/// The caller did not look for them: that answer only matters when the serialization holds
/// such characters itself (the block pass it guards changes nothing otherwise), and then the
/// core returns status 3 to ask for it.
pub const FLAG_NON_XML_UNKNOWN: u32 = 4;

fn leak(s: String) -> (*mut u8, usize) {
    let boxed = s.into_bytes().into_boxed_slice();
    let len = boxed.len();
    (Box::into_raw(boxed) as *mut u8, len)
}

/// # Safety
/// `input` points to `len` bytes of UTF-8; `out` to a writable `SimplifyOutput`. Buffers
/// written into `out` are released with `pulpie_rt_free`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_simplify(
    input: *const u8,
    len: usize,
    cutoff: usize,
    flags: u32,
    out: *mut SimplifyOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = SimplifyOutput {
        simplified_ptr: std::ptr::null_mut(),
        simplified_len: 0,
        map_ptr: std::ptr::null_mut(),
        map_len: 0,
        reason: std::ptr::null(),
    };
    let bytes = std::slice::from_raw_parts(input, len);
    let Ok(serialized) = std::str::from_utf8(bytes) else {
        out.reason = b"not UTF-8\0".as_ptr();
        return 1;
    };
    if flags & FLAG_NON_XML_UNKNOWN != 0 && simplify::has_not_xml(serialized) {
        return 3;
    }
    let page_flags = simplify::Flags {
        has_non_xml_chars: flags & FLAG_NON_XML_CHARS != 0,
    };
    match run(&mut out.reason, || simplify::simplify_serialized(serialized, cutoff, &page_flags)) {
        Ok((simplified, map_html)) => {
            (out.simplified_ptr, out.simplified_len) = leak(simplified);
            (out.map_ptr, out.map_len) = leak(map_html);
            0
        }
        Err(status) => status,
    }
}

/// `work` with panics caught: its value, or the status for the caller with `reason` set
/// (1 and the refusal's reason, 2 and the panic message).
fn run<T>(reason: &mut *const u8, work: impl FnOnce() -> tree::Res<T>) -> Result<T, i32> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(tree::Unsupported(why))) => {
            *reason = reason_ptr(why);
            Err(1)
        }
        Err(_) => {
            *reason = PANIC_MESSAGE.with(|m| m.borrow().as_ptr());
            Err(2)
        }
    }
}

thread_local! {
    /// The last panic's message, NUL-terminated (valid until the next call on this thread).
    static PANIC_MESSAGE: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0]);
}

/// Panics are caught and reported through `reason` instead of printed to stderr.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let mut message = format!("panic: {info}").replace('\0', " ").into_bytes();
            message.push(0);
            PANIC_MESSAGE.with(|m| *m.borrow_mut() = message);
        }));
    });
}

fn reason_ptr(reason: &'static str) -> *const u8 {
    // reasons are short literals; keep NUL-terminated copies for C callers
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static REASONS: OnceLock<Mutex<HashMap<&'static str, &'static [u8]>>> = OnceLock::new();
    let map = REASONS.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(reason)
        .or_insert_with(|| Box::leak(format!("{reason}\0").into_bytes().into_boxed_slice()))
        .as_ptr()
}

/// # Safety
/// `ptr`/`len` come from a `SimplifyOutput` filled by `pulpie_rt_simplify`, freed once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_free(ptr: *mut u8, len: usize) {
    if !ptr.is_null() {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
    }
}

#[repr(C)]
pub struct RawScanOutput {
    /// `RAW_EMPTY_END_TAG` | `RAW_SLASH_GATE`
    pub flags: u32,
    pub starts_ptr: *mut u64,
    pub starts_len: usize,
}

/// The raw page holds "</>" (`dom._keep_empty_end_tags` rewrites it).
pub const RAW_EMPTY_END_TAG: u32 = 1;
/// The raw page holds " /", "\n/", "\t/" or "\r/": `dom._mark_nameless_attrs` looks at it.
pub const RAW_SLASH_GATE: u32 = 2;

/// What `dom.lexbor_serialization` asks of the raw page before lexbor parses it, in passes over
/// its bytes instead of substring searches and a regular expression over Python's string:
/// the two flags above and, behind the second, where `dom._SLASH_TAG_RE`
/// (`<[a-zA-Z][^<]*?\s/`) matches, as character offsets (its lazy scan costs most of a second
/// on the dev pages).
///
/// # Safety
/// `input` points to `len` bytes of UTF-8; `out` to a writable `RawScanOutput`, whose buffer
/// is released with `pulpie_rt_free_starts`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_scan_raw_page(
    input: *const u8,
    len: usize,
    out: *mut RawScanOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = RawScanOutput { flags: 0, starts_ptr: std::ptr::null_mut(), starts_len: 0 };
    let bytes = std::slice::from_raw_parts(input, len);
    let Ok((flags, starts)) = catch_unwind(|| {
        // both flags are about the bytes around a "/"
        let mut flags = 0;
        let mut i = 0;
        while let Some(k) = bytes[i..].iter().position(|&c| c == b'/') {
            let j = i + k;
            if j > 0 {
                match bytes[j - 1] {
                    b' ' | b'\n' | b'\t' | b'\r' => flags |= RAW_SLASH_GATE,
                    b'<' if bytes.get(j + 1) == Some(&b'>') => flags |= RAW_EMPTY_END_TAG,
                    _ => {}
                }
            }
            if flags == RAW_SLASH_GATE | RAW_EMPTY_END_TAG {
                break;
            }
            i = j + 1;
        }
        let starts =
            if flags & RAW_SLASH_GATE != 0 { slash_tag_starts(bytes) } else { Vec::new() };
        (flags, starts)
    }) else {
        return 2;
    };
    out.flags = flags;
    let boxed = starts.into_boxed_slice();
    out.starts_len = boxed.len();
    out.starts_ptr = Box::into_raw(boxed) as *mut u64;
    0
}

/// # Safety
/// `ptr`/`len` come from a `RawScanOutput`, freed once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_free_starts(ptr: *mut u64, len: usize) {
    if !ptr.is_null() {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
    }
}

fn slash_tag_starts(b: &[u8]) -> Vec<u64> {
    let mut starts = Vec::new();
    let (mut counted_to, mut chars) = (0usize, 0u64);
    let n = b.len();
    let mut i = 0;
    while let Some(k) = b[i..].iter().position(|&c| c == b'<') {
        let p = i + k;
        i = p + 1;
        if !(p + 1 < n && b[p + 1].is_ascii_alphabetic()) {
            continue;
        }
        // the first "/" after a \s (at or after p + 2) before the next "<"
        let mut j = p + 2;
        while let Some(k) = b.get(j..).and_then(|rest| rest.iter().position(|&c| c == b'<' || c == b'/')) {
            let q = j + k;
            if b[q] == b'<' {
                i = q;
                break;
            }
            if q > p + 2 && ends_with_space(&b[p + 2..q]) {
                // character offsets: count the bytes that start a character
                chars += b[counted_to..p].iter().filter(|&&x| x & 0xc0 != 0x80).count() as u64;
                counted_to = p;
                starts.push(chars);
                i = q + 1;
                break;
            }
            j = q + 1;
            i = j;
        }
        if i >= n {
            break;
        }
    }
    starts
}

/// Whether `b` ends with a character Python's `\s` matches.
fn ends_with_space(b: &[u8]) -> bool {
    let n = b.len();
    match b[n - 1] {
        c if c < 0x80 => matches!(c, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1c..=0x1f | b' '),
        _ => ends_with_multibyte_space(b),
    }
}

/// Whether `b` ends with a multi-byte character Python's `\s` matches (U+0085, U+00A0,
/// U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
fn ends_with_multibyte_space(b: &[u8]) -> bool {
    let n = b.len();
    (n >= 2 && b[n - 2] == 0xc2 && (b[n - 1] == 0x85 || b[n - 1] == 0xa0))
        || (n >= 3 && {
            let t = &b[n - 3..];
            matches!(
                (t[0], t[1], t[2]),
                (0xe1, 0x9a, 0x80)
                    | (0xe2, 0x80, 0x80..=0x8a)
                    | (0xe2, 0x80, 0xa8 | 0xa9 | 0xaf)
                    | (0xe2, 0x81, 0x9f)
                    | (0xe3, 0x80, 0x80)
            )
        })
}

#[repr(C)]
pub struct TextOutput {
    pub ptr: *mut u8,
    pub len: usize,
    /// static, NUL-terminated reason for status 1 (or the panic message for status 2)
    pub reason: *const u8,
}

/// `reconstruct.extract_main_html(map_html, labels)`: `main_ids` holds the main-labelled
/// block ids, one per line. Status codes as for `pulpie_rt_simplify`.
///
/// # Safety
/// `map_html` and `main_ids` point to `map_len` and `ids_len` bytes of UTF-8; `out` to a
/// writable `TextOutput`, whose buffer is released with `pulpie_rt_free`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_reconstruct(
    map_html: *const u8,
    map_len: usize,
    main_ids: *const u8,
    ids_len: usize,
    out: *mut TextOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = TextOutput { ptr: std::ptr::null_mut(), len: 0, reason: std::ptr::null() };
    let (Ok(map_html), Ok(ids)) = (
        std::str::from_utf8(std::slice::from_raw_parts(map_html, map_len)),
        std::str::from_utf8(std::slice::from_raw_parts(main_ids, ids_len)),
    ) else {
        out.reason = b"not UTF-8\0".as_ptr();
        return 1;
    };
    let main: std::collections::HashSet<&str> = ids.split('\n').filter(|s| !s.is_empty()).collect();
    match run(&mut out.reason, || reconstruct::extract_main_html(map_html, &main)) {
        Ok(html) => {
            (out.ptr, out.len) = leak(html);
            0
        }
        Err(status) => status,
    }
}
