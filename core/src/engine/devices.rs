//! Which device an engine runs on, said plainly: the provider its model sessions actually
//! opened on (a GPU provider that cannot run is an error at open, never a CPU run), or "none"
//! for a profile that runs no transformer (the default model's `fast` profile: block trees on
//! the CPU), where asking for a GPU is no error but is said once (`notice`).

use super::{Engine, EngineConfig};
use crate::ort::{ExecutionProvider, GpuOptions};

/// The provider of an engine whose profile runs no model on a device.
pub const NO_TRANSFORMER: &str = "none";

/// The GPU options an engine's classifier opens with: the engine's, with TensorRT's profiles
/// sized for the engine's token budget.
pub(super) fn gpu_options(config: &EngineConfig) -> GpuOptions {
    let mut gpu = config.gpu.clone();
    gpu.tensorrt.max_batch_tokens = config.max_batch_tokens;
    gpu
}

impl Engine {
    /// The provider and GPUs the model runs on: "cpu", "cuda:0", "tensorrt:0,1", or "none"
    /// when the profile runs no transformer (its block trees run on the CPU); the C ABI's
    /// `pulpie_rt_engine_provider` gives the provider alone (`provider_c_name`).
    pub fn runs_on(&self) -> &str {
        self.classifier.as_ref().map_or(NO_TRANSFORMER, |c| c.provider())
    }

    /// What a caller should say once about the devices: a GPU asked for a profile without a
    /// transformer, and how TensorRT's engines were made (built or loaded, and where). None:
    /// nothing to say.
    pub fn notice(&self) -> Option<String> {
        let mut lines: Vec<String> = Vec::new();
        let asked = self.config.session.provider;
        if self.classifier.is_none() && asked != ExecutionProvider::Cpu {
            let profile = self
                .manifest
                .profile
                .as_deref()
                .map_or("this model's".to_string(), |p| format!("profile '{p}'"));
            lines.push(format!(
                "{profile} runs no transformer: backend '{}' changes nothing, its block trees run on \
                 the CPU",
                asked.name()
            ));
        }
        if let Some(classifier) = &self.classifier {
            lines.extend(classifier.notes().iter().cloned());
        }
        (!lines.is_empty()).then(|| lines.join("; "))
    }
}
