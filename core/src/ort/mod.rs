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
//! - `batches`: `make_batches`, padding and SEP-logit picking as `runtime/batches.py` and
//!   `runtime/backends.py` do them;
//! - `ffi`: a temporary ctypes surface for the parity checks against Python
//!   (`python -m bench.ort_core_parity`), until the C ABI exists.
//!
//! Sessions are thread-safe: `TokenClassifier::run` and `BlockRescorer::scores` take `&self`
//! and may be called from several threads at once (ONNX Runtime documents `Run` as
//! thread-safe on one session).

mod api;
mod batches;
pub mod cuda;
mod engine;
#[cfg(feature = "python-ffi")]
pub(crate) mod ffi;
pub mod gpu;
mod library;
mod rescorer;
mod sys;

pub use api::{
    ElementType, ModelSource, Ort, Session, SessionOptions, Tensor, TensorData, TensorSpec, Value,
};
pub use batches::{
    bucket_for, default_buckets, make_batches, plan_batches, sep_logits, BatchPlan, Bucket, FlatBatch,
    Padded, DEFAULT_BUCKETS, DEFAULT_MAX_BATCH_ATTENTION, DEFAULT_MAX_BATCH_TOKENS,
};
pub use engine::{
    f16_to_f32, session_options, ExecutionProvider, Logits, SepLogits, SessionConfig, TokenClassifier,
    FEED_NAMES,
};
pub use gpu::{GpuOptions, ShapeBox, TensorRtOptions};
pub use library::{OrtLibrary, LIBRARY_ENV, LIBRARY_NAME};
pub use rescorer::{
    combine, log_odds_of, BlockRescorer, ContextRescorer, TreesChoice, PROBABILITIES, TREES_ENV,
};

/// An error from ONNX Runtime or from this layer, as one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrtError(pub String);

impl std::fmt::Display for OrtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OrtError {}

#[cfg(test)]
mod with_library;
