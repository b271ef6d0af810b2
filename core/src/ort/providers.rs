//! The execution providers, named in one place: the backend each door asks for (the C option
//! `backend`, the CLI's `--backend`, Python's `backend=`), how its device is written, which of
//! ONNX Runtime's providers it needs and where its options are set. The C ABI gives this table
//! out (`pulpie_rt_provider_name`, `pulpie_rt_provider_device`), and the Python doors read
//! their choices from there, so a provider is named here and nowhere else. A leaf: it imports
//! nothing of `ort`.

/// One execution provider as every door names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Provider {
    /// the backend's name: "cpu", "cuda", "tensorrt"
    pub name: &'static str,
    /// how its device is written: "cpu", or "cuda:N" for GPU N (the C option `device_id` N)
    pub device: &'static str,
    /// ONNX Runtime's execution providers it needs in the library (TensorRT runs beside CUDA)
    pub ort_providers: &'static [&'static str],
    /// where its options are set, for a message or `--help`
    pub options: &'static str,
    /// NUL-terminated copies of `name` and `device` for the C ABI (static)
    c_name: &'static str,
    c_device: &'static str,
}

impl Provider {
    /// `name`, NUL-terminated (static), for the C ABI.
    pub fn c_name(&self) -> &'static str {
        self.c_name
    }

    /// `device`, NUL-terminated (static), for the C ABI.
    pub fn c_device(&self) -> &'static str {
        self.c_device
    }

    /// Whether it runs on a GPU.
    pub fn on_gpu(&self) -> bool {
        !self.ort_providers.is_empty()
    }
}

/// The device syntax of every GPU provider: `cuda:N`, N the GPU's index (`device_id`).
pub const GPU_DEVICE: &str = "cuda:N";

/// Every execution provider, in the order the doors list them.
pub const PROVIDERS: [Provider; 3] = [
    Provider {
        name: "cpu",
        device: "cpu",
        ort_providers: &[],
        options: "threads (intra-op threads; 0: one per physical core)",
        c_name: "cpu\0",
        c_device: "cpu\0",
    },
    Provider {
        name: "cuda",
        device: GPU_DEVICE,
        ort_providers: &["CUDAExecutionProvider"],
        options: "the engine's CUDA options (core/src/ort/gpu.rs cuda_provider_options), \
                  PULPIE_RT_ORT_CUDA_OPTIONS=key=value,... over them, PULPIE_RT_GPU_CALLS",
        c_name: "cuda\0",
        c_device: "cuda:N\0",
    },
    Provider {
        name: "tensorrt",
        device: GPU_DEVICE,
        ort_providers: &["TensorrtExecutionProvider", "CUDAExecutionProvider"],
        options: "FP16 engines with FP32 islands, one per batcher bucket, cached in the bundle's \
                  tensorrt/<gpu>/ folder (pulpie-rt engine)",
        c_name: "tensorrt\0",
        c_device: "cuda:N\0",
    },
];

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
    /// The provider named `name` (a `PROVIDERS` name) on GPU `device_id` (not read for the
    /// CPU); an unknown name is an error listing the known ones.
    pub fn parse(name: &str, device_id: u32) -> Result<ExecutionProvider, String> {
        let all = [
            ExecutionProvider::Cpu,
            ExecutionProvider::Cuda { device_id },
            ExecutionProvider::TensorRt { device_id },
        ];
        all.into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| format!("unknown backend '{name}': choose {}", choices()))
    }

    /// Its entry in `PROVIDERS`.
    pub fn spec(self) -> &'static Provider {
        let index = match self {
            ExecutionProvider::Cpu => 0,
            ExecutionProvider::Cuda { .. } => 1,
            ExecutionProvider::TensorRt { .. } => 2,
        };
        &PROVIDERS[index]
    }

    /// "cpu", "cuda" or "tensorrt" (the C option's spelling).
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The GPU asked for (None: the CPU).
    pub fn device(self) -> Option<u32> {
        match self {
            ExecutionProvider::Cpu => None,
            ExecutionProvider::Cuda { device_id } | ExecutionProvider::TensorRt { device_id } => {
                Some(device_id)
            }
        }
    }

    /// Its device as the doors write it: "cpu" or "cuda:N".
    pub fn device_name(self) -> String {
        match self.device() {
            None => "cpu".to_string(),
            Some(id) => GPU_DEVICE.replace('N', &id.to_string()),
        }
    }
}

/// "cpu, cuda or tensorrt": the names, for a message.
pub fn choices() -> String {
    let names: Vec<&str> = PROVIDERS.iter().map(|p| p.name).collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_is_parsed_back_from_its_name_and_says_its_device() {
        for provider in [
            ExecutionProvider::Cpu,
            ExecutionProvider::Cuda { device_id: 3 },
            ExecutionProvider::TensorRt { device_id: 3 },
        ] {
            assert_eq!(ExecutionProvider::parse(provider.name(), 3), Ok(provider));
            let spec = provider.spec();
            assert_eq!(spec.c_name(), format!("{}\0", spec.name));
            assert_eq!(spec.c_device(), format!("{}\0", spec.device));
            assert_eq!(spec.on_gpu(), provider.device().is_some());
        }
        assert_eq!(ExecutionProvider::Cuda { device_id: 1 }.device_name(), "cuda:1");
        assert_eq!(ExecutionProvider::Cpu.device_name(), "cpu");
        assert_eq!(
            ExecutionProvider::parse("onnxruntime", 0).unwrap_err(),
            "unknown backend 'onnxruntime': choose cpu, cuda or tensorrt"
        );
    }
}
