//! The token classifier: a bundle's `model.onnx` (EuroBERT token classification, exported by
//! `pulpie_rt.export`) run on `[rows, length]` token ids (`eval/margins.py` runs the same graph
//! through onnxruntime's Python API as the tests' oracle).

use super::api::{ElementType, ModelSource, Ort, Session, SessionOptions, Tensor, TensorData, TensorSpec};
use super::batches::{
    default_buckets, make_batches, pack, packed_buckets, packed_sep_logits, packed_shape, plan_batches,
    sep_logits, DEFAULT_MAX_BATCH_ATTENTION,
};
use super::binding::{Binding, Memory, RunOptions};
use super::cuda;
use super::gpu::{
    context_model_path, cuda_provider_options, tensorrt_provider_options, CacheRecord, EngineFiles,
    GpuOptions, ShapeBox, RECORD_NAME,
};
use super::library::{preload_gpu_libraries, Preloaded, GPU_LIBRARY_DIRS_ENV};
use super::providers::ExecutionProvider;
use super::types::{BatchPlan, Bucket, FlatBatch, Logits, OrtError, PackShape, PackedCall, SepLogits};
use std::collections::HashMap;
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
    // the CUDA, cuDNN and TensorRT wheels beside ONNX Runtime's (pip install 'pulpie-rt[gpu]'):
    // loaded first, so that the providers find them without LD_LIBRARY_PATH
    let preloaded = preload_gpu_libraries(Path::new(ort.library().path()));
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
            "ONNX Runtime {} cannot load its {} provider ({}){LIBRARIES_NEEDED}{}",
            ort.library().version(),
            if matches!(provider, ExecutionProvider::Cuda { .. }) { "CUDA" } else { "TensorRT" },
            ort_reason(&e.0),
            preloaded_note(preloaded),
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
                                runtime, cuBLAS and cuRAND, cuDNN 9 and for TensorRT libnvinfer 10: \
                                pip install 'pulpie-rt[gpu]' puts them beside ONNX Runtime, where \
                                the core loads them from, or put them on the library path \
                                (LD_LIBRARY_PATH)";

/// What the core found to preload, for that message.
fn preloaded_note(preloaded: &Preloaded) -> String {
    if preloaded.dirs.is_empty() {
        format!(" (no NVIDIA library folder beside ONNX Runtime's or in {GPU_LIBRARY_DIRS_ENV})")
    } else {
        format!(
            " ({} libraries preloaded from {})",
            preloaded.loaded.len(),
            preloaded.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        )
    }
}

/// What the classifier feeds to each graph input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Feed {
    InputIds,
    AttentionMask,
    /// `0..length` on every row, as `OnnxRuntimeBackend` feeds a graph that asks for them; in
    /// a packed call each chunk's own positions from 0
    PositionIds,
    /// a packed call's chunk offsets, int32 `[rows + 1]` (`batches::pack`)
    CumulativeSequenceLength,
    /// a packed call's token places, int32 `[rows, longest]` (`batches::pack`)
    TokenOffset,
}

/// The inputs the classifier can feed, by graph input name.
pub const FEED_NAMES: [&str; 5] =
    ["input_ids", "attention_mask", "position_ids", "cumulative_sequence_length", "token_offset"];

/// Environment switch for fixed call shapes (`TokenClassifier::fixed_shapes`): "1" on.
pub const FIXED_SHAPES_ENV: &str = "PULPIE_RT_FIXED_SHAPES";
/// Environment switch for IO binding (`binding.rs`; a packed graph, fixed shapes): "1" on.
pub const IO_BINDING_ENV: &str = "PULPIE_RT_IO_BINDING";
/// Environment switch for CUDA graphs (ONNX Runtime's `enable_cuda_graph`, one captured graph
/// per packed call shape and lane, `gpu_graph_id`; a packed graph on the CUDA provider, with IO
/// binding and fixed shapes): "1" on.
pub const CUDA_GRAPH_ENV: &str = "PULPIE_RT_CUDA_GRAPH";

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
    /// a packed graph (`cumulative_sequence_length` and `token_offset` inputs): each call is
    /// one row of several chunks side by side (`batches::pack`)
    packed: bool,
    /// every call of a bucket has one shape (`PULPIE_RT_FIXED_SHAPES=1`): a packed call is
    /// filled up to its bucket's `PackShape`, a padded batch's rows to the bucket's length
    fixed_shapes: bool,
}

/// Whether the switch `name` is on ("1"; unset or "0": off; anything else refused).
fn switch(name: &str) -> Result<bool, OrtError> {
    switch_from(name, std::env::var(name).ok().as_deref())
}

fn switch_from(name: &str, value: Option<&str>) -> Result<bool, OrtError> {
    match value.map(str::trim) {
        None | Some("") | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(OrtError(format!("{name}='{other}': give 1 (on) or 0 (off)"))),
    }
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
    /// With IO binding (`PULPIE_RT_IO_BINDING`, `PULPIE_RT_CUDA_GRAPH`): one lane per call that
    /// may run at once, each with its buffers bound per call shape; with CUDA graphs each lane
    /// has a session of its own (a captured graph is replayed by one call at a time)
    lanes: Vec<Mutex<Lane>>,
    /// where the lanes' buffers live
    memory: Memory,
    /// the next lane to try
    next_lane: AtomicUsize,
}

/// One call at a time: a session (an index into its device's `sessions`) and its bindings,
/// one per packed call shape, each with its CUDA graph id.
struct Lane {
    session: usize,
    bound: HashMap<PackShape, Binding>,
}

impl Device {
    /// A device's sessions, without a gate (the CPU's; `open_on` gives GPUs theirs).
    fn new(sessions: Vec<Placed>) -> Device {
        Device {
            sessions,
            busy: AtomicUsize::new(0),
            gate: None,
            lanes: Vec::new(),
            memory: Memory::Cpu,
            next_lane: AtomicUsize::new(0),
        }
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
        let cuda_graph = switch(CUDA_GRAPH_ENV)?;
        if cuda_graph && !matches!(config.provider, ExecutionProvider::Cuda { .. }) {
            return Err(OrtError(format!(
                "{CUDA_GRAPH_ENV}=1: CUDA graphs are ONNX Runtime's CUDA provider's (backend 'cuda'), \
                 not the {} provider's",
                config.provider.name()
            )));
        }
        // one session per call that may run at once: a captured graph replays one call at a time
        let copies = if cuda_graph { gpu_calls.unwrap_or_else(|| default_gpu_calls(false)) } else { 1 };
        let graph_options = GpuOptions { cuda_graph, ..gpu.clone() };
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
                            let mut sessions = Vec::with_capacity(copies);
                            for _ in 0..copies {
                                let mut options = cpu_threads(ort, config)?;
                                append_gpu(ort, &mut options, provider, id, &graph_options, None)?;
                                sessions.push(Placed {
                                    shape: None,
                                    session: Session::open(ort, source, &options)?,
                                });
                            }
                            (sessions, default_buckets())
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
                "cumulative_sequence_length" => Feed::CumulativeSequenceLength,
                "token_offset" => Feed::TokenOffset,
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
            if matches!(feed, Feed::CumulativeSequenceLength | Feed::TokenOffset) && !int32 {
                return Err(OrtError(format!(
                    "{source}: model input '{}' must be tensor(int32) (PackedMultiHeadAttention's)",
                    spec.name
                )));
            }
            inputs.push(Input { name: spec.c_name.clone(), feed, int32 });
        }
        let has = |feed: Feed| inputs.iter().any(|i| i.feed == feed);
        let packed = has(Feed::CumulativeSequenceLength) || has(Feed::TokenOffset);
        let packed_inputs = has(Feed::CumulativeSequenceLength)
            && has(Feed::TokenOffset)
            && has(Feed::PositionIds)
            && !has(Feed::AttentionMask);
        if packed && !packed_inputs {
            return Err(OrtError(format!(
                "{source}: a packed model takes input_ids, position_ids, cumulative_sequence_length \
                 and token_offset, and no attention_mask (the model's inputs: {})",
                names(session.inputs())
            )));
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
        let io_binding = cuda_graph || switch(IO_BINDING_ENV)?;
        let fixed_shapes = io_binding || switch(FIXED_SHAPES_ENV)?;
        if io_binding && !packed {
            return Err(OrtError(format!(
                "{source}: IO binding and CUDA graphs ({IO_BINDING_ENV}, {CUDA_GRAPH_ENV}) need a packed \
                 graph, whose calls have one shape per bucket (python -m pulpie_rt.export.gpu_graph \
                 --layout packed)"
            )));
        }
        if io_binding {
            let calls = gpu_calls.unwrap_or_else(|| default_gpu_calls(false));
            for device in &mut devices {
                let lanes = if cuda_graph { calls } else { device.gate.as_ref().map_or(1, |_| calls) };
                device.lanes = (0..lanes)
                    .map(|lane| {
                        Mutex::new(Lane { session: lane % device.sessions.len(), bound: HashMap::new() })
                    })
                    .collect();
            }
            if let Some(first) = config.provider.device() {
                let mut ids = vec![first];
                ids.extend(gpu.more_devices.iter().copied().filter(|&d| d != first));
                for (device, id) in devices.iter_mut().zip(ids) {
                    device.memory = Memory::Cuda { device: id };
                }
            }
        }
        Ok(TokenClassifier {
            devices,
            inputs,
            output,
            output_half,
            provider,
            buckets,
            notes,
            packed,
            fixed_shapes,
        })
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
    fn place(
        &self,
        rows: usize,
        length: usize,
    ) -> Result<(&Session, Busy<'_>, Option<&Gate>, &Device), OrtError> {
        let device = self
            .devices
            .iter()
            .min_by_key(|d| d.busy.load(Ordering::SeqCst))
            .expect("a classifier has a device");
        device.busy.fetch_add(1, Ordering::SeqCst);
        let busy = Busy(&device.busy);
        let placed = device.sessions.iter().find(|p| p.shape.is_none_or(|b| b.holds(rows, length)));
        match placed {
            Some(placed) => Ok((&placed.session, busy, device.gate.as_ref(), device)),
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
        let positions: Vec<i64> = if self.inputs.iter().any(|i| i.feed == Feed::PositionIds) {
            (0..rows).flat_map(|_| 0..length as i64).collect()
        } else {
            Vec::new()
        };
        self.call(&CallInputs {
            input_ids,
            attention_mask,
            position_ids: &positions,
            cumulative_seq_lengths: &[],
            token_offset: &[],
            rows,
            length,
            packed_rows: 0,
            packed_longest: 0,
        })
    }

    /// Logits `[1, tokens, labels]` of a packed call (`batches::pack`).
    pub fn run_packed(&self, call: &PackedCall) -> Result<Logits, OrtError> {
        if !self.packed {
            return Err(OrtError("the model is not a packed graph: it takes no token_offset".into()));
        }
        self.call(&CallInputs {
            input_ids: &call.input_ids,
            attention_mask: &[],
            position_ids: &call.position_ids,
            cumulative_seq_lengths: &call.cumulative_seq_lengths,
            token_offset: &call.token_offset,
            rows: 1,
            length: call.input_ids.len(),
            packed_rows: call.rows,
            packed_longest: call.longest,
        })
    }

    /// One model call: every graph input from `inputs`, on the least busy device.
    fn call(&self, inputs: &CallInputs<'_>) -> Result<Logits, OrtError> {
        let (rows, length) = (inputs.rows, inputs.length);
        let (session, _busy, gate, device) = self.place(rows, length)?;
        if !device.lanes.is_empty() {
            let _turn = gate.map(Gate::enter);
            return self.call_bound(device, inputs);
        }
        let ort = session.ort();
        let shape = [rows as i64, length as i64];
        let offsets_shape = [inputs.packed_rows as i64 + 1];
        let places_shape = [inputs.packed_rows as i64, inputs.packed_longest as i64];
        // int32 copies for a graph that takes int32 ids (kept alive through the run)
        let narrowed: Vec<Option<Vec<i32>>> = self
            .inputs
            .iter()
            .map(|input| {
                let values = match input.feed {
                    Feed::InputIds => inputs.input_ids,
                    Feed::AttentionMask => inputs.attention_mask,
                    Feed::PositionIds => inputs.position_ids,
                    Feed::CumulativeSequenceLength | Feed::TokenOffset => return Ok(None),
                };
                input.int32.then(|| narrow(values, &input.name)).transpose()
            })
            .collect::<Result<_, _>>()?;
        let mut tensors = Vec::with_capacity(self.inputs.len());
        for (input, narrow) in self.inputs.iter().zip(&narrowed) {
            let (data, dims): (TensorData<'_>, &[i64]) = match (narrow, input.feed) {
                (_, Feed::CumulativeSequenceLength) => {
                    (TensorData::Int32(inputs.cumulative_seq_lengths), &offsets_shape)
                }
                (_, Feed::TokenOffset) => (TensorData::Int32(inputs.token_offset), &places_shape),
                (Some(values), _) => (TensorData::Int32(values), &shape),
                (None, Feed::InputIds) => (TensorData::Int64(inputs.input_ids), &shape),
                (None, Feed::AttentionMask) => (TensorData::Int64(inputs.attention_mask), &shape),
                (None, Feed::PositionIds) => (TensorData::Int64(inputs.position_ids), &shape),
            };
            tensors.push(Tensor::new(ort, data, dims)?);
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

    /// A packed call through a lane of `device`: its buffers for the call's shape (bound at the
    /// shape's first call, with the next CUDA graph id) filled, run, the logits read back.
    fn call_bound(&self, device: &Device, inputs: &CallInputs<'_>) -> Result<Logits, OrtError> {
        let lanes = device.lanes.len();
        let first = device.next_lane.fetch_add(1, Ordering::Relaxed) % lanes;
        // a free lane if there is one (the gate lets no more calls in than lanes), else wait
        let mut lane = (0..lanes)
            .find_map(|k| device.lanes[(first + k) % lanes].try_lock().ok())
            .unwrap_or_else(|| device.lanes[first].lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        let session = &device.sessions[lane.session].session;
        let shape =
            PackShape { tokens: inputs.length, rows: inputs.packed_rows, longest: inputs.packed_longest };
        let labels = self.output_labels()?;
        let output_element = if self.output_half { ElementType::Float16 } else { ElementType::Float32 };
        if !lane.bound.contains_key(&shape) {
            let graph_id = lane.bound.len() + 1;
            let specs: Vec<(&std::ffi::CStr, ElementType, Vec<i64>)> = self
                .inputs
                .iter()
                .map(|input| {
                    let element = if input.int32 { ElementType::Int32 } else { ElementType::Int64 };
                    let dims = match input.feed {
                        Feed::CumulativeSequenceLength => vec![shape.rows as i64 + 1],
                        Feed::TokenOffset => vec![shape.rows as i64, shape.longest as i64],
                        _ => vec![1, shape.tokens as i64],
                    };
                    (input.name.as_c_str(), element, dims)
                })
                .collect();
            let output =
                [(self.output.as_c_str(), output_element, vec![1, shape.tokens as i64, labels as i64])];
            let run_options = RunOptions::new(session, &[("gpu_graph_id", graph_id.to_string())])?;
            let binding = Binding::new(session, device.memory, &specs, &output, run_options)?;
            lane.bound.insert(shape, binding);
        }
        let lane = &mut *lane;
        let binding = lane.bound.get_mut(&shape).expect("bound above");
        for (input, buffer) in self.inputs.iter().zip(&binding.inputs) {
            let wide = match input.feed {
                Feed::InputIds => inputs.input_ids,
                Feed::PositionIds => inputs.position_ids,
                Feed::AttentionMask => inputs.attention_mask,
                Feed::CumulativeSequenceLength => {
                    buffer.write(as_bytes(inputs.cumulative_seq_lengths))?;
                    continue;
                }
                Feed::TokenOffset => {
                    buffer.write(as_bytes(inputs.token_offset))?;
                    continue;
                }
            };
            if input.int32 {
                buffer.write(as_bytes(&narrow(wide, &input.name)?))?;
            } else {
                buffer.write(as_bytes(wide))?;
            }
        }
        binding.run(&device.sessions[lane.session].session)?;
        let count = shape.tokens * labels;
        let data = if self.output_half {
            let mut half = vec![0u16; count];
            binding.outputs[0].read(as_bytes_mut(&mut half))?;
            half.into_iter().map(f16_to_f32).collect()
        } else {
            let mut full = vec![0f32; count];
            binding.outputs[0].read(as_bytes_mut(&mut full))?;
            full
        };
        Ok(Logits { rows: 1, length: shape.tokens, labels, data })
    }

    /// The output's label count, fixed in the graph (IO binding allocates the output).
    fn output_labels(&self) -> Result<usize, OrtError> {
        let spec = self.session().outputs().iter().find(|s| s.c_name == self.output);
        match spec.and_then(|s| s.dims.last().copied()) {
            Some(labels) if labels > 0 => Ok(labels as usize),
            _ => Err(OrtError(format!(
                "IO binding needs the output {:?}'s last dimension (labels) fixed in the graph",
                self.output
            ))),
        }
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

    /// The batches of chunks of `lengths` for this graph, `max_batch_tokens` a call: a packed
    /// graph's hold chunks of one length bucket side by side (`batches::packed_buckets`, the
    /// tokens summed), the others' are padded (`make_batches` with `buckets`).
    pub fn plan(&self, lengths: &[usize], max_batch_tokens: usize) -> Vec<BatchPlan> {
        if self.packed {
            plan_batches(lengths, max_batch_tokens, &packed_buckets(max_batch_tokens), None, false)
        } else {
            make_batches(lengths, max_batch_tokens, &self.buckets, Some(DEFAULT_MAX_BATCH_ATTENTION))
        }
    }

    /// `predict` for a batch of `plan`'s in `bucket`: a packed graph gets the batch packed (to
    /// the bucket's fixed shape with `fixed_shapes`), a padded one its rows padded to the
    /// longest (to the bucket's length with `fixed_shapes`).
    pub fn predict_in(
        &self,
        batch: &FlatBatch,
        bucket: &Bucket,
        max_batch_tokens: usize,
        pad_id: i64,
        sep_id: i64,
    ) -> Result<SepLogits, OrtError> {
        if self.packed {
            let shape = self.fixed_shapes.then(|| packed_shape(bucket, max_batch_tokens));
            let call = pack(batch, pad_id, shape)?;
            let logits = self.run_packed(&call)?;
            return Ok(SepLogits { labels: logits.labels, rows: packed_sep_logits(&logits, &call, sep_id) });
        }
        if self.fixed_shapes && takes_mask(&self.inputs) && batch.max_length() <= bucket.max_length {
            let padded = batch.padded(pad_id, Some(bucket.max_length))?;
            let logits = self.run(&padded.input_ids, &padded.attention_mask, padded.rows, padded.length)?;
            let rows = sep_logits(&logits, &padded.input_ids, &batch.lengths(), sep_id);
            return Ok(SepLogits { labels: logits.labels, rows });
        }
        self.predict(batch, pad_id, sep_id)
    }

    /// Whether the graph is packed (`plan` packs chunks side by side).
    pub fn is_packed(&self) -> bool {
        self.packed
    }
}

/// What one model call is given (`TokenClassifier::call`): `[rows, length]` ids, mask and
/// positions, and for a packed call its offsets `[packed_rows + 1]` and token places
/// `[packed_rows, packed_longest]`.
struct CallInputs<'a> {
    input_ids: &'a [i64],
    attention_mask: &'a [i64],
    position_ids: &'a [i64],
    cumulative_seq_lengths: &'a [i32],
    token_offset: &'a [i32],
    rows: usize,
    length: usize,
    packed_rows: usize,
    packed_longest: usize,
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
            (&r.model, r.model_bytes, &r.model_hash, &r.onnxruntime)
                == (&current.model, current.model_bytes, &current.model_hash, &current.onnxruntime)
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

/// A slice of plain numbers as its bytes.
fn as_bytes<T: Copy>(values: &[T]) -> &[u8] {
    // i32, i64, u16 and f32 have no padding and any byte pattern is a value
    unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) }
}

fn as_bytes_mut<T: Copy>(values: &mut [T]) -> &mut [u8] {
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr() as *mut u8, std::mem::size_of_val(values)) }
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
            let (first, _held, gate, _) = classifier.place(1, 4).unwrap();
            assert!(std::ptr::eq(first, &classifier.devices[0].sessions[0].session));
            assert!(gate.is_none(), "the CPU runs calls side by side");
            // device 0 is busy: the next call goes to device 1, to the profile of its shape
            let (second, _also, gate, _) = classifier.place(2, 30).unwrap();
            assert!(std::ptr::eq(second, &classifier.devices[1].sessions[1].session));
            assert!(std::ptr::eq(gate.unwrap(), classifier.devices[1].gate.as_ref().unwrap()));
            // a tie goes to the first device; then device 1 is the least busy again
            let (third, _third, _, _) = classifier.place(1, 4).unwrap();
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
    fn switches_are_one_or_zero_and_anything_else_is_refused_with_the_reason() {
        assert!(!switch_from(CUDA_GRAPH_ENV, None).unwrap());
        assert!(!switch_from(CUDA_GRAPH_ENV, Some(" 0")).unwrap());
        assert!(switch_from(IO_BINDING_ENV, Some("1")).unwrap());
        assert_eq!(
            switch_from(FIXED_SHAPES_ENV, Some("yes")).unwrap_err().0,
            "PULPIE_RT_FIXED_SHAPES='yes': give 1 (on) or 0 (off)"
        );
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
