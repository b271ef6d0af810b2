//! IO binding: a session's inputs and output bound once to buffers of fixed shape that ONNX
//! Runtime allocated where the session runs (GPU memory for CUDA), filled and read by copies,
//! and run with run options. This is what CUDA graphs need (ONNX Runtime's `enable_cuda_graph`
//! captures a run's kernels once per `gpu_graph_id` and replays them: every input and output
//! must stay at the address it had at capture), and it spares the per-call copies ONNX Runtime
//! makes of inputs given in host memory. On the CPU the same code binds host buffers, which is
//! how the tests check it.

use super::api::{check, ElementType, Session};
use super::cuda::CudaRuntime;
use super::sys::{self, OrtApi};
use super::types::OrtError;
use std::ffi::{c_void, CStr, CString};
use std::ptr::{null_mut, NonNull};
use std::sync::Arc;

/// Where bound buffers live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    Cpu,
    /// GPU `device`'s memory (CUDA)
    Cuda {
        device: u32,
    },
}

/// An `OrtRunOptions` with `key=value` entries, released on drop.
pub struct RunOptions {
    api: &'static OrtApi,
    ptr: NonNull<sys::OrtRunOptions>,
}

unsafe impl Send for RunOptions {}
unsafe impl Sync for RunOptions {}

impl RunOptions {
    /// Run options with `entries` (`gpu_graph_id` = N: the CUDA graph a run captures or
    /// replays).
    pub fn new(session: &Session, entries: &[(&str, String)]) -> Result<RunOptions, OrtError> {
        let api = session.ort().api();
        let mut ptr = null_mut();
        unsafe { check(api, (api.create_run_options)(&mut ptr))? };
        let options = RunOptions {
            api,
            ptr: NonNull::new(ptr).ok_or_else(|| OrtError("CreateRunOptions returned null".into()))?,
        };
        for (key, value) in entries {
            let (k, v) = (c_string(key)?, c_string(value)?);
            unsafe { check(api, (api.add_run_config_entry)(options.ptr.as_ptr(), k.as_ptr(), v.as_ptr()))? };
        }
        Ok(options)
    }
}

impl Drop for RunOptions {
    fn drop(&mut self) {
        unsafe { (self.api.release_run_options)(self.ptr.as_ptr()) }
    }
}

fn c_string(text: &str) -> Result<CString, OrtError> {
    CString::new(text).map_err(|_| OrtError(format!("{text:?} holds a NUL byte")))
}

/// A session's allocator for `Memory`, released after every tensor it made (an `Arc`).
struct Allocator {
    api: &'static OrtApi,
    ptr: NonNull<sys::OrtAllocator>,
}

unsafe impl Send for Allocator {}
unsafe impl Sync for Allocator {}

impl Drop for Allocator {
    fn drop(&mut self) {
        unsafe { (self.api.release_allocator)(self.ptr.as_ptr()) }
    }
}

/// A tensor ONNX Runtime allocated with a session's allocator, at a fixed address.
pub struct Buffer {
    api: &'static OrtApi,
    value: NonNull<sys::OrtValue>,
    data: *mut c_void,
    bytes: usize,
    memory: Memory,
    _allocator: Arc<Allocator>,
}

unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

impl Buffer {
    /// Writes `bytes` (exactly the buffer's size) into it.
    pub fn write(&self, bytes: &[u8]) -> Result<(), OrtError> {
        if bytes.len() != self.bytes {
            return Err(OrtError(format!("{} bytes for a buffer of {}", bytes.len(), self.bytes)));
        }
        match self.memory {
            Memory::Cpu => unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.data as *mut u8, bytes.len());
                Ok(())
            },
            Memory::Cuda { device } => unsafe { CudaRuntime::get()?.to_device(device, self.data, bytes) },
        }
    }

    /// Reads the buffer into `out` (exactly its size).
    pub fn read(&self, out: &mut [u8]) -> Result<(), OrtError> {
        if out.len() != self.bytes {
            return Err(OrtError(format!("{} bytes read from a buffer of {}", out.len(), self.bytes)));
        }
        match self.memory {
            Memory::Cpu => unsafe {
                std::ptr::copy_nonoverlapping(self.data as *const u8, out.as_mut_ptr(), out.len());
                Ok(())
            },
            Memory::Cuda { device } => unsafe { CudaRuntime::get()?.to_host(device, self.data, out) },
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        unsafe { (self.api.release_value)(self.value.as_ptr()) }
    }
}

/// The size in bytes of one element.
fn element_bytes(element: ElementType) -> Result<usize, OrtError> {
    match element {
        ElementType::Float16 => Ok(2),
        ElementType::Float32 | ElementType::Int32 => Ok(4),
        ElementType::Float64 | ElementType::Int64 => Ok(8),
        ElementType::Other(raw) => Err(OrtError(format!("no buffer for element type {raw}"))),
    }
}

fn raw_element(element: ElementType) -> i32 {
    match element {
        ElementType::Float32 => sys::ELEMENT_FLOAT,
        ElementType::Float16 => sys::ELEMENT_FLOAT16,
        ElementType::Float64 => sys::ELEMENT_DOUBLE,
        ElementType::Int32 => sys::ELEMENT_INT32,
        ElementType::Int64 => sys::ELEMENT_INT64,
        ElementType::Other(raw) => raw,
    }
}

/// A session's inputs and outputs bound to `Buffer`s of fixed shapes: fill the inputs, `run`,
/// read the outputs. One binding is used by one call at a time (the engine's lanes).
pub struct Binding {
    api: &'static OrtApi,
    ptr: NonNull<sys::OrtIoBinding>,
    pub inputs: Vec<Buffer>,
    pub outputs: Vec<Buffer>,
    run_options: RunOptions,
}

unsafe impl Send for Binding {}

impl Binding {
    /// Buffers in `memory` for `inputs` and `outputs` (name, element, shape), bound to
    /// `session`, run with `run_options`.
    pub fn new(
        session: &Session,
        memory: Memory,
        inputs: &[(&CStr, ElementType, Vec<i64>)],
        outputs: &[(&CStr, ElementType, Vec<i64>)],
        run_options: RunOptions,
    ) -> Result<Binding, OrtError> {
        let api = session.ort().api();
        let (name, device) = match memory {
            Memory::Cpu => (c"Cpu", 0),
            Memory::Cuda { device } => (c"Cuda", device as i32),
        };
        let mut info = null_mut();
        unsafe {
            check(
                api,
                (api.create_memory_info)(
                    name.as_ptr(),
                    sys::ORT_DEVICE_ALLOCATOR,
                    device,
                    sys::ORT_MEM_TYPE_DEFAULT,
                    &mut info,
                ),
            )?;
        }
        let mut allocator = null_mut();
        let made = unsafe { check(api, (api.create_allocator)(session.raw(), info, &mut allocator)) };
        unsafe { (api.release_memory_info)(info) };
        made.map_err(|e| OrtError(format!("no {name:?} allocator for the session: {}", e.0)))?;
        let allocator = Arc::new(Allocator {
            api,
            ptr: NonNull::new(allocator).ok_or_else(|| OrtError("CreateAllocator returned null".into()))?,
        });
        let buffer = |element: ElementType, shape: &[i64]| -> Result<Buffer, OrtError> {
            let count: i64 = shape.iter().product();
            let bytes = usize::try_from(count).map_err(|_| OrtError(format!("shape {shape:?}")))?
                * element_bytes(element)?;
            let mut value = null_mut();
            unsafe {
                check(
                    api,
                    (api.create_tensor_as_ort_value)(
                        allocator.ptr.as_ptr(),
                        shape.as_ptr(),
                        shape.len(),
                        raw_element(element),
                        &mut value,
                    ),
                )?;
            }
            let value =
                NonNull::new(value).ok_or_else(|| OrtError("CreateTensorAsOrtValue returned null".into()))?;
            let mut data = null_mut();
            let got = unsafe { check(api, (api.get_tensor_mutable_data)(value.as_ptr(), &mut data)) };
            let buffer = Buffer { api, value, data, bytes, memory, _allocator: Arc::clone(&allocator) };
            got.map(|()| buffer)
        };
        let mut ptr = null_mut();
        unsafe { check(api, (api.create_io_binding)(session.raw(), &mut ptr))? };
        let mut binding = Binding {
            api,
            ptr: NonNull::new(ptr).ok_or_else(|| OrtError("CreateIoBinding returned null".into()))?,
            inputs: Vec::new(),
            outputs: Vec::new(),
            run_options,
        };
        for (name, element, shape) in inputs {
            let made = buffer(*element, shape)?;
            unsafe {
                check(api, (api.bind_input)(binding.ptr.as_ptr(), name.as_ptr(), made.value.as_ptr()))?
            };
            binding.inputs.push(made);
        }
        for (name, element, shape) in outputs {
            let made = buffer(*element, shape)?;
            unsafe {
                check(api, (api.bind_output)(binding.ptr.as_ptr(), name.as_ptr(), made.value.as_ptr()))?
            };
            binding.outputs.push(made);
        }
        Ok(binding)
    }

    /// Runs `session` on the bound buffers (the inputs as last written).
    pub fn run(&mut self, session: &Session) -> Result<(), OrtError> {
        unsafe {
            check(
                self.api,
                (self.api.run_with_binding)(session.raw(), self.run_options.ptr.as_ptr(), self.ptr.as_ptr()),
            )
        }
        .map_err(|e| OrtError(format!("ONNX Runtime run failed: {}", e.0)))
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        unsafe { (self.api.release_io_binding)(self.ptr.as_ptr()) }
    }
}
