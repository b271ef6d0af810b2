//! What the NVIDIA driver says about a GPU, asked through the CUDA driver API (`libcuda.so.1`,
//! loaded at run time like ONNX Runtime itself, so the core keeps no link-time dependency).
//!
//! Asking for `cuda` or `tensorrt` first asks the driver whether the GPU is there: without a
//! driver or a device, ONNX Runtime's own failure (a provider library that cannot load its
//! CUDA libraries, or a CUDA error deep in session creation) says less about why. The GPU's
//! name and compute capability also name the folder its TensorRT engines are cached in
//! (engines only run on the architecture they were built for).

use super::library::{open_library, symbol};
use super::types::OrtError;
use std::ffi::{c_char, c_int, c_uint, CStr, OsStr};

/// The driver library's SONAME.
pub const DRIVER_LIBRARY: &str = "libcuda.so.1";

/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR` / `_MINOR` (cuda.h).
const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const COMPUTE_CAPABILITY_MINOR: c_int = 76;

/// One GPU as the driver describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gpu {
    pub index: u32,
    /// e.g. "NVIDIA L4"
    pub name: String,
    /// (major, minor), e.g. (8, 9)
    pub compute_capability: (i32, i32),
}

impl Gpu {
    /// A folder name for what is built for this GPU type: "nvidia-l4-sm89".
    pub fn slug(&self) -> String {
        let mut slug = String::new();
        for c in self.name.chars() {
            if c.is_ascii_alphanumeric() {
                slug.push(c.to_ascii_lowercase());
            } else if !slug.ends_with('-') && !slug.is_empty() {
                slug.push('-');
            }
        }
        let (major, minor) = self.compute_capability;
        format!("{}-sm{major}{minor}", slug.trim_end_matches('-'))
    }
}

type CuInit = unsafe extern "C" fn(flags: c_uint) -> c_int;
type CuDeviceGetCount = unsafe extern "C" fn(count: *mut c_int) -> c_int;
type CuDeviceGet = unsafe extern "C" fn(device: *mut c_int, ordinal: c_int) -> c_int;
type CuDeviceGetName = unsafe extern "C" fn(name: *mut c_char, len: c_int, device: c_int) -> c_int;
type CuDeviceGetAttribute = unsafe extern "C" fn(value: *mut c_int, attribute: c_int, device: c_int) -> c_int;
type CuGetErrorName = unsafe extern "C" fn(error: c_int, name: *mut *const c_char) -> c_int;

/// GPU `index` as the driver in `library` (None: `libcuda.so.1`) describes it, or why there is
/// none: no driver, no device, or fewer devices than `index + 1`.
pub fn probe(index: u32, library: Option<&OsStr>) -> Result<Gpu, OrtError> {
    let library = library.unwrap_or(OsStr::new(DRIVER_LIBRARY));
    let handle = open_library(library).map_err(|why| {
        OrtError(format!("no NVIDIA driver here: {} cannot be loaded ({why})", library.to_string_lossy()))
    })?;
    let shown = library.to_string_lossy();
    let symbol = |name: &CStr| unsafe { symbol(handle, &shown, name) };
    unsafe {
        let init: CuInit = std::mem::transmute(symbol(c"cuInit")?);
        let count: CuDeviceGetCount = std::mem::transmute(symbol(c"cuDeviceGetCount")?);
        let get: CuDeviceGet = std::mem::transmute(symbol(c"cuDeviceGet")?);
        let get_name: CuDeviceGetName = std::mem::transmute(symbol(c"cuDeviceGetName")?);
        let attribute: CuDeviceGetAttribute = std::mem::transmute(symbol(c"cuDeviceGetAttribute")?);
        let error_name: Option<CuGetErrorName> =
            symbol(c"cuGetErrorName").ok().map(|f| std::mem::transmute(f));
        let describe = |code: c_int| -> String {
            let mut name: *const c_char = std::ptr::null();
            match error_name {
                Some(f) if f(code, &mut name) == 0 && !name.is_null() => {
                    format!("{} ({code})", CStr::from_ptr(name).to_string_lossy())
                }
                _ => format!("CUDA error {code}"),
            }
        };
        let code = init(0);
        if code != 0 {
            return Err(OrtError(format!(
                "the NVIDIA driver finds no usable GPU: cuInit failed with {}",
                describe(code)
            )));
        }
        let mut n: c_int = 0;
        let code = count(&mut n);
        if code != 0 {
            return Err(OrtError(format!("the NVIDIA driver cannot count its GPUs: {}", describe(code))));
        }
        if i64::from(index) >= i64::from(n) {
            return Err(OrtError(format!(
                "there is no GPU {index}: the NVIDIA driver sees {n} GPU{} (0 to {})",
                if n == 1 { "" } else { "s" },
                n - 1
            )));
        }
        let mut device: c_int = 0;
        let code = get(&mut device, index as c_int);
        if code != 0 {
            return Err(OrtError(format!("the NVIDIA driver cannot open GPU {index}: {}", describe(code))));
        }
        let mut buffer = [0 as c_char; 256];
        let name = if get_name(buffer.as_mut_ptr(), buffer.len() as c_int, device) == 0 {
            CStr::from_ptr(buffer.as_ptr()).to_string_lossy().into_owned()
        } else {
            format!("GPU {index}")
        };
        let (mut major, mut minor) = (0, 0);
        attribute(&mut major, COMPUTE_CAPABILITY_MAJOR, device);
        attribute(&mut minor, COMPUTE_CAPABILITY_MINOR, device);
        Ok(Gpu { index, name, compute_capability: (major, minor) })
    }
}

/// The CUDA runtime's SONAMEs, newest first: the one ONNX Runtime's CUDA provider loaded is
/// already in the process once a CUDA session exists, so opening it finds that one.
pub const RUNTIME_LIBRARIES: [&str; 2] = ["libcudart.so.13", "libcudart.so.12"];

type CudaSetDevice = unsafe extern "C" fn(device: c_int) -> c_int;
type CudaMemcpy = unsafe extern "C" fn(
    dst: *mut std::ffi::c_void,
    src: *const std::ffi::c_void,
    bytes: usize,
    kind: c_int,
) -> c_int;
type CudaGetErrorString = unsafe extern "C" fn(error: c_int) -> *const c_char;
const HOST_TO_DEVICE: c_int = 1;
const DEVICE_TO_HOST: c_int = 2;

/// The CUDA runtime's copies between host and GPU memory (`cudaMemcpy`, synchronous), for the
/// GPU buffers a CUDA graph reads and writes (`binding.rs`): ONNX Runtime's C API has no copy
/// of its own into a tensor it allocated on a GPU.
pub struct CudaRuntime {
    set_device: CudaSetDevice,
    memcpy: CudaMemcpy,
    error_string: CudaGetErrorString,
}

impl CudaRuntime {
    /// The process's CUDA runtime (`RUNTIME_LIBRARIES`), loaded once.
    pub fn get() -> Result<&'static CudaRuntime, OrtError> {
        static RUNTIME: std::sync::OnceLock<Result<CudaRuntime, OrtError>> = std::sync::OnceLock::new();
        RUNTIME.get_or_init(CudaRuntime::load).as_ref().map_err(Clone::clone)
    }

    fn load() -> Result<CudaRuntime, OrtError> {
        let mut why = Vec::new();
        for name in RUNTIME_LIBRARIES {
            match open_library(OsStr::new(name)) {
                Ok(handle) => unsafe {
                    let symbol = |s: &CStr| symbol(handle, name, s);
                    return Ok(CudaRuntime {
                        set_device: std::mem::transmute::<*mut std::ffi::c_void, CudaSetDevice>(symbol(
                            c"cudaSetDevice",
                        )?),
                        memcpy: std::mem::transmute::<*mut std::ffi::c_void, CudaMemcpy>(symbol(
                            c"cudaMemcpy",
                        )?),
                        error_string: std::mem::transmute::<*mut std::ffi::c_void, CudaGetErrorString>(
                            symbol(c"cudaGetErrorString")?,
                        ),
                    });
                },
                Err(error) => why.push(error),
            }
        }
        Err(OrtError(format!("no CUDA runtime to copy to and from the GPU: {}", why.join("; "))))
    }

    fn check(&self, code: c_int, what: &str) -> Result<(), OrtError> {
        if code == 0 {
            return Ok(());
        }
        let text = unsafe { (self.error_string)(code) };
        let text = if text.is_null() {
            format!("CUDA error {code}")
        } else {
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        };
        Err(OrtError(format!("{what}: {text}")))
    }

    /// Copies `bytes` from the host to GPU memory `device_ptr` on GPU `device`.
    ///
    /// # Safety
    /// `device_ptr` is GPU memory of at least `bytes.len()` bytes on `device`.
    pub unsafe fn to_device(
        &self,
        device: u32,
        device_ptr: *mut std::ffi::c_void,
        bytes: &[u8],
    ) -> Result<(), OrtError> {
        self.check((self.set_device)(device as c_int), "cudaSetDevice")?;
        self.check(
            (self.memcpy)(device_ptr, bytes.as_ptr() as *const _, bytes.len(), HOST_TO_DEVICE),
            "cudaMemcpy to the GPU",
        )
    }

    /// Copies `out.len()` bytes from GPU memory `device_ptr` on GPU `device` to the host.
    ///
    /// # Safety
    /// `device_ptr` is GPU memory of at least `out.len()` bytes on `device`.
    pub unsafe fn to_host(
        &self,
        device: u32,
        device_ptr: *const std::ffi::c_void,
        out: &mut [u8],
    ) -> Result<(), OrtError> {
        self.check((self.set_device)(device as c_int), "cudaSetDevice")?;
        self.check(
            (self.memcpy)(out.as_mut_ptr() as *mut _, device_ptr, out.len(), DEVICE_TO_HOST),
            "cudaMemcpy from the GPU",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_driver_is_named_with_the_loaders_reason() {
        let error = probe(0, Some(OsStr::new("/nonexistent/libcuda.so.1"))).err().unwrap();
        assert_eq!(
            error.0,
            "no NVIDIA driver here: /nonexistent/libcuda.so.1 cannot be loaded \
             (/nonexistent/libcuda.so.1: cannot open shared object file: No such file or directory)"
        );
    }

    #[test]
    fn a_library_that_is_not_the_driver_is_named() {
        let error = probe(0, Some(OsStr::new("libc.so.6"))).err().unwrap();
        assert_eq!(error.0, "libc.so.6 has no symbol cuInit");
    }

    #[test]
    fn the_folder_name_says_gpu_type_and_architecture() {
        let gpu = Gpu { index: 0, name: "NVIDIA H100 80GB HBM3".into(), compute_capability: (9, 0) };
        assert_eq!(gpu.slug(), "nvidia-h100-80gb-hbm3-sm90");
        let gpu = Gpu { index: 1, name: "NVIDIA L4".into(), compute_capability: (8, 9) };
        assert_eq!(gpu.slug(), "nvidia-l4-sm89");
    }
}
