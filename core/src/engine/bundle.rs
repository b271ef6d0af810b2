//! A model bundle as the runtime reads it, the one reader of `manifest.json` (the Python
//! package's `runtime/model/bundle.py` holds what this read: `pulpie_rt_py_bundle_info`): the
//! model, `tokenizer.json` and, for the default model, the rescorer files; from a directory
//! (as `pulpie-rt export` writes it) or compiled into the library (feature `embedded-model`).
//! A bundle with `profiles` (the default model's `fast` and `accurate`) is read with one of
//! them (`select_profile`): its `decoding`, `rescorer`, `transformer`,
//! `keep_hidden` and `drop_noscript` in place of the manifest's own.

use super::decode::{ContainerPrior, Decoding, ShortStory};
use crate::json::{self, Value};
use std::path::{Path, PathBuf};

pub const MANIFEST_NAME: &str = "manifest.json";
pub const TOKENIZER_NAME: &str = "tokenizer.json";
const BUNDLE_FORMAT: &str = "pulpie-rt-bundle";
const BUNDLE_FORMAT_VERSION: i64 = 1;
/// The block-feature layout this core computes (`features.FEATURES_VERSION`).
pub const FEATURES_VERSION: &str = "blocks-v1";

/// The segmentation settings only a profile may set (`bundle.SEGMENTATION_SETTINGS`).
const SEGMENTATION_SETTINGS: [&str; 2] = ["keep_hidden", "drop_noscript"];

/// Where a bundle's files are.
pub enum Files {
    Dir(PathBuf),
    /// the files' names and bytes (manifest, model, tokenizer, every rescorer file)
    Embedded(&'static [(&'static str, &'static [u8])]),
}

/// The rescorer a manifest names (`manifest.rescorer`).
#[derive(Clone, Debug, PartialEq)]
pub struct RescorerSpec {
    pub file: String,
    pub features: String,
    pub margin_weight: f64,
    /// the context it reads its blocks in (`rescore.CONTEXTS`), or None: each block
    /// alone
    pub context: Option<String>,
    /// the first stage's file of a two-stage rescorer (context only)
    pub first_stage: Option<String>,
}

/// What the page flow reads from `manifest.json` (`Bundle`'s properties).
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    pub onnx_file: String,
    pub output: String,
    /// `onnx.attention`: "unfused" (absent: the traced export's MatMul/Softmax attention), or
    /// the graph's ONNX Runtime operators: "fused" (`export --attention fused`) or "gpu"
    /// (`export/gpu_graph.py`), which TensorRT cannot build
    pub attention: String,
    /// `onnx.max_call_tokens`: the most tokens one model call may hold (a packed graph's
    /// rotary tables); None: no limit but the engine's `max_batch_tokens`
    pub max_call_tokens: Option<usize>,
    pub sep_id: i64,
    pub bos_id: Option<i64>,
    pub eos_id: Option<i64>,
    pub pad_id: i64,
    pub max_tokens: usize,
    pub keep_best_block: bool,
    pub main_margin: Option<f64>,
    /// `decoding.selection` is `"expected_f1"` (absent or `"threshold"`: by `main_margin`)
    pub expected_f1: bool,
    /// `decoding.container_prior` (`decode::container_prior`; absent or null: none)
    pub container_prior: Option<ContainerPrior>,
    /// `decoding.story_prior` (`decode::story_prior`; absent or null: none)
    pub story_prior: Option<ContainerPrior>,
    /// `decoding.short_story` (`decode::story_prior`'s `short`; absent or null: none; needs a
    /// story prior)
    pub short_story: Option<ShortStory>,
    /// `decoding.continue_story` (`decode::continue_story`; absent, null or false: off)
    pub continue_story: bool,
    pub rescorer: Option<RescorerSpec>,
    /// whether the transformer runs (false: a rescorer-only profile, no tokens or chunks)
    pub transformer: bool,
    /// the profile's segmentation settings (false without profiles)
    pub keep_hidden: bool,
    pub drop_noscript: bool,
    /// the profile read (None: the bundle has none)
    pub profile: Option<String>,
    /// every profile the bundle has, in the manifest's order
    pub profiles: Vec<String>,
}

pub struct Bundle {
    /// how the bundle is named in messages (its directory, or "the embedded default model")
    pub name: String,
    pub manifest: Manifest,
    pub files: Files,
}

fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(json::Number::Int(i))) => *i != 0,
        Some(Value::Number(json::Number::Float(f))) => *f != 0.0,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

fn int(value: Option<&Value>, what: &str) -> Result<Option<i64>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| format!("{what} is not an integer")),
    }
}

/// The manifest's JSON with `profile`'s `decoding`, `rescorer`,
/// `transformer` and segmentation settings in place of its own (None: `default_profile`);
/// unchanged for a bundle without profiles when `profile` is None. Also the profile read and
/// the names of all. Its messages are `BundleError`'s in Python.
fn select_profile(
    value: &Value,
    profile: Option<&str>,
    where_: &str,
) -> Result<(Value, Option<String>, Vec<String>), String> {
    for key in SEGMENTATION_SETTINGS {
        if !matches!(value.get(key), None | Some(Value::Bool(false))) {
            return Err(format!(
                "{where_}: {key} is a profile's setting (profiles.<name>.{key}), not the manifest's: the top level \
                 is what readers without profiles run, and they segment as the reference does"
            ));
        }
    }
    let profiles = match value.get("profiles") {
        Some(v) if truthy(Some(v)) => v,
        _ => {
            if let Some(name) = profile {
                return Err(format!(
                    "{where_}: this bundle has no profiles (profile {} asked); only the embedded default \
                     model has fast/accurate profiles",
                    super::py::repr_str(name)
                ));
            }
            return Ok((value.clone(), None, Vec::new()));
        }
    };
    let entries = profiles.as_object().ok_or_else(|| format!("{where_}: profiles is not an object"))?;
    let mut names: Vec<String> = Vec::new();
    for (name, _) in entries {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    for name in &names {
        let entry = profiles.get(name).expect("a member");
        for key in SEGMENTATION_SETTINGS {
            match entry.get(key) {
                None | Some(Value::Bool(_)) => {}
                Some(other) => {
                    return Err(format!(
                        "{where_}: profiles.{name}.{key} must be true or false, not {}",
                        super::py::json_dumps(other)
                    ))
                }
            }
        }
    }
    let name = match profile {
        Some(name) => Some(name.to_string()),
        None => value.get("default_profile").and_then(Value::as_str).map(str::to_string),
    };
    let chosen = name.as_deref().and_then(|n| profiles.get(n));
    let (Some(name), Some(chosen)) = (name, chosen) else {
        let mut sorted = names.clone();
        sorted.sort();
        let asked = match profile {
            Some(name) => super::py::repr_str(name),
            None => match value.get("default_profile") {
                None | Some(Value::Null) => "None".to_string(),
                Some(Value::String(s)) => super::py::repr_str(s),
                Some(other) => super::py::json_dumps(other),
            },
        };
        return Err(format!("{where_}: no profile {asked} (this bundle has {})", sorted.join(", ")));
    };
    let mut members: Vec<(String, Value)> = value
        .as_object()
        .unwrap_or(&[])
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "decoding" | "rescorer" | "transformer"))
        .cloned()
        .collect();
    for key in ["decoding", "rescorer"] {
        let own = if truthy(chosen.get(key)) { chosen.get(key) } else { value.get(key) };
        if let Some(own) = own {
            members.push((key.to_string(), own.clone()));
        }
    }
    let transformer = match chosen.get("transformer") {
        None => true,
        other => truthy(other),
    };
    members.push(("transformer".to_string(), Value::Bool(transformer)));
    for key in SEGMENTATION_SETTINGS {
        members
            .push((key.to_string(), Value::Bool(chosen.get(key).and_then(Value::as_bool).unwrap_or(false))));
    }
    let selected = Value::Object(members);
    if !transformer && !truthy(selected.get("rescorer")) {
        return Err(format!(
            "{where_}: profile {} runs no transformer and has no rescorer",
            super::py::repr_str(&name)
        ));
    }
    Ok((selected, Some(name), names))
}

/// `onnx.attention` of a traced export's graph (the default).
pub const UNFUSED: &str = "unfused";
/// Every `onnx.attention` a bundle may have: all but `UNFUSED` hold ONNX Runtime's own
/// (`com.microsoft`) operators.
pub const ATTENTIONS: [&str; 3] = [UNFUSED, "fused", "gpu"];

impl Manifest {
    /// Reads a manifest's JSON as a reader without profiles does (the default profile when
    /// it has some); `where_` names the file in messages.
    pub fn parse(bytes: &[u8], where_: &str) -> Result<Manifest, String> {
        Manifest::parse_profile(bytes, where_, None)
    }

    /// Reads a manifest's JSON with `profile` (None: the bundle's `default_profile`, or the
    /// manifest as it is when it has no profiles); `where_` names the file in messages.
    pub fn parse_profile(bytes: &[u8], where_: &str, profile: Option<&str>) -> Result<Manifest, String> {
        let value = json::parse(bytes).map_err(|e| format!("{where_}: unreadable manifest ({e})"))?;
        let format = value.get("format").and_then(Value::as_str);
        if format != Some(BUNDLE_FORMAT) {
            let shown = format.map_or("None".to_string(), |f| format!("'{f}'"));
            return Err(format!("{where_}: format is {shown}, expected '{BUNDLE_FORMAT}'"));
        }
        if value.get("format_version").and_then(Value::as_i64) != Some(BUNDLE_FORMAT_VERSION) {
            return Err(format!(
                "{where_}: format_version is not supported (this runtime reads {BUNDLE_FORMAT_VERSION})"
            ));
        }
        let (value, profile, profiles) = select_profile(&value, profile, where_)?;
        let bad = |what: &str| format!("{where_}: {what}");
        let onnx = value.get("onnx").ok_or_else(|| bad("no 'onnx' entry"))?;
        let onnx_file = onnx.get("file").and_then(Value::as_str).ok_or_else(|| bad("no onnx.file"))?;
        let output = onnx.get("output").and_then(Value::as_str).unwrap_or("logits");
        let attention = onnx.get("attention").and_then(Value::as_str).unwrap_or(UNFUSED);
        let max_call_tokens = int(onnx.get("max_call_tokens"), "onnx.max_call_tokens")
            .map_err(|e| bad(&e))?
            .map(|n| {
                usize::try_from(n)
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| bad("onnx.max_call_tokens is not positive"))
            })
            .transpose()?;
        if !ATTENTIONS.contains(&attention) {
            return Err(bad(&format!(
                "onnx.attention is '{attention}', not one of {}",
                ATTENTIONS.join(", ")
            )));
        }
        let tokens = value.get("tokens").ok_or_else(|| bad("no 'tokens' entry"))?;
        let sep_id = int(tokens.get("sep_id"), "tokens.sep_id").map_err(|e| bad(&e))?;
        let sep_id = sep_id.ok_or_else(|| bad("no tokens.sep_id"))?;
        let bos_id = int(tokens.get("bos_id"), "tokens.bos_id").map_err(|e| bad(&e))?;
        let eos_id = int(tokens.get("eos_id"), "tokens.eos_id").map_err(|e| bad(&e))?;
        let pad_id = int(tokens.get("pad_id"), "tokens.pad_id").map_err(|e| bad(&e))?.unwrap_or(0);
        let max_tokens = int(value.get("max_tokens"), "max_tokens").map_err(|e| bad(&e))?.unwrap_or(8192);
        let max_tokens = usize::try_from(max_tokens).map_err(|_| bad("max_tokens is negative"))?;
        let decoding = value.get("decoding");
        let keep_best_block = truthy(decoding.and_then(|d| d.get("keep_best_block")));
        let main_margin = match decoding.and_then(|d| d.get("main_margin")) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_f64().ok_or_else(|| bad("decoding.main_margin is not a number"))?),
        };
        let expected_f1 = match decoding.and_then(|d| d.get("selection")) {
            None | Some(Value::Null) => false,
            Some(v) => match v.as_str() {
                Some("threshold") => false,
                Some("expected_f1") => true,
                other => {
                    let shown = other.map_or_else(|| super::py::json_dumps(v), super::py::repr_str);
                    return Err(bad(&format!(
                        "decoding.selection must be \"threshold\" or \"expected_f1\", not {shown}"
                    )));
                }
            },
        };
        // a {"share", "shift"} prior of the decoding (container_prior, story_prior)
        let prior_of = |key: &str| match decoding.and_then(|d| d.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(prior) => {
                let number = |key: &str| prior.get(key).and_then(Value::as_f64);
                match (number("share"), number("shift")) {
                    (Some(share), Some(shift))
                        if share > 0.0 && share <= 1.0 && shift.is_finite() && shift >= 0.0 =>
                    {
                        Ok(Some(ContainerPrior { share, shift }))
                    }
                    _ => Err(bad(&format!(
                        "decoding.{key} is not {{\"share\": a number in (0, 1], \"shift\": a number >= 0}}"
                    ))),
                }
            }
        };
        let container_prior = prior_of("container_prior")?;
        let story_prior = prior_of("story_prior")?;
        let short_story = match decoding.and_then(|d| d.get("short_story")) {
            None | Some(Value::Null) => None,
            Some(short) => {
                let number = |key: &str| short.get(key).and_then(Value::as_f64);
                match (number("words"), number("shift"), number("prose_shift")) {
                    (Some(words), Some(shift), Some(prose_shift))
                        if words >= 0.0
                            && [shift, prose_shift].iter().all(|x| x.is_finite() && *x >= 0.0) =>
                    {
                        Some(ShortStory { words, shift, prose_shift })
                    }
                    _ => {
                        return Err(bad("decoding.short_story is not {\"words\": a number >= 0, \
                                        \"shift\": a number >= 0, \"prose_shift\": a number >= 0}"))
                    }
                }
            }
        };
        if short_story.is_some() && story_prior.is_none() {
            return Err(bad("decoding.short_story needs a decoding.story_prior"));
        }
        let continue_story = match decoding.and_then(|d| d.get("continue_story")) {
            None | Some(Value::Null) => false,
            Some(v) => v.as_bool().ok_or_else(|| bad("decoding.continue_story is not true or false"))?,
        };
        let rescorer = if truthy(value.get("rescorer")) {
            let spec = value.get("rescorer").expect("truthy");
            let field = |name: &str| spec.get(name).ok_or_else(|| bad(&format!("no rescorer.{name}")));
            Some(RescorerSpec {
                file: field("file")?
                    .as_str()
                    .ok_or_else(|| bad("rescorer.file is not a string"))?
                    .to_string(),
                features: field("features")?
                    .as_str()
                    .ok_or_else(|| bad("rescorer.features is not a string"))?
                    .to_string(),
                margin_weight: field("margin_weight")?
                    .as_f64()
                    .ok_or_else(|| bad("rescorer.margin_weight is not a number"))?,
                context: optional_str(spec, "context").map_err(|e| bad(&e))?,
                first_stage: optional_str(spec, "first_stage").map_err(|e| bad(&e))?,
            })
        } else {
            None
        };
        // what reads the container columns needs a rescorer over a layout that has them
        let containers = rescorer.as_ref().is_some_and(|r| {
            matches!(r.features.as_str(), "blocks-v3" | "blocks-v4" | "blocks-v5" | "blocks-v6")
        });
        for (key, asked) in [
            ("container_prior", container_prior.is_some()),
            ("story_prior", story_prior.is_some()),
            ("continue_story", continue_story),
        ] {
            if asked && !containers {
                return Err(bad(&format!("decoding.{key} needs a rescorer over blocks-v3 to blocks-v6")));
            }
        }
        let setting = |key: &str| value.get(key).and_then(Value::as_bool).unwrap_or(false);
        Ok(Manifest {
            onnx_file: onnx_file.to_string(),
            output: output.to_string(),
            attention: attention.to_string(),
            max_call_tokens,
            sep_id,
            bos_id,
            eos_id,
            pad_id,
            max_tokens,
            keep_best_block,
            main_margin,
            expected_f1,
            container_prior,
            story_prior,
            short_story,
            continue_story,
            rescorer,
            transformer: value.get("transformer").is_none_or(|v| truthy(Some(v))),
            keep_hidden: setting("keep_hidden"),
            drop_noscript: setting("drop_noscript"),
            profile,
            profiles,
        })
    }
}

impl Manifest {
    /// The block features a page is prepared with (their layout), or None: the layout the
    /// rescorer reads, else `blocks-v1` when the decoding reads the features' words. The
    /// engine's choice, and what `pulpie_rt_py_bundle_info` tells the Python tools.
    pub fn prepared_features(&self) -> Option<&str> {
        match &self.rescorer {
            Some(spec) => Some(&spec.features),
            None if self.expected_f1 => Some(FEATURES_VERSION),
            None => None,
        }
    }

    /// The decoding the manifest asks for (margins or argmax, threshold, `keep_best_block`,
    /// the selection, the container prior, the story prior, the story): the engine's, and what
    /// `pulpie_rt_py_bundle_info` gives the Python tools.
    pub fn decoding(&self) -> Decoding {
        Decoding {
            margins: self.keep_best_block
                || self.main_margin.is_some()
                || self.rescorer.is_some()
                || self.expected_f1
                || self.container_prior.is_some()
                || self.story_prior.is_some()
                || self.continue_story,
            main_margin: self.main_margin,
            keep_best_block: self.keep_best_block,
            expected_f1: self.expected_f1,
            container_prior: self.container_prior,
            story_prior: self.story_prior,
            short_story: self.short_story,
            continue_story: self.continue_story,
        }
    }
}

/// `rescorer.<key>`: a string, or None when absent or null (`spec.get(key)`).
fn optional_str(spec: &Value, key: &str) -> Result<Option<String>, String> {
    match spec.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            v.as_str().map(|s| Some(s.to_string())).ok_or_else(|| format!("rescorer.{key} is not a string"))
        }
    }
}

impl Bundle {
    /// `bundle.load_bundle`: a bundle directory, checked (messages as Python's `BundleError`),
    /// with its default profile when it has profiles.
    pub fn load_dir(root: &Path) -> Result<Bundle, String> {
        Bundle::load_dir_profile(root, None)
    }

    /// `bundle.load_bundle(root, profile)`.
    pub fn load_dir_profile(root: &Path, profile: Option<&str>) -> Result<Bundle, String> {
        let shown = root.display().to_string();
        let manifest_path = root.join(MANIFEST_NAME);
        if !manifest_path.is_file() {
            return Err(format!("{shown}: not a pulpie-rt bundle (no {MANIFEST_NAME})"));
        }
        let bytes = std::fs::read(&manifest_path)
            .map_err(|e| format!("{}: unreadable manifest ({e})", manifest_path.display()))?;
        let manifest = Manifest::parse_profile(&bytes, &manifest_path.display().to_string(), profile)?;
        for file in manifest.needed_files() {
            if !root.join(&file).is_file() {
                let name =
                    Path::new(&file).file_name().map_or(file.clone(), |n| n.to_string_lossy().into_owned());
                return Err(format!("{shown}: bundle is missing {name}"));
            }
        }
        Ok(Bundle { name: shown, manifest, files: Files::Dir(root.to_path_buf()) })
    }

    /// The embedded default model (`pulpie_rt/default_model/`, compiled in with the
    /// `embedded-model` feature) with its default profile, or None in a build without it.
    pub fn embedded() -> Option<Result<Bundle, String>> {
        Bundle::embedded_profile(None)
    }

    /// The embedded default model with `profile` (None: its `default_profile`).
    pub fn embedded_profile(profile: Option<&str>) -> Option<Result<Bundle, String>> {
        Some(Bundle::from_files(embedded::files()?, "the embedded default model", profile))
    }

    /// A bundle whose files are `files` (names and bytes, the manifest among them); `name`
    /// names it in messages.
    pub fn from_files(
        files: &'static [(&'static str, &'static [u8])],
        name: &str,
        profile: Option<&str>,
    ) -> Result<Bundle, String> {
        let find = |file: &str| files.iter().find(|(n, _)| *n == file).map(|(_, bytes)| *bytes);
        let manifest = find(MANIFEST_NAME)
            .ok_or_else(|| format!("{name}: not a pulpie-rt bundle (no {MANIFEST_NAME})"))?;
        let manifest = Manifest::parse_profile(manifest, name, profile)?;
        for file in manifest.needed_files() {
            if find(&file).is_none() {
                return Err(format!("{name}: bundle is missing {file}"));
            }
        }
        Ok(Bundle { name: name.to_string(), manifest, files: Files::Embedded(files) })
    }

    /// The bytes of one of an embedded bundle's files (None: a directory's bundle, or no
    /// such file).
    pub fn embedded_file(&self, file: &str) -> Option<&'static [u8]> {
        match &self.files {
            Files::Dir(_) => None,
            Files::Embedded(files) => files.iter().find(|(n, _)| *n == file).map(|(_, bytes)| *bytes),
        }
    }
}

impl Manifest {
    /// The files the page flow reads (`load_bundle`'s `needed_files`): the model and the
    /// tokenizer when the transformer runs (Python checks them whatever the profile), the
    /// rescorer's files.
    fn needed_files(&self) -> Vec<String> {
        let mut needed = vec![self.onnx_file.clone(), TOKENIZER_NAME.to_string()];
        if let Some(rescorer) = &self.rescorer {
            needed.push(rescorer.file.clone());
            needed.extend(rescorer.first_stage.clone());
        }
        needed
    }
}

#[cfg(feature = "embedded-model")]
mod embedded {
    macro_rules! default_model_files {
        ($($name:literal),*) => {
            &[$(($name, include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../pulpie_rt/default_model/", $name)))),*]
        };
    }
    static FILES: &[(&str, &[u8])] = default_model_files!(
        "manifest.json",
        "model.onnx",
        "tokenizer.json",
        "rescorer.onnx",
        "rescorer-fast-first.onnx",
        "rescorer-fast.onnx"
    );
    pub fn files() -> Option<&'static [(&'static str, &'static [u8])]> {
        Some(FILES)
    }
}

#[cfg(not(feature = "embedded-model"))]
mod embedded {
    pub fn files() -> Option<&'static [(&'static str, &'static [u8])]> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_model_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../pulpie_rt/default_model")
    }

    #[test]
    fn the_default_models_manifest() {
        let bundle = Bundle::load_dir_profile(&default_model_dir(), Some("accurate")).unwrap();
        let m = &bundle.manifest;
        assert_eq!((m.sep_id, m.bos_id, m.eos_id, m.pad_id, m.max_tokens), (4, Some(0), Some(1), 2, 1024));
        assert_eq!((m.onnx_file.as_str(), m.output.as_str()), ("model.onnx", "logits"));
        assert!(m.keep_best_block);
        assert_eq!(m.main_margin, Some(-1.0));
        let rescorer = m.rescorer.as_ref().unwrap();
        assert_eq!((rescorer.file.as_str(), rescorer.features.as_str()), ("rescorer.onnx", FEATURES_VERSION));
        assert_eq!(rescorer.margin_weight, 0.25);
    }

    #[test]
    fn the_default_models_profiles() {
        let dir = default_model_dir();
        let accurate = Bundle::load_dir_profile(&dir, Some("accurate")).unwrap().manifest;
        assert_eq!(accurate.profile.as_deref(), Some("accurate"));
        assert_eq!(accurate.profiles, ["fast", "accurate"]);
        assert!(
            accurate.transformer && !accurate.keep_hidden && !accurate.drop_noscript && !accurate.expected_f1
        );
        // no profile asked: the manifest's default_profile
        let fast = Bundle::load_dir(&dir).unwrap().manifest;
        assert_eq!(fast.profile.as_deref(), Some("fast"));
        assert!(!fast.transformer && fast.keep_hidden && fast.drop_noscript && fast.expected_f1);
        assert_eq!((fast.keep_best_block, fast.main_margin), (true, Some(0.25)));
        let rescorer = fast.rescorer.unwrap();
        assert_eq!(
            (rescorer.file.as_str(), rescorer.features.as_str(), rescorer.context.as_deref()),
            ("rescorer-fast.onnx", "blocks-v5", Some("context-v6"))
        );
        assert_eq!(rescorer.first_stage.as_deref(), Some("rescorer-fast-first.onnx"));
        assert_eq!(fast.story_prior, Some(ContainerPrior { share: 0.5, shift: 1.0 }));
        let unknown = Bundle::load_dir_profile(&dir, Some("fastest")).err().unwrap();
        let manifest = dir.join(MANIFEST_NAME);
        assert_eq!(
            unknown,
            format!("{}: no profile 'fastest' (this bundle has accurate, fast)", manifest.display())
        );
    }

    fn manifest_with(extra: &str) -> Vec<u8> {
        format!(
            r#"{{"format": "pulpie-rt-bundle", "format_version": 1, "onnx": {{"file": "model.onnx"}},
                "tokens": {{"sep_id": 5}}{extra}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn profiles_are_read_as_select_profile_reads_them() {
        let plain = manifest_with("");
        assert_eq!(Manifest::parse(&plain, "m.json").unwrap().profile, None);
        assert_eq!(
            Manifest::parse_profile(&plain, "m.json", Some("fast")).err().unwrap(),
            "m.json: this bundle has no profiles (profile 'fast' asked); only the embedded default model has \
             fast/accurate profiles"
        );
        let top = manifest_with(r#", "keep_hidden": null"#);
        assert_eq!(
            Manifest::parse(&top, "m.json").err().unwrap(),
            "m.json: keep_hidden is a profile's setting (profiles.<name>.keep_hidden), not the manifest's: the \
             top level is what readers without profiles run, and they segment as the reference does"
        );
        let bad = manifest_with(r#", "profiles": {"a": {"drop_noscript": "yes"}}, "default_profile": "a""#);
        assert_eq!(
            Manifest::parse(&bad, "m.json").err().unwrap(),
            "m.json: profiles.a.drop_noscript must be true or false, not \"yes\""
        );
        let no_default = manifest_with(r#", "profiles": {"b": {}, "a": {}}"#);
        assert_eq!(
            Manifest::parse(&no_default, "m.json").err().unwrap(),
            "m.json: no profile None (this bundle has a, b)"
        );
        let bare = manifest_with(r#", "profiles": {"a": {"transformer": false}}, "default_profile": "a""#);
        assert_eq!(
            Manifest::parse(&bare, "m.json").err().unwrap(),
            "m.json: profile 'a' runs no transformer and has no rescorer"
        );
        // a profile's decoding replaces the manifest's; without one, the manifest's stays
        let two = manifest_with(
            r#", "decoding": {"main_margin": -1.0}, "default_profile": "b",
               "profiles": {"a": {"decoding": {"main_margin": 2.0}}, "b": {"keep_hidden": true}}"#,
        );
        let a = Manifest::parse_profile(&two, "m.json", Some("a")).unwrap();
        assert_eq!((a.main_margin, a.keep_hidden, a.transformer), (Some(2.0), false, true));
        let b = Manifest::parse(&two, "m.json").unwrap();
        assert_eq!((b.main_margin, b.keep_hidden, b.profile.as_deref()), (Some(-1.0), true, Some("b")));
    }

    #[test]
    fn the_container_prior_is_read_and_checked() {
        let rescorer = r#""rescorer": {"file": "r.onnx", "features": "blocks-v3", "margin_weight": 0.0}"#;
        let with = |prior: &str, features: &str| {
            manifest_with(&format!(
                r#", "decoding": {{"container_prior": {prior}}}, {}"#,
                rescorer.replace("blocks-v3", features)
            ))
        };
        let m = Manifest::parse(&with(r#"{"share": 0.6, "shift": 1.0}"#, "blocks-v3"), "m.json").unwrap();
        assert_eq!(m.container_prior, Some(ContainerPrior { share: 0.6, shift: 1.0 }));
        assert_eq!(Manifest::parse(&with("null", "blocks-v1"), "m.json").unwrap().container_prior, None);
        let shape = "m.json: decoding.container_prior is not {\"share\": a number in (0, 1], \"shift\": a number >= 0}";
        for bad in
            [r#"{"share": 0.0, "shift": 1.0}"#, r#"{"share": 0.5, "shift": -1}"#, r#"{"share": 0.5}"#, "1"]
        {
            assert_eq!(Manifest::parse(&with(bad, "blocks-v3"), "m.json").err().unwrap(), shape, "{bad}");
        }
        assert_eq!(
            Manifest::parse(&with(r#"{"share": 0.6, "shift": 1.0}"#, "blocks-v1"), "m.json").err().unwrap(),
            "m.json: decoding.container_prior needs a rescorer over blocks-v3 to blocks-v6"
        );
    }

    #[test]
    fn the_story_prior_is_read_and_checked() {
        let with = |prior: &str, features: &str| {
            manifest_with(&format!(
                r#", "decoding": {{"story_prior": {prior}}}, "rescorer": {{"file": "r.onnx",
                   "features": "{features}", "margin_weight": 0.0}}"#
            ))
        };
        let m = Manifest::parse(&with(r#"{"share": 0.5, "shift": 3}"#, "blocks-v5"), "m.json").unwrap();
        assert_eq!(
            (m.story_prior, m.container_prior),
            (Some(ContainerPrior { share: 0.5, shift: 3.0 }), None)
        );
        assert_eq!(Manifest::parse(&with("null", "blocks-v1"), "m.json").unwrap().story_prior, None);
        assert_eq!(
            Manifest::parse(&with(r#"{"share": 1.5, "shift": 3}"#, "blocks-v3"), "m.json").err().unwrap(),
            "m.json: decoding.story_prior is not {\"share\": a number in (0, 1], \"shift\": a number >= 0}"
        );
        assert_eq!(
            Manifest::parse(&with(r#"{"share": 0.5, "shift": 3}"#, "blocks-v2"), "m.json").err().unwrap(),
            "m.json: decoding.story_prior needs a rescorer over blocks-v3 to blocks-v6"
        );
    }

    #[test]
    fn the_short_story_is_read_and_checked() {
        let with = |decoding: &str| {
            manifest_with(&format!(
                r#", "decoding": {{{decoding}}}, "rescorer": {{"file": "r.onnx",
                   "features": "blocks-v5", "margin_weight": 0.0}}"#
            ))
        };
        let story = r#""story_prior": {"share": 0.5, "shift": 1}"#;
        let short = r#""short_story": {"words": 150, "shift": 3, "prose_shift": 0.5}"#;
        let m = Manifest::parse(&with(&format!("{story}, {short}")), "m.json").unwrap();
        assert_eq!(m.short_story, Some(ShortStory { words: 150.0, shift: 3.0, prose_shift: 0.5 }));
        assert_eq!(m.decoding().short_story, m.short_story);
        let m = Manifest::parse(&with(&format!(r#"{story}, "short_story": null"#)), "m.json").unwrap();
        assert_eq!(m.short_story, None);
        assert_eq!(
            Manifest::parse(&with(short), "m.json").err().unwrap(),
            "m.json: decoding.short_story needs a decoding.story_prior"
        );
        for bad in [r#"{"words": 150, "shift": 3}"#, r#"{"words": -1, "shift": 3, "prose_shift": 0}"#, "1"] {
            assert_eq!(
                Manifest::parse(&with(&format!(r#"{story}, "short_story": {bad}"#)), "m.json").err().unwrap(),
                "m.json: decoding.short_story is not {\"words\": a number >= 0, \"shift\": a number >= 0, \
                 \"prose_shift\": a number >= 0}",
                "{bad}"
            );
        }
    }

    #[test]
    fn continue_story_is_read_and_checked() {
        let with = |value: &str, features: &str| {
            manifest_with(&format!(
                r#", "decoding": {{"continue_story": {value}}}, "rescorer": {{"file": "r.onnx",
                   "features": "{features}", "margin_weight": 0.0}}"#
            ))
        };
        assert!(Manifest::parse(&with("true", "blocks-v4"), "m.json").unwrap().continue_story);
        for off in ["false", "null"] {
            assert!(!Manifest::parse(&with(off, "blocks-v1"), "m.json").unwrap().continue_story);
        }
        assert_eq!(
            Manifest::parse(&with("1", "blocks-v3"), "m.json").err().unwrap(),
            "m.json: decoding.continue_story is not true or false"
        );
        assert_eq!(
            Manifest::parse(&with("true", "blocks-v2"), "m.json").err().unwrap(),
            "m.json: decoding.continue_story needs a rescorer over blocks-v3 to blocks-v6"
        );
    }

    #[test]
    fn bad_bundles_are_named() {
        let missing = Bundle::load_dir(Path::new("/nonexistent/bundle")).err().unwrap();
        assert_eq!(missing, "/nonexistent/bundle: not a pulpie-rt bundle (no manifest.json)");
        let error = Manifest::parse(b"{\"format\": \"x\"}", "m.json").err().unwrap();
        assert_eq!(error, "m.json: format is 'x', expected 'pulpie-rt-bundle'");
        let plain = br#"{"format": "pulpie-rt-bundle", "format_version": 1, "onnx": {"file": "model.onnx"},
                         "tokens": {"sep_id": 5, "bos_id": null, "pad_id": null}, "rescorer": {}}"#;
        let m = Manifest::parse(plain, "m.json").unwrap();
        assert_eq!((m.bos_id, m.eos_id, m.pad_id, m.max_tokens), (None, None, 0, 8192));
        assert!(!m.keep_best_block && m.main_margin.is_none() && m.rescorer.is_none());
    }
}
