//! The ctypes surface of the engine's label decoding, for the Python page flow
//! (`runtime/native.py`'s `decide_blocks`, called by `runtime/flow/pages.py`): the same
//! `decode::decide_blocks` the C library's engine runs, so the two paths decode blocks with
//! one implementation. Status codes and error messages as `ort::ffi` (0 done, 1 an error, 2 a
//! panic; the message released with `pulpie_rt_free`).

use super::decode::{decide_blocks, Decoding, SepOutputs};
use crate::ort::ffi::{guarded, slice, OrtMessage};
use crate::ort::{BlockRescorer, OrtError};

/// The SEP outputs of `pulpie_rt_decide_blocks` are logits, `labels` per SEP.
pub const OUTPUTS_LOGITS: u32 = 0;
/// The SEP outputs are margins, one per SEP.
pub const OUTPUTS_MARGINS: u32 = 1;

/// `pages.predict_pages`' decoding of one page (`decode::decide_blocks`) into `out`
/// (`n_blocks` predictions).
///
/// - `rescorer`: a handle from `pulpie_rt_ort_rescorer_open`, or null;
/// - `margins`, `has_threshold`/`threshold`, `keep_best`: the bundle's decoding (`Decoding`);
/// - the page's chunks: chunk `c` holds the blocks `block_indices[block_ends[c-1]..block_ends[c]]`
///   and the SEP outputs `values[value_ends[c-1]..value_ends[c]]` (`kind`: `OUTPUTS_LOGITS`,
///   `labels` values per SEP, or `OUTPUTS_MARGINS`);
/// - `features`: `n_blocks × n_features` float32 (null: none), `n_classified` the blocks the
///   page's limits kept.
///
/// A page's failure is status 1 with its `"rescore: …"` message.
///
/// # Safety
/// Pointers as documented; `out` holds `n_blocks` values.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_decide_blocks(
    rescorer: *const BlockRescorer,
    margins: u32,
    has_threshold: u32,
    threshold: f64,
    keep_best: u32,
    n_blocks: usize,
    block_indices: *const u64,
    block_ends: *const u64,
    n_chunks: usize,
    kind: u32,
    values: *const f32,
    value_ends: *const u64,
    labels: usize,
    features: *const f32,
    n_features: usize,
    n_classified: usize,
    out: *mut u64,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let block_ends = slice(block_ends, n_chunks);
        let value_ends = slice(value_ends, n_chunks);
        let all_blocks: Vec<usize> =
            slice(block_indices, block_ends.last().map_or(0, |&e| e as usize)).iter().map(|&b| b as usize).collect();
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
                OUTPUTS_LOGITS => SepOutputs::Logits { values: chunk_values, labels },
                OUTPUTS_MARGINS => SepOutputs::Margins(chunk_values),
                other => return Err(OrtError(format!("unknown SEP output kind {other}"))),
            });
            (block_start, value_start) = (block_end, value_end);
        }
        let decoding = Decoding {
            margins: margins != 0,
            main_margin: (has_threshold != 0).then_some(threshold),
            keep_best_block: keep_best != 0,
        };
        let features = (!features.is_null()).then(|| slice(features, n_blocks * n_features));
        decide_blocks(n_blocks, &chunk_blocks, &outputs, &decoding, rescorer.as_ref(), features, n_classified)
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
