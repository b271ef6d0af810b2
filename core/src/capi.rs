//! The public C ABI of `libpulpie_rt` (`core/include/pulpie_rt.h` is its contract, and the
//! documentation a C user reads): an engine opened once and shared by threads, raw HTML in,
//! a caller-owned result with the main content's Markdown and HTML out (`engine/`).
//!
//! Every exported function runs under `guard` (or catches panics itself): a panic never
//! crosses the ABI, it becomes `PULPIE_RT_ERR_INTERNAL` with a message, or a page's error.
//! Status codes and the options struct's layout are part of the ABI (`ABI_VERSION`).

#![allow(non_camel_case_types)]

use crate::engine::bundle::Bundle;
use crate::engine::{Engine, EngineConfig, Limits, OpenError, PageIn, PageOutput};
use crate::ort::{ExecutionProvider, GpuOptions, SessionConfig};
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::OnceLock;

/// `PULPIE_RT_ABI_VERSION`: raised when a function, struct layout or status code changes
/// in a way that an existing program could notice, or when fields are appended to
/// `pulpie_rt_options` (a program that sets them checks the library reads them). 2: `profile`.
/// 3: `cutoff_length`, `pulpie_rt_extract_pages` (per-page content types),
/// `pulpie_rt_result_encoding`, `pulpie_rt_engine_provider`, `pulpie_rt_status_string`.
/// 4: `favor`. 5: `pulpie_rt_result_score`, `pulpie_rt_result_threshold`. 6:
/// `pulpie_rt_extract_options` and `pulpie_rt_extract_pages_with` (a favor per call or page).
/// 7: the page's metadata (`pulpie_rt_result_title` … `_description`,
/// `pulpie_rt_options.metadata`).
pub const ABI_VERSION: u32 = crate::abi::PULPIE_RT_ABI_VERSION;

// the status codes (pulpie_rt.h's)
pub const OK: c_int = crate::abi::PULPIE_RT_OK;
pub const ERR_ARGUMENT: c_int = crate::abi::PULPIE_RT_ERR_ARGUMENT;
pub const ERR_INTERNAL: c_int = crate::abi::PULPIE_RT_ERR_INTERNAL;
pub const ERR_MODEL: c_int = crate::abi::PULPIE_RT_ERR_MODEL;
pub const ERR_RUNTIME: c_int = crate::abi::PULPIE_RT_ERR_RUNTIME;

/// `pulpie_rt_options`, ABI 7 layout (ABI 1's, then `profile`, `cutoff_length`, `favor`,
/// `metadata`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pulpie_rt_options {
    pub struct_size: u32,
    pub model: *const c_char,
    pub backend: *const c_char,
    pub device_id: i32,
    pub threads: i32,
    pub ort_library: *const c_char,
    pub max_input_bytes: i64,
    pub max_page_tokens: i64,
    pub max_batch_tokens: i64,
    /// ABI 2: the bundle's profile (NULL: its `default_profile`)
    pub profile: *const c_char,
    /// ABI 3: `Extractor`'s `cutoff_length` (simplify's cut of long inline text runs)
    pub cutoff_length: i64,
    /// ABI 4: `PULPIE_RT_FAVOR_*`, a named shift of the decision threshold (`decode::favor_shift`)
    pub favor: i32,
    /// ABI 7: 1 (default) reads each page's metadata, 0 does not (`EngineConfig::metadata`);
    /// 64 bits so that it starts past ABI 4's (to 6's) padded struct
    pub metadata: i64,
}

/// The fields a caller must pass at least (the first five).
const MIN_OPTIONS_SIZE: usize = std::mem::offset_of!(pulpie_rt_options, threads) + 4;

/// The sizes of `pulpie_rt_options` a program of some ABI passes: the minimum, ABI 1's
/// (up to `max_batch_tokens`), ABI 2's (`profile`), ABI 3's (`cutoff_length`), ABI 4's
/// (`favor`, padded; ABI 5's and 6's the same), ABI 7's (`metadata`). A `struct_size`
/// between two is read as the smaller, so a size that ends inside a field never copies part
/// of it.
const KNOWN_OPTIONS_SIZES: [usize; 6] = [
    MIN_OPTIONS_SIZE,
    std::mem::offset_of!(pulpie_rt_options, profile),
    std::mem::offset_of!(pulpie_rt_options, cutoff_length),
    std::mem::offset_of!(pulpie_rt_options, cutoff_length) + 8,
    std::mem::offset_of!(pulpie_rt_options, metadata),
    std::mem::size_of::<pulpie_rt_options>(),
];

impl Default for pulpie_rt_options {
    fn default() -> Self {
        let limits = Limits::default();
        let config = EngineConfig::default();
        pulpie_rt_options {
            struct_size: std::mem::size_of::<pulpie_rt_options>() as u32,
            model: std::ptr::null(),
            backend: std::ptr::null(),
            device_id: 0,
            threads: 0,
            ort_library: std::ptr::null(),
            max_input_bytes: limits.max_input_bytes.map_or(-1, |n| n as i64),
            max_page_tokens: limits.max_page_tokens.map_or(-1, |n| n as i64),
            max_batch_tokens: config.max_batch_tokens as i64,
            profile: std::ptr::null(),
            cutoff_length: config.cutoff_length as i64,
            favor: crate::abi::PULPIE_RT_FAVOR_BALANCED,
            metadata: i64::from(config.metadata),
        }
    }
}

/// `pulpie_rt_extract_options`, ABI 6 layout: the options of one extraction call.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pulpie_rt_extract_options {
    pub struct_size: u32,
    /// `PULPIE_RT_FAVOR_*`, or `PULPIE_RT_ENGINE_FAVOR`: the engine's
    pub favor: i32,
    /// NULL, or one favor per page (`PULPIE_RT_ENGINE_FAVOR`: the call's)
    pub page_favor: *const i32,
}

/// The sizes of `pulpie_rt_extract_options` a program of some ABI passes: ABI 6's first
/// field (`favor`), then the whole struct. The smallest is the least a caller passes.
const KNOWN_EXTRACT_OPTIONS_SIZES: [usize; 2] = [
    std::mem::offset_of!(pulpie_rt_extract_options, page_favor),
    std::mem::size_of::<pulpie_rt_extract_options>(),
];

impl Default for pulpie_rt_extract_options {
    fn default() -> Self {
        pulpie_rt_extract_options {
            struct_size: std::mem::size_of::<pulpie_rt_extract_options>() as u32,
            favor: crate::abi::PULPIE_RT_ENGINE_FAVOR,
            page_favor: std::ptr::null(),
        }
    }
}

/// The opaque engine.
pub struct pulpie_rt_engine {
    engine: Engine,
}

/// A page's result, owned by the caller until `pulpie_rt_result_free`. Every string is kept
/// NUL-terminated (a length is given too: Markdown may hold NUL bytes a page had).
pub struct pulpie_rt_result {
    markdown: Vec<u8>,
    html: Vec<u8>,
    error: Option<CString>,
    truncated: Option<CString>,
    empty_reason: Option<CString>,
    encoding: Option<CString>,
    labels: Vec<(CString, bool)>,
    /// per label its block's score (log-odds of main; NaN: none), and the page's decision
    /// threshold (NaN for a failed page)
    scores: Vec<f32>,
    threshold: f64,
    n_main: u32,
    n_other: u32,
    /// the page's metadata (`crate::metadata`), each string NUL-terminated
    title: Option<CString>,
    authors: Vec<CString>,
    published: Option<CString>,
    modified: Option<CString>,
    site_name: Option<CString>,
    language: Option<CString>,
    canonical_url: Option<CString>,
    description: Option<CString>,
    /// the authors joined by NULs, made on first request (`pulpie_rt_py_result_view`)
    packed_authors: OnceLock<Vec<u8>>,
    /// the plain text of `html`, made on first request (`pulpie_rt_result_text`)
    text: OnceLock<Vec<u8>>,
    /// the labels' ids joined by NULs and one byte per label (1: main), made on first request
    /// (`pulpie_rt_py_result_view`)
    packed_labels: OnceLock<(Vec<u8>, Vec<u8>)>,
}

fn nul_terminated(text: String) -> Vec<u8> {
    let mut bytes = text.into_bytes();
    bytes.push(0);
    bytes
}

/// A C string of `text` (a NUL inside becomes a space: messages and ids only).
fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', " ")).expect("NULs replaced")
}

impl pulpie_rt_result {
    fn new(out: PageOutput) -> pulpie_rt_result {
        let n_main = out.n_main() as u32;
        let n_other = out.n_other() as u32;
        let m = &out.metadata;
        let text = |value: &Option<String>| value.as_deref().map(c_string);
        pulpie_rt_result {
            title: text(&m.title),
            authors: m.authors.iter().map(|a| c_string(a)).collect(),
            published: text(&m.published),
            modified: text(&m.modified),
            site_name: text(&m.site_name),
            language: text(&m.language),
            canonical_url: text(&m.canonical_url),
            description: text(&m.description),
            packed_authors: OnceLock::new(),
            markdown: nul_terminated(out.markdown),
            html: nul_terminated(out.html),
            error: out.error.as_deref().map(c_string),
            truncated: out.truncated.as_deref().map(c_string),
            empty_reason: out.empty_reason.as_deref().map(c_string),
            encoding: out.encoding.as_deref().map(c_string),
            labels: out.labels.iter().map(|(id, main)| (c_string(id), *main)).collect(),
            threshold: if out.error.is_some() { f64::NAN } else { out.scores.threshold },
            scores: out.scores.values,
            n_main,
            n_other,
            text: OnceLock::new(),
            packed_labels: OnceLock::new(),
        }
    }
}

/// A failure of a call: its status and message.
type Failure = (c_int, String);

fn argument(message: impl Into<String>) -> Failure {
    (ERR_ARGUMENT, message.into())
}

/// Runs `work` with panics caught; writes the message of a failure into `*err` (when `err`
/// is not NULL; NULL there on success) and returns the status.
fn guard(err: *mut *mut c_char, work: impl FnOnce() -> Result<(), Failure>) -> c_int {
    crate::install_panic_hook();
    if !err.is_null() {
        unsafe { *err = std::ptr::null_mut() };
    }
    let (status, message) = match catch_unwind(AssertUnwindSafe(work)) {
        Ok(Ok(())) => return OK,
        Ok(Err(failure)) => failure,
        Err(_) => (ERR_INTERNAL, format!("internal error in libpulpie_rt: {}", crate::last_panic_message())),
    };
    if !err.is_null() {
        unsafe { *err = c_string(&message).into_raw() };
    }
    status
}

/// A NUL-terminated UTF-8 argument, or None for NULL.
unsafe fn optional_str<'a>(ptr: *const c_char, what: &str) -> Result<Option<&'a str>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    CStr::from_ptr(ptr).to_str().map(Some).map_err(|_| argument(format!("{what} is not UTF-8")))
}

/// The caller's options, read up to its `struct_size` (later fields keep their defaults).
unsafe fn read_options(options: *const pulpie_rt_options) -> Result<pulpie_rt_options, Failure> {
    let mut read = pulpie_rt_options::default();
    if options.is_null() {
        return Ok(read);
    }
    let size = (*(options as *const u32)) as usize;
    if size < MIN_OPTIONS_SIZE {
        return Err(argument(format!(
            "options.struct_size is {size}, smaller than the first fields ({MIN_OPTIONS_SIZE} bytes): \
             call pulpie_rt_options_init first"
        )));
    }
    let size =
        KNOWN_OPTIONS_SIZES.iter().copied().filter(|&known| known <= size).max().unwrap_or(MIN_OPTIONS_SIZE);
    std::ptr::copy_nonoverlapping(options as *const u8, &mut read as *mut pulpie_rt_options as *mut u8, size);
    Ok(read)
}

/// A favor of the extract options (`what` names it in the message): its shift of the
/// decision threshold, None for `PULPIE_RT_ENGINE_FAVOR`.
fn call_favor_shift(favor: i32, what: &str) -> Result<Option<f64>, Failure> {
    if favor == crate::abi::PULPIE_RT_ENGINE_FAVOR {
        return Ok(None);
    }
    crate::engine::decode::favor_shift(favor).map(Some).ok_or_else(|| {
        argument(format!(
            "{what} is {favor} (PULPIE_RT_FAVOR_BALANCED, _PRECISION, _RECALL or PULPIE_RT_ENGINE_FAVOR)"
        ))
    })
}

/// Per page of a call its decision shift (`Engine::extract_pages_shifted`) from the caller's
/// extract options (read up to their `struct_size`; NULL: the engine's), or empty when every
/// page takes the engine's.
unsafe fn page_shifts(
    options: *const pulpie_rt_extract_options,
    n: usize,
) -> Result<Vec<Option<f64>>, Failure> {
    let mut read = pulpie_rt_extract_options::default();
    if !options.is_null() {
        let size = (*(options as *const u32)) as usize;
        let least = KNOWN_EXTRACT_OPTIONS_SIZES[0];
        if size < least {
            return Err(argument(format!(
                "extract options.struct_size is {size}, smaller than the first fields ({least} bytes): \
                 call pulpie_rt_extract_options_init first"
            )));
        }
        let size =
            KNOWN_EXTRACT_OPTIONS_SIZES.iter().copied().filter(|&known| known <= size).max().unwrap_or(least);
        std::ptr::copy_nonoverlapping(
            options as *const u8,
            &mut read as *mut pulpie_rt_extract_options as *mut u8,
            size,
        );
    }
    let call = call_favor_shift(read.favor, "extract options.favor")?;
    if read.page_favor.is_null() || n == 0 {
        return Ok(if call.is_none() { Vec::new() } else { vec![call; n] });
    }
    std::slice::from_raw_parts(read.page_favor, n)
        .iter()
        .enumerate()
        .map(|(i, &favor)| Ok(call_favor_shift(favor, &format!("extract options.page_favor[{i}]"))?.or(call)))
        .collect()
}

fn limit(value: i64) -> Option<usize> {
    usize::try_from(value).ok()
}

/// What `pulpie_rt_engine_open` opens: the model (None: the embedded one), its profile (None:
/// the bundle's default) and how it runs.
struct OpenRequest {
    model: Option<String>,
    profile: Option<String>,
    config: EngineConfig,
}

fn config_of(options: &pulpie_rt_options) -> Result<OpenRequest, Failure> {
    let model = unsafe { optional_str(options.model, "options.model")? }.map(str::to_string);
    let profile = unsafe { optional_str(options.profile, "options.profile")? }.map(str::to_string);
    let backend = unsafe { optional_str(options.backend, "options.backend")? };
    let device_id = u32::try_from(options.device_id)
        .map_err(|_| argument(format!("options.device_id is {}", options.device_id)))?;
    let provider = ExecutionProvider::parse(backend.unwrap_or("cpu"), device_id).map_err(argument)?;
    let threads = usize::try_from(options.threads)
        .map_err(|_| argument(format!("options.threads is {}", options.threads)))?;
    let ort_library = unsafe { optional_str(options.ort_library, "options.ort_library")? }.map(PathBuf::from);
    let max_batch_tokens = usize::try_from(options.max_batch_tokens)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| argument(format!("options.max_batch_tokens is {}", options.max_batch_tokens)))?;
    let cutoff_length = usize::try_from(options.cutoff_length)
        .map_err(|_| argument(format!("options.cutoff_length is {}", options.cutoff_length)))?;
    let decision_shift = crate::engine::decode::favor_shift(options.favor).ok_or_else(|| {
        argument(format!(
            "options.favor is {} (PULPIE_RT_FAVOR_BALANCED, _PRECISION or _RECALL)",
            options.favor
        ))
    })?;
    let config = EngineConfig {
        session: SessionConfig { intra_op_threads: threads, inter_op_threads: 0, provider },
        ort_library,
        limits: Limits {
            max_input_bytes: limit(options.max_input_bytes),
            max_page_tokens: limit(options.max_page_tokens),
        },
        max_batch_tokens,
        cutoff_length,
        decision_shift,
        gpu: GpuOptions::default(),
        metadata: match options.metadata {
            0 => false,
            1 => true,
            other => return Err(argument(format!("options.metadata is {other} (1: read, 0: do not)"))),
        },
    };
    Ok(OpenRequest { model, profile, config })
}

#[no_mangle]
pub extern "C" fn pulpie_rt_abi_version() -> u32 {
    ABI_VERSION
}

/// The library's version, e.g. "0.1.0" (static).
#[no_mangle]
pub extern "C" fn pulpie_rt_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// # Safety
/// `options` is NULL or points to a writable `pulpie_rt_options` of this ABI.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_options_init(options: *mut pulpie_rt_options) {
    if !options.is_null() {
        options.write(pulpie_rt_options::default());
    }
}

/// # Safety
/// `options` is NULL or points to options whose first field is their size; `out` is
/// writable; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_engine_open(
    options: *const pulpie_rt_options,
    out: *mut *mut pulpie_rt_engine,
    err: *mut *mut c_char,
) -> c_int {
    guard(err, || {
        if out.is_null() {
            return Err(argument("out is NULL"));
        }
        *out = std::ptr::null_mut();
        let options = read_options(options)?;
        let OpenRequest { model, profile, config } = config_of(&options)?;
        let profile = profile.as_deref();
        let bundle = match model {
            Some(dir) => {
                Bundle::load_dir_profile(std::path::Path::new(&dir), profile).map_err(|e| (ERR_MODEL, e))?
            }
            None => Bundle::embedded_profile(profile)
                .unwrap_or_else(|| {
                    Err("this build of libpulpie_rt has no embedded default model (built without the \
                     cargo feature embedded-model): pass a bundle directory in options.model"
                        .to_string())
                })
                .map_err(|e| (ERR_MODEL, e))?,
        };
        let engine = Engine::open(bundle, config).map_err(|e| match e {
            OpenError::Model(message) => (ERR_MODEL, message),
            OpenError::Runtime(message) => (ERR_RUNTIME, message),
        })?;
        *out = Box::into_raw(Box::new(pulpie_rt_engine { engine }));
        Ok(())
    })
}

/// # Safety
/// `engine` is NULL or an open engine no other thread uses any more.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_engine_close(engine: *mut pulpie_rt_engine) {
    if !engine.is_null() {
        crate::install_panic_hook();
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(engine))));
    }
}

unsafe fn page_bytes<'a>(html: *const c_char, len: usize) -> Option<&'a [u8]> {
    match (html.is_null(), len) {
        (_, 0) => Some(&[]),
        (true, _) => None,
        (false, _) => Some(std::slice::from_raw_parts(html as *const u8, len)),
    }
}

/// The pages of a call through the engine: one result per page (a NULL page with a length
/// gets an input error; it is not read).
/// `shifts`: per page its decision shift (None: the engine's; empty: every page the engine's).
pub(crate) fn extract_pages(
    engine: &Engine,
    pages: &[Option<PageIn<'_>>],
    shifts: &[Option<f64>],
) -> Vec<*mut pulpie_rt_result> {
    let present: Vec<PageIn<'_>> = pages.iter().flatten().copied().collect();
    let present_shifts: Vec<Option<f64>> = if shifts.is_empty() {
        Vec::new()
    } else {
        pages.iter().zip(shifts).filter(|(page, _)| page.is_some()).map(|(_, &shift)| shift).collect()
    };
    let mut outputs = engine.extract_pages_shifted(&present, &present_shifts).into_iter();
    pages
        .iter()
        .map(|page| {
            let output = match page {
                Some(_) => outputs.next().expect("one output per page"),
                None => PageOutput {
                    error: Some("input: html is NULL with a non-zero length".to_string()),
                    ..PageOutput::default()
                },
            };
            Box::into_raw(Box::new(pulpie_rt_result::new(output)))
        })
        .collect()
}

/// A C string argument's bytes, or None for NULL.
unsafe fn optional_bytes<'a>(text: *const c_char) -> Option<&'a [u8]> {
    (!text.is_null()).then(|| CStr::from_ptr(text).to_bytes())
}

/// # Safety
/// `engine` is open; `html` points to `len` bytes (or is NULL with `len` 0); `content_type`
/// is NULL or a C string; `out` is writable; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_extract(
    engine: *mut pulpie_rt_engine,
    html: *const c_char,
    len: usize,
    content_type: *const c_char,
    out: *mut *mut pulpie_rt_result,
    err: *mut *mut c_char,
) -> c_int {
    guard(err, || {
        if out.is_null() {
            return Err(argument("out is NULL"));
        }
        *out = std::ptr::null_mut();
        if engine.is_null() {
            return Err(argument("engine is NULL"));
        }
        let content_type = optional_bytes(content_type);
        let page = page_bytes(html, len).map(|data| PageIn::Bytes { data, content_type });
        let results = extract_pages(&(*engine).engine, &[page], &[]);
        *out = results[0];
        Ok(())
    })
}

/// # Safety
/// `engine` is open; `html` and `len` point to `n` pointers and lengths (each page as for
/// `pulpie_rt_extract`); `out` points to `n` writable result pointers; `err` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_extract_batch(
    engine: *mut pulpie_rt_engine,
    html: *const *const c_char,
    len: *const usize,
    n: usize,
    out: *mut *mut pulpie_rt_result,
    err: *mut *mut c_char,
) -> c_int {
    pulpie_rt_extract_pages(engine, html, len, std::ptr::null(), n, out, err)
}

/// The caller's arrays of a call's `n` pages: bytes, lengths, Content-Types (NULL: none) and,
/// for the Python doors, which pages are text (`is_text`).
struct PageArrays {
    html: *const *const c_char,
    len: *const usize,
    content_type: *const *const c_char,
    is_text: Option<*const u8>,
    n: usize,
}

/// `pulpie_rt_extract_pages_with`'s work (and the Python doors' `pulpie_rt_py_extract`, which
/// says which pages are text with `is_text`): the pages read from the caller's arrays, one
/// result each into `out`.
unsafe fn extract_pages_call(
    engine: *mut pulpie_rt_engine,
    pages: PageArrays,
    options: *const pulpie_rt_extract_options,
    out: *mut *mut pulpie_rt_result,
) -> Result<(), Failure> {
    let PageArrays { html, len, content_type, is_text, n } = pages;
    if n == 0 {
        return Ok(());
    }
    if out.is_null() {
        return Err(argument("out is NULL"));
    }
    let out = std::slice::from_raw_parts_mut(out, n);
    out.fill(std::ptr::null_mut());
    if engine.is_null() || html.is_null() || len.is_null() || is_text.is_some_and(|t| t.is_null()) {
        return Err(argument("engine, html or len is NULL"));
    }
    let shifts = page_shifts(options, n)?;
    let html = std::slice::from_raw_parts(html, n);
    let len = std::slice::from_raw_parts(len, n);
    let is_text: &[u8] = match is_text {
        Some(flags) => std::slice::from_raw_parts(flags, n),
        None => &[],
    };
    let types: &[*const c_char] =
        if content_type.is_null() { &[] } else { std::slice::from_raw_parts(content_type, n) };
    let pages: Vec<Option<PageIn<'_>>> = (0..n)
        .map(|i| {
            let content_type = types.get(i).and_then(|&t| optional_bytes(t));
            page_bytes(html[i], len[i]).map(|data| match is_text.get(i) {
                Some(&flag) if flag != 0 => PageIn::Text(data),
                _ => PageIn::Bytes { data, content_type },
            })
        })
        .collect();
    out.copy_from_slice(&extract_pages(&(*engine).engine, &pages, &shifts));
    Ok(())
}

/// `pulpie_rt_extract_batch` with each page's transport Content-Type: `content_type` is NULL
/// (none has one) or points to `n` C strings, each NULL or the page's Content-Type.
///
/// # Safety
/// As for `pulpie_rt_extract_batch`; `content_type` is NULL or points to `n` pointers, each
/// NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_extract_pages(
    engine: *mut pulpie_rt_engine,
    html: *const *const c_char,
    len: *const usize,
    content_type: *const *const c_char,
    n: usize,
    out: *mut *mut pulpie_rt_result,
    err: *mut *mut c_char,
) -> c_int {
    pulpie_rt_extract_pages_with(engine, html, len, content_type, n, std::ptr::null(), out, err)
}

/// # Safety
/// `options` is NULL or points to a writable `pulpie_rt_extract_options` of this ABI.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_extract_options_init(options: *mut pulpie_rt_extract_options) {
    if !options.is_null() {
        options.write(pulpie_rt_extract_options::default());
    }
}

/// `pulpie_rt_extract_pages` with the call's options (NULL: the engine's): the favor of the
/// call or of each page, decided per page on the one engine.
///
/// # Safety
/// As for `pulpie_rt_extract_pages`; `options` is NULL or points to options whose first field
/// is their size, and whose `page_favor` is NULL or points to `n` values.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_extract_pages_with(
    engine: *mut pulpie_rt_engine,
    html: *const *const c_char,
    len: *const usize,
    content_type: *const *const c_char,
    n: usize,
    options: *const pulpie_rt_extract_options,
    out: *mut *mut pulpie_rt_result,
    err: *mut *mut c_char,
) -> c_int {
    let pages = PageArrays { html, len, content_type, is_text: None, n };
    guard(err, || extract_pages_call(engine, pages, options, out))
}

/// What runs the engine's model: `"cpu"`, `"cuda"` or `"tensorrt"` (ONNX Runtime's
/// execution provider the session was opened with), or `"none"` for a profile that runs no
/// model (the block rescorer alone, on the CPU). Static; NULL for a NULL engine.
///
/// # Safety
/// `engine` is NULL or open.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_engine_provider(engine: *const pulpie_rt_engine) -> *const c_char {
    match engine.as_ref() {
        None => std::ptr::null(),
        Some(e) => e.engine.provider_c_name().as_ptr() as *const c_char,
    }
}

/// The execution providers this library knows, by index from 0 (`ort::PROVIDERS`, their one
/// definition): the backend option's spelling ("cpu", "cuda", "tensorrt"), or NULL past the
/// last. Static.
#[no_mangle]
pub extern "C" fn pulpie_rt_provider_name(index: u32) -> *const c_char {
    crate::ort::PROVIDERS
        .get(index as usize)
        .map_or(std::ptr::null(), |p| p.c_name().as_ptr() as *const c_char)
}

/// How provider `index`'s device is written ("cpu", or "cuda:N": GPU N, the option
/// `device_id`), or NULL past the last. Static.
#[no_mangle]
pub extern "C" fn pulpie_rt_provider_device(index: u32) -> *const c_char {
    crate::ort::PROVIDERS
        .get(index as usize)
        .map_or(std::ptr::null(), |p| p.c_device().as_ptr() as *const c_char)
}

/// The name of a status code (`"PULPIE_RT_OK"` …), or `"unknown status"`. Static.
#[no_mangle]
pub extern "C" fn pulpie_rt_status_string(status: c_int) -> *const c_char {
    let name: &'static str = match status {
        OK => "PULPIE_RT_OK: success\0",
        ERR_ARGUMENT => "PULPIE_RT_ERR_ARGUMENT: a bad argument\0",
        ERR_INTERNAL => "PULPIE_RT_ERR_INTERNAL: a fault inside the library\0",
        ERR_MODEL => "PULPIE_RT_ERR_MODEL: the model cannot be used\0",
        ERR_RUNTIME => "PULPIE_RT_ERR_RUNTIME: ONNX Runtime failed\0",
        _ => "unknown status\0",
    };
    name.as_ptr() as *const c_char
}

unsafe fn bytes_out(bytes: &[u8], len: *mut usize) -> *const c_char {
    if !len.is_null() {
        *len = bytes.len() - 1; // less the NUL kept at the end
    }
    bytes.as_ptr() as *const c_char
}

fn c_or_null(text: &Option<CString>) -> *const c_char {
    text.as_ref().map_or(std::ptr::null(), |t| t.as_ptr())
}

/// # Safety
/// `result` is NULL or a live result; `len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_markdown(
    result: *const pulpie_rt_result,
    len: *mut usize,
) -> *const c_char {
    match result.as_ref() {
        Some(r) => bytes_out(&r.markdown, len),
        None => bytes_out(b"\0", len),
    }
}

/// # Safety
/// As for `pulpie_rt_result_markdown`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_html(
    result: *const pulpie_rt_result,
    len: *mut usize,
) -> *const c_char {
    match result.as_ref() {
        Some(r) => bytes_out(&r.html, len),
        None => bytes_out(b"\0", len),
    }
}

/// # Safety
/// As for `pulpie_rt_result_markdown`; several threads may ask for one result's text.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_text(
    result: *const pulpie_rt_result,
    len: *mut usize,
) -> *const c_char {
    crate::install_panic_hook();
    let Some(r) = result.as_ref() else { return bytes_out(b"\0", len) };
    let text = r.text.get_or_init(|| {
        let html = &r.html[..r.html.len() - 1];
        let mut text = catch_unwind(|| crate::markdown::to_text(html)).unwrap_or_default();
        text.push(0);
        text
    });
    bytes_out(text, len)
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_error(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.error))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_truncated(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.truncated))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_empty_reason(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.empty_reason))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_encoding(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.encoding))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_n_main(result: *const pulpie_rt_result) -> u32 {
    result.as_ref().map_or(0, |r| r.n_main)
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_n_other(result: *const pulpie_rt_result) -> u32 {
    result.as_ref().map_or(0, |r| r.n_other)
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_title(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.title))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_published(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.published))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_modified(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.modified))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_site_name(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.site_name))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_language(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.language))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_canonical_url(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.canonical_url))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_description(result: *const pulpie_rt_result) -> *const c_char {
    result.as_ref().map_or(std::ptr::null(), |r| c_or_null(&r.description))
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_n_authors(result: *const pulpie_rt_result) -> u32 {
    result.as_ref().map_or(0, |r| r.authors.len() as u32)
}

/// The `index`-th author's name (NULL past the end).
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_authors(
    result: *const pulpie_rt_result,
    index: u32,
) -> *const c_char {
    result.as_ref().and_then(|r| r.authors.get(index as usize)).map_or(std::ptr::null(), |a| a.as_ptr())
}

/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_n_labels(result: *const pulpie_rt_result) -> u32 {
    result.as_ref().map_or(0, |r| r.labels.len() as u32)
}

/// The `index`-th labelled block: its `_item_id` (NULL past the end) and, in `*is_main`, 1
/// for main and 0 for other.
///
/// # Safety
/// `result` is NULL or a live result; `is_main` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_label(
    result: *const pulpie_rt_result,
    index: u32,
    is_main: *mut c_int,
) -> *const c_char {
    let Some((id, main)) = result.as_ref().and_then(|r| r.labels.get(index as usize)) else {
        return std::ptr::null();
    };
    if !is_main.is_null() {
        *is_main = c_int::from(*main);
    }
    id.as_ptr()
}

/// The `index`-th labelled block's score: the log-odds of main it was decided from (NaN past
/// the end, for a block without one, or for NULL).
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_score(result: *const pulpie_rt_result, index: u32) -> f32 {
    result.as_ref().and_then(|r| r.scores.get(index as usize).copied()).unwrap_or(f32::NAN)
}

/// The page's decision threshold in score units (NaN for a failed page or NULL).
///
/// # Safety
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_threshold(result: *const pulpie_rt_result) -> f64 {
    result.as_ref().map_or(f64::NAN, |r| r.threshold)
}

/// # Safety
/// `result` is NULL or a result from this library, freed once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_result_free(result: *mut pulpie_rt_result) {
    if !result.is_null() {
        drop(Box::from_raw(result));
    }
}

/// # Safety
/// `text` is NULL or a message from this library's `err`, freed once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_string_free(text: *mut c_char) {
    if !text.is_null() {
        drop(CString::from_raw(text));
    }
}

// ---- the engine's devices (issue 25, GPU path) ------------------------------------------

/// What a caller should tell its user once about the engine's devices (a GPU asked for a
/// profile without a transformer; TensorRT engines built or loaded, and where), or NULL when
/// there is nothing to say. Freed with `pulpie_rt_string_free`.
///
/// # Safety
/// `engine` is NULL or an open engine.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_engine_notice(engine: *const pulpie_rt_engine) -> *mut c_char {
    match engine.as_ref().and_then(|engine| engine.engine.notice()) {
        Some(notice) => c_string(&notice).into_raw(),
        None => std::ptr::null_mut(),
    }
}

// ---- Internal: the Python doors' entry points (runtime/flow/engine.py), declared in
// pulpie_rt_internal.h; the C library is built without them (cargo feature python-ffi off).

/// `pulpie_rt_extract_pages` where a page may be text its caller already decoded:
/// `is_text[i]` 1 reads page `i` as text (UTF-8, lone surrogates as their 3 bytes: a Python
/// `str` encoded with `surrogatepass`; no encoding recorded), 0 as bytes to decode with its
/// `content_type[i]` (NULL: none).
///
/// # Safety
/// As for `pulpie_rt_extract_pages`; `is_text` points to `n` bytes.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_py_extract(
    engine: *mut pulpie_rt_engine,
    html: *const *const c_char,
    len: *const usize,
    content_type: *const *const c_char,
    is_text: *const u8,
    n: usize,
    options: *const pulpie_rt_extract_options,
    out: *mut *mut pulpie_rt_result,
    err: *mut *mut c_char,
) -> c_int {
    let pages = PageArrays { html, len, content_type, is_text: Some(is_text), n };
    guard(err, || extract_pages_call(engine, pages, options, out))
}

/// Everything of a result in one call, for the Python doors: pointers into the result,
/// valid until it is freed.
#[cfg(feature = "python-ffi")]
#[repr(C)]
pub struct pulpie_rt_py_result_view {
    pub markdown: *const c_char,
    pub markdown_len: usize,
    pub html: *const c_char,
    pub html_len: usize,
    pub error: *const c_char,
    pub truncated: *const c_char,
    pub empty_reason: *const c_char,
    pub encoding: *const c_char,
    /// the labelled blocks' ids, each followed by a NUL
    pub label_ids: *const c_char,
    pub label_ids_len: usize,
    /// one byte per label: 1 main, 0 other
    pub label_main: *const u8,
    pub n_labels: usize,
    /// one score per label (`pulpie_rt_result_score`)
    pub label_scores: *const f32,
    /// `pulpie_rt_result_threshold`
    pub threshold: f64,
    pub title: *const c_char,
    /// the authors' names, each followed by a NUL
    pub authors: *const c_char,
    pub authors_len: usize,
    pub published: *const c_char,
    pub modified: *const c_char,
    pub site_name: *const c_char,
    pub language: *const c_char,
    pub canonical_url: *const c_char,
    pub description: *const c_char,
}

/// # Safety
/// `result` is a live result; `view` is writable.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_py_result_view(
    result: *const pulpie_rt_result,
    view: *mut pulpie_rt_py_result_view,
) {
    let (Some(r), Some(view)) = (result.as_ref(), view.as_mut()) else { return };
    let (ids, main) = r.packed_labels.get_or_init(|| {
        let mut ids = Vec::new();
        let mut main = Vec::with_capacity(r.labels.len());
        for (id, is_main) in &r.labels {
            ids.extend_from_slice(id.as_bytes_with_nul());
            main.push(u8::from(*is_main));
        }
        (ids, main)
    });
    let authors = r
        .packed_authors
        .get_or_init(|| r.authors.iter().flat_map(|a| a.as_bytes_with_nul()).copied().collect());
    *view = pulpie_rt_py_result_view {
        markdown: r.markdown.as_ptr() as *const c_char,
        markdown_len: r.markdown.len() - 1,
        html: r.html.as_ptr() as *const c_char,
        html_len: r.html.len() - 1,
        error: c_or_null(&r.error),
        truncated: c_or_null(&r.truncated),
        empty_reason: c_or_null(&r.empty_reason),
        encoding: c_or_null(&r.encoding),
        label_ids: ids.as_ptr() as *const c_char,
        label_ids_len: ids.len(),
        label_main: main.as_ptr(),
        n_labels: main.len(),
        label_scores: r.scores.as_ptr(),
        threshold: r.threshold,
        title: c_or_null(&r.title),
        authors: authors.as_ptr() as *const c_char,
        authors_len: authors.len(),
        published: c_or_null(&r.published),
        modified: c_or_null(&r.modified),
        site_name: c_or_null(&r.site_name),
        language: c_or_null(&r.language),
        canonical_url: c_or_null(&r.canonical_url),
        description: c_or_null(&r.description),
    };
}

/// What this engine's model computed since it opened, into `out[4]`: batches that failed
/// and ran row by row, model calls, real tokens, computed (padded) tokens.
///
/// # Safety
/// `engine` is NULL or open; `out` points to 4 writable values.
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_py_engine_counters(engine: *const pulpie_rt_engine, out: *mut u64) {
    let counters = engine.as_ref().map(|e| e.engine.counters()).unwrap_or_default();
    let values =
        [counters.row_by_row_fallbacks, counters.model_calls, counters.real_tokens, counters.computed_tokens];
    std::ptr::copy_nonoverlapping(values.as_ptr(), out, values.len());
}

/// The engine's sequence-length buckets (`ort::DEFAULT_BUCKETS`): their count, the first
/// `capacity` written to `out`.
///
/// # Safety
/// `out` points to `capacity` writable values (or is NULL with `capacity` 0).
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_py_seq_buckets(out: *mut u64, capacity: usize) -> usize {
    let buckets = crate::ort::DEFAULT_BUCKETS;
    for (i, &length) in buckets.iter().take(capacity).enumerate() {
        *out.add(i) = length as u64;
    }
    buckets.len()
}

/// The engine's cap on rows × length² per batch (`ort::DEFAULT_MAX_BATCH_ATTENTION`).
#[cfg(feature = "python-ffi")]
#[no_mangle]
pub extern "C" fn pulpie_rt_py_max_batch_attention() -> u64 {
    crate::ort::DEFAULT_MAX_BATCH_ATTENTION as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_sizes_of_each_abi() {
        // the layout against pulpie_rt.h: tests/test_binding.py (pulpie_rt_py_layouts)
        assert_eq!(KNOWN_OPTIONS_SIZES, [32, 64, 72, 80, 88, 96]);
        assert_eq!(MIN_OPTIONS_SIZE, 32);
    }

    #[test]
    fn extract_options_give_each_page_its_shift() {
        use crate::abi::{
            PULPIE_RT_ENGINE_FAVOR as ENGINE, PULPIE_RT_FAVOR_PRECISION, PULPIE_RT_FAVOR_RECALL,
        };
        assert_eq!(KNOWN_EXTRACT_OPTIONS_SIZES, [8, 16]);
        let shifts = |options: &pulpie_rt_extract_options, n| unsafe { page_shifts(options, n) };
        let defaults = pulpie_rt_extract_options::default();
        assert_eq!(defaults.favor, ENGINE);
        assert_eq!(unsafe { page_shifts(std::ptr::null(), 3) }.unwrap(), vec![]);
        assert_eq!(shifts(&defaults, 3).unwrap(), vec![]);
        let call = pulpie_rt_extract_options { favor: PULPIE_RT_FAVOR_PRECISION, ..defaults };
        assert_eq!(shifts(&call, 2).unwrap(), vec![Some(1.0), Some(1.0)]);
        // each page's own, else the call's, else the engine's (None)
        let per_page = [PULPIE_RT_FAVOR_RECALL, ENGINE, 0];
        let pages = pulpie_rt_extract_options { page_favor: per_page.as_ptr(), ..call };
        assert_eq!(shifts(&pages, 3).unwrap(), vec![Some(-1.0), Some(1.0), Some(0.0)]);
        let engine_call = pulpie_rt_extract_options { favor: ENGINE, ..pages };
        assert_eq!(shifts(&engine_call, 3).unwrap(), vec![Some(-1.0), None, Some(0.0)]);
        // page_favor is past an ABI-6-first-field size: not read
        let short = pulpie_rt_extract_options { struct_size: 12, ..pages };
        assert_eq!(shifts(&short, 3).unwrap(), vec![Some(1.0); 3]);
        let bad = [0, 9];
        let refused = pulpie_rt_extract_options { page_favor: bad.as_ptr(), ..defaults };
        assert_eq!(
            shifts(&refused, 2).unwrap_err(),
            (
                ERR_ARGUMENT,
                "extract options.page_favor[1] is 9 (PULPIE_RT_FAVOR_BALANCED, _PRECISION, _RECALL or \
                 PULPIE_RT_ENGINE_FAVOR)"
                    .to_string()
            )
        );
        let tiny = pulpie_rt_extract_options { struct_size: 4, ..call };
        assert_eq!(shifts(&tiny, 1).unwrap_err().0, ERR_ARGUMENT);
    }

    #[test]
    fn bad_arguments_are_statuses_with_messages() {
        unsafe {
            let mut options = pulpie_rt_options::default();
            let backend = CString::new("tpu").unwrap();
            options.backend = backend.as_ptr();
            let mut engine = std::ptr::null_mut();
            let mut err = std::ptr::null_mut();
            assert_eq!(pulpie_rt_engine_open(&options, &mut engine, &mut err), ERR_ARGUMENT);
            assert!(engine.is_null());
            assert_eq!(
                CStr::from_ptr(err).to_str().unwrap(),
                "unknown backend 'tpu': choose cpu, cuda or tensorrt"
            );
            pulpie_rt_string_free(err);
            options = pulpie_rt_options { struct_size: 8, ..pulpie_rt_options::default() };
            assert_eq!(pulpie_rt_engine_open(&options, &mut engine, std::ptr::null_mut()), ERR_ARGUMENT);
            let model = CString::new("/nonexistent/bundle").unwrap();
            options = pulpie_rt_options { model: model.as_ptr(), ..pulpie_rt_options::default() };
            assert_eq!(pulpie_rt_engine_open(&options, &mut engine, &mut err), ERR_MODEL);
            assert_eq!(
                CStr::from_ptr(err).to_str().unwrap(),
                "/nonexistent/bundle: not a pulpie-rt bundle (no manifest.json)"
            );
            pulpie_rt_string_free(err);
            let mut result = std::ptr::null_mut();
            assert_eq!(
                pulpie_rt_extract(
                    std::ptr::null_mut(),
                    std::ptr::null(),
                    0,
                    std::ptr::null(),
                    &mut result,
                    &mut err
                ),
                ERR_ARGUMENT
            );
            pulpie_rt_string_free(err);
            assert!(pulpie_rt_result_error(std::ptr::null()).is_null());
            let mut len = 7;
            assert_eq!(*pulpie_rt_result_markdown(std::ptr::null(), &mut len), 0);
            assert_eq!(len, 0);
        }
    }

    #[test]
    fn the_profile_is_read_only_within_struct_size() {
        let dir = CString::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../pulpie_rt/default_model")).unwrap();
        let fastest = CString::new("fastest").unwrap();
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../pulpie_rt/default_model/manifest.json");
        unsafe {
            let mut options = pulpie_rt_options {
                model: dir.as_ptr(),
                profile: fastest.as_ptr(),
                ..pulpie_rt_options::default()
            };
            let (mut engine, mut err) = (std::ptr::null_mut(), std::ptr::null_mut());
            assert_eq!(pulpie_rt_engine_open(&options, &mut engine, &mut err), ERR_MODEL);
            assert_eq!(
                CStr::from_ptr(err).to_str().unwrap(),
                format!("{manifest}: no profile 'fastest' (this bundle has accurate, fast)")
            );
            pulpie_rt_string_free(err);
            // an ABI-1 caller's options end before `profile`: the default profile is read
            options.struct_size = std::mem::offset_of!(pulpie_rt_options, profile) as u32;
            let status = pulpie_rt_engine_open(&options, &mut engine, &mut err);
            assert_ne!(status, ERR_MODEL);
            pulpie_rt_string_free(err);
            pulpie_rt_engine_close(engine);
        }
    }
}
