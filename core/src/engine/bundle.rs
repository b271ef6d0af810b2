//! A model bundle as the runtime reads it (`runtime/model/bundle.py`): `manifest.json`, the
//! model, `tokenizer.json` and, for the default model, the rescorer; from a directory (as
//! `pulpie-rt export` writes it) or compiled into the library (feature `embedded-model`).

use crate::json::{self, Value};
use std::path::{Path, PathBuf};

pub const MANIFEST_NAME: &str = "manifest.json";
pub const TOKENIZER_NAME: &str = "tokenizer.json";
const BUNDLE_FORMAT: &str = "pulpie-rt-bundle";
const BUNDLE_FORMAT_VERSION: i64 = 1;
/// The block-feature layout this core computes (`features.FEATURES_VERSION`).
pub const FEATURES_VERSION: &str = "blocks-v1";

/// Where a bundle's files are.
pub enum Files {
    Dir(PathBuf),
    /// the files' bytes: model, tokenizer.json, rescorer (when the manifest names one)
    Embedded { model: &'static [u8], tokenizer: &'static [u8], rescorer: Option<&'static [u8]> },
}

/// The rescorer a manifest names (`manifest.rescorer`).
#[derive(Clone, Debug, PartialEq)]
pub struct RescorerSpec {
    pub file: String,
    pub features: String,
    pub margin_weight: f64,
}

/// What the page flow reads from `manifest.json` (`Bundle`'s properties).
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    pub onnx_file: String,
    pub output: String,
    pub sep_id: i64,
    pub bos_id: Option<i64>,
    pub eos_id: Option<i64>,
    pub pad_id: i64,
    pub max_tokens: usize,
    pub keep_best_block: bool,
    pub main_margin: Option<f64>,
    /// `decoding.selection` is `"expected_f1"` (absent or `"threshold"`: by `main_margin`)
    pub expected_f1: bool,
    pub rescorer: Option<RescorerSpec>,
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

impl Manifest {
    /// Reads a manifest's JSON; `where_` names the file in messages.
    pub fn parse(bytes: &[u8], where_: &str) -> Result<Manifest, String> {
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
        let bad = |what: &str| format!("{where_}: {what}");
        let onnx = value.get("onnx").ok_or_else(|| bad("no 'onnx' entry"))?;
        let onnx_file = onnx.get("file").and_then(Value::as_str).ok_or_else(|| bad("no onnx.file"))?;
        let output = onnx.get("output").and_then(Value::as_str).unwrap_or("logits");
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
                _ => return Err(bad("decoding.selection is not \"threshold\" or \"expected_f1\"")),
            },
        };
        let rescorer = if truthy(value.get("rescorer")) {
            let spec = value.get("rescorer").expect("truthy");
            let field = |name: &str| spec.get(name).ok_or_else(|| bad(&format!("no rescorer.{name}")));
            Some(RescorerSpec {
                file: field("file")?.as_str().ok_or_else(|| bad("rescorer.file is not a string"))?.to_string(),
                features: field("features")?
                    .as_str()
                    .ok_or_else(|| bad("rescorer.features is not a string"))?
                    .to_string(),
                margin_weight: field("margin_weight")?
                    .as_f64()
                    .ok_or_else(|| bad("rescorer.margin_weight is not a number"))?,
            })
        } else {
            None
        };
        Ok(Manifest {
            onnx_file: onnx_file.to_string(),
            output: output.to_string(),
            sep_id,
            bos_id,
            eos_id,
            pad_id,
            max_tokens,
            keep_best_block,
            main_margin,
            expected_f1,
            rescorer,
        })
    }
}

impl Bundle {
    /// `bundle.load_bundle`: a bundle directory, checked (messages as Python's `BundleError`).
    pub fn load_dir(root: &Path) -> Result<Bundle, String> {
        let shown = root.display().to_string();
        let manifest_path = root.join(MANIFEST_NAME);
        if !manifest_path.is_file() {
            return Err(format!("{shown}: not a pulpie-rt bundle (no {MANIFEST_NAME})"));
        }
        let bytes = std::fs::read(&manifest_path)
            .map_err(|e| format!("{}: unreadable manifest ({e})", manifest_path.display()))?;
        let manifest = Manifest::parse(&bytes, &manifest_path.display().to_string())?;
        let mut needed = vec![manifest.onnx_file.clone(), TOKENIZER_NAME.to_string()];
        if let Some(rescorer) = &manifest.rescorer {
            needed.push(rescorer.file.clone());
        }
        for file in needed {
            if !root.join(&file).is_file() {
                let name = Path::new(&file).file_name().map_or(file.clone(), |n| n.to_string_lossy().into_owned());
                return Err(format!("{shown}: bundle is missing {name}"));
            }
        }
        Ok(Bundle { name: shown, manifest, files: Files::Dir(root.to_path_buf()) })
    }

    /// The embedded default model (`pulpie_rt/default_model/`, compiled in with the
    /// `embedded-model` feature), or None in a build without it.
    pub fn embedded() -> Option<Result<Bundle, String>> {
        embedded::files().map(|(manifest, model, tokenizer, rescorer)| {
            let name = "the embedded default model".to_string();
            let manifest = Manifest::parse(manifest, &name)?;
            let rescorer = manifest.rescorer.is_some().then_some(rescorer);
            Ok(Bundle { name, manifest, files: Files::Embedded { model, tokenizer, rescorer } })
        })
    }
}

#[cfg(feature = "embedded-model")]
mod embedded {
    macro_rules! default_model_file {
        ($name:literal) => {
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../pulpie_rt/default_model/", $name))
        };
    }
    type Files = (&'static [u8], &'static [u8], &'static [u8], &'static [u8]);
    pub fn files() -> Option<Files> {
        Some((
            default_model_file!("manifest.json"),
            default_model_file!("model.onnx"),
            default_model_file!("tokenizer.json"),
            default_model_file!("rescorer.onnx"),
        ))
    }
}

#[cfg(not(feature = "embedded-model"))]
mod embedded {
    type Files = (&'static [u8], &'static [u8], &'static [u8], &'static [u8]);
    pub fn files() -> Option<Files> {
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
        let bundle = Bundle::load_dir(&default_model_dir()).unwrap();
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
