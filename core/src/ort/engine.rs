//! The token classifier: a bundle's `model.onnx` (EuroBERT token classification, exported by
//! `pulpie_rt.export`) run on `[rows, length]` token ids (`eval/margins.py` runs the same graph
//! through onnxruntime's Python API as the tests' oracle).

use super::api::{ElementType, ModelSource, Ort, Session, SessionOptions, Tensor, TensorData, TensorSpec};
use super::batches::{default_buckets, sep_logits};
use super::cuda;
use super::gpu::{
    context_model_path, cuda_provider_options, tensorrt_provider_options, CacheRecord, EngineFiles,
    GpuOptions, ShapeBox, RECORD_NAME,
};
use super::providers::ExecutionProvider;
use super::types::{Bucket, FlatBatch, Logits, OrtError, SepLogits};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

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

/// Session options for `config`: threads, and a GPU provider with its defaults
/// (`TokenClassifier::open_on` gives TensorRT its profiles and caches). A provider the library
/// does not have, or that cannot run here, is an error that says why.
pub fn session_options(ort: &Ort, config: &SessionConfig) -> Result<SessionOptions, OrtError> {
    let mut options = SessionOptions::new(ort)?;
    options.set_intra_op_threads(config.intra_op_threads)?;
    options.set_inter_op_threads(config.inter_op_threads)?;
    if let Some(device) = config.provider.device() {
        append_gpu(ort, &mut options, config.provider, device, &GpuOptions::default(), None)?;
    }
    Ok(options)
}

/// Appends `provider` on GPU `device` to `options`: first the library must have it, then the
/// NVIDIA driver must see the GPU, then ONNX Runtime must load the provider (its CUDA, cuDNN
/// and TensorRT libraries). Each failure says why; none falls back to the CPU. `trt`: the
/// TensorRT provider's options (None: its defaults on `device`). Returns the GPU the driver
/// describes.
fn append_gpu(
    ort: &Ort,
    options: &mut SessionOptions,
    provider: ExecutionProvider,
    device: u32,
    gpu: &GpuOptions,
    trt: Option<Vec<(String, String)>>,
) -> Result<cuda::Gpu, OrtError> {
    require_provider(ort, provider)?;
    let cannot = |why: String| {
        OrtError(format!(
            "cannot run on execution provider '{}' on GPU {device}: {why}; pulpie-rt does not fall \
             back to the CPU (ask for backend 'cpu' to run there)",
            provider.name()
        ))
    };
    let found =
        cuda::probe(device, gpu.driver_library.as_deref().map(Path::as_os_str)).map_err(|e| cannot(e.0))?;
    let cuda_options = cuda_provider_options(device, gpu);
    let appended = match provider {
        ExecutionProvider::TensorRt { .. } => {
            let trt = trt.unwrap_or_else(|| vec![("device_id".to_string(), device.to_string())]);
            options.append_tensorrt(&trt).and_then(|()| options.append_cuda(&cuda_options))
        }
        _ => options.append_cuda(&cuda_options),
    };
    appended.map_err(|e| {
        cannot(format!(
            "ONNX Runtime {} cannot load its {} provider ({}){LIBRARIES_NEEDED}",
            ort.library().version(),
            if matches!(provider, ExecutionProvider::Cuda { .. }) { "CUDA" } else { "TensorRT" },
            ort_reason(&e.0),
        ))
    })?;
    Ok(found)
}

/// An error unless the library has `provider` (and CUDA's, which TensorRT runs beside).
fn require_provider(ort: &Ort, provider: ExecutionProvider) -> Result<(), OrtError> {
    let required = provider.spec().ort_providers;
    let available = ort.available_providers()?;
    if let Some(missing) = required.iter().find(|name| !available.iter().any(|a| a == *name)) {
        return Err(OrtError(format!(
            "execution provider '{}' is not available: the ONNX Runtime library {} (version \
             {}) has no {missing} (it has: {}); point PULPIE_RT_ORT_LIB at the \
             libonnxruntime.so of a GPU build (the onnxruntime-gpu wheel's \
             onnxruntime/capi/libonnxruntime.so.<version>)",
            provider.name(),
            ort.library().path(),
            ort.library().version(),
            available.join(", ")
        )));
    }
    Ok(())
}

/// ONNX Runtime's message without the source location and status code it starts with
/// ("/onnxruntime_src/…cc:2043 … [ONNXRuntimeError] : 1 : FAIL : Failed to load …").
fn ort_reason(message: &str) -> &str {
    let message = message.trim_end();
    match message.find("[ONNXRuntimeError] : ") {
        Some(at) => {
            let rest = &message[at..];
            // "[ONNXRuntimeError] : <code> : <NAME> : <reason>"
            rest.splitn(4, " : ").nth(3).unwrap_or(message)
        }
        None => message,
    }
}

/// What the GPU providers load, for the message of one that does not load.
const LIBRARIES_NEEDED: &str = " - the onnxruntime-gpu wheel's providers need the NVIDIA CUDA 13 \
                                runtime, cuBLAS and cuRAND, cuDNN 9 and for TensorRT libnvinfer 10 \
                                on the library path (LD_LIBRARY_PATH)";

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

/// A token-classification session on the CPU, or the sessions on one or more GPUs. `run`
/// may be called from several threads at once (see `api::Session`): each call runs on the
/// GPU with the fewest calls running.
pub struct TokenClassifier {
    devices: Vec<Device>,
    inputs: Vec<Input>,
    output: CString,
    output_half: bool,
    /// the provider and devices the sessions run on: "cpu", "cuda:0", "tensorrt:0,1"
    provider: String,
    /// the batcher's buckets, their rows capped to the TensorRT profiles
    buckets: Vec<Bucket>,
    /// what the engine should know of how the sessions were made (TensorRT's engines)
    notes: Vec<String>,
}

/// One session: for every shape, or (TensorRT) for the shapes of one profile.
struct Placed {
    shape: Option<ShapeBox>,
    session: Session,
}

/// The sessions on one device, how many calls run or wait there now, and (a GPU) the gate
/// that lets a few model calls run there at a time.
struct Device {
    sessions: Vec<Placed>,
    busy: AtomicUsize,
    /// GPUs only. Every call in flight on a GPU holds its own activations: an 8,192-token
    /// chunk's attention scores are 3.2 GB in FP32 for Orange Small (unfused graph), and eight
    /// threads each running one ran an H200 out of memory (bench/results/gpu-20261204-before-
    /// gate). Calls queue here instead, a few at a time (`GPU_CALLS_ENV`); the threads' CPU stages
    /// still run side by side.
    gate: Option<Gate>,
}

impl Device {
    /// A device's sessions, without a gate (the CPU's; `open_on` gives GPUs theirs).
    fn new(sessions: Vec<Placed>) -> Device {
        Device { sessions, busy: AtomicUsize::new(0), gate: None }
    }
}

/// How many model calls run on one GPU at once unless `PULPIE_RT_GPU_CALLS` says (1 to 64;
/// read when a classifier opens): two for a graph without a padding mask (`export --attention
/// fused`: one unpadded row per call, a few GB of activations), one for a graph that batches
/// padded rows (its attention scores grow with rows × length²). ONNX Runtime runs concurrent
/// calls on streams of their own, so one call's kernels fill the gaps of another's host work:
/// on an H200, Orange Small's shape fused in FP16, 1,016 pages, 57.4 and 59.6 pages/s at one
/// call, 66.8 and 67.4 at two, 67.7 at four (bench/results/gpu-20261204-h200-calls-in-flight).
pub const GPU_CALLS_ENV: &str = "PULPIE_RT_GPU_CALLS";

fn default_gpu_calls(takes_mask: bool) -> usize {
    if takes_mask {
        1
    } else {
        2
    }
}

/// The calls per GPU asked through `PULPIE_RT_GPU_CALLS` (None: not asked).
fn gpu_calls_asked() -> Result<Option<usize>, OrtError> {
    gpu_calls_from(std::env::var(GPU_CALLS_ENV).ok().as_deref())
}

fn gpu_calls_from(value: Option<&str>) -> Result<Option<usize>, OrtError> {
    value
        .map(|value| {
            value.trim().parse::<usize>().ok().filter(|n| (1..=64).contains(n)).ok_or_else(|| {
                OrtError(format!("{GPU_CALLS_ENV}='{value}': give a number of model calls from 1 to 64"))
            })
        })
        .transpose()
}

/// A counting gate: at most `permits` holders at once; the others wait their turn.
struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Gate {
    fn new(permits: usize) -> Gate {
        Gate { free: Mutex::new(permits), freed: Condvar::new() }
    }

    /// Waits for a free place and holds it until the turn drops (a panic too: the count is
    /// all the gate keeps, so a poisoned lock is taken as it is).
    fn enter(&self) -> Turn<'_> {
        let mut free = self.free.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        *free -= 1;
        Turn(self)
    }
}

/// One place in a `Gate`, given back on drop.
struct Turn<'a>(&'a Gate);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *free += 1;
        self.0.freed.notify_one();
    }
}

/// Holds one call's place on a device (released on drop, a panic too).
struct Busy<'a>(&'a AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn names(specs: &[TensorSpec]) -> String {
    specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
}

impl TokenClassifier {
    /// Opens `source` on `config`'s provider with the GPU defaults (see `open_on`).
    pub fn open(
        ort: &Arc<Ort>,
        source: ModelSource<'_>,
        config: &SessionConfig,
        output: Option<&str>,
    ) -> Result<TokenClassifier, OrtError> {
        Self::open_on(ort, source, config, &GpuOptions::default(), output)
    }

    /// Opens `source` and checks its interface: int32 or int64 inputs among `FEED_NAMES`
    /// (`input_ids` required) and a float32 or float16 output `output` (default "logits").
    /// On a GPU provider: one set of sessions per GPU (`config`'s and `gpu.more_devices`);
    /// TensorRT gets one session per shape profile, its engines built once into a cache
    /// folder and loaded from their EPContext models afterwards (`gpu.rs`).
    pub fn open_on(
        ort: &Arc<Ort>,
        source: ModelSource<'_>,
        config: &SessionConfig,
        gpu: &GpuOptions,
        output: Option<&str>,
    ) -> Result<TokenClassifier, OrtError> {
        let mut notes = Vec::new();
        let mut buckets = default_buckets();
        // read for a GPU only: the CPU runs every call side by side
        let gpu_calls = match config.provider {
            ExecutionProvider::Cpu => None,
            _ => gpu_calls_asked()?,
        };
        let (mut devices, provider) = match config.provider {
            ExecutionProvider::Cpu => {
                let options = session_options(ort, config)?;
                let session = Session::open(ort, source, &options)?;
                (vec![Device::new(vec![Placed { shape: None, session }])], "cpu".to_string())
            }
            provider => {
                let mut ids = vec![provider.device().unwrap_or(0)];
                for &more in &gpu.more_devices {
                    if !ids.contains(&more) {
                        ids.push(more);
                    }
                }
                let mut devices = Vec::with_capacity(ids.len());
                for &id in &ids {
                    let (sessions, capped) = match provider {
                        ExecutionProvider::TensorRt { .. } => {
                            tensorrt_sessions(ort, source, config, gpu, id, &mut notes)?
                        }
                        _ => {
                            let mut options = cpu_threads(ort, config)?;
                            append_gpu(ort, &mut options, provider, id, gpu, None)?;
                            let session = Session::open(ort, source, &options)?;
                            (vec![Placed { shape: None, session }], default_buckets())
                        }
                    };
                    buckets = capped;
                    devices.push(Device::new(sessions));
                }
                let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
                (devices, format!("{}:{}", provider.name(), ids.join(",")))
            }
        };
        let session = &devices[0].sessions[0].session;
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
        if !takes_mask(&inputs) {
            // a graph without a padding mask (`export --attention fused`) attends to every
            // position it is given: one row per call, never padded
            for bucket in &mut buckets {
                bucket.max_rows = Some(1);
            }
        }
        if !matches!(config.provider, ExecutionProvider::Cpu) {
            let calls = gpu_calls.unwrap_or_else(|| default_gpu_calls(takes_mask(&inputs)));
            for device in &mut devices {
                device.gate = Some(Gate::new(calls));
            }
        }
        Ok(TokenClassifier { devices, inputs, output, output_half, provider, buckets, notes })
    }

    /// The first session (on the first GPU; TensorRT: of the first profile).
    pub fn session(&self) -> &Session {
        &self.devices[0].sessions[0].session
    }

    /// The provider and GPUs the sessions run on: "cpu", "cuda:0", "tensorrt:0,1". Only a
    /// session that opened on its provider is here: a provider that cannot run is an error
    /// at open, never a CPU run.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The batcher's buckets for this classifier: TensorRT caps each bucket's rows to its
    /// profile, so every batch falls in one (`make_batches` with these); a graph that takes
    /// no `attention_mask` gets one row per batch.
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// How the sessions were made, for a log or `/info` (TensorRT: engines built or loaded,
    /// and where).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The least busy device's session for `[rows, length]`, held busy until the guard drops,
    /// and that device's gate (GPUs).
    fn place(&self, rows: usize, length: usize) -> Result<(&Session, Busy<'_>, Option<&Gate>), OrtError> {
        let device = self
            .devices
            .iter()
            .min_by_key(|d| d.busy.load(Ordering::SeqCst))
            .expect("a classifier has a device");
        device.busy.fetch_add(1, Ordering::SeqCst);
        let busy = Busy(&device.busy);
        let placed = device.sessions.iter().find(|p| p.shape.is_none_or(|b| b.holds(rows, length)));
        match placed {
            Some(placed) => Ok((&placed.session, busy, device.gate.as_ref())),
            None => Err(OrtError(format!(
                "a batch of {rows} rows × {length} tokens is outside every TensorRT profile ({}): \
                 batch with the classifier's buckets",
                device
                    .sessions
                    .iter()
                    .filter_map(|p| p.shape.map(|b| b.tag()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
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
        let (session, _busy, gate) = self.place(rows, length)?;
        let ort = session.ort();
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
        let values = {
            let _turn = gate.map(Gate::enter);
            session.run(&feeds, &[self.output.as_c_str()])?
        };
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
    /// the logits at its `sep_id` tokens. A graph without an `attention_mask` input cannot be
    /// given padding: a batch whose rows differ in length is refused.
    pub fn predict(&self, batch: &FlatBatch, pad_id: i64, sep_id: i64) -> Result<SepLogits, OrtError> {
        let lengths = batch.lengths();
        let (shortest, longest) = (lengths.iter().min().copied(), lengths.iter().max().copied());
        if !takes_mask(&self.inputs) && shortest != longest {
            return Err(OrtError(format!(
                "the model takes no attention_mask, so rows of {} tokens cannot be padded to {}: \
                 give it one row per batch (the classifier's buckets)",
                shortest.unwrap_or(0),
                longest.unwrap_or(0)
            )));
        }
        let padded = batch.padded(pad_id, None)?;
        let logits = self.run(&padded.input_ids, &padded.attention_mask, padded.rows, padded.length)?;
        let rows = sep_logits(&logits, &padded.input_ids, &lengths, sep_id);
        Ok(SepLogits { labels: logits.labels, rows })
    }
}

/// Whether the graph reads a padding mask (a fused export's does not: it cannot be padded).
fn takes_mask(inputs: &[Input]) -> bool {
    inputs.iter().any(|i| i.feed == Feed::AttentionMask)
}

/// Options with `config`'s thread counts and nothing else.
fn cpu_threads(ort: &Ort, config: &SessionConfig) -> Result<SessionOptions, OrtError> {
    let mut options = SessionOptions::new(ort)?;
    options.set_intra_op_threads(config.intra_op_threads)?;
    options.set_inter_op_threads(config.inter_op_threads)?;
    Ok(options)
}

/// The TensorRT sessions on GPU `device`, one per profile, and the buckets capped to them.
///
/// With a cache folder (`gpu.tensorrt.cache_dir`, else `tensorrt/<gpu>` beside a model file):
/// a record there that matches the model, ONNX Runtime's version and the precision means
/// its EPContext models are loaded (no build); otherwise every profile's engine is built and
/// its EPContext model written there, then the record. A model in memory without a cache
/// folder, or `no_cache`, builds at every open.
fn tensorrt_sessions(
    ort: &Arc<Ort>,
    source: ModelSource<'_>,
    config: &SessionConfig,
    gpu: &GpuOptions,
    device: u32,
    notes: &mut Vec<String>,
) -> Result<(Vec<Placed>, Vec<Bucket>), OrtError> {
    let trt = &gpu.tensorrt;
    require_provider(ort, ExecutionProvider::TensorRt { device_id: device })?;
    let found = cuda::probe(device, gpu.driver_library.as_deref().map(Path::as_os_str)).map_err(|e| {
        OrtError(format!(
            "cannot run on execution provider 'tensorrt' on GPU {device}: {}; pulpie-rt does not fall \
             back to the CPU (ask for backend 'cpu' to run there)",
            e.0
        ))
    })?;
    let model_file = match source {
        ModelSource::File(path) => Some(path),
        ModelSource::Bytes(_) => None,
    };
    let dir: Option<PathBuf> = if trt.no_cache {
        None
    } else {
        trt.cache_dir.clone().or_else(|| {
            model_file.map(|path| path.parent().unwrap_or(Path::new(".")).join("tensorrt").join(found.slug()))
        })
    };
    let stem = model_file
        .and_then(|p| p.file_stem())
        .map_or("model".to_string(), |s| s.to_string_lossy().into_owned());
    let precision = trt.fp16.unwrap_or(true);
    let version = ort.library().version().to_string();
    // a record that matches: load the EPContext models it lists
    if let (Some(dir), Some(model)) = (&dir, model_file) {
        let record_path = dir.join(RECORD_NAME);
        let current = CacheRecord::of(model, &version, precision, &[])?;
        let precision_matches = |fp16: bool| trt.fp16.is_none_or(|asked| asked == fp16);
        let record = std::fs::read(&record_path).ok().and_then(|text| CacheRecord::parse(&text));
        if let Some(record) = record.filter(|r| {
            (&r.model, r.model_bytes, r.model_mtime, &r.onnxruntime)
                == (&current.model, current.model_bytes, current.model_mtime, &current.onnxruntime)
                && precision_matches(r.fp16)
                && r.profiles.iter().all(|b| context_model_path(dir, &stem, b).is_file())
                && (trt.profiles.is_empty() || trt.profiles == r.profiles)
        }) {
            let mut sessions = Vec::with_capacity(record.profiles.len());
            for shape in &record.profiles {
                let context = context_model_path(dir, &stem, shape);
                let mut options = cpu_threads(ort, config)?;
                let keys = vec![("device_id".to_string(), device.to_string())];
                append_gpu(
                    ort,
                    &mut options,
                    ExecutionProvider::TensorRt { device_id: device },
                    device,
                    gpu,
                    Some(keys),
                )?;
                let session = Session::open(ort, ModelSource::File(&context), &options).map_err(|e| {
                    OrtError(format!(
                        "{}; the TensorRT engines in {} were built for {} (ONNX Runtime {}): remove \
                         the folder to rebuild them",
                        e.0,
                        dir.display(),
                        found.name,
                        record.onnxruntime
                    ))
                })?;
                sessions.push(Placed { shape: Some(*shape), session });
            }
            let buckets = super::gpu::buckets_for_boxes(&record.profiles, &super::batches::DEFAULT_BUCKETS)?;
            notes.push(format!(
                "TensorRT on GPU {device} ({}): {} {} engines loaded from {}",
                found.name,
                record.profiles.len(),
                if record.fp16 { "fp16" } else { "fp32" },
                dir.display()
            ));
            return Ok((sessions, buckets));
        }
    }
    // build: every profile's engine, into the folder when there is one
    let (boxes, buckets) = trt.boxes()?;
    // the folders made here, removed again (when still empty) if the provider does not load
    let mut made: Vec<PathBuf> = Vec::new();
    if let Some(dir) = &dir {
        let mut missing = dir.as_path();
        while !missing.exists() {
            made.push(missing.to_path_buf());
            match missing.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => missing = parent,
                _ => break,
            }
        }
    }
    let dir = match dir {
        Some(dir) => match std::fs::create_dir_all(&dir) {
            Ok(()) => Some(dir),
            Err(e) => {
                notes.push(format!(
                    "TensorRT engines are not cached: cannot create {} ({e}); each open builds them",
                    dir.display()
                ));
                None
            }
        },
        None => None,
    };
    let mut sessions = Vec::with_capacity(boxes.len());
    for shape in &boxes {
        let files = match &dir {
            Some(dir) => EngineFiles::BuildInto {
                dir: dir.clone(),
                context_model: context_model_path(dir, &stem, shape),
            },
            None => EngineFiles::Build,
        };
        let mut options = cpu_threads(ort, config)?;
        let keys = tensorrt_provider_options(device, trt, shape, &files);
        let appended = append_gpu(
            ort,
            &mut options,
            ExecutionProvider::TensorRt { device_id: device },
            device,
            gpu,
            Some(keys),
        );
        if appended.is_err() {
            for folder in &made {
                let _ = std::fs::remove_dir(folder); // made for this build, still empty
            }
        }
        appended?;
        let session = Session::open(ort, source, &options)?;
        if let EngineFiles::BuildInto { context_model, .. } = &files {
            // TensorRT builds a profile's engine while the session is made and wraps it in the
            // EPContext model then; none means TensorRT took no part of the model (CUDA would
            // run it all, not what was asked)
            if !context_model.is_file() {
                return Err(OrtError(format!(
                    "execution provider 'tensorrt' on GPU {device} took no part of {source}: \
                     ONNX Runtime wrote no EPContext model {} for the profile {}",
                    context_model.display(),
                    shape.tag()
                )));
            }
        }
        sessions.push(Placed { shape: Some(*shape), session });
    }
    match (&dir, model_file) {
        (Some(dir), Some(model)) => {
            let record = CacheRecord::of(model, &version, precision, &boxes)?;
            std::fs::write(dir.join(RECORD_NAME), record.to_json())
                .map_err(|e| OrtError(format!("cannot write {}: {e}", dir.join(RECORD_NAME).display())))?;
            notes.push(format!(
                "TensorRT on GPU {device} ({}): {} {} engines built into {}",
                found.name,
                boxes.len(),
                if precision { "fp16" } else { "fp32" },
                dir.display()
            ));
        }
        _ => notes.push(format!(
            "TensorRT on GPU {device} ({}): {} {} engines built (no disk cache)",
            found.name,
            boxes.len(),
            if precision { "fp16" } else { "fp32" }
        )),
    }
    Ok((sessions, buckets))
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

    /// Two devices' sessions (CPU sessions standing in for two GPUs): a call goes to the device
    /// with the fewest calls running, a TensorRT-style profile is chosen by the batch's shape,
    /// and the results do not depend on the device. A GPU runs a few calls at a time (here 2):
    /// a call placed there waits while others hold every place of its gate; the CPU has no
    /// gate.
    #[test]
    #[ignore = "needs ONNX Runtime (PULPIE_RT_ORT_LIB)"]
    fn calls_go_to_the_least_busy_device_and_the_profile_that_holds_them() {
        let ort = Ort::load(None).expect("set PULPIE_RT_ORT_LIB");
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../pulpie_rt/default_model/model.onnx");
        let config =
            SessionConfig { intra_op_threads: 1, inter_op_threads: 1, provider: ExecutionProvider::Cpu };
        let mut classifier = TokenClassifier::open(&ort, ModelSource::File(&path), &config, None).unwrap();
        let short =
            ShapeBox { min_rows: 1, min_length: 1, opt_rows: 4, opt_length: 8, max_rows: 4, max_length: 8 };
        let long =
            ShapeBox { min_rows: 1, min_length: 9, opt_rows: 2, opt_length: 64, max_rows: 2, max_length: 64 };
        let open = || {
            Session::open(&ort, ModelSource::File(&path), &session_options(&ort, &config).unwrap()).unwrap()
        };
        let mut gpu = Device::new(vec![
            Placed { shape: Some(short), session: open() },
            Placed { shape: Some(long), session: open() },
        ]);
        gpu.gate = Some(Gate::new(2));
        classifier.devices.push(gpu);
        let expected = classifier.run(&[0, 812, 4, 1], &[1, 1, 1, 1], 1, 4).unwrap();
        {
            let (first, _held, gate) = classifier.place(1, 4).unwrap();
            assert!(std::ptr::eq(first, &classifier.devices[0].sessions[0].session));
            assert!(gate.is_none(), "the CPU runs calls side by side");
            // device 0 is busy: the next call goes to device 1, to the profile of its shape
            let (second, _also, gate) = classifier.place(2, 30).unwrap();
            assert!(std::ptr::eq(second, &classifier.devices[1].sessions[1].session));
            assert!(std::ptr::eq(gate.unwrap(), classifier.devices[1].gate.as_ref().unwrap()));
            // a tie goes to the first device; then device 1 is the least busy again
            let (third, _third, _) = classifier.place(1, 4).unwrap();
            assert!(std::ptr::eq(third, &classifier.devices[0].sessions[0].session));
            assert_eq!(
                classifier.devices.iter().map(|d| d.busy.load(Ordering::SeqCst)).collect::<Vec<_>>(),
                [2, 1]
            );
            let error = classifier.place(3, 30).err().unwrap();
            assert_eq!(
                error.0,
                "a batch of 3 rows × 30 tokens is outside every TensorRT profile (1-8, 9-64): batch \
                 with the classifier's buckets"
            );
            assert_eq!(
                classifier.devices.iter().map(|d| d.busy.load(Ordering::SeqCst)).collect::<Vec<_>>(),
                [2, 1]
            );
        }
        assert!(classifier.devices.iter().all(|d| d.busy.load(Ordering::SeqCst) == 0));
        let busy = &classifier.devices[0].busy;
        busy.fetch_add(1, Ordering::SeqCst);
        assert_eq!(classifier.run(&[0, 812, 4, 1], &[1, 1, 1, 1], 1, 4).unwrap(), expected);
        // device 0 still busy, so the next call goes to device 1, whose two places are held here
        let gate = classifier.devices[1].gate.as_ref().unwrap();
        let (turn, _other) = (gate.enter(), gate.enter());
        let classifier = &classifier;
        std::thread::scope(|scope| {
            let (done, result) = std::sync::mpsc::channel();
            scope.spawn(move || done.send(classifier.run(&[0, 812, 4, 1], &[1, 1, 1, 1], 1, 4)).unwrap());
            let waited = result.recv_timeout(std::time::Duration::from_millis(300));
            assert!(waited.is_err(), "a call ran on a GPU while others held every place of its gate");
            drop(turn);
            let ran = result.recv_timeout(std::time::Duration::from_secs(60)).expect("the call never ran");
            assert_eq!(ran.unwrap(), expected);
        });
        busy.fetch_sub(1, Ordering::SeqCst);
    }

    #[test]
    fn calls_per_gpu_are_asked_or_follow_the_graph_and_a_bad_ask_is_refused_with_the_reason() {
        assert_eq!(gpu_calls_from(None).unwrap(), None);
        assert_eq!(gpu_calls_from(Some(" 4 ")).unwrap(), Some(4));
        assert_eq!((default_gpu_calls(true), default_gpu_calls(false)), (1, 2));
        for bad in ["0", "65", "two", ""] {
            assert_eq!(
                gpu_calls_from(Some(bad)).unwrap_err().0,
                format!("PULPIE_RT_GPU_CALLS='{bad}': give a number of model calls from 1 to 64")
            );
        }
    }

    #[test]
    fn onnx_runtimes_reason_is_kept_without_its_source_location() {
        let raw = "/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:2043 \
                   onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : \
                   FAIL : Failed to load library x.so with error: libcublasLt.so.13: cannot open\n";
        assert_eq!(ort_reason(raw), "Failed to load library x.so with error: libcublasLt.so.13: cannot open");
        assert_eq!(ort_reason("plain reason\n"), "plain reason");
    }

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
