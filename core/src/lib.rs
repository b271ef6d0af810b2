//! Compiled core of the CPU stages. `pulpie_rt.runtime.stages.simplify`: a raw page in,
//! `(simplified_html, map_html)` out — lexbor (linked in, `build.rs`) parses and serializes the
//! page, the core builds the libxml2-shaped tree of that serialization and segments it.
//! `.reconstruct`: `map_html` plus the main-labelled ids in, the main-content HTML out.
//! `markdown`: the main content's Markdown and plain text (specified by html2text itself and
//! `tests/spec/markdown_spec.py`). `tokenizer`: the byte-level BPE tokenizer of
//! `runtime/stages/tokens.py`, with the JSON reader it loads `tokenizer.json` with (`json`); its
//! ids equal the `tokenizers` library's. `ort`: the model through ONNX Runtime's C API (loaded
//! at run time), the rescorer and batching. The Python implementations in `tests/spec/` are
//! the specification: tests and `parity/` compare the two on every real page.
//!
//! `features`: the default model's block features, `map_html` plus the block ids in, one
//! float32 row per block out (specified by `tests/spec/features_spec.py`).
//!
//! std only (no crates), C ABI (`core/include/pulpie_rt_internal.h` declares these entry
//! points; `abi`), loaded with ctypes by `runtime/native.py` through the binding generated
//! from that header. Status codes (the header's): `PULPIE_RT_DONE`, `PULPIE_RT_FAILED` (input
//! the core cannot take, the reason says why), `PULPIE_RT_PANIC` (caught; never crosses the C
//! ABI), `PULPIE_RT_SPEC_RAISES` (the specification raises for this input, Markdown only).
//! Output buffers are released with `pulpie_rt_free`.
//!
//! Those entry points are the Python package's (cargo feature `python-ffi`, on by default); the
//! C library (`make capi`) is built without them and exports only `pulpie_rt.h` (`capi`).

// without the Python entry points, helpers only they call are unused
#![cfg_attr(not(feature = "python-ffi"), allow(dead_code, unused_imports))]

pub mod abi;
pub mod capi;
mod charref;
mod decode;
mod detect;
#[rustfmt::skip] // generated: core/gen/detect_model.py writes it
mod detect_model;
mod dom;
mod encoding;
pub mod engine;
mod features;
mod hash;
mod html5;
pub mod json;
#[cfg(feature = "python-ffi")]
mod layouts;
mod lexbor;
mod markdown;
mod metadata;
pub mod ort;
mod page;
mod prune;
#[rustfmt::skip] // generated: core/tools/gen_tables.py writes it
mod py_tables;
mod raw;
mod reconstruct;
mod scan;
mod simplify;
mod tags;
mod text;
mod token;
pub mod tokenizer;
mod tree;
mod ucs;

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
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_simplify_page(
    page: *const u8,
    len: usize,
    cutoff: usize,
    out: *mut SimplifyOutput,
) -> i32 {
    pulpie_rt_simplify_page_flags(page, len, cutoff, 0, out)
}

/// `pulpie_rt_simplify_page` with `flags`: 0, or `PULPIE_RT_SIMPLIFY_KEEP_HIDDEN`,
/// `PULPIE_RT_SIMPLIFY_DROP_NOSCRIPT` and/or `PULPIE_RT_SIMPLIFY_VIA_SERIALIZATION`
/// (`pulpie_rt_prepare_options`' `segmentation` takes the first two).
///
/// # Safety
/// As for `pulpie_rt_simplify_page`.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_simplify_page_flags(
    page: *const u8,
    len: usize,
    cutoff: usize,
    flags: u32,
    out: *mut SimplifyOutput,
) -> i32 {
    install_panic_hook();
    let keep_hidden = flags & abi::PULPIE_RT_SIMPLIFY_KEEP_HIDDEN != 0;
    let drop_noscript = flags & abi::PULPIE_RT_SIMPLIFY_DROP_NOSCRIPT != 0;
    let out = &mut *out;
    *out = SimplifyOutput {
        simplified_ptr: std::ptr::null_mut(),
        simplified_len: 0,
        map_ptr: std::ptr::null_mut(),
        map_len: 0,
        reason: std::ptr::null(),
    };
    let bytes = std::slice::from_raw_parts(page, len);
    match run(&mut out.reason, || {
        let read = if flags & abi::PULPIE_RT_SIMPLIFY_VIA_SERIALIZATION != 0 {
            page::Read::Serialization
        } else {
            page::Read::Walk
        };
        page::simplify_page_read(&page::Page::new(bytes)?, cutoff, keep_hidden, drop_noscript, read)
    }) {
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
///   (`serialize_html(parse_serialized(data))`);
/// - 3: how simplify has that tree of the page `data` (as for `pulpie_rt_simplify_page`):
///   `walk` (read off lexbor's tree, `dom.rs`) or `serialization` (the walk gave up);
/// - 4: how the block features of the page `data` read `map_html`'s tree, with the
///   reference's segmentation flags and the fast profile's: `same` (read off the tree simplify
///   wrote it from, `tree::read_back`, every value of every layout bitwise that of `map_html`
///   read back, both views), `map_html` (read back for some flags: `read_back` gave up), or
///   where the two differ;
/// - 5: how reconstruct reads `map_html`'s tree, with the same two sets of flags: `same` (off
///   the tree simplify wrote it from, `reconstruct::libxml2_tree`: the very nodes libxml2's
///   parse of `map_html` gives, and the same main HTML for every block, none, the first, the
///   last and every other one labelled main), `map_html` (parsed for some flags:
///   `read_back` or `libxml2_tree` gave up), or where the two differ.
///
/// # Safety
/// `data` points to `len` bytes; `out` to a writable `TextOutput`, whose buffer is released
/// with `pulpie_rt_free`.
#[cfg(feature = "python-ffi")]
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
            let serialized = std::str::from_utf8(bytes).map_err(|_| tree::Unsupported("not UTF-8"))?;
            let mut tree = tree::Tree::default();
            let root = tree::parse_serialized(&mut tree, serialized);
            let mut html = String::with_capacity(serialized.len());
            tree::serialize_html(&tree, root, &mut html);
            Ok(html)
        }
        3 => {
            let (_, _, serialized) = page::spec_tree(&page::Page::new(bytes)?, page::Read::Walk)?;
            Ok(if serialized { "serialization" } else { "walk" }.to_string())
        }
        4 => {
            let page = page::Page::new(bytes)?;
            let mut how = "same".to_string();
            // the reference's segmentation and the fast profile's (hidden kept, noscript dropped)
            for (keep_hidden, drop_noscript) in [(false, false), (true, true)] {
                let (simplified, map_html, map_tree) =
                    page::simplify_page_and_map(&page, 500, keep_hidden, drop_noscript)?;
                let Some((tree, root)) = map_tree else {
                    how = "map_html".to_string();
                    continue;
                };
                let (_, ids) = engine::prepare::extract_blocks(&simplified);
                let ids: Vec<Option<&str>> = ids.iter().map(Option::as_deref).collect();
                for libxml2_tree in [false, true] {
                    // every column, the teaser columns too (layout blocks-v6)
                    let read = features::block_features_of_tree(
                        &tree, root, &ids, libxml2_tree, true, true, true, true, true,
                    );
                    let written = features::block_features_with(
                        &map_html, &ids, libxml2_tree, true, true, true, true, true,
                    );
                    let differs = read.iter().zip(&written).position(|(a, b)| a.to_bits() != b.to_bits());
                    if read.len() != written.len() || differs.is_some() {
                        return Ok(format!(
                            "differs at value {differs:?} of {} (libxml2 view {libxml2_tree}, keep_hidden \
                             {keep_hidden}, drop_noscript {drop_noscript})",
                            read.len()
                        ));
                    }
                }
            }
            Ok(how)
        }
        5 => {
            let page = page::Page::new(bytes)?;
            let mut how = "same".to_string();
            for (keep_hidden, drop_noscript) in [(false, false), (true, true)] {
                let (simplified, map_html, map_tree) =
                    page::simplify_page_and_map(&page, 500, keep_hidden, drop_noscript)?;
                let Some(map_tree) = map_tree.and_then(reconstruct::libxml2_tree) else {
                    how = "map_html".to_string();
                    continue;
                };
                let flags = format!("keep_hidden {keep_hidden}, drop_noscript {drop_noscript}");
                let mut parsed = tree::Tree::default();
                let root =
                    tree::parse(&mut parsed, &tree::normalize_newlines(&map_html), tree::Reader::Libxml2);
                if !parsed.has_document {
                    return Ok(format!("map_html makes no document ({flags})"));
                }
                if let Some(at) = reconstruct::first_difference(&map_tree.0, map_tree.1, &parsed, root) {
                    return Ok(format!("differs at {at} ({flags})"));
                }
                let (_, ids) = engine::prepare::extract_blocks(&simplified);
                let ids: Vec<&str> = ids.iter().flatten().map(String::as_str).collect();
                let selections: [Vec<&str>; 5] = [
                    ids.clone(),
                    Vec::new(),
                    ids.first().copied().into_iter().collect(),
                    ids.last().copied().into_iter().collect(),
                    ids.iter().step_by(2).copied().collect(),
                ];
                for main in selections {
                    let main: std::collections::HashSet<&str> = main.into_iter().collect();
                    let of_tree = reconstruct::extract_main_html_of_tree(&map_html, &map_tree, &main);
                    if of_tree != reconstruct::extract_main_html(&map_html, &main) {
                        return Ok(format!("main HTML differs with {} main blocks ({flags})", main.len()));
                    }
                }
            }
            Ok(how)
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
#[cfg(feature = "python-ffi")]
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
        Some(if content_type_len == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(content_type, content_type_len)
        })
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
            Err(abi::FAILED)
        }
        Err(_) => {
            *reason = PANIC_MESSAGE.with(|m| m.borrow().as_ptr());
            Err(abi::PANIC)
        }
    }
}

thread_local! {
    /// The last panic's message, NUL-terminated (valid until the next call on this thread).
    static PANIC_MESSAGE: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0]);
}

/// The last panic's message on this thread (`"panic: …"`), for callers that report it.
pub(crate) fn last_panic_message() -> String {
    PANIC_MESSAGE.with(|m| {
        let m = m.borrow();
        String::from_utf8_lossy(&m[..m.len().saturating_sub(1)]).into_owned()
    })
}

/// Panics are caught and reported through `reason` instead of printed to stderr.
pub(crate) fn install_panic_hook() {
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
#[cfg(feature = "python-ffi")]
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
#[cfg(feature = "python-ffi")]
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
    let Ok(map_html) = std::str::from_utf8(std::slice::from_raw_parts(map_html, map_len)) else {
        out.reason = c"not UTF-8".as_ptr().cast();
        return abi::FAILED;
    };
    reconstruct_into(map_html, std::slice::from_raw_parts(main_ids, ids_len), out)
}

/// `pulpie_rt_reconstruct` of the `map_html` held as `count` code points of `width` bytes each
/// at `points` (`pulpie_rt_utf8_of_code_points`' input: a str as CPython stores it), encoded
/// here (`ucs::utf8_of`, which writes only UTF-8; no copy given back) and not validated again. Status 1 as
/// for `pulpie_rt_utf8_of_code_points` where they cannot be encoded (the caller encodes that
/// text itself), else as for `pulpie_rt_reconstruct`.
///
/// # Safety
/// `points` points to `count * width` bytes, `main_ids` to `ids_len`; `out` to a writable
/// `TextOutput`, whose buffer is released with `pulpie_rt_free`.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_reconstruct_code_points(
    points: *const u8,
    count: usize,
    width: u32,
    main_ids: *const u8,
    ids_len: usize,
    out: *mut TextOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = TextOutput { ptr: std::ptr::null_mut(), len: 0, reason: std::ptr::null() };
    let utf8 = match utf8_of_code_points(points, count, width) {
        Ok(utf8) => utf8,
        Err(reason) => {
            out.reason = reason.as_ptr().cast();
            return abi::FAILED;
        }
    };
    // SAFETY: ucs::utf8_of writes the UTF-8 of code points that are no surrogate and at most
    // U+10FFFF
    let map_html = std::str::from_utf8_unchecked(&utf8);
    reconstruct_into(map_html, std::slice::from_raw_parts(main_ids, ids_len), out)
}

/// The reconstruct entries' common part: `main_ids` (each followed by a NUL) as the set of
/// main ids, the main HTML of `map_html` into `out`.
#[cfg(feature = "python-ffi")]
fn reconstruct_into(map_html: &str, main_ids: &[u8], out: &mut TextOutput) -> i32 {
    let Ok(ids) = std::str::from_utf8(main_ids) else {
        out.reason = c"not UTF-8".as_ptr().cast();
        return abi::FAILED;
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

/// The UTF-8 of the `count` code points of `width` bytes each at `points` (`ucs::utf8_of`, in
/// a buffer with room to spare), or why there is none.
///
/// # Safety
/// `points` points to `count * width` bytes.
#[cfg(feature = "python-ffi")]
unsafe fn utf8_of_code_points(
    points: *const u8,
    count: usize,
    width: u32,
) -> Result<Vec<u8>, &'static std::ffi::CStr> {
    let aligned = |align: usize| count == 0 || (points as usize).is_multiple_of(align);
    let utf8 = match width {
        1 => ucs::utf8_of(std::slice::from_raw_parts(points, count)),
        2 if aligned(2) => ucs::utf8_of(std::slice::from_raw_parts(points.cast::<u16>(), count)),
        4 if aligned(4) => ucs::utf8_of(std::slice::from_raw_parts(points.cast::<u32>(), count)),
        _ => return Err(c"a width other than 1, 2 or 4, or points not aligned to it"),
    };
    utf8.ok_or(c"a surrogate code point (no UTF-8 for it)")
}

/// The UTF-8 of `count` code points of `width` bytes each (1, 2 or 4: Latin-1, UCS-2, UCS-4,
/// as CPython stores a `str`) at `points`, aligned to `width`: `ucs::utf8_of`. Status 1 where
/// one is a surrogate or above U+10FFFF (the caller encodes that text itself), or where
/// `width` is none of those or `points` is not aligned to it.
///
/// # Safety
/// `points` points to `count * width` bytes; `out` to a writable `TextOutput`. The buffer
/// written into `out` is released with `pulpie_rt_free`.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_utf8_of_code_points(
    points: *const u8,
    count: usize,
    width: u32,
    out: *mut TextOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = TextOutput { ptr: std::ptr::null_mut(), len: 0, reason: std::ptr::null() };
    match utf8_of_code_points(points, count, width) {
        Ok(mut bytes) => {
            bytes.shrink_to_fit();
            (out.ptr, out.len) = leak_bytes(bytes);
            abi::DONE
        }
        Err(reason) => {
            out.reason = reason.as_ptr().cast();
            abi::FAILED
        }
    }
}

// ---------------------------------------------------------------- tokenizer

#[repr(C)]
pub struct TokenizerLoadOutput {
    /// the tokenizer (status 0), released with `pulpie_rt_tokenizer_free`
    pub handle: *mut tokenizer::Tokenizer,
    /// why loading failed (status 1 or 2), UTF-8, released with `pulpie_rt_free`
    pub error_ptr: *mut u8,
    pub error_len: usize,
}

/// Loads a tokenizer from the content of a `tokenizer.json` (`json`), or from the file at
/// `path` when `json` is null. `ensure_specials` lists tokens, one per line, to add as special
/// tokens where the tokenizer has no token of that content (`runtime/stages/tokens.py` passes
/// `<|sep|>`). Status: 0 done, 1 the file cannot be read or is not a tokenizer this core
/// supports (the message says why), 2 a panic (its message). The tokenizer is immutable:
/// several threads may encode with one handle at once.
///
/// # Safety
/// `json` (or `path`) and `ensure_specials` point to that many bytes (UTF-8 for the path and
/// the specials); `out` to a writable `TokenizerLoadOutput`.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_tokenizer_load(
    json: *const u8,
    json_len: usize,
    path: *const u8,
    path_len: usize,
    ensure_specials: *const u8,
    specials_len: usize,
    out: *mut TokenizerLoadOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out =
        TokenizerLoadOutput { handle: std::ptr::null_mut(), error_ptr: std::ptr::null_mut(), error_len: 0 };
    let json = (!json.is_null()).then(|| std::slice::from_raw_parts(json, json_len));
    let path = (!path.is_null()).then(|| std::slice::from_raw_parts(path, path_len));
    let specials = std::slice::from_raw_parts(ensure_specials, specials_len);
    let loaded = catch_unwind(|| -> Result<tokenizer::Tokenizer, String> {
        let specials = std::str::from_utf8(specials).map_err(|_| "ensure_specials is not UTF-8")?;
        let mut loaded = match (json, path) {
            (Some(json), _) => tokenizer::Tokenizer::from_json(json)?,
            (None, Some(path)) => {
                let path = path_of(path)?;
                let bytes =
                    std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                tokenizer::Tokenizer::from_json(&bytes)?
            }
            (None, None) => return Err("neither JSON nor a path".into()),
        };
        for special in specials.split('\n').filter(|s| !s.is_empty()) {
            loaded.ensure_special_token(special);
        }
        Ok(loaded)
    });
    let (status, message) = match loaded {
        Ok(Ok(loaded)) => {
            out.handle = Box::into_raw(Box::new(loaded));
            return 0;
        }
        Ok(Err(message)) => (1, message),
        Err(_) => (
            2,
            PANIC_MESSAGE.with(|m| {
                let m = m.borrow();
                String::from_utf8_lossy(&m[..m.len().saturating_sub(1)]).into_owned()
            }),
        ),
    };
    (out.error_ptr, out.error_len) = leak(message);
    status
}

/// A file path from its bytes (any bytes on Unix, as the OS takes them; UTF-8 elsewhere).
fn path_of(bytes: &[u8]) -> Result<std::path::PathBuf, String> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(std::ffi::OsStr::from_bytes(bytes).into())
    }
    #[cfg(not(unix))]
    {
        std::str::from_utf8(bytes).map(Into::into).map_err(|_| "the path is not UTF-8".into())
    }
}

/// # Safety
/// `handle` comes from `pulpie_rt_tokenizer_load` (or is null), freed once, when no other
/// thread uses it.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_tokenizer_free(handle: *mut tokenizer::Tokenizer) {
    if !handle.is_null() {
        drop(Box::from_raw(handle));
    }
}

/// The id of `token` (an added token's, else the vocabulary's); -1 if it has none, -2 after a
/// panic.
///
/// # Safety
/// `handle` is a live tokenizer; `token` points to `len` bytes.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_tokenizer_token_to_id(
    handle: *const tokenizer::Tokenizer,
    token: *const u8,
    len: usize,
) -> i64 {
    install_panic_hook();
    let tokenizer = &*handle;
    let token = std::slice::from_raw_parts(token, len);
    catch_unwind(AssertUnwindSafe(|| {
        std::str::from_utf8(token).ok().and_then(|t| tokenizer.token_to_id(t)).map_or(-1, i64::from)
    }))
    .unwrap_or(-2)
}

/// `tokenizers`' `get_vocab_size(with_added_tokens)`: the model vocabulary's size, plus the
/// added tokens it does not hold when `with_added_tokens` is nonzero (0 after a panic).
///
/// # Safety
/// `handle` is a live tokenizer.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_tokenizer_vocab_size(
    handle: *const tokenizer::Tokenizer,
    with_added_tokens: u8,
) -> u64 {
    install_panic_hook();
    let tokenizer = &*handle;
    catch_unwind(AssertUnwindSafe(|| tokenizer.vocab_size(with_added_tokens != 0) as u64)).unwrap_or(0)
}

#[repr(C)]
pub struct TokenIdsOutput {
    /// one buffer: for each of the n texts the end of its ids, then all ids (text i's ids are
    /// `ptr[n + end(i-1) .. n + end(i)]`); released with `pulpie_rt_free_u32`
    pub ptr: *mut u32,
    pub len: usize,
    /// static, NUL-terminated reason for status 1 (or the panic message for status 2)
    pub reason: *const u8,
}

/// Token ids of `n_texts` texts (a page's blocks) in one call: `texts` holds them one after
/// another as UTF-8, `text_ends[i]` is the byte offset where text i ends. No special tokens
/// are added. Status codes: 0 done, 1 invalid input (`reason`), 2 a panic.
///
/// # Safety
/// `handle` is a live tokenizer; `texts` points to `texts_len` bytes, `text_ends` to
/// `n_texts` offsets; `out` to a writable `TokenIdsOutput`.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_tokenizer_encode(
    handle: *const tokenizer::Tokenizer,
    texts: *const u8,
    texts_len: usize,
    text_ends: *const u64,
    n_texts: usize,
    out: *mut TokenIdsOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = TokenIdsOutput { ptr: std::ptr::null_mut(), len: 0, reason: std::ptr::null() };
    let tokenizer = &*handle;
    let bytes = std::slice::from_raw_parts(texts, texts_len);
    let ends = std::slice::from_raw_parts(text_ends, n_texts);
    let encoded = run(&mut out.reason, || {
        let all = std::str::from_utf8(bytes).map_err(|_| tree::Unsupported("not UTF-8"))?;
        let mut texts = Vec::with_capacity(ends.len());
        let mut start = 0;
        for &end in ends {
            let end = usize::try_from(end).unwrap_or(usize::MAX);
            if end < start || end > all.len() || !all.is_char_boundary(end) {
                return Err(tree::Unsupported("text ends out of order or inside a character"));
            }
            texts.push(&all[start..end]);
            start = end;
        }
        let (ids, id_ends) = tokenizer.encode_all(texts);
        let mut buffer = id_ends;
        buffer.extend_from_slice(&ids);
        Ok(buffer)
    });
    match encoded {
        Ok(buffer) => {
            let boxed = buffer.into_boxed_slice();
            out.len = boxed.len();
            out.ptr = Box::into_raw(boxed) as *mut u32;
            0
        }
        Err(status) => status,
    }
}

/// # Safety
/// `ptr`/`len` come from a `TokenIdsOutput`, freed once.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_free_u32(ptr: *mut u32, len: usize) {
    if !ptr.is_null() {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
    }
}

thread_local! {
    /// The last `PULPIE_RT_SPEC_RAISES` reason, NUL-terminated (valid until the next call on
    /// this thread).
    static SPEC_ERROR: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0]);
}

/// `markdown::to_markdown` (the reference's Markdown) of `len` bytes of UTF-8 (lone
/// surrogates written as Python's `surrogatepass` writes them are allowed, and come back the
/// same way). Status 0 done, 2 a panic (message in `reason`), 4 see `PULPIE_RT_SPEC_RAISES`.
///
/// # Safety
/// `input` points to `len` readable bytes; `out` to a writable `TextOutput`, whose buffer is
/// released with `pulpie_rt_free`.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_markdown(input: *const u8, len: usize, out: *mut TextOutput) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = TextOutput { ptr: std::ptr::null_mut(), len: 0, reason: std::ptr::null() };
    let bytes = if len == 0 { &[][..] } else { std::slice::from_raw_parts(input, len) };
    match run(&mut out.reason, || Ok(markdown::to_markdown(bytes))) {
        Ok(Ok(markdown)) => {
            (out.ptr, out.len) = leak_bytes(markdown);
            0
        }
        Ok(Err(error)) => {
            let mut reason = format!("{}: {}", error.kind, error.message).replace('\0', " ").into_bytes();
            reason.push(0);
            out.reason = SPEC_ERROR.with(|m| {
                *m.borrow_mut() = reason;
                m.borrow().as_ptr()
            });
            abi::PULPIE_RT_SPEC_RAISES
        }
        Err(status) => status,
    }
}

/// `markdown::to_text` (the runtime's plain text) of `len` bytes of UTF-8 (lone surrogates
/// allowed as for `pulpie_rt_markdown`). Status 0 done, 2 a panic (message in `reason`).
///
/// # Safety
/// As for `pulpie_rt_markdown`.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_text(input: *const u8, len: usize, out: *mut TextOutput) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = TextOutput { ptr: std::ptr::null_mut(), len: 0, reason: std::ptr::null() };
    let bytes = if len == 0 { &[][..] } else { std::slice::from_raw_parts(input, len) };
    match run(&mut out.reason, || Ok(markdown::to_text(bytes))) {
        Ok(text) => {
            (out.ptr, out.len) = leak_bytes(text);
            0
        }
        Err(status) => status,
    }
}

/// `prune::prune`: main-content HTML (`len` bytes of UTF-8; a lone surrogate written as
/// Python's `surrogatepass` writes it is read as U+FFFD) without what `drop`
/// (`PULPIE_RT_DROP_*` bits) names. Status 0 done, 2 a panic (message in `reason`).
///
/// # Safety
/// As for `pulpie_rt_markdown`.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_prune(
    input: *const u8,
    len: usize,
    drop: u32,
    out: *mut TextOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = TextOutput { ptr: std::ptr::null_mut(), len: 0, reason: std::ptr::null() };
    let bytes = if len == 0 { &[][..] } else { std::slice::from_raw_parts(input, len) };
    let html = String::from_utf8_lossy(bytes);
    match run(&mut out.reason, || Ok(prune::prune(&html, drop).into_bytes())) {
        Ok(pruned) => {
            (out.ptr, out.len) = leak_bytes(pruned);
            0
        }
        Err(status) => status,
    }
}

/// A JSONL line's string member `name` (`json::string_member`): its text (UTF-8) written
/// at the start of `text` (`text_cap` writable bytes, at least `len`: one buffer the caller
/// keeps for every line), its length in `*text_len`, the byte span of its string token in
/// `span[0]..span[1]`. `PULPIE_RT_FAILED` where the line is to be read otherwise (the caller's
/// JSON reader decides what it holds) or `text_cap` is below `len`; `PULPIE_RT_PANIC` on a bug
/// of ours (read it otherwise too).
///
/// # Safety
/// `line` points to `len` readable bytes, `name` to `name_len`, `span` to two writable
/// values, `text` to `text_cap` writable bytes, `text_len` to one writable value.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_json_string_member(
    line: *const u8,
    len: usize,
    name: *const u8,
    name_len: usize,
    span: *mut usize,
    text: *mut u8,
    text_cap: usize,
    text_len: *mut usize,
) -> i32 {
    install_panic_hook();
    *text_len = 0;
    let line = if len == 0 { &[][..] } else { std::slice::from_raw_parts(line, len) };
    let name = if name_len == 0 { &[][..] } else { std::slice::from_raw_parts(name, name_len) };
    let text = if text_cap == 0 { &mut [][..] } else { std::slice::from_raw_parts_mut(text, text_cap) };
    let Ok(name) = std::str::from_utf8(name) else { return abi::FAILED };
    match catch_unwind(AssertUnwindSafe(|| json::string_member(line, name, text))) {
        Ok(Some((written, at))) => {
            *span = at.start;
            *span.add(1) = at.end;
            *text_len = written;
            abi::DONE
        }
        Ok(None) => abi::FAILED,
        Err(_) => abi::PANIC,
    }
}

fn leak_bytes(bytes: Vec<u8>) -> (*mut u8, usize) {
    let boxed = bytes.into_boxed_slice();
    let len = boxed.len();
    (Box::into_raw(boxed) as *mut u8, len)
}

// ---------------------------------------------------------------- block features

#[repr(C)]
pub struct FeaturesOutput {
    /// `rows` × `cols` float32 values (native byte order), row-major, as `len` bytes: copy
    /// them out (their alignment is the allocator's), then release them with
    /// `pulpie_rt_free(ptr, len)`
    pub ptr: *mut u8,
    pub len: usize,
    pub rows: usize,
    pub cols: usize,
    /// static, NUL-terminated reason for status 1 (or the panic message for status 2)
    pub reason: *const u8,
}

/// Marks an absent id (Python's `None`) in `id_lens`: its row is zeros.
pub const NO_ID: usize = abi::PULPIE_RT_NO_ID as usize;

/// `features.block_features(map_html, item_ids)`: one row of `features::N_FEATURES` float32
/// values per id. The ids lie one after another in `ids` (`ids_len` bytes); `id_lens` holds
/// the byte length of each of the `n_ids` ids, or `NO_ID`. Status 0 done, 1 input that is
/// not UTF-8 or ids that do not match their lengths, 2 a panic (message in `reason`); no page
/// is refused. `flags`: the header's `PULPIE_RT_FEATURES_*` (`LIBXML2_TREE`, or-ed with
/// `EXTRAS`: rows of `N_FEATURES + N_EXTRAS`, `CONTAINERS`: and `N_CONTAINERS`, or `DIALOGS`:
/// and `N_DIALOGS`, or `RAILS`: and `N_RAILS`, or `TEASERS`: and `N_TEASERS`); `cols` says the
/// width.
///
/// # Safety
/// `map_html` and `ids` point to `map_len` and `ids_len` bytes of UTF-8 (`ids` may be null
/// when `ids_len` is 0), `id_lens` to `n_ids` lengths whose sum (`NO_ID` counting 0) is
/// `ids_len`; `out` to a writable `FeaturesOutput`, whose buffer is released with
/// `pulpie_rt_free`.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_block_features(
    map_html: *const u8,
    map_len: usize,
    ids: *const u8,
    ids_len: usize,
    id_lens: *const usize,
    n_ids: usize,
    flags: u32,
    out: *mut FeaturesOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = FeaturesOutput {
        ptr: std::ptr::null_mut(),
        len: 0,
        rows: 0,
        cols: features::N_FEATURES,
        reason: std::ptr::null(),
    };
    let ids = if ids_len == 0 { &[][..] } else { std::slice::from_raw_parts(ids, ids_len) };
    let lens = if n_ids == 0 { &[][..] } else { std::slice::from_raw_parts(id_lens, n_ids) };
    let map_html = if map_len == 0 { &[][..] } else { std::slice::from_raw_parts(map_html, map_len) };
    let libxml2_tree = flags & abi::PULPIE_RT_FEATURES_LIBXML2_TREE != 0;
    let teasers = flags & abi::PULPIE_RT_FEATURES_TEASERS != 0;
    let rails = teasers || flags & abi::PULPIE_RT_FEATURES_RAILS != 0;
    let dialogs = rails || flags & abi::PULPIE_RT_FEATURES_DIALOGS != 0;
    let containers = dialogs || flags & abi::PULPIE_RT_FEATURES_CONTAINERS != 0;
    let extras = containers || flags & abi::PULPIE_RT_FEATURES_EXTRAS != 0;
    if extras {
        out.cols = features::N_FEATURES + features::N_EXTRAS;
    }
    if containers {
        out.cols += features::N_CONTAINERS;
    }
    if dialogs {
        out.cols += features::N_DIALOGS;
    }
    if rails {
        out.cols += features::N_RAILS;
    }
    if teasers {
        out.cols += features::N_TEASERS;
    }
    let features = run(&mut out.reason, || {
        let (map_html, ids) = map_and_ids(map_html, ids)?;
        let item_ids = split_ids(ids, lens)?;
        Ok(features::block_features_with(
            map_html, &item_ids, libxml2_tree, extras, containers, dialogs, rails, teasers,
        ))
    });
    match features {
        Ok(values) => {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
            out.rows = n_ids;
            (out.ptr, out.len) = leak_bytes(bytes);
            0
        }
        Err(status) => status,
    }
}

/// `map_html` and the joined ids as text.
fn map_and_ids<'a>(map_html: &'a [u8], ids: &'a [u8]) -> tree::Res<(&'a str, &'a str)> {
    let not_utf8 = |_| tree::Unsupported("not UTF-8");
    Ok((std::str::from_utf8(map_html).map_err(not_utf8)?, std::str::from_utf8(ids).map_err(not_utf8)?))
}

/// The ids joined in `ids`, cut by their byte lengths `lens` (`NO_ID`: None).
fn split_ids<'a>(ids: &'a str, lens: &[usize]) -> tree::Res<Vec<Option<&'a str>>> {
    let mut item_ids: Vec<Option<&str>> = Vec::with_capacity(lens.len());
    let mut at = 0usize;
    for &len in lens {
        if len == NO_ID {
            item_ids.push(None);
            continue;
        }
        let id = at.checked_add(len).and_then(|end| ids.get(at..end));
        let id = id.ok_or(tree::Unsupported("id lengths do not match the ids"))?;
        item_ids.push(Some(id));
        at += len;
    }
    Ok(item_ids)
}

/// `simplify::hidden_blocks(map_html, item_ids)`: one byte per id (1: the block's element or
/// an ancestor is one the reference's segmentation removes as hidden), `n_ids` bytes into
/// `out`. Ids as for `pulpie_rt_block_features`; status codes too.
///
/// # Safety
/// As for `pulpie_rt_block_features`; `out` to a writable `TextOutput`, whose buffer is
/// released with `pulpie_rt_free`.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_hidden_blocks(
    map_html: *const u8,
    map_len: usize,
    ids: *const u8,
    ids_len: usize,
    id_lens: *const usize,
    n_ids: usize,
    out: *mut TextOutput,
) -> i32 {
    install_panic_hook();
    let out = &mut *out;
    *out = TextOutput { ptr: std::ptr::null_mut(), len: 0, reason: std::ptr::null() };
    let ids = if ids_len == 0 { &[][..] } else { std::slice::from_raw_parts(ids, ids_len) };
    let lens = if n_ids == 0 { &[][..] } else { std::slice::from_raw_parts(id_lens, n_ids) };
    let map_html = if map_len == 0 { &[][..] } else { std::slice::from_raw_parts(map_html, map_len) };
    let flags = run(&mut out.reason, || {
        let (map_html, ids) = map_and_ids(map_html, ids)?;
        let item_ids = split_ids(ids, lens)?;
        Ok(simplify::hidden_blocks(map_html, &item_ids))
    });
    match flags {
        Ok(flags) => {
            (out.ptr, out.len) = leak_bytes(flags);
            0
        }
        Err(status) => status,
    }
}
