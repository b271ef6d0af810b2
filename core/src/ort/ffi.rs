//! The ctypes surface over `ort` that Python binds: `runtime/native.py` runs the batcher
//! (`pulpie_rt_ort_make_batches`) and the block rescorer (`pulpie_rt_ort_rescorer_*`) of the
//! Python page flow on it (and the `fast` profile's rescorer over blocks in context,
//! `pulpie_rt_ort_context_rescorer_*`), and the parity checks (`parity/ort_core_parity.py`,
//! `tests/test_ort_core.py`) drive the classifier through it. Every function runs under the crate's panic guard and returns
//! 0 (done), 1 (an error, its message in `error`) or 2 (a panic, its message in `error`);
//! messages and arrays returned are released with `pulpie_rt_free` /
//! `pulpie_rt_ort_free_u64s` / `pulpie_rt_ort_free_floats`.

use super::{
    combine, default_buckets, log_odds_of, plan_batches, BlockRescorer, Bucket, ContextRescorer,
    ExecutionProvider, FlatBatch, ModelSource, Ort, OrtError, OrtOnDemand, SessionConfig, TokenClassifier,
};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

/// An error message for the caller (UTF-8, not NUL-terminated), released with
/// `pulpie_rt_free`.
#[repr(C)]
pub struct OrtMessage {
    pub ptr: *mut u8,
    pub len: usize,
}

/// `work`'s value, or the status with `error` filled in.
pub(crate) unsafe fn guarded<T>(
    error: *mut OrtMessage,
    work: impl FnOnce() -> Result<T, OrtError>,
) -> Result<T, i32> {
    crate::install_panic_hook();
    let (status, message) = match catch_unwind(AssertUnwindSafe(work)) {
        Ok(Ok(value)) => return Ok(value),
        Ok(Err(OrtError(message))) => (crate::abi::FAILED, message),
        Err(_) => {
            let message = crate::PANIC_MESSAGE.with(|m| {
                let bytes = m.borrow();
                String::from_utf8_lossy(&bytes[..bytes.len().saturating_sub(1)]).into_owned()
            });
            (crate::abi::PANIC, message)
        }
    };
    if !error.is_null() {
        let (ptr, len) = crate::leak(message);
        *error = OrtMessage { ptr, len };
    }
    Err(status)
}

unsafe fn text<'a>(ptr: *const u8, len: usize) -> Result<&'a str, OrtError> {
    if len == 0 {
        return Ok("");
    }
    std::str::from_utf8(std::slice::from_raw_parts(ptr, len))
        .map_err(|_| OrtError("path is not UTF-8".into()))
}

pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(ptr, len)
    }
}

/// Loads ONNX Runtime (`library` empty: `$PULPIE_RT_ORT_LIB`, then the default search);
/// `out` gets a handle released with `pulpie_rt_ort_release`.
///
/// # Safety
/// Pointers as documented; `library` holds `library_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_load(
    library: *const u8,
    library_len: usize,
    out: *mut *const Ort,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let path = text(library, library_len)?;
        Ort::load((!path.is_empty()).then(|| Path::new(path)))
    }) {
        Ok(ort) => {
            *out = Arc::into_raw(ort);
            0
        }
        Err(status) => status,
    }
}

/// The loaded library's path and version, as "path\nversion" in `out` (released with
/// `pulpie_rt_free`).
///
/// # Safety
/// `ort` comes from `pulpie_rt_ort_load`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_describe(ort: *const Ort, out: *mut OrtMessage) -> i32 {
    match guarded(out, || {
        let ort = ort.as_ref().ok_or_else(|| OrtError("no ONNX Runtime handle".into()))?;
        Ok(format!("{}\n{}", ort.library().path(), ort.library().version()))
    }) {
        Ok(text) => {
            let (ptr, len) = crate::leak(text);
            *out = OrtMessage { ptr, len };
            0
        }
        Err(status) => status,
    }
}

/// # Safety
/// `ort` comes from `pulpie_rt_ort_load`, released once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_release(ort: *const Ort) {
    if !ort.is_null() {
        drop(Arc::from_raw(ort));
    }
}

/// A counted reference to the caller's `Ort` (its own reference stays with the caller).
unsafe fn shared(ort: *const Ort, error: *mut OrtMessage) -> Option<Arc<Ort>> {
    if ort.is_null() {
        let _ = guarded::<()>(error, || Err(OrtError("no ONNX Runtime handle".into())));
        return None;
    }
    Arc::increment_strong_count(ort);
    Some(Arc::from_raw(ort))
}

unsafe fn source<'a>(
    model: *const u8,
    model_len: usize,
    from_bytes: u32,
) -> Result<ModelSource<'a>, OrtError> {
    Ok(if from_bytes != 0 {
        ModelSource::Bytes(slice(model, model_len))
    } else {
        ModelSource::File(Path::new(text(model, model_len)?))
    })
}

/// Opens a token classifier. `provider`: 0 CPU, 1 CUDA, 2 TensorRT (on GPU `device`);
/// `model` is a path, or with `from_bytes` the ONNX model itself.
///
/// # Safety
/// Pointers as documented.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_classifier_open(
    ort: *const Ort,
    model: *const u8,
    model_len: usize,
    from_bytes: u32,
    intra_op_threads: u32,
    inter_op_threads: u32,
    provider: u32,
    device: u32,
    out: *mut *mut TokenClassifier,
    error: *mut OrtMessage,
) -> i32 {
    let Some(ort) = shared(ort, error) else { return crate::abi::FAILED };
    match guarded(error, || {
        let provider = match provider {
            0 => ExecutionProvider::Cpu,
            1 => ExecutionProvider::Cuda { device_id: device },
            2 => ExecutionProvider::TensorRt { device_id: device },
            other => return Err(OrtError(format!("unknown provider code {other}"))),
        };
        let config = SessionConfig {
            intra_op_threads: intra_op_threads as usize,
            inter_op_threads: inter_op_threads as usize,
            provider,
        };
        TokenClassifier::open(&ort, source(model, model_len, from_bytes)?, &config, None)
    }) {
        Ok(classifier) => {
            *out = Box::into_raw(Box::new(classifier));
            0
        }
        Err(status) => status,
    }
}

/// Float results, released with `pulpie_rt_ort_free_floats`.
#[repr(C)]
pub struct OrtFloats {
    pub ptr: *mut f32,
    pub len: usize,
    /// labels per position (classifier outputs)
    pub labels: usize,
}

fn floats(values: Vec<f32>, labels: usize) -> OrtFloats {
    let boxed = values.into_boxed_slice();
    let len = boxed.len();
    OrtFloats { ptr: Box::into_raw(boxed) as *mut f32, len, labels }
}

/// `TokenClassifier::run`: `[rows, length]` ids and mask in (`ids_len` and `mask_len`
/// values, checked against rows × length), `[rows, length, labels]` logits out.
///
/// # Safety
/// Pointers as documented.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_classifier_run(
    classifier: *const TokenClassifier,
    input_ids: *const i64,
    ids_len: usize,
    attention_mask: *const i64,
    mask_len: usize,
    rows: usize,
    length: usize,
    out: *mut OrtFloats,
    error: *mut OrtMessage,
) -> i32 {
    let classifier = &*classifier;
    match guarded(error, || {
        classifier.run(slice(input_ids, ids_len), slice(attention_mask, mask_len), rows, length)
    }) {
        Ok(logits) => {
            *out = floats(logits.data, logits.labels);
            0
        }
        Err(status) => status,
    }
}

/// `TokenClassifier::predict` on a flat batch: the SEP logits of every row concatenated in
/// `out`, and each row's SEP count in `sep_counts` (`rows` values).
///
/// # Safety
/// Pointers as documented; `cumulative` holds `rows + 1` offsets into `input_ids`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_classifier_predict(
    classifier: *const TokenClassifier,
    input_ids: *const i64,
    n_tokens: usize,
    cumulative: *const u64,
    rows: usize,
    pad_id: i64,
    sep_id: i64,
    out: *mut OrtFloats,
    sep_counts: *mut u64,
    error: *mut OrtMessage,
) -> i32 {
    let classifier = &*classifier;
    match guarded(error, || {
        let offsets = slice(cumulative, rows + 1).iter().map(|&c| c as usize).collect();
        let batch = FlatBatch::new(slice(input_ids, n_tokens).to_vec(), offsets)?;
        classifier.predict(&batch, pad_id, sep_id)
    }) {
        Ok(sep) => {
            for (row, values) in sep.rows.iter().enumerate() {
                *sep_counts.add(row) = values.len().checked_div(sep.labels).unwrap_or(0) as u64;
            }
            *out = floats(sep.rows.concat(), sep.labels);
            0
        }
        Err(status) => status,
    }
}

/// # Safety
/// `classifier` comes from `pulpie_rt_ort_classifier_open`, released once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_classifier_free(classifier: *mut TokenClassifier) {
    if !classifier.is_null() {
        drop(Box::from_raw(classifier));
    }
}

/// # Safety
/// `ptr`/`len` come from an `OrtFloats`, released once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_free_floats(ptr: *mut f32, len: usize) {
    if !ptr.is_null() {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
    }
}

/// # Safety
/// `ptr`/`len` come from an `OrtBatches` array, released once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_free_u64s(ptr: *mut u64, len: usize) {
    if !ptr.is_null() {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
    }
}

/// Opens a block rescorer (`model` a path, or with `from_bytes` the ONNX model itself).
///
/// # Safety
/// Pointers as documented.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_rescorer_open(
    ort: *const Ort,
    model: *const u8,
    model_len: usize,
    from_bytes: u32,
    margin_weight: f64,
    out: *mut *mut BlockRescorer,
    error: *mut OrtMessage,
) -> i32 {
    let Some(ort) = shared(ort, error) else { return crate::abi::FAILED };
    match guarded(error, || {
        BlockRescorer::open(&OrtOnDemand::loaded(&ort), source(model, model_len, from_bytes)?, margin_weight)
    }) {
        Ok(rescorer) => {
            *out = Box::into_raw(Box::new(rescorer));
            0
        }
        Err(status) => status,
    }
}

/// The rescorer on `[rows, columns]` features: probabilities `[rows, 2]`, log-odds and
/// scores (with `margins`, one per row) into the caller's buffers.
///
/// # Safety
/// Pointers as documented; the output buffers hold `rows * 2`, `rows` and `rows` floats.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_rescorer_run(
    rescorer: *const BlockRescorer,
    features: *const f32,
    rows: usize,
    columns: usize,
    margins: *const f32,
    probabilities: *mut f32,
    log_odds: *mut f32,
    scores: *mut f32,
    error: *mut OrtMessage,
) -> i32 {
    let rescorer = &*rescorer;
    match guarded(error, || {
        let features = slice(features, rows * columns);
        // one run of the ensemble; the log-odds and scores as `log_odds` and `scores` derive them
        let probs = rescorer.probabilities(features, rows)?;
        let odds: Vec<f32> = probs.chunks_exact(2).map(|pair| log_odds_of(pair[1])).collect();
        let score = combine(&odds, rescorer.margin_weight(), slice(margins, rows));
        Ok((probs, odds, score))
    }) {
        Ok((probs, odds, score)) => {
            std::ptr::copy_nonoverlapping(probs.as_ptr(), probabilities, probs.len());
            std::ptr::copy_nonoverlapping(odds.as_ptr(), log_odds, odds.len());
            std::ptr::copy_nonoverlapping(score.as_ptr(), scores, score.len());
            0
        }
        Err(status) => status,
    }
}

/// # Safety
/// `rescorer` comes from `pulpie_rt_ort_rescorer_open`, released once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_rescorer_free(rescorer: *mut BlockRescorer) {
    if !rescorer.is_null() {
        drop(Box::from_raw(rescorer));
    }
}

/// What runs the rescorer's trees (`BlockRescorer::trees`: "kernel" or "onnxruntime (why)"),
/// in `out` (released with `pulpie_rt_free`).
///
/// # Safety
/// `rescorer` comes from `pulpie_rt_ort_rescorer_open`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_rescorer_trees(
    rescorer: *const BlockRescorer,
    out: *mut OrtMessage,
) -> i32 {
    match guarded(out, || {
        rescorer.as_ref().map(BlockRescorer::trees).ok_or_else(|| OrtError("no rescorer".into()))
    }) {
        Ok(text) => {
            let (ptr, len) = crate::leak(text);
            *out = OrtMessage { ptr, len };
            0
        }
        Err(status) => status,
    }
}

/// Opens a rescorer over blocks in context (`ContextRescorer`): `model` the (last) stage's
/// ONNX file path, `first_stage` the first stage's (`first_stage_len` 0: none). `out` gets a
/// handle released with `pulpie_rt_ort_context_rescorer_free`.
///
/// # Safety
/// `ort` comes from `pulpie_rt_ort_load`; the paths hold their lengths of UTF-8.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_context_rescorer_open(
    ort: *const Ort,
    model: *const u8,
    model_len: usize,
    first_stage: *const u8,
    first_stage_len: usize,
    out: *mut *mut ContextRescorer,
    error: *mut OrtMessage,
) -> i32 {
    let Some(ort) = shared(ort, error) else { return crate::abi::FAILED };
    match guarded(error, || {
        let first = if first_stage_len == 0 { None } else { Some(source(first_stage, first_stage_len, 0)?) };
        ContextRescorer::open(&OrtOnDemand::loaded(&ort), source(model, model_len, 0)?, first)
    }) {
        Ok(rescorer) => {
            *out = Box::into_raw(Box::new(rescorer));
            0
        }
        Err(status) => status,
    }
}

/// `BlockRescorer.log_odds` of one page's blocks in context: `rows` × `columns` float32
/// `blocks-v3` rows in, `rows` log-odds into `log_odds`. Rows of another width: status 1 with
/// `context_features`' message.
///
/// # Safety
/// `rescorer` comes from `pulpie_rt_ort_context_rescorer_open`; `features` holds `rows ×
/// columns` values, `log_odds` `rows`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_context_rescorer_log_odds(
    rescorer: *const ContextRescorer,
    features: *const f32,
    rows: usize,
    columns: usize,
    log_odds: *mut f32,
    error: *mut OrtMessage,
) -> i32 {
    let rescorer = &*rescorer;
    match guarded(error, || rescorer.log_odds(slice(features, rows * columns), rows)) {
        Ok(odds) => {
            std::ptr::copy_nonoverlapping(odds.as_ptr(), log_odds, odds.len().min(rows));
            0
        }
        Err(status) => status,
    }
}

/// What runs each stage's trees (`ContextRescorer::trees`), one line a stage, the first
/// stage first, in `out` (released with `pulpie_rt_free`).
///
/// # Safety
/// `rescorer` comes from `pulpie_rt_ort_context_rescorer_open`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_context_rescorer_trees(
    rescorer: *const ContextRescorer,
    out: *mut OrtMessage,
) -> i32 {
    match guarded(out, || {
        rescorer.as_ref().map(|r| r.trees().join("\n")).ok_or_else(|| OrtError("no rescorer".into()))
    }) {
        Ok(text) => {
            let (ptr, len) = crate::leak(text);
            *out = OrtMessage { ptr, len };
            0
        }
        Err(status) => status,
    }
}

/// # Safety
/// `rescorer` comes from `pulpie_rt_ort_context_rescorer_open`, released once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_context_rescorer_free(rescorer: *mut ContextRescorer) {
    if !rescorer.is_null() {
        drop(Box::from_raw(rescorer));
    }
}

/// `make_batches`' result: the item indices in batch order, each batch's end in that list,
/// and each batch's bucket (`max_rows` 0: none). Arrays released with
/// `pulpie_rt_ort_free_u64s`.
#[repr(C)]
pub struct OrtBatches {
    pub order_ptr: *mut u64,
    pub order_len: usize,
    pub ends_ptr: *mut u64,
    pub bucket_lengths_ptr: *mut u64,
    pub bucket_rows_ptr: *mut u64,
    pub batches: usize,
}

pub(crate) fn u64s(values: Vec<u64>) -> (*mut u64, usize) {
    let boxed = values.into_boxed_slice();
    let len = boxed.len();
    (Box::into_raw(boxed) as *mut u64, len)
}

/// `make_batches(lengths, max_batch_tokens, buckets, max_batch_attention, padded)`
/// (`runtime/stages/batches.py` batches on it): `max_batch_attention` 0 is None; with
/// `default_bucket_list` the buckets are `DEFAULT_BUCKETS`, else the `n_buckets` given
/// (`bucket_rows` 0: no row cap); `padded` 0 counts the sum of the rows' lengths against
/// `max_batch_tokens` (an engine that does not pad), else rows × longest.
///
/// # Safety
/// Pointers as documented.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_make_batches(
    lengths: *const u64,
    n: usize,
    max_batch_tokens: u64,
    max_batch_attention: u64,
    default_bucket_list: u32,
    bucket_lengths: *const u64,
    bucket_rows: *const u64,
    n_buckets: usize,
    padded: u32,
    out: *mut OrtBatches,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        let lengths: Vec<usize> = slice(lengths, n).iter().map(|&l| l as usize).collect();
        let buckets: Vec<Bucket> = if default_bucket_list != 0 {
            default_buckets()
        } else {
            slice(bucket_lengths, n_buckets)
                .iter()
                .zip(slice(bucket_rows, n_buckets))
                .map(|(&max_length, &rows)| Bucket {
                    max_length: max_length as usize,
                    max_rows: (rows != 0).then_some(rows as usize),
                })
                .collect()
        };
        let attention = (max_batch_attention != 0).then_some(max_batch_attention as usize);
        Ok(plan_batches(&lengths, max_batch_tokens as usize, &buckets, attention, padded != 0))
    }) {
        Ok(batches) => {
            let mut order = Vec::new();
            let mut ends = Vec::new();
            for batch in &batches {
                order.extend(batch.rows.iter().map(|&r| r as u64));
                ends.push(order.len() as u64);
            }
            let (order_ptr, order_len) = u64s(order);
            let (ends_ptr, count) = u64s(ends);
            let (bucket_lengths_ptr, _) = u64s(batches.iter().map(|b| b.bucket.max_length as u64).collect());
            let (bucket_rows_ptr, _) =
                u64s(batches.iter().map(|b| b.bucket.max_rows.unwrap_or(0) as u64).collect());
            *out = OrtBatches {
                order_ptr,
                order_len,
                ends_ptr,
                bucket_lengths_ptr,
                bucket_rows_ptr,
                batches: count,
            };
            0
        }
        Err(status) => status,
    }
}

// ---- GPUs and TensorRT engines (`pulpie-rt engine`, export/engine.py) ----------------------

/// GPU `device` as the NVIDIA driver describes it: "name\nmajor.minor\nfolder" in `out` (the
/// folder name its TensorRT engines are cached under), released with `pulpie_rt_free`.
///
/// # Safety
/// `out` and `error` are writable.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_gpu(device: u32, out: *mut OrtMessage, error: *mut OrtMessage) -> i32 {
    match guarded(error, || super::cuda::probe(device, None)) {
        Ok(gpu) => {
            let (major, minor) = gpu.compute_capability;
            let (ptr, len) = crate::leak(format!("{}\n{major}.{minor}\n{}", gpu.name, gpu.slug()));
            *out = OrtMessage { ptr, len };
            0
        }
        Err(status) => status,
    }
}

/// Builds the TensorRT engines of the ONNX model file `model` on GPU `device` as the engine
/// does when it opens the model with backend tensorrt (one per profile, sized for
/// `max_batch_tokens`, FP16 unless `fp32`), into `cache_dir` (empty: `tensorrt/<gpu>` beside
/// the model) with their EPContext models, or finds them built already. `out`: the provider,
/// then what was done, one line each (released with `pulpie_rt_free`).
///
/// # Safety
/// Pointers as documented; paths are UTF-8 of the lengths given.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_ort_tensorrt_build(
    ort: *const Ort,
    model: *const u8,
    model_len: usize,
    device: u32,
    fp32: u32,
    max_batch_tokens: usize,
    cache_dir: *const u8,
    cache_dir_len: usize,
    out: *mut OrtMessage,
    error: *mut OrtMessage,
) -> i32 {
    let Some(ort) = shared(ort, error) else { return crate::abi::FAILED };
    match guarded(error, || {
        let path = Path::new(text(model, model_len)?);
        let dir = text(cache_dir, cache_dir_len)?;
        let mut gpu = super::GpuOptions::default();
        gpu.tensorrt.fp16 = Some(fp32 == 0);
        gpu.tensorrt.max_batch_tokens = max_batch_tokens.max(1);
        gpu.tensorrt.cache_dir = (!dir.is_empty()).then(|| dir.into());
        let config = SessionConfig {
            provider: ExecutionProvider::TensorRt { device_id: device },
            ..SessionConfig::default()
        };
        let classifier = TokenClassifier::open_on(&ort, ModelSource::File(path), &config, &gpu, None)?;
        let mut lines = vec![classifier.provider().to_string()];
        lines.extend(classifier.notes().iter().cloned());
        Ok(lines.join("\n"))
    }) {
        Ok(text) => {
            let (ptr, len) = crate::leak(text);
            *out = OrtMessage { ptr, len };
            0
        }
        Err(status) => status,
    }
}

/// The tree kernel alone (`pulpie_rt_kernels::TreeEnsemble`), for the parity checks against
/// ONNX Runtime (`python -m parity.trees`, tests/test_trees.py): the trees behind the
/// `probabilities` output of the ONNX model in `model` (its bytes). Status 1 with the reason
/// when the kernel does not run them.
///
/// # Safety
/// `model` holds `model_len` bytes; `out` receives a handle released with
/// `pulpie_rt_trees_free`.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_trees_open(
    model: *const u8,
    model_len: usize,
    out: *mut *mut pulpie_rt_kernels::TreeEnsemble,
    error: *mut OrtMessage,
) -> i32 {
    match guarded(error, || {
        pulpie_rt_kernels::TreeEnsemble::from_onnx(slice(model, model_len), super::PROBABILITIES)
            .map_err(|e| OrtError(e.0))
    }) {
        Ok(trees) => {
            *out = Box::into_raw(Box::new(trees));
            0
        }
        Err(status) => status,
    }
}

/// `[rows, 2]` probabilities and `rows` int64 labels (as ONNX Runtime's classifier gives them)
/// of `rows` × `columns` float32 features.
///
/// # Safety
/// `trees` comes from `pulpie_rt_trees_open`; buffers as their lengths say.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_trees_predict(
    trees: *const pulpie_rt_kernels::TreeEnsemble,
    features: *const f32,
    rows: usize,
    columns: usize,
    probabilities: *mut f32,
    labels: *mut i64,
    error: *mut OrtMessage,
) -> i32 {
    let trees = &*trees;
    match guarded(error, || {
        let mut probs = vec![0f32; rows * 2];
        let mut labs = vec![0i64; rows];
        trees
            .predict(slice(features, rows * columns), columns, &mut probs, Some(&mut labs))
            .map_err(OrtError)?;
        Ok((probs, labs))
    }) {
        Ok((probs, labs)) => {
            std::ptr::copy_nonoverlapping(probs.as_ptr(), probabilities, probs.len());
            std::ptr::copy_nonoverlapping(labs.as_ptr(), labels, labs.len());
            0
        }
        Err(status) => status,
    }
}

/// # Safety
/// `trees` comes from `pulpie_rt_trees_open`, released once.
#[no_mangle]
pub unsafe extern "C" fn pulpie_rt_trees_free(trees: *mut pulpie_rt_kernels::TreeEnsemble) {
    if !trees.is_null() {
        drop(Box::from_raw(trees));
    }
}
