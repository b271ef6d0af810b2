//! The default model's block rescorer (`runtime/rescore.py`): a LightGBM ensemble saved as
//! `ai.onnx.ml` tree operators, and the score formula on top of it. The trees run on the
//! tree kernel (`kernels/`, `pulpie_rt_kernels::TreeEnsemble`: the same probabilities as ONNX
//! Runtime's TreeEnsembleClassifier, several times faster) when it can read them, else on ONNX
//! Runtime, which a warning on stderr and `BlockRescorer::trees` say;
//! `PULPIE_RT_TREES=onnxruntime` runs ONNX Runtime always (read when a rescorer opens).

use super::api::{ElementType, ModelSource, Ort, OrtOnDemand, Session, Tensor, TensorData};
use super::engine::{session_options, SessionConfig};
use super::providers::ExecutionProvider;
use super::types::OrtError;
use pulpie_rt_kernels::TreeEnsemble;
use std::ffi::CString;
use std::sync::Arc;

/// The ensemble's output read here: `[rows, 2]` float32, P(other), P(main).
pub const PROBABILITIES: &str = "probabilities";

/// The variable that chooses what runs a rescorer's trees: unset, empty or `kernel` for the
/// tree kernel where it can, `onnxruntime` for ONNX Runtime's TreeEnsembleClassifier.
pub const TREES_ENV: &str = "PULPIE_RT_TREES";

/// What a rescorer is asked to run its trees on (`TREES_ENV`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreesChoice {
    /// the kernel, or ONNX Runtime for trees it cannot run
    Kernel,
    OnnxRuntime,
}

impl TreesChoice {
    /// `TREES_ENV` as it is now; an error naming the variable for any other value.
    pub fn from_env() -> Result<TreesChoice, OrtError> {
        match std::env::var(TREES_ENV) {
            Err(std::env::VarError::NotPresent) => Ok(TreesChoice::Kernel),
            Ok(value) if value.is_empty() || value == "kernel" => Ok(TreesChoice::Kernel),
            Ok(value) if value == "onnxruntime" => Ok(TreesChoice::OnnxRuntime),
            Ok(value) => Err(OrtError(format!(
                "{TREES_ENV}={value:?}: expected 'kernel' (the default) or 'onnxruntime'"
            ))),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(OrtError(format!("{TREES_ENV} is not UTF-8: expected 'kernel' or 'onnxruntime'")))
            }
        }
    }
}

/// What runs one rescorer's trees.
enum Trees {
    Kernel(TreeEnsemble),
    OnnxRuntime { session: Session, input: CString, output: CString },
}

/// One rescorer: its trees on the kernel, or in an ONNX Runtime session (CPU, one thread each
/// way, as `rescore.BlockRescorer` opens it: the trees are small, and parallel tree
/// evaluation would only add scheduling).
pub struct BlockRescorer {
    trees: Trees,
    /// why ONNX Runtime runs the trees (None: the kernel runs them)
    on_onnxruntime: Option<String>,
    /// the width of the features input when the graph fixes it
    n_features: Option<usize>,
    margin_weight: f64,
}

impl BlockRescorer {
    /// Opens the rescorer in `source`, its trees on what `PULPIE_RT_TREES` says (ONNX Runtime
    /// loaded from `ort` only when they run on it).
    pub fn open(
        ort: &OrtOnDemand,
        source: ModelSource<'_>,
        margin_weight: f64,
    ) -> Result<BlockRescorer, OrtError> {
        BlockRescorer::open_with(ort, source, margin_weight, TreesChoice::from_env()?)
    }

    /// Opens the rescorer in `source` with its trees on the kernel where it can run them
    /// (`TreesChoice::Kernel`), else on ONNX Runtime.
    pub fn open_with(
        ort: &OrtOnDemand,
        source: ModelSource<'_>,
        margin_weight: f64,
        choice: TreesChoice,
    ) -> Result<BlockRescorer, OrtError> {
        let on_onnxruntime = match choice {
            TreesChoice::OnnxRuntime => format!("{TREES_ENV}=onnxruntime"),
            TreesChoice::Kernel => {
                let read;
                let bytes = match source {
                    ModelSource::Bytes(bytes) => Some(bytes),
                    // a file that cannot be read gets ONNX Runtime's own message below
                    ModelSource::File(path) => {
                        read = std::fs::read(path).ok();
                        read.as_deref()
                    }
                };
                match bytes.map(|bytes| TreeEnsemble::from_onnx(bytes, PROBABILITIES)) {
                    Some(Ok(ensemble)) => {
                        let n_features = ensemble.columns();
                        return Ok(BlockRescorer {
                            trees: Trees::Kernel(ensemble),
                            on_onnxruntime: None,
                            n_features,
                            margin_weight,
                        });
                    }
                    Some(Err(unsupported)) => {
                        let reason = format!("the tree kernel cannot run {source}: {unsupported}");
                        eprintln!("pulpie-rt: warning: {reason}; its trees run on ONNX Runtime");
                        reason
                    }
                    None => "the file cannot be read".to_string(),
                }
            }
        };
        let (session, input, output, n_features) = open_session(ort.get()?, source)?;
        Ok(BlockRescorer {
            trees: Trees::OnnxRuntime { session, input, output },
            on_onnxruntime: Some(on_onnxruntime),
            n_features,
            margin_weight,
        })
    }

    /// What runs the trees: "kernel", or "onnxruntime (why)".
    pub fn trees(&self) -> String {
        match &self.on_onnxruntime {
            None => "kernel".to_string(),
            Some(reason) => format!("onnxruntime ({reason})"),
        }
    }

    /// True when the tree kernel runs the trees.
    pub fn on_kernel(&self) -> bool {
        matches!(self.trees, Trees::Kernel(_))
    }

    pub fn margin_weight(&self) -> f64 {
        self.margin_weight
    }

    /// The ensemble's `[rows, 2]` probabilities for `features` (`[rows, n_features]`
    /// row-major float32).
    pub fn probabilities(&self, features: &[f32], rows: usize) -> Result<Vec<f32>, OrtError> {
        if rows == 0 {
            return Ok(Vec::new());
        }
        if !features.len().is_multiple_of(rows) {
            return Err(OrtError(format!("{} feature values do not make {rows} rows", features.len())));
        }
        let columns = features.len() / rows;
        if let Some(expected) = self.n_features {
            if columns != expected {
                return Err(OrtError(format!(
                    "features have {columns} columns, the rescorer reads {expected}"
                )));
            }
        }
        match &self.trees {
            Trees::Kernel(ensemble) => {
                let mut probabilities = vec![0f32; rows * 2];
                ensemble.predict(features, columns, &mut probabilities, None).map_err(OrtError)?;
                Ok(probabilities)
            }
            Trees::OnnxRuntime { session, input, output } => {
                let ort = session.ort();
                let tensor = Tensor::new(ort, TensorData::Float32(features), &[rows as i64, columns as i64])?;
                let values = session.run(&[(input.as_c_str(), &tensor)], &[output.as_c_str()])?;
                let (element, dims) = values[0].tensor_shape()?;
                if element != ElementType::Float32 || dims != [rows as i64, 2] {
                    return Err(OrtError(format!(
                        "the rescorer returned {element:?} probabilities of shape {dims:?}, expected [{rows}, 2]"
                    )));
                }
                unsafe { values[0].copy_data::<f32>(rows * 2) }
            }
        }
    }

    /// `BlockRescorer.log_odds`: the log-odds of "main" per row, computed in float64 from the
    /// float32 probability clipped to [1e-7, 1 - 1e-7], then rounded to float32.
    pub fn log_odds(&self, features: &[f32], rows: usize) -> Result<Vec<f32>, OrtError> {
        let probabilities = self.probabilities(features, rows)?;
        Ok(probabilities.chunks_exact(2).map(|pair| log_odds_of(pair[1])).collect())
    }

    /// `BlockRescorer.scores`: log-odds + margin_weight × margin per block (`margins` one per
    /// row; NaN, a block without a margin, counts as 0).
    pub fn scores(&self, features: &[f32], rows: usize, margins: &[f32]) -> Result<Vec<f32>, OrtError> {
        if margins.len() != rows {
            return Err(OrtError(format!("{} margins for {rows} blocks", margins.len())));
        }
        let log_odds = self.log_odds(features, rows)?;
        Ok(combine(&log_odds, self.margin_weight, margins))
    }
}

/// An ONNX Runtime session on a rescorer file: the session, its input and `probabilities`
/// output names, and the input width when the graph fixes it.
fn open_session(
    ort: &Arc<Ort>,
    source: ModelSource<'_>,
) -> Result<(Session, CString, CString, Option<usize>), OrtError> {
    let config = SessionConfig { intra_op_threads: 1, inter_op_threads: 1, provider: ExecutionProvider::Cpu };
    let options = session_options(ort, &config)?;
    let session = Session::open(ort, source, &options)?;
    let Some(input) = session.inputs().first() else {
        return Err(OrtError(format!("{source}: the rescorer has no input")));
    };
    if input.element != Some(ElementType::Float32) {
        return Err(OrtError(format!(
            "{source}: the rescorer's input '{}' is not tensor(float)",
            input.name
        )));
    }
    let n_features = match input.dims[..] {
        [_, width] if width > 0 => Some(width as usize),
        _ => None,
    };
    let input = input.c_name.clone();
    let Some(output) = session.outputs().iter().find(|o| o.name == PROBABILITIES) else {
        let names: Vec<String> = session.outputs().iter().map(|o| format!("'{}'", o.name)).collect();
        return Err(OrtError(format!("{source}: no 'probabilities' output (has [{}])", names.join(", "))));
    };
    if output.element != Some(ElementType::Float32) {
        return Err(OrtError(format!("{source}: the rescorer's 'probabilities' is not tensor(float)")));
    }
    let output = output.c_name.clone();
    Ok((session, input, output, n_features))
}

/// A rescorer over blocks in context (`rescore.BlockRescorer` with `context` `context-v4`,
/// the default model's `fast` profile, or `context-v5`): one page's `blocks-v3` (`blocks-v4`)
/// rows widened by
/// `features::context::context_features`, then, with a first stage, that stage's
/// probabilities read in context (`stage_features`) appended, and the (second) ensemble's
/// log-odds of "main" per block. Both stages are `BlockRescorer`s.
pub struct ContextRescorer {
    first_stage: Option<BlockRescorer>,
    last: BlockRescorer,
}

impl ContextRescorer {
    pub fn open(
        ort: &OrtOnDemand,
        source: ModelSource<'_>,
        first_stage: Option<ModelSource<'_>>,
    ) -> Result<ContextRescorer, OrtError> {
        let choice = TreesChoice::from_env()?; // once, for both stages
        let first_stage =
            first_stage.map(|source| BlockRescorer::open_with(ort, source, 0.0, choice)).transpose()?;
        Ok(ContextRescorer { first_stage, last: BlockRescorer::open_with(ort, source, 0.0, choice)? })
    }

    /// What runs each stage's trees (`BlockRescorer::trees`), the first stage first.
    pub fn trees(&self) -> Vec<String> {
        self.first_stage.iter().chain([&self.last]).map(BlockRescorer::trees).collect()
    }

    /// `BlockRescorer.log_odds` of one page's blocks (`features`: `rows` `blocks-v3` rows,
    /// row-major, in block order).
    pub fn log_odds(&self, features: &[f32], rows: usize) -> Result<Vec<f32>, OrtError> {
        use crate::features::context::{context_features, stage_features, N_STAGE};
        if rows == 0 {
            return Ok(Vec::new());
        }
        let columns = features.len() / rows;
        let context = context_features(features, columns).map_err(OrtError)?;
        let Some(first_stage) = &self.first_stage else {
            return self.last.log_odds(&context, rows);
        };
        let first: Vec<f64> = first_stage
            .probabilities(&context, rows)?
            .chunks_exact(2)
            .map(|pair| f64::from(pair[1]))
            .collect();
        let stage = stage_features(&first, features, columns).map_err(OrtError)?;
        let width = context.len() / rows; // N_CONTEXT, or N_CONTEXT_V5 for blocks-v4 rows
        let mut joined = Vec::with_capacity(rows * (width + N_STAGE));
        for (own, read) in context.chunks_exact(width).zip(stage.chunks_exact(N_STAGE)) {
            joined.extend_from_slice(own);
            joined.extend_from_slice(read);
        }
        self.last.log_odds(&joined, rows)
    }
}

/// `np.log(p / (1 - p))` of `np.clip(float64(p), 1e-7, 1 - 1e-7)`, cast to float32.
pub fn log_odds_of(probability: f32) -> f32 {
    let p = f64::from(probability).clamp(1e-7, 1.0 - 1e-7);
    (p / (1.0 - p)).ln() as f32
}

/// `log_odds + margin_weight * np.nan_to_num(margins, nan=0.0)` with NumPy ≥ 2's promotion:
/// the Python float `margin_weight` meets a float32 array, so it is rounded to float32 and
/// the product and the sum are float32 operations (two roundings, no fused multiply-add);
/// `nan_to_num` also maps ±inf to ±float32::MAX.
pub fn combine(log_odds: &[f32], margin_weight: f64, margins: &[f32]) -> Vec<f32> {
    let weight = margin_weight as f32;
    log_odds
        .iter()
        .zip(margins)
        .map(|(&odds, &margin)| {
            let margin = if margin.is_nan() {
                0.0
            } else if margin.is_infinite() {
                f32::MAX.copysign(margin)
            } else {
                margin
            };
            odds + weight * margin
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_odds_clips_to_the_same_bounds_as_python() {
        // 1e-7 and 1 - 1e-7 in float64: ±16.118095…, rounded to float32
        let low = ((1e-7f64) / (1.0 - 1e-7)).ln() as f32;
        assert_eq!(log_odds_of(0.0), low);
        assert_eq!(log_odds_of(1.0), -low);
        assert_eq!(log_odds_of(0.5), 0.0);
        assert!(log_odds_of(f32::NAN).is_nan());
        assert_eq!(log_odds_of(0.75), (3.0f64).ln() as f32);
    }

    #[test]
    fn combine_rounds_the_weight_and_treats_missing_margins_as_python() {
        let got = combine(&[1.0, 1.0, 1.0, 1.0], 0.1, &[2.0, f32::NAN, f32::INFINITY, -3.0]);
        let w = 0.1f32; // the float64 0.1 rounded to float32, as NumPy 2 does
        assert_eq!(got[0], 1.0 + w * 2.0);
        assert_eq!(got[1], 1.0);
        assert_eq!(got[2], 1.0 + w * f32::MAX);
        assert_eq!(got[3], 1.0 + w * -3.0);
    }
}
