//! The token classifier: a bundle's `model.onnx` (EuroBERT token classification, exported by
//! `pulpie_rt.export`) run on `[rows, length]` token ids, as `runtime/backends.py`'s
//! `OnnxRuntimeBackend` runs it.

use super::api::{ElementType, ModelSource, Ort, Session, SessionOptions, Tensor, TensorData, TensorSpec};
use super::batches::{sep_logits, FlatBatch};
use super::OrtError;
use std::ffi::CString;
use std::sync::Arc;

/// Where a session's operators run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutionProvider {
    Cpu,
    /// ONNX Runtime's CUDA provider on GPU `device_id`
    Cuda {
        device_id: u32,
    },
    /// ONNX Runtime's TensorRT provider on GPU `device_id`, with CUDA on the same GPU for
    /// what TensorRT does not take (and the CPU after both, as always)
    TensorRt {
        device_id: u32,
    },
}

impl ExecutionProvider {
    fn name(self) -> &'static str {
        match self {
            ExecutionProvider::Cpu => "cpu",
            ExecutionProvider::Cuda { .. } => "cuda",
            ExecutionProvider::TensorRt { .. } => "tensorrt",
        }
    }
}

/// How a session runs. Thread counts of 0 leave ONNX Runtime's default (one intra-op thread
/// per physical core).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    pub intra_op_threads: usize,
    pub inter_op_threads: usize,
    pub provider: ExecutionProvider,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig { intra_op_threads: 0, inter_op_threads: 0, provider: ExecutionProvider::Cpu }
    }
}

/// Session options for `config`; a GPU provider the library does not have is an error that
/// names the library and what it has.
pub fn session_options(ort: &Ort, config: &SessionConfig) -> Result<SessionOptions, OrtError> {
    let mut options = SessionOptions::new(ort)?;
    options.set_intra_op_threads(config.intra_op_threads)?;
    options.set_inter_op_threads(config.inter_op_threads)?;
    let required: &[&str] = match config.provider {
        ExecutionProvider::Cpu => &[],
        ExecutionProvider::Cuda { .. } => &["CUDAExecutionProvider"],
        ExecutionProvider::TensorRt { .. } => &["TensorrtExecutionProvider", "CUDAExecutionProvider"],
    };
    if !required.is_empty() {
        let available = ort.available_providers()?;
        if let Some(missing) = required.iter().find(|name| !available.iter().any(|a| a == *name)) {
            return Err(OrtError(format!(
                "execution provider '{}' is not available: the ONNX Runtime library {} (version \
                 {}) has no {missing} (it has: {}); point PULPIE_RT_ORT_LIB at the \
                 libonnxruntime.so of a GPU build (the onnxruntime-gpu wheel's \
                 onnxruntime/capi/libonnxruntime.so.<version>)",
                config.provider.name(),
                ort.library().path(),
                ort.library().version(),
                available.join(", ")
            )));
        }
    }
    let appended = match config.provider {
        ExecutionProvider::Cpu => Ok(()),
        ExecutionProvider::Cuda { device_id } => options.append_cuda(device_id),
        ExecutionProvider::TensorRt { device_id } => {
            options.append_tensorrt(device_id).and_then(|()| options.append_cuda(device_id))
        }
    };
    appended.map_err(|e| {
        let device = match config.provider {
            ExecutionProvider::Cuda { device_id } | ExecutionProvider::TensorRt { device_id } => device_id,
            ExecutionProvider::Cpu => 0,
        };
        OrtError(format!(
            "cannot enable execution provider '{}' on GPU {device}: {}",
            config.provider.name(),
            e.0
        ))
    })?;
    Ok(options)
}

/// What the classifier feeds to each graph input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Feed {
    InputIds,
    AttentionMask,
    /// `0..length` on every row, as `OnnxRuntimeBackend` feeds a graph that asks for them
    PositionIds,
}

/// The inputs the classifier can feed, by graph input name.
pub const FEED_NAMES: [&str; 3] = ["input_ids", "attention_mask", "position_ids"];

#[derive(Debug)]
struct Input {
    name: CString,
    feed: Feed,
    int32: bool,
}

/// Logits `[rows, length, labels]`, row-major, as float32.
#[derive(Clone, Debug, PartialEq)]
pub struct Logits {
    pub rows: usize,
    pub length: usize,
    pub labels: usize,
    pub data: Vec<f32>,
}

impl Logits {
    /// The logits of token `position` of `row`.
    pub fn at(&self, row: usize, position: usize) -> &[f32] {
        let start = (row * self.length + position) * self.labels;
        &self.data[start..start + self.labels]
    }
}

/// Per row of a batch, the logits at its SEP tokens, `[n_sep × labels]` flattened.
#[derive(Clone, Debug, PartialEq)]
pub struct SepLogits {
    pub labels: usize,
    pub rows: Vec<Vec<f32>>,
}

/// A token-classification session. `run` may be called from several threads at once (see
/// `api::Session`).
pub struct TokenClassifier {
    session: Session,
    inputs: Vec<Input>,
    output: CString,
    output_half: bool,
}

fn names(specs: &[TensorSpec]) -> String {
    specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
}

impl TokenClassifier {
    /// Opens `source` and checks its interface: int32 or int64 inputs among `FEED_NAMES`
    /// (`input_ids` required) and a float32 or float16 output `output` (default "logits").
    pub fn open(
        ort: &Arc<Ort>,
        source: ModelSource<'_>,
        config: &SessionConfig,
        output: Option<&str>,
    ) -> Result<TokenClassifier, OrtError> {
        let options = session_options(ort, config)?;
        let session = Session::open(ort, source, &options)?;
        let mut inputs = Vec::new();
        for spec in session.inputs() {
            let feed = match spec.name.as_str() {
                "input_ids" => Feed::InputIds,
                "attention_mask" => Feed::AttentionMask,
                "position_ids" => Feed::PositionIds,
                other => {
                    return Err(OrtError(format!(
                        "{source}: model input '{other}' is none of the inputs pulpie-rt feeds \
                         ({}); the model's inputs: {}",
                        FEED_NAMES.join(", "),
                        names(session.inputs())
                    )))
                }
            };
            let int32 = match spec.element {
                Some(ElementType::Int64) => false,
                Some(ElementType::Int32) => true,
                other => {
                    return Err(OrtError(format!(
                        "{source}: model input '{}' is {}; pulpie-rt feeds tensor(int64) or \
                         tensor(int32)",
                        spec.name,
                        other.map_or("not a tensor".to_string(), ElementType::onnx_name)
                    )))
                }
            };
            inputs.push(Input { name: spec.c_name.clone(), feed, int32 });
        }
        if !inputs.iter().any(|i| i.feed == Feed::InputIds) {
            return Err(OrtError(format!(
                "{source}: model has no input 'input_ids' (the model's inputs: {})",
                names(session.inputs())
            )));
        }
        let wanted = output.unwrap_or("logits");
        let Some(spec) = session.outputs().iter().find(|s| s.name == wanted) else {
            return Err(OrtError(format!(
                "{source}: model has no output '{wanted}' (the model's outputs: {})",
                names(session.outputs())
            )));
        };
        let output_half = match spec.element {
            Some(ElementType::Float32) => false,
            Some(ElementType::Float16) => true,
            other => {
                return Err(OrtError(format!(
                    "{source}: model output '{wanted}' is {}; pulpie-rt reads tensor(float) or \
                     tensor(float16)",
                    other.map_or("not a tensor".to_string(), ElementType::onnx_name)
                )))
            }
        };
        let output = spec.c_name.clone();
        Ok(TokenClassifier { session, inputs, output, output_half })
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Logits for `rows` rows of `length` tokens: `input_ids` and `attention_mask` are
    /// `[rows, length]` row-major (right-padded, as `FlatBatch::padded` makes them).
    pub fn run(
        &self,
        input_ids: &[i64],
        attention_mask: &[i64],
        rows: usize,
        length: usize,
    ) -> Result<Logits, OrtError> {
        let cells = rows * length;
        for (what, values) in [("input_ids", input_ids), ("attention_mask", attention_mask)] {
            if values.len() != cells {
                return Err(OrtError(format!(
                    "{what} holds {} values, not rows × length = {rows} × {length}",
                    values.len()
                )));
            }
        }
        if cells == 0 {
            return Ok(Logits { rows, length, labels: 0, data: Vec::new() });
        }
        let ort = self.session.ort();
        let shape = [rows as i64, length as i64];
        let positions: Vec<i64> = if self.inputs.iter().any(|i| i.feed == Feed::PositionIds) {
            (0..rows).flat_map(|_| 0..length as i64).collect()
        } else {
            Vec::new()
        };
        // int32 copies for a graph that takes int32 ids (kept alive through the run)
        let narrowed: Vec<Option<Vec<i32>>> = self
            .inputs
            .iter()
            .map(|input| {
                let values = match input.feed {
                    Feed::InputIds => input_ids,
                    Feed::AttentionMask => attention_mask,
                    Feed::PositionIds => &positions,
                };
                input.int32.then(|| narrow(values, &input.name)).transpose()
            })
            .collect::<Result<_, _>>()?;
        let mut tensors = Vec::with_capacity(self.inputs.len());
        for (input, narrow) in self.inputs.iter().zip(&narrowed) {
            let data = match (narrow, input.feed) {
                (Some(values), _) => TensorData::Int32(values),
                (None, Feed::InputIds) => TensorData::Int64(input_ids),
                (None, Feed::AttentionMask) => TensorData::Int64(attention_mask),
                (None, Feed::PositionIds) => TensorData::Int64(&positions),
            };
            tensors.push(Tensor::new(ort, data, &shape)?);
        }
        let feeds: Vec<_> = self.inputs.iter().zip(&tensors).map(|(i, t)| (i.name.as_c_str(), t)).collect();
        let values = self.session.run(&feeds, &[self.output.as_c_str()])?;
        let value = &values[0];
        let (element, dims) = value.tensor_shape()?;
        let labels = match dims[..] {
            [r, l, labels] if r as usize == rows && l as usize == length && labels > 0 => labels as usize,
            _ => {
                return Err(OrtError(format!(
                    "model output {:?} has shape {dims:?}, expected [{rows}, {length}, labels]",
                    self.output
                )))
            }
        };
        let count = rows * length * labels;
        let data = match (element, self.output_half) {
            (ElementType::Float32, false) => unsafe { value.copy_data::<f32>(count)? },
            (ElementType::Float16, true) => {
                unsafe { value.copy_data::<u16>(count)? }.into_iter().map(f16_to_f32).collect()
            }
            _ => return Err(OrtError(format!("model output {:?} came back as {element:?}", self.output))),
        };
        Ok(Logits { rows, length, labels, data })
    }

    /// `OnnxRuntimeBackend.predict`: the batch padded right with `pad_id`, run, and per row
    /// the logits at its `sep_id` tokens.
    pub fn predict(&self, batch: &FlatBatch, pad_id: i64, sep_id: i64) -> Result<SepLogits, OrtError> {
        let padded = batch.padded(pad_id, None)?;
        let logits = self.run(&padded.input_ids, &padded.attention_mask, padded.rows, padded.length)?;
        let rows = sep_logits(&logits, &padded.input_ids, &batch.lengths(), sep_id);
        Ok(SepLogits { labels: logits.labels, rows })
    }
}

fn narrow(values: &[i64], name: &CString) -> Result<Vec<i32>, OrtError> {
    values
        .iter()
        .map(|&v| {
            i32::try_from(v).map_err(|_| OrtError(format!("{v} does not fit the int32 input {name:?}")))
        })
        .collect()
}

/// IEEE 754 binary16 bits to the float32 of the same value (every half is exactly a float).
pub fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let magnitude = match exponent {
        // zero and subnormals: mantissa × 2^-24, exact in float32
        0 => (mantissa as f32 * (1.0 / 16_777_216.0)).to_bits(),
        // infinities and NaNs (payload kept)
        0x1f => 0x7f80_0000 | (mantissa << 13),
        // rebias the exponent from 15 to 127
        _ => ((exponent + 112) << 23) | (mantissa << 13),
    };
    f32::from_bits(sign | magnitude)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every one of the 65,536 halves against the value its fields define, computed in f64.
    #[test]
    fn f16_to_f32_is_exact_for_every_half() {
        for bits in 0..=u16::MAX {
            let sign = if bits & 0x8000 != 0 { -1.0f64 } else { 1.0 };
            let exponent = i32::from((bits >> 10) & 0x1f);
            let mantissa = f64::from(bits & 0x3ff);
            let got = f16_to_f32(bits);
            match exponent {
                0x1f if mantissa == 0.0 => assert_eq!(got, sign as f32 * f32::INFINITY),
                0x1f => assert!(got.is_nan(), "{bits:#06x}"),
                0 => assert_eq!(got as f64, sign * mantissa * 2f64.powi(-24), "{bits:#06x}"),
                _ => assert_eq!(
                    got as f64,
                    sign * (1024.0 + mantissa) * 2f64.powi(exponent - 25),
                    "{bits:#06x}"
                ),
            }
            assert_eq!(got.is_sign_negative(), bits & 0x8000 != 0, "{bits:#06x}");
        }
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    }
}
