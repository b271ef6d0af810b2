//! The whole page flow in the core: raw HTML in, main-content Markdown out. Every door runs it:
//! the C library (`capi.rs`) and the Python doors (`runtime/flow/engine.py`, through the same
//! C ABI), so `pulpie_rt_extract` returns what `pulpie_rt.Extractor(model).extract(html)`
//! returns. Its readable specifications are `tests/spec/{prepare,labels,finish}_spec.py`:
//!
//! - `prepare`: the page's bytes decoded by the decode stage (`crate::decode`), cut by
//!   `Limits::max_input_bytes`, simplified, split into blocks, tokenized with the bundle's
//!   tokenizer, packed into chunks, cut to `Limits::max_page_tokens` (and the default model's
//!   block features read);
//! - `predict`: every chunk of the call's pages through `ort::make_batches` (the one batcher,
//!   across pages, as `Extractor.extract_batch` does) and the model; a batch that fails is
//!   retried row by row, so one page that breaks the engine fails alone;
//! - `decide`: SEP logits → block predictions (`decode.rs`);
//! - `finish`: labels → reconstruct → Markdown, or a page without blocks as its whole text.
//!
//! A page's failure is its `PageOutput::error` (`"<stage>: <reason>"`); a panic in one page's
//! work is caught and fails that page only. The engine is immutable once opened: any number
//! of threads may call `extract_batch` at once.

pub mod bundle;
pub mod decode;
mod devices;
pub mod features;
#[cfg(feature = "python-ffi")]
pub(crate) mod ffi;
pub(crate) mod prepare;
pub mod py;

pub use crate::metadata::PageMetadata;
use crate::ort::{
    default_buckets, make_batches, BlockRescorer, Bucket, ContextRescorer, FlatBatch, GpuOptions,
    ModelSource, Ort, OrtOnDemand, SessionConfig, TokenClassifier, DEFAULT_MAX_BATCH_ATTENTION,
    DEFAULT_MAX_BATCH_TOKENS,
};
use crate::tokenizer::Tokenizer;
use bundle::{Bundle, Files, FEATURES_VERSION, TOKENIZER_NAME};
use prepare::Chunk;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;

/// `runtime.constants.SEP_TOKEN`, added as a special token where the vocabulary lacks it.
const SEP_TOKEN: &str = "<|sep|>";
/// `Preparer`'s `cutoff_length` default.
pub const DEFAULT_CUTOFF_LENGTH: usize = 500;

pub const EMPTY_NO_TEXT: &str = "the page has no visible text";
pub const EMPTY_NO_MAIN: &str = "no block was labelled main";
pub const EMPTY_MAIN_WITHOUT_TEXT: &str = "the blocks labelled main hold no text";

/// `PageLimits`: None turns a limit off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_input_bytes: Option<usize>,
    pub max_page_tokens: Option<usize>,
}

impl Default for Limits {
    /// `DEFAULT_LIMITS`
    fn default() -> Self {
        Limits { max_input_bytes: Some(16 * 1024 * 1024), max_page_tokens: Some(131_072) }
    }
}

/// How an engine runs.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub session: SessionConfig,
    /// the ONNX Runtime library file (None: `$PULPIE_RT_ORT_LIB`, then the default search)
    pub ort_library: Option<PathBuf>,
    pub limits: Limits,
    pub max_batch_tokens: usize,
    pub cutoff_length: usize,
    /// added to the bundle's decision threshold (`decode::favor_shift`; 0: the bundle's own)
    pub decision_shift: f64,
    /// how a GPU provider runs: more GPUs, TensorRT's precision, profiles and caches
    /// (`devices.rs`)
    pub gpu: GpuOptions,
    /// read each page's metadata (`crate::metadata`; false: `PageOutput::metadata` empty)
    pub metadata: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            session: SessionConfig::default(),
            ort_library: None,
            limits: Limits::default(),
            max_batch_tokens: DEFAULT_MAX_BATCH_TOKENS,
            cutoff_length: DEFAULT_CUTOFF_LENGTH,
            decision_shift: 0.0,
            gpu: GpuOptions::default(),
            metadata: true,
        }
    }
}

/// Why an engine did not open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// the bundle: missing, unreadable, or asking for what this core cannot do
    Model(String),
    /// ONNX Runtime: the library, its environment or a session
    Runtime(String),
}

/// One page's result (`PageResult`): `labels` in the dict's order, `error` set (and the rest
/// empty) when the page failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageOutput {
    pub html: String,
    pub markdown: String,
    pub labels: Vec<(String, bool)>,
    pub error: Option<String>,
    pub truncated: Option<String>,
    pub empty_reason: Option<String>,
    /// the Encoding Standard name of what the page's bytes were decoded with (None: the
    /// page was given as text, `PageIn::Text`)
    pub encoding: Option<String>,
    /// what each label was decided from (the page inspector's figures)
    pub scores: LabelScores,
    /// what the page's markup says of it (`crate::metadata`; empty on error, or when the
    /// engine reads none: `EngineConfig::metadata`)
    pub metadata: PageMetadata,
}

/// Per label (in `PageOutput::labels`' order) the score of its block (log-odds of main; NaN:
/// none) and the decision threshold of the page (`decode::Decided`). Equal when their bits
/// are (a NaN score equals itself).
#[derive(Clone, Debug, Default)]
pub struct LabelScores {
    pub values: Vec<f32>,
    pub threshold: f64,
}

impl PartialEq for LabelScores {
    fn eq(&self, other: &LabelScores) -> bool {
        self.threshold.to_bits() == other.threshold.to_bits()
            && self.values.len() == other.values.len()
            && self.values.iter().zip(&other.values).all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl Eq for LabelScores {}

/// One page of a call: bytes (decoded by the decode stage, with the transport's
/// Content-Type if any) or text a caller already decoded (UTF-8, except that it may hold
/// lone surrogates as the 3 bytes of their code point: a Python `str`, `surrogatepass`).
#[derive(Clone, Copy, Debug)]
pub enum PageIn<'a> {
    Bytes { data: &'a [u8], content_type: Option<&'a [u8]> },
    Text(&'a [u8]),
}

impl PageOutput {
    fn failed(error: String) -> PageOutput {
        PageOutput { error: Some(error), ..PageOutput::default() }
    }

    pub fn n_main(&self) -> usize {
        self.labels.iter().filter(|(_, main)| *main).count()
    }

    pub fn n_other(&self) -> usize {
        self.labels.len() - self.n_main()
    }
}

/// `PreparedPage`.
pub(crate) struct Prepared {
    item_ids: Vec<Option<String>>,
    chunks: Vec<Chunk>,
    map_html: String,
    /// the tree libxml2 reads `map_html` as, where simplify's own tree gave it
    /// (`reconstruct::libxml2_tree`, with `PrepareSettings::keep_map_tree`): the page is
    /// finished off it, `map_html` not parsed again
    map_tree: Option<crate::tree::MapTree>,
    features: Option<Vec<f32>>,
    truncated: Option<String>,
    n_classified: usize,
    metadata: PageMetadata,
}

/// How `prepare_text` cuts, segments and packs a page (`Preparer`'s settings).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PrepareSettings {
    pub limits: Limits,
    pub cutoff_length: usize,
    pub max_tokens: usize,
    pub sep_id: i64,
    pub bos_id: Option<i64>,
    pub eos_id: Option<i64>,
    /// segment without removing hidden elements (`simplify::Flags::keep_hidden`; a bundle
    /// profile's `keep_hidden`)
    pub keep_hidden: bool,
    /// segment without the `noscript` elements that hold no block
    /// (`simplify::Flags::drop_noscript`; a bundle profile's `drop_noscript`)
    pub drop_noscript: bool,
    /// read the page's metadata off the tree the segmentation walks (`crate::metadata`)
    pub metadata: bool,
    /// keep the tree reconstruct reads `map_html` as (`Prepared::map_tree`): the engine
    /// finishes its pages; the Python page flow hands `map_html` out
    pub keep_map_tree: bool,
}

/// `Preparer.prepare` once the page is text: cut by `limits.max_input_bytes`, simplified,
/// split into blocks, tokenized, packed into chunks cut to `limits.max_page_tokens`, and the
/// block features read when `with_features`. `text` is UTF-8, except that it may hold lone
/// surrogates as the 3 bytes of their code point (a Python `str`'s, `surrogatepass`; the
/// simplify stage takes them as the Python path does). `tokenizer` None: a rescorer-only
/// profile, no tokens and no chunks (every block classified). The Python page flow calls it
/// too (`ffi.rs`); a failure is the page's `"<stage>: <reason>"`.
pub(crate) fn prepare_text(
    text: &[u8],
    tokenizer: Option<&Tokenizer>,
    settings: &PrepareSettings,
    with_features: features::FeatureSet,
) -> Result<Prepared, String> {
    let (text, input_cut) = prepare::cut_input(text, settings.limits.max_input_bytes);
    let simplified = catch_unwind(AssertUnwindSafe(|| {
        crate::page::Page::new(&text)
            .and_then(|page| {
                let (cutoff, keep_hidden, drop_noscript) =
                    (settings.cutoff_length, settings.keep_hidden, settings.drop_noscript);
                let with_map = with_features != features::FeatureSet::None;
                if settings.metadata {
                    // the metadata read off the tree the segmentation then takes (one parse)
                    return crate::page::simplify_page_with_metadata(
                        &page, cutoff, keep_hidden, drop_noscript, with_map,
                    );
                }
                if !with_map {
                    let (simplified, map_html) =
                        crate::page::simplify_page(&page, cutoff, keep_hidden, drop_noscript)?;
                    return Ok(((simplified, map_html, None), PageMetadata::default()));
                }
                // the features read the tree map_html is written from, as it reads back
                crate::page::simplify_page_and_map(&page, cutoff, keep_hidden, drop_noscript)
                    .map(|simplified| (simplified, PageMetadata::default()))
            })
            .map_err(|crate::tree::Unsupported(why)| why.to_string())
    }))
    .unwrap_or_else(|_| Err(panic_message()));
    let ((simplified, map_html, map_tree), metadata) = simplified
        .map_err(|why| format!("simplify: SimplifyError: the compiled core failed on this input: {why}"))?;
    let (blocks, item_ids) = prepare::extract_blocks(&simplified);
    let (chunks, n_classified) = match tokenizer {
        Some(tokenizer) => {
            let (ids, ends) = catch_unwind(AssertUnwindSafe(|| tokenizer.encode_all(blocks.iter().copied())))
                .map_err(|_| {
                    format!("tokenize: RuntimeError: core tokenizer failed (status 2): {}", panic_message())
                })?;
            let mut block_ids: Vec<&[u32]> = Vec::with_capacity(ends.len());
            let mut start = 0usize;
            for &end in &ends {
                block_ids.push(&ids[start..end as usize]);
                start = end as usize;
            }
            let mut chunks = prepare::pack_chunks(
                &block_ids, settings.max_tokens, settings.sep_id, settings.bos_id, settings.eos_id,
            );
            let (kept, n_classified) = prepare::keep_chunks(&chunks, settings.limits.max_page_tokens);
            chunks.truncate(kept);
            (chunks, n_classified)
        }
        None => (Vec::new(), item_ids.len()),
    };
    let mut cuts: Vec<String> = input_cut.into_iter().collect();
    if n_classified < item_ids.len() {
        let limit = settings.limits.max_page_tokens.map_or("None".to_string(), |n| py::thousands(n as u64));
        cuts.push(format!(
            "{} of {} blocks past the first {limit} tokens were not classified (labelled other)",
            item_ids.len() - n_classified,
            item_ids.len()
        ));
    }
    let features = if with_features != features::FeatureSet::None {
        let computed = catch_unwind(AssertUnwindSafe(|| {
            features::block_features(&map_html, map_tree.as_ref(), &item_ids, with_features)
        }))
        .map_err(|_| core_failed("features", "CoreError"))?;
        Some(computed.map_err(|e| format!("features: {e}"))?)
    } else {
        None
    };
    let truncated = (!cuts.is_empty()).then(|| cuts.join("; "));
    let map_tree = if settings.keep_map_tree && !item_ids.is_empty() {
        catch_unwind(AssertUnwindSafe(|| map_tree.and_then(crate::reconstruct::libxml2_tree)))
            .map_err(|_| core_failed("reconstruct", "ValueError"))?
    } else {
        None
    };
    Ok(Prepared { item_ids, chunks, map_html, map_tree, features, truncated, n_classified, metadata })
}

/// The bundle's block rescorer as the engine runs it (`rescore.BlockRescorer`).
// one per engine, so the larger variant costs a few hundred bytes once: not worth a box
#[allow(clippy::large_enum_variant)]
enum Rescorer {
    /// over each block's `blocks-v1` row alone, beside the transformer's margins
    Blocks(BlockRescorer),
    /// over the page's blocks in context (`context-v4`, `blocks-v3` rows, `context-v5`,
    /// `blocks-v4` rows, `context-v6`, `blocks-v5` rows, or `context-v7`, `blocks-v6` rows): the
    /// default model's `fast`
    /// profile, which runs no transformer
    Context(ContextRescorer),
}

/// `rescore.CONTEXTS`: the contexts this core reads blocks in, each with the layout it reads.
pub const CONTEXTS: [(&str, &str); 4] = [
    ("context-v4", "blocks-v3"),
    ("context-v5", "blocks-v4"),
    ("context-v6", "blocks-v5"),
    ("context-v7", "blocks-v6"),
];
/// `features.LAYOUTS`, as `BlockRescorer` names them.
const LAYOUTS: [&str; 6] =
    [FEATURES_VERSION, "blocks-v2", "blocks-v3", "blocks-v4", "blocks-v5", "blocks-v6"];

/// A rescorer this core can run, or `BlockRescorer`'s `RescorerError` message for it.
fn check_rescorer(spec: &bundle::RescorerSpec, name: &str) -> Result<(), String> {
    let (features, context) = (spec.features.as_str(), spec.context.as_deref());
    if !LAYOUTS.contains(&features) {
        let layouts: Vec<String> = LAYOUTS.iter().map(|l| format!("'{l}'")).collect();
        return Err(format!(
            "{name}: rescorer reads features {}, this runtime computes {}",
            py::repr_str(features),
            layouts.join(", ")
        ));
    }
    if let Some(context) = context {
        let Some(&(_, reads)) = CONTEXTS.iter().find(|(c, _)| *c == context) else {
            let contexts: Vec<String> = CONTEXTS.iter().map(|(c, _)| format!("'{c}'")).collect();
            return Err(format!(
                "{name}: rescorer reads context {}, this runtime computes {}",
                py::repr_str(context),
                contexts.join(", ")
            ));
        };
        if features != reads {
            return Err(format!(
                "{name}: context '{context}' reads features '{reads}', not {}",
                py::repr_str(features)
            ));
        }
    }
    if context.is_none() && features != FEATURES_VERSION {
        return Err(format!(
            "{name}: a rescorer without context reads features '{FEATURES_VERSION}', not {}",
            py::repr_str(features)
        ));
    }
    if spec.first_stage.is_some() && context.is_none() {
        return Err(format!("{name}: a first stage needs the context features"));
    }
    Ok(())
}

/// The message of a page with chunks decoded by a rescorer in context (`_decide_in_context`).
const CONTEXT_WITH_TRANSFORMER: &str =
    "rescore: ValueError: a rescorer that reads blocks in context runs without \
                                        the transformer (a rescorer-only profile)";

/// An open model: tokenizer, sessions and settings, shared by every thread. A profile
/// without the transformer (`Manifest::transformer` false) has no tokenizer and no model
/// session: its pages are prepared without tokens and decided by the rescorer alone.
pub struct Engine {
    bundle_name: String,
    manifest: bundle::Manifest,
    /// None: nothing needed ONNX Runtime, and its library was not loaded
    ort: Option<Arc<Ort>>,
    tokenizer: Option<Tokenizer>,
    classifier: Option<TokenClassifier>,
    rescorer: Option<Rescorer>,
    config: EngineConfig,
    /// batches that failed in the model and were run again row by row (`FALLBACK_ROW_BY_ROW`)
    row_by_row: std::sync::atomic::AtomicU64,
    /// what the model computed since the engine opened (`Counters`)
    model_calls: std::sync::atomic::AtomicU64,
    real_tokens: std::sync::atomic::AtomicU64,
    computed_tokens: std::sync::atomic::AtomicU64,
}

/// What an engine's model computed since it opened: batches run, the tokens of their rows, and
/// the tokens computed with the padding (rows × the longest row), for tokens/s and the
/// padding share of benchmarks and `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub row_by_row_fallbacks: u64,
    pub model_calls: u64,
    pub real_tokens: u64,
    pub computed_tokens: u64,
}

/// What a run reports when a batch failed in the engine and ran row by row (the Python
/// doors' `RunStats` fallback line).
pub const FALLBACK_ROW_BY_ROW: &str = "a batch failed in the engine and ran row by row";

/// The text of the last panic on this thread (set by `lib.rs`'s hook).
fn panic_message() -> String {
    crate::last_panic_message()
}

impl Engine {
    pub fn open(bundle: Bundle, config: EngineConfig) -> Result<Engine, OpenError> {
        let model_error = |e: String| OpenError::Model(e);
        if let Some(spec) = &bundle.manifest.rescorer {
            check_rescorer(spec, &bundle.name).map_err(OpenError::Model)?;
            if !features::AVAILABLE {
                return Err(OpenError::Model(format!(
                    "{}: the bundle has a block rescorer, and this build of the core computes no \
                     block features yet",
                    bundle.name
                )));
            }
        }
        let transformer = bundle.manifest.transformer;
        if transformer
            && matches!(config.session.provider, crate::ort::ExecutionProvider::TensorRt { .. })
            && bundle.manifest.attention != bundle::UNFUSED
        {
            return Err(OpenError::Model(format!(
                "{}: its graph has {} attention (onnx.attention '{}': ONNX Runtime's com.microsoft \
                 operators), which TensorRT cannot build; run it with backend 'cuda', or give \
                 TensorRT a bundle exported without --attention (TensorRT fuses attention itself)",
                bundle.name, bundle.manifest.attention, bundle.manifest.attention
            )));
        }
        let tokenizer = if transformer {
            let tokenizer_json = match &bundle.files {
                Files::Dir(root) => {
                    let path = root.join(TOKENIZER_NAME);
                    std::fs::read(&path)
                        .map_err(|e| model_error(format!("cannot read {}: {e}", path.display())))?
                }
                Files::Embedded(_) => bundle.embedded_file(TOKENIZER_NAME).unwrap_or_default().to_vec(),
            };
            let mut tokenizer = Tokenizer::from_json(&tokenizer_json)
                .map_err(|e| model_error(format!("{}: {TOKENIZER_NAME}: {e}", bundle.name)))?;
            tokenizer.ensure_special_token(SEP_TOKEN);
            Some(tokenizer)
        } else {
            None
        };
        // ONNX Runtime's library is loaded for the transformer, or for trees the kernel cannot
        // run (`OrtOnDemand`): the default model's `fast` profile never loads it
        let ort = OrtOnDemand::new(config.ort_library.as_deref());
        if transformer {
            ort.get().map_err(|e| OpenError::Runtime(e.0))?;
        }
        let path = |file: &str| match &bundle.files {
            Files::Dir(root) => Some(root.join(file)),
            Files::Embedded(_) => None,
        };
        // a file's source: its path in a directory's bundle, its bytes in the embedded one
        fn source<'a>(bundle: &Bundle, file: &str, path: &'a Option<PathBuf>) -> ModelSource<'a> {
            match path {
                Some(path) => ModelSource::File(path),
                None => ModelSource::Bytes(bundle.embedded_file(file).unwrap_or_default()),
            }
        }
        let runtime_error = |e: crate::ort::OrtError| OpenError::Runtime(e.0);
        let classifier = if transformer {
            let model_path = path(&bundle.manifest.onnx_file);
            let model = source(&bundle, &bundle.manifest.onnx_file, &model_path);
            Some(
                TokenClassifier::open_on(
                    ort.get().map_err(runtime_error)?,
                    model,
                    &config.session,
                    &devices::gpu_options(&config),
                    Some(&bundle.manifest.output),
                )
                .map_err(runtime_error)?,
            )
        } else {
            None
        };
        let rescorer = match &bundle.manifest.rescorer {
            None => None,
            Some(spec) => {
                let rescorer_path = path(&spec.file);
                let rescorer = source(&bundle, &spec.file, &rescorer_path);
                if spec.context.is_some() {
                    let first_path = spec.first_stage.as_deref().and_then(path);
                    let first = spec.first_stage.as_deref().map(|file| source(&bundle, file, &first_path));
                    Some(Rescorer::Context(
                        ContextRescorer::open(&ort, rescorer, first).map_err(runtime_error)?,
                    ))
                } else {
                    Some(Rescorer::Blocks(
                        BlockRescorer::open(&ort, rescorer, spec.margin_weight).map_err(runtime_error)?,
                    ))
                }
            }
        };
        Ok(Engine {
            bundle_name: bundle.name,
            manifest: bundle.manifest,
            ort: ort.into_loaded(),
            tokenizer,
            classifier,
            rescorer,
            config,
            row_by_row: std::sync::atomic::AtomicU64::new(0),
            model_calls: std::sync::atomic::AtomicU64::new(0),
            real_tokens: std::sync::atomic::AtomicU64::new(0),
            computed_tokens: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// What the model computed since the engine opened.
    pub fn counters(&self) -> Counters {
        use std::sync::atomic::Ordering::Relaxed;
        Counters {
            row_by_row_fallbacks: self.row_by_row.load(Relaxed),
            model_calls: self.model_calls.load(Relaxed),
            real_tokens: self.real_tokens.load(Relaxed),
            computed_tokens: self.computed_tokens.load(Relaxed),
        }
    }

    /// Whether the profile runs the transformer (false: the block rescorer alone, CPU).
    pub fn uses_transformer(&self) -> bool {
        self.classifier.is_some()
    }

    /// What runs the model, NUL-terminated: the execution provider of its session
    /// (`"cpu\0"`, `"cuda\0"`, `"tensorrt\0"`), or `"none\0"` when the profile runs no model.
    pub fn provider_c_name(&self) -> &'static str {
        if self.classifier.is_none() {
            return "none\0";
        }
        self.config.session.provider.spec().c_name()
    }

    /// The settings the engine runs with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The profile the engine runs (None: its bundle has no profiles).
    pub fn profile(&self) -> Option<&str> {
        self.manifest.profile.as_deref()
    }

    pub fn bundle_name(&self) -> &str {
        &self.bundle_name
    }

    /// ONNX Runtime, None where the engine runs without it (no transformer, every tree on the
    /// kernel: its library was never loaded).
    pub fn ort(&self) -> Option<&Arc<Ort>> {
        self.ort.as_ref()
    }

    /// `Extractor.extract_batch` of pages given as bytes: one result per page (its bytes and
    /// its transport's Content-Type, if any), in order.
    pub fn extract_batch(&self, pages: &[(&[u8], Option<&[u8]>)]) -> Vec<PageOutput> {
        let pages: Vec<PageIn<'_>> =
            pages.iter().map(|&(data, content_type)| PageIn::Bytes { data, content_type }).collect();
        self.extract_pages(&pages)
    }

    /// `Extractor.extract_batch`: one result per page, in order. The pages' chunks share the
    /// model's batches; a page's failure is its result's `error`.
    pub fn extract_pages(&self, pages: &[PageIn<'_>]) -> Vec<PageOutput> {
        self.extract_pages_shifted(pages, &[])
    }

    /// `extract_pages` with per page the shift of its decision threshold (`shifts[i]`:
    /// `decode::favor_shift` of the page's favor; None, or `shifts` empty: the engine's own,
    /// `EngineConfig::decision_shift`). The shift is read only when the page's blocks are
    /// decided: pages of any shifts share the model's batches.
    pub fn extract_pages_shifted(&self, pages: &[PageIn<'_>], shifts: &[Option<f64>]) -> Vec<PageOutput> {
        assert!(shifts.is_empty() || shifts.len() == pages.len(), "one shift per page");
        let shift = |i: usize| shifts.get(i).copied().flatten().unwrap_or(self.config.decision_shift);
        if self.classifier.is_none() {
            // no model batches for the pages to share: each page is finished before the next
            // is prepared (its trees, `Prepared::map_tree`, are not held for the others)
            return pages
                .iter()
                .enumerate()
                .map(|(i, &page)| {
                    let (prepared, encoding) = self.decode_and_prepare(page);
                    let predicted =
                        self.predict(std::slice::from_ref(&prepared), &[shift(i)]).pop().expect("one page's");
                    self.finish_page(prepared, predicted, encoding)
                })
                .collect();
        }
        let (prepared, encodings): (Vec<_>, Vec<_>) =
            pages.iter().map(|&page| self.decode_and_prepare(page)).unzip();
        let shifts: Vec<f64> = (0..prepared.len()).map(shift).collect();
        let predictions = self.predict(&prepared, &shifts);
        prepared
            .into_iter()
            .zip(predictions)
            .zip(encodings)
            .map(|((page, predicted), encoding)| self.finish_page(page, predicted, encoding))
            .collect()
    }

    /// A page decoded where it is bytes, then prepared; the encoding it was read in.
    fn decode_and_prepare(&self, page: PageIn<'_>) -> (Result<Prepared, String>, Option<&'static str>) {
        let (text, encoding) = match page {
            PageIn::Bytes { data, content_type } => {
                match catch_unwind(AssertUnwindSafe(|| crate::decode::decode_page(data, content_type))) {
                    Ok(decoded) => {
                        (std::borrow::Cow::Owned(decoded.text.into_bytes()), Some(decoded.encoding.name()))
                    }
                    Err(_) => return (Err(format!("decode: CoreError: {}", panic_message())), None),
                }
            }
            PageIn::Text(text) => (std::borrow::Cow::Borrowed(text), None),
        };
        let prepared = catch_unwind(AssertUnwindSafe(|| self.prepare(&text)))
            .unwrap_or_else(|_| Err(format!("prepare: {}", panic_message())));
        (prepared, encoding)
    }

    /// A prepared page's output once its blocks are decided (or its error).
    fn finish_page(
        &self,
        page: Result<Prepared, String>,
        predicted: Result<decode::Decided, String>,
        encoding: Option<&'static str>,
    ) -> PageOutput {
        let mut output = match (page, predicted) {
            (Err(error), _) => PageOutput::failed(error),
            (Ok(_), Err(error)) => PageOutput::failed(error),
            (Ok(page), Ok(decided)) => catch_unwind(AssertUnwindSafe(|| self.finish(&page, &decided)))
                .unwrap_or_else(|_| Err(format!("finish: {}", panic_message())))
                .unwrap_or_else(PageOutput::failed),
        };
        if output.error.is_none() {
            output.encoding = encoding.map(str::to_string);
        }
        output
    }

    /// `Preparer.prepare` of a page's text (decoded by `extract_pages`).
    fn prepare(&self, text: &[u8]) -> Result<Prepared, String> {
        let m = &self.manifest;
        let settings = PrepareSettings {
            limits: self.config.limits,
            cutoff_length: self.config.cutoff_length,
            max_tokens: m.max_tokens,
            sep_id: m.sep_id,
            bos_id: m.bos_id,
            eos_id: m.eos_id,
            keep_hidden: m.keep_hidden,
            drop_noscript: m.drop_noscript,
            metadata: self.config.metadata,
            keep_map_tree: true,
        };
        // check_rescorer let in only the layouts this core computes
        let feature_set = self.manifest.prepared_features().map_or(features::FeatureSet::None, |layout| {
            features::FeatureSet::from_layout(layout).expect("a checked rescorer layout")
        });
        prepare_text(text, self.tokenizer.as_ref(), &settings, feature_set)
    }

    /// The bundle's decoding (`Manifest::decoding`: the engine opens a rescorer exactly when
    /// the manifest names one), its threshold shifted as the page's favor asks (`shift`).
    fn decoding(&self, shift: f64) -> decode::Decoding {
        self.manifest.decoding().shifted(shift)
    }

    /// Per page its block predictions and scores, or its error (failed pages stay failed);
    /// `shifts`: per page its decision shift.
    fn predict(
        &self,
        pages: &[Result<Prepared, String>],
        shifts: &[f64],
    ) -> Vec<Result<decode::Decided, String>> {
        // (page, chunk) of every chunk to run, pages in order, chunks in order
        let mut keys: Vec<(usize, usize)> = Vec::new();
        for (page_index, page) in pages.iter().enumerate() {
            if let Ok(page) = page {
                keys.extend((0..page.chunks.len()).map(|chunk| (page_index, chunk)));
            }
        }
        let row = |key: (usize, usize)| -> &[i64] {
            match &pages[key.0] {
                Ok(page) => &page.chunks[key.1].token_ids,
                Err(_) => unreachable!("keys hold prepared pages only"),
            }
        };
        let lengths: Vec<usize> = keys.iter().map(|&key| row(key).len()).collect();
        // TensorRT caps each bucket's rows to its profile; a packed graph packs chunks of a
        // bucket side by side (TokenClassifier::plan)
        let plans = match &self.classifier {
            Some(classifier) => classifier.plan(&lengths, self.call_tokens()),
            None => make_batches(
                &lengths,
                self.config.max_batch_tokens,
                &default_buckets(),
                Some(DEFAULT_MAX_BATCH_ATTENTION),
            ),
        };
        let mut outputs: Vec<Option<(Vec<f32>, usize)>> = vec![None; keys.len()];
        let mut failed: Vec<Option<String>> = vec![None; pages.len()];
        for plan in plans {
            let batch = FlatBatch::from_rows(plan.rows.iter().map(|&i| row(keys[i])));
            match self.run_batch(&batch, &plan.bucket) {
                Ok((labels, rows)) => {
                    for (&item, logits) in plan.rows.iter().zip(rows) {
                        outputs[item] = Some((logits, labels));
                    }
                }
                Err(_) => {
                    if plan.rows.len() > 1 {
                        self.row_by_row.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    for &item in &plan.rows {
                        let single = FlatBatch::from_rows([row(keys[item])]);
                        match self.run_batch(&single, &plan.bucket) {
                            Ok((labels, mut rows)) => outputs[item] = Some((rows.remove(0), labels)),
                            Err(why) => failed[keys[item].0] = Some(format!("inference: {why}")),
                        }
                    }
                }
            }
        }
        // each page's chunk outputs, in chunk order
        let mut per_page: Vec<Vec<(Vec<f32>, usize)>> = vec![Vec::new(); pages.len()];
        for (item, output) in outputs.into_iter().enumerate() {
            if let Some(output) = output {
                per_page[keys[item].0].push(output);
            }
        }
        pages
            .iter()
            .zip(per_page)
            .zip(failed)
            .zip(shifts)
            .map(|(((page, chunk_outputs), failed), &shift)| {
                let page = page.as_ref().map_err(Clone::clone)?;
                if let Some(why) = failed {
                    return Err(why);
                }
                let decoding = self.decoding(shift);
                catch_unwind(AssertUnwindSafe(|| match &self.rescorer {
                    Some(Rescorer::Context(rescorer)) => self.decide_in_context(page, rescorer, &decoding),
                    _ => self.decide(page, &chunk_outputs, &decoding),
                }))
                .unwrap_or_else(|_| Err(format!("rescore: {}", panic_message())))
            })
            .collect()
    }

    /// One batch through the classifier: the labels count and per row its SEP logits.
    /// The tokens a model call may hold: `max_batch_tokens`, at most the graph's
    /// `onnx.max_call_tokens`.
    fn call_tokens(&self) -> usize {
        self.manifest
            .max_call_tokens
            .map_or(self.config.max_batch_tokens, |most| most.min(self.config.max_batch_tokens))
    }

    fn run_batch(&self, batch: &FlatBatch, bucket: &Bucket) -> Result<(usize, Vec<Vec<f32>>), String> {
        catch_unwind(AssertUnwindSafe(|| {
            let Some(classifier) = &self.classifier else {
                // a rescorer-only profile prepares no chunks (`RescorerOnlyBackend.predict`)
                let profile = self.manifest.profile.as_deref().map_or("None".to_string(), py::repr_str);
                return Err(format!(
                    "BackendError: profile {profile} runs no transformer: it has no chunks to predict"
                ));
            };
            let predicted = classifier
                .predict_in(
                    batch,
                    bucket,
                    self.config.max_batch_tokens,
                    self.manifest.pad_id,
                    self.manifest.sep_id,
                )
                .map(|sep| (sep.labels, sep.rows))
                .map_err(|e| py::describe("OrtError", &e.0))?;
            use std::sync::atomic::Ordering::Relaxed;
            let lengths = batch.cumulative_seq_lengths.windows(2).map(|w| (w[1] - w[0]) as u64);
            let (rows, longest) = lengths.fold((0u64, 0u64), |(n, m), l| (n + 1, m.max(l)));
            self.model_calls.fetch_add(1, Relaxed);
            self.real_tokens.fetch_add(batch.input_ids.len() as u64, Relaxed);
            self.computed_tokens.fetch_add(rows * longest, Relaxed);
            Ok(predicted)
        }))
        .unwrap_or_else(|_| Err(panic_message()))
    }

    /// A page's decoding from its chunks' SEP logits (`decode::decide_blocks`).
    fn decide(
        &self,
        page: &Prepared,
        chunk_outputs: &[(Vec<f32>, usize)],
        decoding: &decode::Decoding,
    ) -> Result<decode::Decided, String> {
        let chunk_blocks: Vec<&[usize]> = page.chunks.iter().map(|c| c.block_indices.as_slice()).collect();
        let outputs: Vec<decode::SepOutputs<'_>> = chunk_outputs
            .iter()
            .map(|(values, labels)| decode::SepOutputs::Logits { values, labels: *labels })
            .collect();
        decode::decide_blocks(
            page.item_ids.len(),
            &chunk_blocks,
            &outputs,
            decoding,
            match &self.rescorer {
                Some(Rescorer::Blocks(rescorer)) => Some(rescorer),
                _ => None,
            },
            page.features.as_deref(),
            page.n_classified,
        )
    }

    /// `pages._decide_in_context`: a rescorer in context scores the page's blocks (the
    /// blocks the limits cut without a score), then `decide_blocks` decides the page from
    /// those scores as from margins: one "chunk" holding every block.
    fn decide_in_context(
        &self,
        page: &Prepared,
        rescorer: &ContextRescorer,
        decoding: &decode::Decoding,
    ) -> Result<decode::Decided, String> {
        if !page.chunks.is_empty() {
            return Err(CONTEXT_WITH_TRANSFORMER.to_string());
        }
        let features = page.features.as_deref().ok_or_else(|| decode::NO_FEATURES.to_string())?;
        let n_blocks = page.item_ids.len();
        let mut scores = rescorer
            .log_odds(features, n_blocks)
            .map_err(|e| format!("rescore: {}", py::describe("RescorerError", &e.0)))?;
        for score in scores.iter_mut().skip(page.n_classified) {
            *score = f32::NAN; // cut by the limits: "other"
        }
        let all_blocks: Vec<usize> = (0..n_blocks).collect();
        decode::decide_blocks(
            n_blocks,
            &[&all_blocks],
            &[decode::SepOutputs::Margins(&scores)],
            // the bundle's own (it has a rescorer, so its scores are read as margins)
            decoding,
            None,
            Some(features),
            n_blocks,
        )
    }

    /// `pages._finish`: labels → main HTML → Markdown.
    fn finish(&self, page: &Prepared, decided: &decode::Decided) -> Result<PageOutput, String> {
        let scores = LabelScores {
            values: decode::label_scores(&page.item_ids, &decided.scores),
            threshold: decided.threshold,
        };
        let (labels, finished) = if page.item_ids.is_empty() {
            (Vec::new(), whole_text(page.map_html.as_bytes())?)
        } else {
            let labels = decode::labels_from_predictions(&page.item_ids, &decided.predictions);
            let main: std::collections::HashSet<&str> =
                labels.iter().filter(|(_, main)| *main).map(|(id, _)| id.as_str()).collect();
            let any_main = labels.iter().any(|(_, main)| *main);
            let finished = finish_main(&page.map_html, page.map_tree.as_ref(), &main, any_main)?;
            (labels, finished)
        };
        let mut metadata = page.metadata.clone();
        if self.config.metadata && metadata.language.is_none() {
            // undeclared: the language of the main content, else of what the markup says
            metadata.language = crate::metadata::language::detect(&finished.markdown)
                .or_else(|| {
                    let said = [metadata.title.as_deref(), metadata.description.as_deref()];
                    crate::metadata::language::detect(
                        &said.into_iter().flatten().collect::<Vec<_>>().join(" "),
                    )
                })
                .map(str::to_string);
        }
        Ok(PageOutput {
            html: finished.html,
            markdown: finished.markdown,
            labels,
            error: None,
            truncated: page.truncated.clone(),
            empty_reason: finished.empty_reason.map(str::to_string),
            encoding: None,
            scores,
            metadata,
        })
    }
}

/// A page's main content: its HTML, its Markdown and why the Markdown is empty (None: it is
/// not).
pub(crate) struct Finished {
    pub html: String,
    pub markdown: String,
    pub empty_reason: Option<&'static str>,
}

/// `pages._finish` once the labels are known: the blocks `main` holds kept from `map_html`
/// (reconstruct; off `map_tree`, the tree libxml2 reads it as, where had), then Markdown;
/// `any_main`: whether any block is labelled main (which empty reason an empty result gets).
/// The Python page flow calls it too (`ffi.rs`).
pub(crate) fn finish_main(
    map_html: &str,
    map_tree: Option<&crate::tree::MapTree>,
    main: &std::collections::HashSet<&str>,
    any_main: bool,
) -> Result<Finished, String> {
    let main_html = if map_html.is_empty() {
        String::new()
    } else {
        catch_unwind(AssertUnwindSafe(|| match map_tree {
            Some(tree) => crate::reconstruct::extract_main_html_of_tree(map_html, tree, main),
            None => crate::reconstruct::extract_main_html(map_html, main),
        }))
        .map_err(|_| core_failed("reconstruct", "ValueError"))?
    };
    let markdown = markdown(&main_html)?;
    let empty_reason =
        markdown.is_empty().then_some(if any_main { EMPTY_MAIN_WITHOUT_TEXT } else { EMPTY_NO_MAIN });
    Ok(Finished { html: main_html, markdown, empty_reason })
}

/// `to_markdown(html)`, or the `"markdown: …"` error where the specification raises.
/// A panic in it is the page's `"markdown: CoreError: …"`, as `native.markdown` reports one.
fn markdown(html: &str) -> Result<String, String> {
    match catch_unwind(AssertUnwindSafe(|| crate::markdown::to_markdown(html.as_bytes()))) {
        Ok(Ok(bytes)) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Ok(Err(error)) => Err(format!("markdown: {}", py::describe(error.kind, &error.message))),
        Err(_) => Err(core_failed("markdown", "CoreError")),
    }
}

/// A page's error for a panic caught in `stage`, worded as the Python bindings word one
/// (`"<stage>: <kind>: the compiled core failed on this input: <panic>"`).
fn core_failed(stage: &str, kind: &str) -> String {
    format!("{stage}: {kind}: the compiled core failed on this input: {}", panic_message())
}

/// `pages._whole_text`: a page without blocks gives its visible text, one paragraph a line.
/// The Python page flow calls it too (`ffi.rs`).
pub(crate) fn whole_text(map_html: &[u8]) -> Result<Finished, String> {
    let text = catch_unwind(AssertUnwindSafe(|| crate::markdown::to_text(map_html)))
        .map_err(|_| core_failed("markdown", "CoreError"))?;
    let text = String::from_utf8_lossy(&text);
    let lines = py::splitlines(&text);
    if lines.is_empty() {
        return Ok(Finished {
            html: String::new(),
            markdown: String::new(),
            empty_reason: Some(EMPTY_NO_TEXT),
        });
    }
    let mut main_html = String::from("<html><body>");
    for line in lines {
        main_html.push_str("<p>");
        py::escape_html(line, &mut main_html);
        main_html.push_str("</p>");
    }
    main_html.push_str("</body></html>");
    let markdown = markdown(&main_html)?;
    Ok(Finished { html: main_html, markdown, empty_reason: None })
}
