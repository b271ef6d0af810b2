//! The ctypes surface of the engine's label decoding, for the Python page flow
//! (`runtime/native.py`'s `decide_blocks`, called by `runtime/flow/pages.py`): the same
//! `decode::decide_blocks` the C library's engine runs, so the two paths decode blocks with
//! one implementation (declared in `pulpie_rt_internal.h`). Status codes and error messages
//! as `ort::ffi` (`PULPIE_RT_DONE`, `PULPIE_RT_FAILED`, `PULPIE_RT_PANIC`; the message
//! released with `pulpie_rt_free`). `pulpie_rt_finish_page` is the
//! engine's finish (reconstruct → Markdown, or a page's whole text) for the same flow.
//! `pulpie_rt_context_features` / `pulpie_rt_stage_features` are `rescore.py`'s columns of
//! blocks in context (`features::context`), for that flow and the training.

use super::decode::{decide_blocks, ContainerPrior, Decoding, SepOutputs, ShortStory};
use crate::abi::{
    checked, PULPIE_RT_DONE, PULPIE_RT_EMPTY_MAIN_WITHOUT_TEXT, PULPIE_RT_EMPTY_NONE,
    PULPIE_RT_EMPTY_NO_MAIN, PULPIE_RT_EMPTY_NO_TEXT, PULPIE_RT_OUTPUTS_LOGITS, PULPIE_RT_OUTPUTS_MARGINS,
    PULPIE_RT_SIMPLIFY_DROP_NOSCRIPT, PULPIE_RT_SIMPLIFY_KEEP_HIDDEN,
};
use crate::features::context;
use crate::json::{Number, Value};
use crate::ort::ffi::{guarded, slice, OrtMessage};
use crate::ort::{BlockRescorer, OrtError};
use std::collections::HashSet;

/// `pulpie_rt_decoding` (pulpie_rt_internal.h): the bundle's decoding (`Decoding`) as the
/// binding passes it.
#[repr(C)]
pub struct pulpie_rt_decoding {
    pub struct_size: u32,
    pub margins: u32,
    pub has_threshold: u32,
    pub threshold: f64,
    pub keep_best: u32,
    pub expected_f1: u32,
    pub has_container_prior: u32,
    pub container_prior: [f64; 2],
    pub has_story_prior: u32,
    pub story_prior: [f64; 2],
    pub continue_story: u32,
    pub has_short_story: u32,
    pub short_story: [f64; 3],
}

impl pulpie_rt_decoding {
    fn decoding(&self) -> Decoding {
        let [share, shift] = self.container_prior;
        let [story_share, story_shift] = self.story_prior;
        let [words, short_shift, prose_shift] = self.short_story;
        Decoding {
            margins: self.margins != 0,
            main_margin: (self.has_threshold != 0).then_some(self.threshold),
            keep_best_block: self.keep_best != 0,
            expected_f1: self.expected_f1 != 0,
            container_prior: (self.has_container_prior != 0).then_some(ContainerPrior { share, shift }),
            story_prior: (self.has_story_prior != 0)
                .then_some(ContainerPrior { share: story_share, shift: story_shift }),
            short_story: (self.has_short_story != 0).then_some(ShortStory {
                words,
                shift: short_shift,
                prose_shift,
            }),
            continue_story: self.continue_story != 0,
        }
    }
}

/// A decoding as `pulpie_rt_decoding`'s fields by name (JSON, `pulpie_rt_py_bundle_info`'s
/// `decoding`): the Python tools pass them back as they are (`native.decide_blocks`).
fn decoding_fields(decoding: &Decoding) -> Value {
    let number = |value: f64| Value::Number(Number::Float(value));
    Value::Object(vec![
        ("margins".into(), Value::Bool(decoding.margins)),
        ("threshold".into(), decoding.main_margin.map_or(Value::Null, number)),
        ("keep_best".into(), Value::Bool(decoding.keep_best_block)),
        ("expected_f1".into(), Value::Bool(decoding.expected_f1)),
        (
            "container_prior".into(),
            decoding
                .container_prior
                .map_or(Value::Null, |p| Value::Array(vec![number(p.share), number(p.shift)])),
        ),
        (
            "story_prior".into(),
            decoding
                .story_prior
                .map_or(Value::Null, |p| Value::Array(vec![number(p.share), number(p.shift)])),
        ),
        ("continue_story".into(), Value::Bool(decoding.continue_story)),
        (
            "short_story".into(),
            decoding.short_story.map_or(Value::Null, |s| {
                Value::Array(vec![number(s.words), number(s.shift), number(s.prose_shift)])
            }),
        ),
    ])
}

/// `pulpie_rt_sep_outputs` (pulpie_rt_internal.h): one page's chunks and SEP outputs.
#[repr(C)]
pub struct pulpie_rt_sep_outputs {
    pub struct_size: u32,
    pub n_blocks: usize,
    pub block_indices: *const u64,
    pub block_ends: *const u64,
    pub n_chunks: usize,
    pub kind: u32,
    pub values: *const f32,
    pub value_ends: *const u64,
    pub labels: usize,
    pub features: *const f32,
    pub n_features: usize,
    pub n_classified: usize,
}

/// `pages.decide_blocks`' decoding of one page (`decode::decide_blocks`) into `out`
/// (`page.n_blocks` predictions): `rescorer` a handle from `pulpie_rt_ort_rescorer_open`, or
/// null; `decoding` the bundle's decoding; `page` the chunks, their SEP outputs, the block
/// features (null: none) and the blocks the page's limits kept.
///
/// A page's failure is status `PULPIE_RT_FAILED` with its `"rescore: …"` message.
///
/// # Safety
/// Pointers as documented; `out` holds `page.n_blocks` values.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_decide_blocks(
    rescorer: *const BlockRescorer,
    decoding: *const pulpie_rt_decoding,
    page: *const pulpie_rt_sep_outputs,
    out: *mut u64,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let decoding = checked(decoding, "pulpie_rt_decoding").map_err(OrtError)?.decoding();
        let &pulpie_rt_sep_outputs {
            n_blocks,
            block_indices,
            block_ends,
            n_chunks,
            kind,
            values,
            value_ends,
            labels,
            features,
            n_features,
            n_classified,
            ..
        } = checked(page, "pulpie_rt_sep_outputs").map_err(OrtError)?;
        let block_ends = slice(block_ends, n_chunks);
        let value_ends = slice(value_ends, n_chunks);
        let all_blocks: Vec<usize> = slice(block_indices, block_ends.last().map_or(0, |&e| e as usize))
            .iter()
            .map(|&b| b as usize)
            .collect();
        let all_values = slice(values, value_ends.last().map_or(0, |&e| e as usize));
        if let Some(&bad) = all_blocks.iter().find(|&&b| b >= n_blocks) {
            return Err(OrtError(format!("block index {bad} of a page of {n_blocks} blocks")));
        }
        let mut chunk_blocks: Vec<&[usize]> = Vec::with_capacity(n_chunks);
        let mut outputs: Vec<SepOutputs<'_>> = Vec::with_capacity(n_chunks);
        let (mut block_start, mut value_start) = (0usize, 0usize);
        for (&block_end, &value_end) in block_ends.iter().zip(value_ends) {
            let (block_end, value_end) = (block_end as usize, value_end as usize);
            if block_end < block_start || value_end < value_start {
                return Err(OrtError("chunk ends must not decrease".into()));
            }
            chunk_blocks.push(&all_blocks[block_start..block_end]);
            let chunk_values = &all_values[value_start..value_end];
            outputs.push(match kind {
                PULPIE_RT_OUTPUTS_LOGITS => SepOutputs::Logits { values: chunk_values, labels },
                PULPIE_RT_OUTPUTS_MARGINS => SepOutputs::Margins(chunk_values),
                other => return Err(OrtError(format!("unknown SEP output kind {other}"))),
            });
            (block_start, value_start) = (block_end, value_end);
        }
        let features = (!features.is_null()).then(|| slice(features, n_blocks * n_features));
        decide_blocks(n_blocks, &chunk_blocks, &outputs, &decoding, rescorer.as_ref(), features, n_classified)
            .map(|decided| decided.predictions)
            .map_err(OrtError)
    }) {
        Ok(predictions) => {
            for (index, prediction) in predictions.into_iter().enumerate() {
                *out.add(index) = prediction as u64;
            }
            0
        }
        Err(status) => status,
    }
}

/// What the page flow reads from a bundle directory (`bundle::Bundle::load_dir_profile`, the
/// engine's reader and its messages), as JSON: the model file, the tokens, `max_tokens`, the
/// profile's `transformer`, segmentation settings and rescorer, the profile read and all of
/// them, and its `decoding` as `pulpie_rt_decoding`'s fields (`decoding_fields`). `profile`
/// null: the bundle's default. A bundle it cannot read: `PULPIE_RT_FAILED` with the reason.
///
/// # Safety
/// `path` holds `path_len` bytes of UTF-8, `profile` `profile_len` (or is null).
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_py_bundle_info(
    path: *const u8,
    path_len: usize,
    profile: *const u8,
    profile_len: usize,
    out: *mut OrtMessage,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let text = |ptr: *const u8, len: usize, what: &str| {
            std::str::from_utf8(slice(ptr, len)).map_err(|_| OrtError(format!("{what} is not UTF-8")))
        };
        let root = text(path, path_len, "the bundle's path")?;
        let profile = if profile.is_null() { None } else { Some(text(profile, profile_len, "the profile")?) };
        let bundle =
            super::bundle::Bundle::load_dir_profile(std::path::Path::new(root), profile).map_err(OrtError)?;
        let m = &bundle.manifest;
        let string = |s: &str| Value::String(s.to_string());
        let optional = |v: Option<&str>| v.map_or(Value::Null, string);
        let int = |v: Option<i64>| v.map_or(Value::Null, |i| Value::Number(Number::Int(i)));
        let rescorer = m.rescorer.as_ref().map_or(Value::Null, |r| {
            Value::Object(vec![
                ("file".into(), string(&r.file)),
                ("features".into(), string(&r.features)),
                ("margin_weight".into(), Value::Number(Number::Float(r.margin_weight))),
                ("context".into(), optional(r.context.as_deref())),
                ("first_stage".into(), optional(r.first_stage.as_deref())),
            ])
        });
        let info = Value::Object(vec![
            ("onnx_file".into(), string(&m.onnx_file)),
            ("output".into(), string(&m.output)),
            ("sep_id".into(), int(Some(m.sep_id))),
            ("bos_id".into(), int(m.bos_id)),
            ("eos_id".into(), int(m.eos_id)),
            ("pad_id".into(), int(Some(m.pad_id))),
            ("max_tokens".into(), int(Some(m.max_tokens as i64))),
            ("transformer".into(), Value::Bool(m.transformer)),
            ("keep_hidden".into(), Value::Bool(m.keep_hidden)),
            ("drop_noscript".into(), Value::Bool(m.drop_noscript)),
            ("rescorer".into(), rescorer),
            ("decoding".into(), decoding_fields(&m.decoding())),
            ("prepared_features".into(), optional(m.prepared_features())),
            ("profile".into(), optional(m.profile.as_deref())),
            ("profiles".into(), Value::Array(m.profiles.iter().map(|p| string(p)).collect())),
        ]);
        Ok(super::py::json_dumps(&info))
    }) {
        Ok(json) => {
            let (ptr, len) = crate::leak(json);
            *out = OrtMessage { ptr, len };
            PULPIE_RT_DONE
        }
        Err(status) => status,
    }
}

/// `rescore.context_features` of one page (`features::context`): `rows` × `columns` float32
/// `blocks-v3` rows in, `rows` × `N_CONTEXT` float32 into `out` (`out_len` values, checked).
/// Rows of another width: status 1, the message naming the width (`rescore.py` raises it as
/// its `ValueError`).
///
/// # Safety
/// `features` holds `rows × columns` values, `out` `out_len`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_context_features(
    features: *const f32,
    rows: usize,
    columns: usize,
    out: *mut f32,
    out_len: usize,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let values = context::context_features(slice(features, rows * columns), columns).map_err(OrtError)?;
        copy_out(&values, out, out_len)
    }) {
        Ok(()) => 0,
        Err(status) => status,
    }
}

/// `rescore.stage_features` of one page: its first stage's `n` probabilities (float64) and
/// its `rows` × `columns` `blocks-v3` rows in, `n` × `N_STAGE` float32 into `out` (`out_len`
/// values, checked). Status 1 with the message for rows of another width or count.
///
/// # Safety
/// `probabilities` holds `n` values, `features` `rows × columns`, `out` `out_len`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_stage_features(
    probabilities: *const f64,
    n: usize,
    features: *const f32,
    rows: usize,
    columns: usize,
    out: *mut f32,
    out_len: usize,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let values =
            context::stage_features(slice(probabilities, n), slice(features, rows * columns), columns)
                .map_err(OrtError)?;
        copy_out(&values, out, out_len)
    }) {
        Ok(()) => 0,
        Err(status) => status,
    }
}

/// `values` into the caller's `out` of `out_len` values (a mismatch: the caller's widths are
/// not the core's).
unsafe fn copy_out(values: &[f32], out: *mut f32, out_len: usize) -> Result<(), OrtError> {
    if values.len() != out_len {
        return Err(OrtError(format!("{} values for an output of {out_len}", values.len())));
    }
    if out_len > 0 {
        std::ptr::copy_nonoverlapping(values.as_ptr(), out, out_len);
    }
    Ok(())
}

/// `pulpie_rt_finish_page`'s result: the main HTML and its Markdown (UTF-8, released with
/// `pulpie_rt_free`), and why the Markdown is empty (`PULPIE_RT_EMPTY_*`).
#[repr(C)]
pub struct FinishOutput {
    pub html_ptr: *mut u8,
    pub html_len: usize,
    pub markdown_ptr: *mut u8,
    pub markdown_len: usize,
    pub empty_reason: u32,
}

/// `pages._finish` of one page once its labels are known (`super::finish_main`, or
/// `super::whole_text` when `whole_text` is set: a page without blocks). `main_ids`: the ids
/// labelled main, each ended by a NUL; `any_main`: whether the page has a main label (which
/// empty reason an empty result gets). A page's failure is status 1 with its
/// `"<stage>: <reason>"` message.
///
/// # Safety
/// Pointers as documented; `out` is written on status 0.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_finish_page(
    map_html: *const u8,
    map_len: usize,
    main_ids: *const u8,
    main_ids_len: usize,
    whole_text: u32,
    any_main: u32,
    out: *mut FinishOutput,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let map_html = slice(map_html, map_len);
        let finished = if whole_text != 0 {
            super::whole_text(map_html)
        } else {
            let map_html = std::str::from_utf8(map_html)
                .map_err(|_| OrtError("reconstruct: ValueError: map_html is not UTF-8".into()))?;
            let ids = slice(main_ids, main_ids_len);
            let main: HashSet<&str> = ids
                .split(|&b| b == 0)
                .filter(|id| !id.is_empty())
                .filter_map(|id| std::str::from_utf8(id).ok())
                .collect();
            super::finish_main(map_html, None, &main, any_main != 0)
        };
        finished.map_err(OrtError)
    }) {
        Ok(finished) => {
            let empty_reason = match finished.empty_reason {
                None => PULPIE_RT_EMPTY_NONE,
                Some(super::EMPTY_NO_TEXT) => PULPIE_RT_EMPTY_NO_TEXT,
                Some(super::EMPTY_NO_MAIN) => PULPIE_RT_EMPTY_NO_MAIN,
                Some(_) => PULPIE_RT_EMPTY_MAIN_WITHOUT_TEXT,
            };
            let (html_ptr, html_len) = crate::leak(finished.html);
            let (markdown_ptr, markdown_len) = crate::leak(finished.markdown);
            *out = FinishOutput { html_ptr, html_len, markdown_ptr, markdown_len, empty_reason };
            0
        }
        Err(status) => status,
    }
}

/// `pulpie_rt_prepare_page`'s result, released with `pulpie_rt_prepare_free`:
/// - the blocks' ids: `n_blocks` lengths (`u64::MAX`: a block without an id) of the ids
///   joined in `ids`;
/// - chunk `c` holds `token_ids[token_ends[c-1]..token_ends[c]]` and the blocks
///   `block_indices[block_ends[c-1]..block_ends[c]]`;
/// - `map_html` (UTF-8); the block features (`n_blocks × n_features` float32, null when not
///   asked for); what the limits cut (null: nothing); how many blocks the chunks hold.
#[repr(C)]
pub struct PrepareOutput {
    pub ids_ptr: *mut u8,
    pub ids_len: usize,
    pub id_lens_ptr: *mut u64,
    pub n_blocks: usize,
    pub token_ids_ptr: *mut i64,
    pub token_ids_len: usize,
    pub token_ends_ptr: *mut u64,
    pub block_indices_ptr: *mut u64,
    pub block_indices_len: usize,
    pub block_ends_ptr: *mut u64,
    pub n_chunks: usize,
    pub map_ptr: *mut u8,
    pub map_len: usize,
    pub features_ptr: *mut f32,
    pub features_len: usize,
    pub n_features: usize,
    pub truncated_ptr: *mut u8,
    pub truncated_len: usize,
    pub n_classified: usize,
}

fn give<T>(values: Vec<T>) -> (*mut T, usize) {
    let boxed = values.into_boxed_slice();
    let len = boxed.len();
    (Box::into_raw(boxed) as *mut T, len)
}

unsafe fn release<T>(ptr: *mut T, len: usize) {
    if !ptr.is_null() {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
    }
}

/// `pulpie_rt_prepare_options` (pulpie_rt_internal.h): how one page is prepared.
#[repr(C)]
pub struct pulpie_rt_prepare_options {
    pub struct_size: u32,
    pub max_input_bytes: i64,
    pub max_page_tokens: i64,
    pub cutoff_length: i64,
    pub max_tokens: i64,
    pub sep_id: i64,
    pub bos_id: i64,
    pub eos_id: i64,
    pub features: u32,
    pub segmentation: u32,
}

/// A limit or a count as the options say it: below 0 is none.
fn limit(value: i64) -> Option<usize> {
    usize::try_from(value).ok()
}

/// `Preparer.prepare` of one page's text (`super::prepare_text`; the text UTF-8, lone
/// surrogates as `surrogatepass` writes them). `tokenizer`: a handle from
/// `pulpie_rt_tokenizer_load`, or null for a rescorer-only profile (no chunks); `options`:
/// the limits, the chunks' size and special tokens, the block features' layout
/// (`PULPIE_RT_LAYOUT_*`, `FeatureSet::from_ffi`) and the segmentation
/// (`PULPIE_RT_SIMPLIFY_*`; `PrepareSettings`). A page's failure is status
/// `PULPIE_RT_FAILED` with its `"<stage>: <reason>"` message.
///
/// # Safety
/// Pointers as documented; `out` is written on status `PULPIE_RT_DONE`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_prepare_page(
    tokenizer: *const crate::tokenizer::Tokenizer,
    text: *const u8,
    text_len: usize,
    options: *const pulpie_rt_prepare_options,
    out: *mut PrepareOutput,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let o = checked(options, "pulpie_rt_prepare_options").map_err(OrtError)?;
        let count = |value: i64, what: &str| {
            limit(value).ok_or_else(|| OrtError(format!("{what} must not be negative, not {value}")))
        };
        let settings = super::PrepareSettings {
            limits: super::Limits {
                max_input_bytes: limit(o.max_input_bytes),
                max_page_tokens: limit(o.max_page_tokens),
            },
            cutoff_length: count(o.cutoff_length, "cutoff_length")?,
            max_tokens: count(o.max_tokens, "max_tokens")?,
            sep_id: o.sep_id,
            bos_id: (o.bos_id >= 0).then_some(o.bos_id),
            eos_id: (o.eos_id >= 0).then_some(o.eos_id),
            keep_hidden: o.segmentation & PULPIE_RT_SIMPLIFY_KEEP_HIDDEN != 0,
            drop_noscript: o.segmentation & PULPIE_RT_SIMPLIFY_DROP_NOSCRIPT != 0,
            // the Python page flow's stages one by one: the engine's results carry the metadata
            metadata: false,
            keep_map_tree: false,
        };
        let with_features = super::features::FeatureSet::from_ffi(o.features);
        super::prepare_text(slice(text, text_len), tokenizer.as_ref(), &settings, with_features)
            .map(|page| (page, with_features.width()))
            .map_err(OrtError)
    }) {
        Ok((page, width)) => {
            let mut ids = Vec::new();
            let mut id_lens = Vec::with_capacity(page.item_ids.len());
            for id in &page.item_ids {
                match id {
                    Some(id) => {
                        ids.extend_from_slice(id.as_bytes());
                        id_lens.push(id.len() as u64);
                    }
                    None => id_lens.push(u64::MAX),
                }
            }
            let (mut token_ids, mut token_ends, mut block_indices, mut block_ends) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for chunk in &page.chunks {
                token_ids.extend_from_slice(&chunk.token_ids);
                token_ends.push(token_ids.len() as u64);
                block_indices.extend(chunk.block_indices.iter().map(|&b| b as u64));
                block_ends.push(block_indices.len() as u64);
            }
            let n_chunks = page.chunks.len();
            let (ids_ptr, ids_len) = give(ids);
            let (id_lens_ptr, n_blocks) = give(id_lens);
            let (token_ids_ptr, token_ids_len) = give(token_ids);
            let (token_ends_ptr, _) = give(token_ends);
            let (block_indices_ptr, block_indices_len) = give(block_indices);
            let (block_ends_ptr, _) = give(block_ends);
            let (map_ptr, map_len) = give(page.map_html.into_bytes());
            let (features_ptr, features_len) = match page.features {
                Some(features) => give(features),
                None => (std::ptr::null_mut(), 0),
            };
            let (truncated_ptr, truncated_len) = match page.truncated {
                Some(truncated) => give(truncated.into_bytes()),
                None => (std::ptr::null_mut(), 0),
            };
            *out = PrepareOutput {
                ids_ptr,
                ids_len,
                id_lens_ptr,
                n_blocks,
                token_ids_ptr,
                token_ids_len,
                token_ends_ptr,
                block_indices_ptr,
                block_indices_len,
                block_ends_ptr,
                n_chunks,
                map_ptr,
                map_len,
                features_ptr,
                features_len,
                n_features: if width == 0 { crate::features::N_FEATURES } else { width },
                truncated_ptr,
                truncated_len,
                n_classified: page.n_classified,
            };
            0
        }
        Err(status) => status,
    }
}

/// Releases what `pulpie_rt_prepare_page` wrote into `out` (and clears it).
///
/// # Safety
/// `out` was filled by `pulpie_rt_prepare_page` and not released yet.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_prepare_free(out: *mut PrepareOutput) {
    let Some(o) = out.as_mut() else { return };
    release(o.ids_ptr, o.ids_len);
    release(o.id_lens_ptr, o.n_blocks);
    release(o.token_ids_ptr, o.token_ids_len);
    release(o.token_ends_ptr, o.n_chunks);
    release(o.block_indices_ptr, o.block_indices_len);
    release(o.block_ends_ptr, o.n_chunks);
    release(o.map_ptr, o.map_len);
    release(o.features_ptr, o.features_len);
    release(o.truncated_ptr, o.truncated_len);
    *o = std::mem::zeroed();
}

/// `blocks.extract_blocks` of `text` (UTF-8) into `spans`: per block 4 byte offsets into
/// `text`, the block's start and end and its id's start and end (`u64::MAX` twice: a block
/// without an id); released with `pulpie_rt_ort_free_u64s` (`4 × n_blocks` values).
///
/// # Safety
/// Pointers as documented.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_extract_blocks(
    text: *const u8,
    text_len: usize,
    spans: *mut *mut u64,
    n_blocks: *mut usize,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let text = std::str::from_utf8(slice(text, text_len))
            .map_err(|e| OrtError(format!("text is not UTF-8: {e}")))?;
        let base = text.as_ptr() as usize;
        let offset = |part: &str| part.as_ptr() as usize - base;
        let (blocks, _) = super::prepare::extract_blocks(text);
        let mut out = Vec::with_capacity(blocks.len() * 4);
        for block in blocks {
            // an empty block may be a slice of no text at all ("")
            let start = if block.is_empty() { 0 } else { offset(block) };
            out.extend([start as u64, (start + block.len()) as u64]);
            match super::prepare::item_id(block) {
                Some(id) => {
                    let id_start = offset(id);
                    out.extend([id_start as u64, (id_start + id.len()) as u64]);
                }
                None => out.extend([u64::MAX, u64::MAX]),
            }
        }
        Ok(out)
    }) {
        Ok(out) => {
            *n_blocks = out.len() / 4;
            *spans = give(out).0;
            0
        }
        Err(status) => status,
    }
}

/// `chunks.pack_chunks` of the blocks' token ids (block `b`: `ids[ends[b-1]..ends[b]]`) into
/// `out`'s chunk fields (the others empty), released with `pulpie_rt_prepare_free`.
/// `bos_id`/`eos_id` below 0 are absent.
///
/// # Safety
/// Pointers as documented.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_pack_chunks(
    ids: *const u32,
    ends: *const u64,
    n_blocks: usize,
    max_tokens: usize,
    sep_id: i64,
    bos_id: i64,
    eos_id: i64,
    out: *mut PrepareOutput,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let ends = slice(ends, n_blocks);
        let ids = slice(ids, ends.last().map_or(0, |&e| e as usize));
        let mut block_ids: Vec<&[u32]> = Vec::with_capacity(n_blocks);
        let mut start = 0usize;
        for &end in ends {
            let end = end as usize;
            if end < start {
                return Err(OrtError("block ends must not decrease".into()));
            }
            block_ids.push(&ids[start..end]);
            start = end;
        }
        let bos = (bos_id >= 0).then_some(bos_id);
        let eos = (eos_id >= 0).then_some(eos_id);
        Ok(super::prepare::pack_chunks(&block_ids, max_tokens, sep_id, bos, eos))
    }) {
        Ok(chunks) => {
            let (mut token_ids, mut token_ends, mut block_indices, mut block_ends) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for chunk in &chunks {
                token_ids.extend_from_slice(&chunk.token_ids);
                token_ends.push(token_ids.len() as u64);
                block_indices.extend(chunk.block_indices.iter().map(|&b| b as u64));
                block_ends.push(block_indices.len() as u64);
            }
            let mut o: PrepareOutput = std::mem::zeroed();
            o.n_chunks = chunks.len();
            (o.token_ids_ptr, o.token_ids_len) = give(token_ids);
            o.token_ends_ptr = give(token_ends).0;
            (o.block_indices_ptr, o.block_indices_len) = give(block_indices);
            o.block_ends_ptr = give(block_ends).0;
            *out = o;
            0
        }
        Err(status) => status,
    }
}
