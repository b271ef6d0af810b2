//! How the token classifier runs on GPUs: the CUDA and TensorRT execution providers' options,
//! TensorRT's shape profiles from the batcher's buckets, and TensorRT's caches on disk.
//!
//! TensorRT builds an engine for a box of input shapes (min/opt/max `[rows, length]`) and runs
//! only inside it. ONNX Runtime's TensorRT provider (1.31) builds every profile it is given
//! into one engine but keeps its execution context on profile 0, so an input of another
//! profile fails: each box gets a session of its own here, one per batcher bucket, sized so
//! that every batch `make_batches` cuts (rows × longest ≤ the token budget, rows × longest²
//! ≤ the attention budget) falls in exactly one box, with `Bucket::max_rows` capping the rows
//! of a batch to its box. The cost is the weights once per box on the GPU.
//!
//! With a cache folder, each box's session builds its engine once (FP16 by default) and dumps
//! an EPContext model (`<model>_<lo>-<hi>_ctx.onnx`, ONNX Runtime's wrapper of a serialized
//! engine, `trt_dump_ep_context_model`) beside the engine and TensorRT's timing cache; a
//! record (`tensorrt.json`) names the boxes, the model file it was built from and the ONNX
//! Runtime version. Later opens load the EPContext models: no rebuild.

use super::batches::{DEFAULT_BUCKETS, DEFAULT_MAX_BATCH_ATTENTION, DEFAULT_MAX_BATCH_TOKENS};
use super::types::{Bucket, OrtError};
use crate::json::{self, Value};
use std::path::{Path, PathBuf};

/// The graph inputs a box's shapes are given for (the classifier feeds each `[rows, length]`;
/// ONNX Runtime ignores names the graph lacks).
pub const PROFILE_INPUTS: [&str; 3] = ["input_ids", "attention_mask", "position_ids"];
/// The cache folder's record of what was built.
pub const RECORD_NAME: &str = "tensorrt.json";
/// The record's format; another one is rebuilt (1 keyed the model by its modification time).
const RECORD_VERSION: i64 = 2;

/// A box of `[rows, length]` input shapes TensorRT builds one engine for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeBox {
    pub min_rows: usize,
    pub min_length: usize,
    pub opt_rows: usize,
    pub opt_length: usize,
    pub max_rows: usize,
    pub max_length: usize,
}

impl ShapeBox {
    pub fn holds(&self, rows: usize, length: usize) -> bool {
        (self.min_rows..=self.max_rows).contains(&rows)
            && (self.min_length..=self.max_length).contains(&length)
    }

    /// The file-name tag of the box: "129-256".
    pub fn tag(&self) -> String {
        format!("{}-{}", self.min_length, self.max_length)
    }
}

/// One box per bucket of the batcher: lengths `(previous bucket, bucket]`, tuned at the
/// bucket's length with the rows the token budget allows there, and at most the rows a batch
/// of that bucket may hold: the token budget over the bucket's shortest length (its half for
/// the first bucket, whose rows may be a single token long) and the attention budget over its
/// longest. Returns the boxes and the buckets with those row caps, for `make_batches`.
pub fn boxes_for_buckets(
    buckets: &[usize],
    max_batch_tokens: usize,
    max_batch_attention: usize,
) -> (Vec<ShapeBox>, Vec<Bucket>) {
    let mut boxes = Vec::with_capacity(buckets.len());
    let mut capped = Vec::with_capacity(buckets.len());
    let mut previous = 0usize;
    for &bucket in buckets {
        let shortest = (previous + 1).max(bucket / 2);
        let by_tokens = max_batch_tokens / shortest;
        let by_attention = max_batch_attention / (bucket * bucket).max(1);
        let max_rows = by_tokens.min(by_attention).max(1);
        let opt_rows = (max_batch_tokens / bucket).clamp(1, max_rows);
        boxes.push(ShapeBox {
            min_rows: 1,
            min_length: previous + 1,
            opt_rows,
            opt_length: bucket,
            max_rows,
            max_length: bucket,
        });
        capped.push(Bucket { max_length: bucket, max_rows: Some(max_rows) });
        previous = bucket;
    }
    (boxes, capped)
}

/// The batcher's buckets capped to `boxes`: each bucket's rows at most those of the box that
/// holds its lengths; an error names a bucket no box holds.
pub fn buckets_for_boxes(boxes: &[ShapeBox], buckets: &[usize]) -> Result<Vec<Bucket>, OrtError> {
    let mut previous = 0usize;
    let mut capped = Vec::with_capacity(buckets.len());
    for &bucket in buckets {
        let holder = boxes.iter().find(|b| b.min_length <= previous + 1 && bucket <= b.max_length);
        let Some(holder) = holder else {
            return Err(OrtError(format!(
                "no TensorRT profile holds chunks of {}..{bucket} tokens (the profiles: {})",
                previous + 1,
                boxes.iter().map(ShapeBox::tag).collect::<Vec<_>>().join(", ")
            )));
        };
        capped.push(Bucket { max_length: bucket, max_rows: Some(holder.max_rows) });
        previous = bucket;
    }
    Ok(capped)
}

/// TensorRT settings of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorRtOptions {
    /// FP16 kernels where TensorRT finds them faster (`trt_fp16_enable`), with layer norms'
    /// Pow/Reduce kept in FP32 (`trt_layer_norm_fp32_fallback`); None: the precision of the
    /// engines in the cache folder, FP16 for a new build
    pub fp16: Option<bool>,
    /// the shape boxes, one session each; empty: one per batcher bucket (`boxes_for_buckets`)
    pub profiles: Vec<ShapeBox>,
    /// the token budget the boxes are sized for when `profiles` is empty (the engine's
    /// `max_batch_tokens`)
    pub max_batch_tokens: usize,
    /// where engines, the timing cache and the EPContext models live; None: a folder
    /// `tensorrt/<gpu>` beside a model file (no disk cache for a model in memory)
    pub cache_dir: Option<PathBuf>,
    /// no disk cache at all: every open builds its engines
    pub no_cache: bool,
    /// `trt_builder_optimization_level` (None: TensorRT's default, 3)
    pub builder_optimization_level: Option<u8>,
}

impl Default for TensorRtOptions {
    fn default() -> Self {
        TensorRtOptions {
            fp16: None,
            profiles: Vec::new(),
            max_batch_tokens: DEFAULT_MAX_BATCH_TOKENS,
            cache_dir: None,
            no_cache: false,
            builder_optimization_level: None,
        }
    }
}

impl TensorRtOptions {
    /// The boxes to build and the buckets capped to them.
    pub fn boxes(&self) -> Result<(Vec<ShapeBox>, Vec<Bucket>), OrtError> {
        if self.profiles.is_empty() {
            Ok(boxes_for_buckets(&DEFAULT_BUCKETS, self.max_batch_tokens, DEFAULT_MAX_BATCH_ATTENTION))
        } else {
            let buckets = buckets_for_boxes(&self.profiles, &DEFAULT_BUCKETS)?;
            Ok((self.profiles.clone(), buckets))
        }
    }
}

/// GPU settings of an engine: the provider and its device live in `SessionConfig`; these say
/// how it runs there.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuOptions {
    /// further GPUs for the same provider: one set of sessions each, every call runs on the
    /// least busy GPU
    pub more_devices: Vec<u32>,
    /// TF32 matrix products in the CUDA provider (`use_tf32`; off: exact FP32)
    pub cuda_tf32: bool,
    pub tensorrt: TensorRtOptions,
    /// the NVIDIA driver library to ask about GPUs (None: `libcuda.so.1`; tests point it
    /// elsewhere)
    pub driver_library: Option<PathBuf>,
    /// CUDA graphs (`enable_cuda_graph`): the engine's `PULPIE_RT_CUDA_GRAPH` sets it for the
    /// sessions of a packed graph, each call shape captured once per session
    pub cuda_graph: bool,
}

/// ONNX Runtime's `sdpa_kernel` bits (its `AttentionBackend`) the CUDA provider is given:
/// flash 1 | memory-efficient 2 | unfused 16.
pub const SDPA_KERNELS: u32 = 1 | 2 | 16;

/// `key=value` options of the CUDA provider on `device`.
pub fn cuda_provider_options(device: u32, options: &GpuOptions) -> Vec<(String, String)> {
    [
        ("device_id", device.to_string()),
        // shapes change from batch to batch: grow the arena by what is asked, not by powers of 2
        ("arena_extend_strategy", "kSameAsRequested".to_string()),
        ("cudnn_conv_algo_search", "HEURISTIC".to_string()),
        ("do_copy_in_default_stream", "1".to_string()),
        ("use_tf32", if options.cuda_tf32 { "1" } else { "0" }.to_string()),
        // the attention kernels a fused bundle's MultiHeadAttention may run: flash (1),
        // memory-efficient (2), unfused (16), never cuDNN's (8), which ONNX Runtime 1.31 took
        // by default and which builds a cuDNN graph for every new batch shape: 60 ms of host
        // work per model call with the GPU idle, 3.5x slower on an H200
        // (bench/results/gpu-20261204-h200-attention-kernels)
        ("sdpa_kernel", SDPA_KERNELS.to_string()),
    ]
    .into_iter()
    .chain(options.cuda_graph.then(|| ("enable_cuda_graph", "1".to_string())))
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Where a box's session reads or writes its engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineFiles {
    /// built at every open (no disk cache)
    Build,
    /// built once into the folder, with its EPContext model at `context_model`
    BuildInto { dir: PathBuf, context_model: PathBuf },
}

/// `key=value` options of the TensorRT provider on `device` for box `shape`.
pub fn tensorrt_provider_options(
    device: u32,
    options: &TensorRtOptions,
    shape: &ShapeBox,
    files: &EngineFiles,
) -> Vec<(String, String)> {
    let flag = |on: bool| if on { "1" } else { "0" }.to_string();
    let fp16 = options.fp16.unwrap_or(true);
    let shapes = |rows: usize, length: usize| {
        PROFILE_INPUTS.iter().map(|name| format!("{name}:{rows}x{length}")).collect::<Vec<_>>().join(",")
    };
    let mut list = vec![
        ("device_id".to_string(), device.to_string()),
        ("trt_fp16_enable".to_string(), flag(fp16)),
        ("trt_layer_norm_fp32_fallback".to_string(), flag(fp16)),
        ("trt_profile_min_shapes".to_string(), shapes(shape.min_rows, shape.min_length)),
        ("trt_profile_opt_shapes".to_string(), shapes(shape.opt_rows, shape.opt_length)),
        ("trt_profile_max_shapes".to_string(), shapes(shape.max_rows, shape.max_length)),
    ];
    if let Some(level) = options.builder_optimization_level {
        list.push(("trt_builder_optimization_level".to_string(), level.to_string()));
    }
    if let EngineFiles::BuildInto { dir, context_model } = files {
        let dir = dir.display().to_string();
        list.extend([
            // no trt_engine_cache_path: with an EPContext model dumped, ONNX Runtime keeps the
            // engine beside it and refuses an absolute cache path ("for security purpose")
            ("trt_engine_cache_enable".to_string(), flag(true)),
            // boxes of one model must not share (and overwrite) one engine file name
            ("trt_engine_cache_prefix".to_string(), format!("pulpie_{}", shape.tag())),
            ("trt_timing_cache_enable".to_string(), flag(true)),
            ("trt_timing_cache_path".to_string(), dir),
            ("trt_dump_ep_context_model".to_string(), flag(true)),
            ("trt_ep_context_file_path".to_string(), context_model.display().to_string()),
            // the engine in its own file beside the EPContext model (protobuf's 2 GiB limit)
            ("trt_ep_context_embed_mode".to_string(), "0".to_string()),
        ]);
    }
    list
}

/// The EPContext model of box `shape` of model file `stem` in `dir`.
pub fn context_model_path(dir: &Path, stem: &str, shape: &ShapeBox) -> PathBuf {
    dir.join(format!("{stem}_{}_ctx.onnx", shape.tag()))
}

/// What a cache folder holds: the model it was built from (file name, size, and the hash of
/// its content and its external data's: a copied, touched or re-exported identical model
/// keeps its engines, a changed one of the same size does not), the ONNX Runtime version, the
/// precision and the boxes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheRecord {
    pub model: String,
    pub model_bytes: u64,
    /// `content_hash` of the model file and its `.data` file
    pub model_hash: String,
    pub onnxruntime: String,
    pub fp16: bool,
    pub profiles: Vec<ShapeBox>,
}

impl CacheRecord {
    /// The record of `model` as it is now (its size and content).
    pub fn of(
        model: &Path,
        onnxruntime: &str,
        fp16: bool,
        profiles: &[ShapeBox],
    ) -> Result<CacheRecord, OrtError> {
        let meta = std::fs::metadata(model)
            .map_err(|e| OrtError(format!("cannot read {}: {e}", model.display())))?;
        let mut data = model.as_os_str().to_owned();
        data.push(".data");
        Ok(CacheRecord {
            model: model.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned()),
            model_bytes: meta.len(),
            model_hash: content_hash(&[model, Path::new(&data)])?,
            onnxruntime: onnxruntime.to_string(),
            fp16,
            profiles: profiles.to_vec(),
        })
    }

    pub fn to_json(&self) -> String {
        let profiles: Vec<String> = self
            .profiles
            .iter()
            .map(|b| {
                format!(
                    "    {{\"min\": [{}, {}], \"opt\": [{}, {}], \"max\": [{}, {}]}}",
                    b.min_rows, b.min_length, b.opt_rows, b.opt_length, b.max_rows, b.max_length
                )
            })
            .collect();
        format!(
            "{{\n  \"format_version\": {RECORD_VERSION},\n  \"model\": {},\n  \"model_bytes\": {},\n  \
             \"model_hash\": {},\n  \"onnxruntime\": {},\n  \"precision\": \"{}\",\n  \"profiles\": [\n{}\n  ]\n}}\n",
            quote(&self.model),
            self.model_bytes,
            quote(&self.model_hash),
            quote(&self.onnxruntime),
            if self.fp16 { "fp16" } else { "fp32" },
            profiles.join(",\n")
        )
    }

    /// The record in `text`, or None for one of another format (it is rebuilt).
    pub fn parse(text: &[u8]) -> Option<CacheRecord> {
        let value = json::parse(text).ok()?;
        if value.get("format_version")?.as_i64()? != RECORD_VERSION {
            return None;
        }
        let pair = |v: &Value| -> Option<(usize, usize)> {
            match v.as_array()? {
                [a, b] => Some((a.as_u64()? as usize, b.as_u64()? as usize)),
                _ => None,
            }
        };
        let mut profiles = Vec::new();
        for p in value.get("profiles")?.as_array()? {
            let (min_rows, min_length) = pair(p.get("min")?)?;
            let (opt_rows, opt_length) = pair(p.get("opt")?)?;
            let (max_rows, max_length) = pair(p.get("max")?)?;
            profiles.push(ShapeBox { min_rows, min_length, opt_rows, opt_length, max_rows, max_length });
        }
        Some(CacheRecord {
            model: value.get("model")?.as_str()?.to_string(),
            model_bytes: value.get("model_bytes")?.as_u64()?,
            model_hash: value.get("model_hash")?.as_str()?.to_string(),
            onnxruntime: value.get("onnxruntime")?.as_str()?.to_string(),
            fp16: value.get("precision")?.as_str()? == "fp16",
            profiles,
        })
    }
}

/// The hash of the content of `files` in order (a missing one counts as absent, not empty):
/// the standard library's SipHash with its fixed keys over every byte, as 16 hex digits. A
/// newer Rust may hash otherwise, which only rebuilds the engines once.
pub fn content_hash(files: &[&Path]) -> Result<String, OrtError> {
    use std::hash::Hasher;
    use std::io::Read;
    let mut hasher = std::hash::DefaultHasher::new();
    let mut buffer = vec![0u8; 1 << 20];
    for path in files {
        let Ok(mut file) = std::fs::File::open(path) else {
            hasher.write_u8(0);
            continue;
        };
        hasher.write_u8(1);
        loop {
            let n = file
                .read(&mut buffer)
                .map_err(|e| OrtError(format!("cannot read {}: {e}", path.display())))?;
            if n == 0 {
                break;
            }
            hasher.write(&buffer[..n]);
        }
    }
    Ok(format!("{:016x}", hasher.finish()))
}

fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ort::batches::{default_buckets, make_batches};

    fn tuple(b: &ShapeBox) -> [usize; 6] {
        [b.min_rows, b.min_length, b.opt_rows, b.opt_length, b.max_rows, b.max_length]
    }

    #[test]
    fn one_box_per_bucket_from_the_budgets() {
        let (boxes, buckets) = boxes_for_buckets(&DEFAULT_BUCKETS, 16384, DEFAULT_MAX_BATCH_ATTENTION);
        assert_eq!(
            boxes.iter().map(tuple).collect::<Vec<_>>(),
            vec![
                [1, 1, 128, 128, 256, 128],
                [1, 129, 64, 256, 127, 256],
                [1, 257, 32, 512, 63, 512],
                [1, 513, 16, 1024, 31, 1024],
                [1, 1025, 8, 2048, 15, 2048],
                [1, 2049, 4, 4096, 4, 4096],
                [1, 4097, 1, 8192, 1, 8192],
            ]
        );
        let caps: Vec<_> = buckets.iter().map(|b| (b.max_length, b.max_rows)).collect();
        assert_eq!(caps[0], (128, Some(256)));
        assert_eq!(caps[6], (8192, Some(1)));
        // an L4-sized budget doubles the rows, the attention budget still caps the long ones
        let (boxes, _) = boxes_for_buckets(&DEFAULT_BUCKETS, 32768, DEFAULT_MAX_BATCH_ATTENTION);
        assert_eq!(boxes.iter().map(|b| b.max_rows).collect::<Vec<_>>(), vec![512, 254, 127, 63, 16, 4, 1]);
    }

    /// Every batch the batcher cuts with the capped buckets falls in one box, whatever the
    /// lengths: the property the per-box sessions rely on.
    #[test]
    fn every_batch_of_the_capped_buckets_fits_a_box() {
        for budget in [4096, 16384, 32768, 131072] {
            let (boxes, buckets) = boxes_for_buckets(&DEFAULT_BUCKETS, budget, DEFAULT_MAX_BATCH_ATTENTION);
            // a spread of lengths: many short rows, every bucket edge, long ones
            let mut lengths: Vec<usize> = (1..=8192).step_by(7).collect();
            lengths.extend(std::iter::repeat_n(1, 3000));
            lengths.extend(std::iter::repeat_n(129, 500));
            lengths.extend([128, 256, 257, 4096, 4097, 8192, 8192, 8192]);
            for plan in make_batches(&lengths, budget, &buckets, Some(DEFAULT_MAX_BATCH_ATTENTION)) {
                let rows = plan.rows.len();
                let longest = plan.rows.iter().map(|&i| lengths[i]).max().unwrap();
                let fits = boxes.iter().filter(|b| b.holds(rows, longest)).count();
                assert_eq!(fits, 1, "budget {budget}: {rows} rows × {longest} tokens fit {fits} boxes");
            }
        }
    }

    #[test]
    fn given_boxes_cap_the_buckets_or_name_what_they_miss() {
        let wide = ShapeBox {
            min_rows: 1,
            min_length: 1,
            opt_rows: 4,
            opt_length: 512,
            max_rows: 8,
            max_length: 1024,
        };
        let long = ShapeBox {
            min_rows: 1,
            min_length: 1025,
            opt_rows: 1,
            opt_length: 8192,
            max_rows: 2,
            max_length: 8192,
        };
        let buckets = buckets_for_boxes(&[wide, long], &DEFAULT_BUCKETS).unwrap();
        assert_eq!(
            buckets.iter().map(|b| b.max_rows.unwrap()).collect::<Vec<_>>(),
            vec![8, 8, 8, 8, 2, 2, 2]
        );
        let error = buckets_for_boxes(&[wide], &DEFAULT_BUCKETS).err().unwrap();
        assert_eq!(error.0, "no TensorRT profile holds chunks of 1025..2048 tokens (the profiles: 1-1024)");
        assert_eq!(default_buckets().len(), DEFAULT_BUCKETS.len());
    }

    #[test]
    fn tensorrt_options_with_fp16_profiles_and_caches() {
        let shape = ShapeBox {
            min_rows: 1,
            min_length: 129,
            opt_rows: 64,
            opt_length: 256,
            max_rows: 127,
            max_length: 256,
        };
        let files = EngineFiles::BuildInto {
            dir: PathBuf::from("/b/tensorrt/nvidia-l4-sm89"),
            context_model: PathBuf::from("/b/tensorrt/nvidia-l4-sm89/model_129-256_ctx.onnx"),
        };
        let options = TensorRtOptions { builder_optimization_level: Some(4), ..TensorRtOptions::default() };
        let list = tensorrt_provider_options(1, &options, &shape, &files);
        let got: Vec<(&str, &str)> = list.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("device_id", "1"),
                ("trt_fp16_enable", "1"),
                ("trt_layer_norm_fp32_fallback", "1"),
                ("trt_profile_min_shapes", "input_ids:1x129,attention_mask:1x129,position_ids:1x129"),
                ("trt_profile_opt_shapes", "input_ids:64x256,attention_mask:64x256,position_ids:64x256"),
                ("trt_profile_max_shapes", "input_ids:127x256,attention_mask:127x256,position_ids:127x256"),
                ("trt_builder_optimization_level", "4"),
                ("trt_engine_cache_enable", "1"),
                ("trt_engine_cache_prefix", "pulpie_129-256"),
                ("trt_timing_cache_enable", "1"),
                ("trt_timing_cache_path", "/b/tensorrt/nvidia-l4-sm89"),
                ("trt_dump_ep_context_model", "1"),
                ("trt_ep_context_file_path", "/b/tensorrt/nvidia-l4-sm89/model_129-256_ctx.onnx"),
                ("trt_ep_context_embed_mode", "0"),
            ]
        );
        let fp32 = TensorRtOptions { fp16: Some(false), ..TensorRtOptions::default() };
        let list = tensorrt_provider_options(0, &fp32, &shape, &EngineFiles::Build);
        assert_eq!(list.len(), 6);
        assert_eq!(list[1], ("trt_fp16_enable".to_string(), "0".to_string()));
        assert!(!list.iter().any(|(k, _)| k.starts_with("trt_engine_cache") || k.contains("ep_context")));
    }

    #[test]
    fn cuda_options_name_the_device_and_keep_fp32_exact() {
        let list = cuda_provider_options(3, &GpuOptions::default());
        assert_eq!(list[0], ("device_id".to_string(), "3".to_string()));
        assert!(list.contains(&("use_tf32".to_string(), "0".to_string())));
        assert!(list.contains(&("sdpa_kernel".to_string(), "19".to_string())));
        assert!(list.contains(&("arena_extend_strategy".to_string(), "kSameAsRequested".to_string())));
        assert!(!list.iter().any(|(k, _)| k == "enable_cuda_graph"));
        let graphs = cuda_provider_options(0, &GpuOptions { cuda_graph: true, ..GpuOptions::default() });
        assert_eq!(graphs.last().unwrap(), &("enable_cuda_graph".to_string(), "1".to_string()));
    }

    /// The key follows the content: a copy with a new modification time keeps it, one changed
    /// byte of the same size or of the external data changes it.
    #[test]
    fn the_cache_key_is_the_models_content_not_its_time() {
        let dir = std::env::temp_dir().join(format!("pulpie-rt-content-hash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (model, copy) = (dir.join("model.onnx"), dir.join("copy.onnx"));
        std::fs::write(&model, b"graph bytes").unwrap();
        std::fs::write(&copy, b"graph bytes").unwrap();
        let record = CacheRecord::of(&model, "1.31.1", true, &[]).unwrap();
        let again = CacheRecord::of(&copy, "1.31.1", true, &[]).unwrap();
        assert_eq!(record.model_hash, again.model_hash);
        assert_eq!(record.model_hash.len(), 16);
        std::fs::write(&copy, b"graph bytez").unwrap();
        assert_ne!(CacheRecord::of(&copy, "1.31.1", true, &[]).unwrap().model_hash, record.model_hash);
        std::fs::write(dir.join("model.onnx.data"), b"weights").unwrap();
        assert_ne!(CacheRecord::of(&model, "1.31.1", true, &[]).unwrap().model_hash, record.model_hash);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_cache_record_reads_back_what_it_wrote() {
        let (boxes, _) = boxes_for_buckets(&DEFAULT_BUCKETS, 16384, DEFAULT_MAX_BATCH_ATTENTION);
        let record = CacheRecord {
            model: "model \"fp32\".onnx".into(),
            model_bytes: 1234,
            model_hash: "0123456789abcdef".into(),
            onnxruntime: "1.31.1".into(),
            fp16: true,
            profiles: boxes,
        };
        assert_eq!(CacheRecord::parse(record.to_json().as_bytes()), Some(record.clone()));
        let other = record.to_json().replace("\"format_version\": 2", "\"format_version\": 1");
        assert_eq!(CacheRecord::parse(other.as_bytes()), None);
        assert_eq!(
            context_model_path(Path::new("/c"), "model", &record.profiles[1]),
            PathBuf::from("/c/model_129-256_ctx.onnx")
        );
    }
}
