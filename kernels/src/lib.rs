//! Custom compute for pulpie-rt (std only), linked into the core (`core/`):
//!
//! - `onnx`: a minimal reader of ONNX files (protobuf `ModelProto` … `AttributeProto`);
//! - `clock`: this thread's CPU seconds, the clock of the crates' benchmark tests;
//! - `trees`: `TreeEnsemble`, the default model's LightGBM trees (an `ai.onnx.ml`
//!   `TreeEnsembleClassifier`) evaluated as ONNX Runtime does, to the bit, several times faster.
//!
//! Why and how it is tested: `kernels/README.md`.

pub mod clock;
pub mod onnx;
pub mod trees;

pub use trees::{TreeEnsemble, Unsupported};
