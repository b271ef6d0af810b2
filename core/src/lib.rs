//! Compiled core of `pulpie_rt.runtime.simplify` and `.reconstruct`: a raw page in,
//! `(simplified_html, map_html)` out — lexbor (linked in, `build.rs`) parses and serializes the
//! page, the core builds the libxml2-shaped tree of that serialization and segments it — and
//! `map_html` plus the main-labelled ids in, the main-content HTML out. The Python
//! implementation in `tests/spec/` is the specification: tests and `bench/native_core.py`
//! compare the two on every real page.
//!
//! std only (no crates), C ABI, loaded with ctypes by `runtime/native.py`. Status codes: 0
//! done, 1 input the core cannot take (a page that is not UTF-8; the reason says why), 2 a
//! panic (caught; never crosses the C ABI). Output buffers are released with `pulpie_rt_free`.

mod charref;
mod decode;
mod detect;
mod detect_model;
mod encoding;
mod entities;
mod html5;
mod lexbor;
mod page;
mod py_word;
mod raw;
mod reconstruct;
mod simplify;
mod token;
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

fn leak(s: String) -> (*mut u8, usize) {
    let boxed = s.into_bytes().into_boxed_slice();
    let len = boxed.len();
    (Box::into_raw(boxed) as *mut u8, len)
}

/// `simplify.simplify(page, cutoff)`: `page` is the raw page as UTF-8 (a lone surrogate, which
/// a Python `str` may hold, as the 3-byte sequence of its code point: `surrogatepass`;
/// lexbor never sees them, as selectolax dropped them).
///
/// # Safety
/// `page` points to `len` bytes; `out` to a writable `SimplifyOutput`. Buffers written into
/// `out` are released with `pulpie_rt_free`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_simplify_page(
    page: *const u8,
    len: usize,
    cutoff: usize,
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
    let bytes = std::slice::from_raw_parts(page, len);
    match run(&mut out.reason, || page::simplify_page(&page::Page::new(bytes)?, cutoff)) {
        Ok((simplified, map_html)) => {
            (out.simplified_ptr, out.simplified_len) = leak(simplified);
            (out.map_ptr, out.map_len) = leak(map_html);
            0
        }
        Err(status) => status,
    }
}

/// One step of the simplify stage on its own, for tests and benchmarks (`step`):
/// - 0: lexbor's serialization of `data`, what selectolax's `LexborHTMLParser(data).html`
///   returns for these bytes;
/// - 1: the specification's `lexbor_serialization(page)` (the raw page's rewrites first,
///   `<?xml …>` removed after; `data` as for `pulpie_rt_simplify_page`);
/// - 2: the libxml2-shaped tree the specification reads a serialization as, written back
///   (`serialize_html(parse_serialized(data))`).
///
/// # Safety
/// `data` points to `len` bytes; `out` to a writable `TextOutput`, whose buffer is released
/// with `pulpie_rt_free`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_simplify_step(
    data: *const u8,
    len: usize,
    step: u32,
    out: *mut TextOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = TextOutput { ptr: std::ptr::null_mut(), len: 0, reason: std::ptr::null() };
    let bytes = std::slice::from_raw_parts(data, len);
    let text = run(&mut out.reason, || match step {
        0 => {
            let html = lexbor::selectolax_html(bytes).map_err(|e| tree::Unsupported(e.message()))?;
            String::from_utf8(html).map_err(|_| tree::Unsupported("lexbor's serialization is not UTF-8"))
        }
        1 => page::lexbor_serialization(&page::Page::new(bytes)?),
        2 => {
            let serialized =
                std::str::from_utf8(bytes).map_err(|_| tree::Unsupported("not UTF-8"))?;
            let mut tree = tree::Tree::default();
            let root = tree::parse_serialized(&mut tree, serialized);
            let mut html = String::with_capacity(serialized.len());
            tree::serialize_html(&tree, root, &mut html);
            Ok(html)
        }
        _ => Err(tree::Unsupported("unknown step")),
    });
    match text {
        Ok(html) => {
            (out.ptr, out.len) = leak(html);
            0
        }
        Err(status) => status,
    }
}

#[repr(C)]
pub struct DecodeOutput {
    pub text_ptr: *mut u8,
    pub text_len: usize,
    /// the encoding read with: its Encoding Standard name, static and NUL-terminated
    pub encoding: *const u8,
    /// how it was decided (`decode::Source`), static and NUL-terminated
    pub source: *const u8,
    /// the panic message for status 2 (or null)
    pub reason: *const u8,
}

/// The decode stage (`decode::decode_page`): a page's bytes and its transport's content type
/// (`content_type`: `content_type_len` bytes, or null for none) in; its text as UTF-8, the
/// encoding and how it was decided out. Status 0, or 2 for a panic.
///
/// # Safety
/// `data` points to `len` bytes, `content_type` (unless null) to `content_type_len` bytes;
/// `out` to a writable `DecodeOutput`, whose text is released with `pulpie_rt_free`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_decode(
    data: *const u8,
    len: usize,
    content_type: *const u8,
    content_type_len: usize,
    out: *mut DecodeOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = DecodeOutput {
        text_ptr: std::ptr::null_mut(),
        text_len: 0,
        encoding: std::ptr::null(),
        source: std::ptr::null(),
        reason: std::ptr::null(),
    };
    let bytes = if len == 0 { &[][..] } else { std::slice::from_raw_parts(data, len) };
    let content_type = if content_type.is_null() {
        None
    } else {
        Some(if content_type_len == 0 { &[][..] } else { std::slice::from_raw_parts(content_type, content_type_len) })
    };
    match run(&mut out.reason, || Ok(decode::decode_page(bytes, content_type))) {
        Ok(decoded) => {
            (out.text_ptr, out.text_len) = leak(decoded.text);
            out.encoding = decoded.encoding.c_name();
            out.source = decoded.source.c_name().as_ptr();
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
/// `ptr`/`len` come from an output filled by this library, freed once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_free(ptr: *mut u8, len: usize) {
    if !ptr.is_null() {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
    }
}

#[repr(C)]
pub struct TextOutput {
    pub ptr: *mut u8,
    pub len: usize,
    /// static, NUL-terminated reason for status 1 (or the panic message for status 2)
    pub reason: *const u8,
}

/// `reconstruct.extract_main_html(map_html, labels)`: `main_ids` holds the main-labelled
/// block ids, each followed by a NUL byte. Status codes as for `pulpie_rt_simplify_page`.
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
    let main: std::collections::HashSet<&str> = ids.split_terminator('\0').collect();
    match run(&mut out.reason, || Ok(reconstruct::extract_main_html(map_html, &main))) {
        Ok(html) => {
            (out.ptr, out.len) = leak(html);
            0
        }
        Err(status) => status,
    }
}
