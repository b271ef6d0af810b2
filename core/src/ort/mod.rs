//! The engine step on ONNX Runtime's C API, for the C library (`libpulpie_rt`): the model
//! and the default model's block rescorer run in-process from Rust, with no Python.
//!
//! - `library`: finds and `dlopen`s `libonnxruntime.so` at run time (no link-time
//!   dependency) and asks it for its C API table;
//! - `sys`: our own declarations of the table slots used (from `onnxruntime_c_api.h`);
//! - `api`: safe owners of ONNX Runtime objects (`Ort` = library + environment,
//!   `SessionOptions`, `Session`, `Tensor`, `Value`), statuses as `Result<_, OrtError>`;
//! - `engine`: `TokenClassifier` (ids + mask → logits, float16 outputs widened to float32),
//!   `SessionConfig` (threads, CPU / CUDA / TensorRT provider), per-GPU sessions;
//! - `gpu`: the CUDA and TensorRT providers' options (`GpuOptions`), TensorRT's shape
//!   profiles from the batcher's buckets, its engine / timing / EPContext caches on disk;
//! - `cuda`: the NVIDIA driver asked whether a GPU is there (and its name and architecture);
//! - `rescorer`: `BlockRescorer` and `ContextRescorer` (`runtime/stages/rescore.py`);
//! - `types`: the values passed between these modules (the error, logits, buckets, batches),
//!   a leaf every other module reads them from;
//! - `providers`: the execution providers named once (backend name, device syntax, what ONNX
//!   Runtime must have), which the C ABI gives out to the other doors;
//! - `batches`: `make_batches` (the one batcher: the engine's, and the Python tools' through
//!   `pulpie_rt_ort_make_batches`), padding and SEP-logit picking (specified in
//!   `tests/spec/batches_spec.py`);
//! - `ffi`: the Python package's entry points into this layer (declared in
//!   `core/include/pulpie_rt_internal.h`): the batcher and the rescorers for the tools, the
//!   classifier for the parity checks (`python -m parity.ort_core_parity`), TensorRT builds
//!   for `pulpie-rt engine`.
//!
//! Sessions are thread-safe: `TokenClassifier::run` and `BlockRescorer::scores` take `&self`
//! and may be called from several threads at once (ONNX Runtime documents `Run` as
//! thread-safe on one session).

mod api;
mod batches;
mod binding;
pub mod cuda;
mod engine;
#[cfg(feature = "python-ffi")]
pub(crate) mod ffi;
pub mod gpu;
mod library;
pub mod providers;
mod rescorer;
mod sys;
mod types;

pub use api::{
    ElementType, ModelSource, Ort, OrtOnDemand, Session, SessionOptions, Tensor, TensorData, TensorSpec,
    Value,
};
pub use batches::{
    bucket_for, default_buckets, make_batches, pack, packed_buckets, packed_sep_logits, packed_shape,
    plan_batches, sep_logits, DEFAULT_BUCKETS, DEFAULT_MAX_BATCH_ATTENTION, DEFAULT_MAX_BATCH_TOKENS,
};
pub use engine::{f16_to_f32, session_options, SessionConfig, TokenClassifier, FEED_NAMES};
pub use gpu::{GpuOptions, ShapeBox, TensorRtOptions};
pub use library::{OrtLibrary, LIBRARY_ENV, LIBRARY_NAME};
pub use providers::{ExecutionProvider, Provider, PROVIDERS};
pub use rescorer::{
    combine, log_odds_of, BlockRescorer, ContextRescorer, TreesChoice, PROBABILITIES, TREES_ENV,
};
pub use types::{BatchPlan, Bucket, FlatBatch, Logits, OrtError, PackShape, PackedCall, Padded, SepLogits};

#[cfg(test)]
mod with_library;
