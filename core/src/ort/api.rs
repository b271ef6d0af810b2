//! Safe wrappers over the raw C API (`sys.rs`): every ONNX Runtime object is owned by one
//! Rust value that releases it on drop, and every `OrtStatus` becomes `Result<_, OrtError>`.

use super::library::OrtLibrary;
use super::sys::{self, OrtApi, Status};
use super::types::OrtError;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{null, null_mut, NonNull};
use std::sync::Arc;

/// `Err(message)` for a non-null status (which is released here), `Ok` for null.
///
/// # Safety
/// `status` is null or a status just returned by `api`.
pub(super) unsafe fn check(api: &OrtApi, status: Status) -> Result<(), OrtError> {
    if status.is_null() {
        return Ok(());
    }
    let message = (api.get_error_message)(status);
    let text = if message.is_null() {
        "ONNX Runtime reported an error without a message".to_string()
    } else {
        CStr::from_ptr(message).to_string_lossy().into_owned()
    };
    (api.release_status)(status);
    Err(OrtError(text))
}

/// A loaded ONNX Runtime with its `OrtEnv` and a CPU memory description for input tensors,
/// both made when the first session or tensor needs them: creating the environment registers
/// every ONNX operator schema (~14 ms), which an engine whose profile runs no transformer and
/// whose trees run on the kernel never needs (a third of opening the default model's engine).
///
/// ONNX Runtime keeps one `OrtEnv` per process and counts references to it, so several `Ort`
/// values (from several loads) share it; sessions hold an `Arc<Ort>`, so the environment
/// outlives every session made in it.
pub struct Ort {
    library: OrtLibrary,
    made: std::sync::OnceLock<Result<Made, OrtError>>,
}

/// The environment and the memory description, once made.
struct Made {
    env: NonNull<sys::OrtEnv>,
    cpu_memory: NonNull<sys::OrtMemoryInfo>,
}

// `OrtEnv` is made to be shared by sessions on any thread; the memory info is never changed
// after creation.
unsafe impl Send for Made {}
unsafe impl Sync for Made {}

impl Ort {
    /// Loads the library (see `library.rs` for where it looks); the environment is made on
    /// first use (`env`).
    pub fn load(explicit_library: Option<&Path>) -> Result<Arc<Ort>, OrtError> {
        Self::new(OrtLibrary::load(explicit_library)?)
    }

    pub fn new(library: OrtLibrary) -> Result<Arc<Ort>, OrtError> {
        Ok(Arc::new(Ort { library, made: std::sync::OnceLock::new() }))
    }

    /// The environment and the CPU memory description, made the first time they are asked
    /// for (by any thread; once); a failure is kept and said to every caller.
    fn made(&self) -> Result<&Made, OrtError> {
        self.made.get_or_init(|| Self::make(self.library.api())).as_ref().map_err(Clone::clone)
    }

    fn make(api: &OrtApi) -> Result<Made, OrtError> {
        let mut env = null_mut();
        // errors only: a library must not write ONNX Runtime's warnings into a service's stderr
        // (unless PULPIE_RT_ORT_LOG_LEVEL asks, `diagnostics`)
        unsafe { check(api, (api.create_env)(diagnostics::log_level(), c"pulpie_rt".as_ptr(), &mut env)) }
            .map_err(|e| OrtError(format!("cannot create the ONNX Runtime environment: {}", e.0)))?;
        let env = NonNull::new(env).ok_or_else(|| OrtError("CreateEnv returned null".into()))?;
        let mut memory = null_mut();
        let made = unsafe {
            check(
                api,
                (api.create_cpu_memory_info)(
                    sys::ORT_ARENA_ALLOCATOR,
                    sys::ORT_MEM_TYPE_DEFAULT,
                    &mut memory,
                ),
            )
        };
        match made.map(|()| NonNull::new(memory)) {
            Ok(Some(cpu_memory)) => Ok(Made { env, cpu_memory }),
            failed => {
                unsafe { (api.release_env)(env.as_ptr()) };
                let why = failed.err().map_or("null".to_string(), |e| e.0);
                Err(OrtError(format!("cannot create ONNX Runtime's CPU memory info: {why}")))
            }
        }
    }

    fn env(&self) -> Result<NonNull<sys::OrtEnv>, OrtError> {
        self.made().map(|made| made.env)
    }

    fn cpu_memory(&self) -> Result<NonNull<sys::OrtMemoryInfo>, OrtError> {
        self.made().map(|made| made.cpu_memory)
    }

    pub fn library(&self) -> &OrtLibrary {
        &self.library
    }

    pub(crate) fn api(&self) -> &'static OrtApi {
        self.library.api()
    }

    /// The execution providers compiled into this library, e.g. `["CPUExecutionProvider"]`
    /// (listed does not mean usable: CUDA's may still miss its own libraries).
    pub fn available_providers(&self) -> Result<Vec<String>, OrtError> {
        let api = self.api();
        let mut names: *mut *mut c_char = null_mut();
        let mut count: c_int = 0;
        unsafe {
            check(api, (api.get_available_providers)(&mut names, &mut count))?;
            let list = (0..count.max(0) as usize)
                .map(|i| CStr::from_ptr(*names.add(i)).to_string_lossy().into_owned())
                .collect();
            check(api, (api.release_available_providers)(names, count))?;
            Ok(list)
        }
    }
}

/// ONNX Runtime's library, loaded the first time something needs it: an engine whose profile
/// runs no transformer and whose trees all run on the kernel never loads it (`dlopen` of the
/// ~35 MB library, its relocations and static constructors: 2-3 ms of CPU at every start). A
/// load that fails is said to whatever needs the library, with the loader's message, as when
/// it was loaded up front.
pub struct OrtOnDemand {
    library: Option<std::path::PathBuf>,
    loaded: std::sync::OnceLock<Arc<Ort>>,
}

impl OrtOnDemand {
    /// `explicit_library` as `Ort::load` reads it, loaded on the first `get`.
    pub fn new(explicit_library: Option<&Path>) -> OrtOnDemand {
        OrtOnDemand { library: explicit_library.map(Path::to_path_buf), loaded: std::sync::OnceLock::new() }
    }

    /// A library loaded already.
    pub fn loaded(ort: &Arc<Ort>) -> OrtOnDemand {
        OrtOnDemand { library: None, loaded: std::sync::OnceLock::from(Arc::clone(ort)) }
    }

    /// The library, loaded now if it was not (a failure is not kept: the next call tries again).
    pub fn get(&self) -> Result<&Arc<Ort>, OrtError> {
        if let Some(ort) = self.loaded.get() {
            return Ok(ort);
        }
        let ort = Ort::load(self.library.as_deref())?;
        Ok(self.loaded.get_or_init(|| ort))
    }

    /// The library if something loaded it.
    pub fn into_loaded(self) -> Option<Arc<Ort>> {
        self.loaded.into_inner()
    }
}

impl Drop for Ort {
    fn drop(&mut self) {
        let api = self.api();
        if let Some(Ok(made)) = self.made.get() {
            unsafe {
                (api.release_memory_info)(made.cpu_memory.as_ptr());
                (api.release_env)(made.env.as_ptr());
            }
        }
    }
}

/// An `OrtSessionOptions`, released on drop.
pub struct SessionOptions {
    api: &'static OrtApi,
    ptr: NonNull<sys::OrtSessionOptions>,
}

impl SessionOptions {
    /// Options as `onnxruntime.SessionOptions()` in Python starts them, with all graph
    /// optimizations on and only errors logged (as `runtime/backends.py` sets them).
    pub fn new(ort: &Ort) -> Result<SessionOptions, OrtError> {
        let api = ort.api();
        // the environment first: appending an execution provider to these options loads its
        // library, which logs through the environment's logger ("Attempt to use DefaultLogger
        // but none has been registered" in place of the loader's reason without it)
        ort.env()?;
        let mut ptr = null_mut();
        unsafe { check(api, (api.create_session_options)(&mut ptr))? };
        let options = SessionOptions {
            api,
            ptr: NonNull::new(ptr).ok_or_else(|| OrtError("CreateSessionOptions returned null".into()))?,
        };
        unsafe {
            check(
                api,
                (api.set_session_graph_optimization_level)(options.ptr.as_ptr(), sys::ORT_ENABLE_ALL),
            )?;
            check(api, (api.set_session_log_severity_level)(options.ptr.as_ptr(), diagnostics::log_level()))?;
            if let Some(prefix) = diagnostics::profile_prefix() {
                check(api, (api.enable_profiling)(options.ptr.as_ptr(), prefix.as_ptr()))?;
            }
        }
        Ok(options)
    }

    /// Threads inside one operator (0: ONNX Runtime's default, one per physical core).
    pub fn set_intra_op_threads(&mut self, threads: usize) -> Result<(), OrtError> {
        let threads = c_int::try_from(threads).map_err(|_| OrtError(format!("{threads} threads")))?;
        unsafe { check(self.api, (self.api.set_intra_op_num_threads)(self.ptr.as_ptr(), threads)) }
    }

    /// Threads running independent operators at once (0: ONNX Runtime's default).
    pub fn set_inter_op_threads(&mut self, threads: usize) -> Result<(), OrtError> {
        let threads = c_int::try_from(threads).map_err(|_| OrtError(format!("{threads} threads")))?;
        unsafe { check(self.api, (self.api.set_inter_op_num_threads)(self.ptr.as_ptr(), threads)) }
    }

    /// Appends the CUDA execution provider with `options` (`key=value`, e.g. `device_id`;
    /// `…_CUDA_V2`).
    pub fn append_cuda(&mut self, options: &[(String, String)]) -> Result<(), OrtError> {
        let api = self.api;
        let (Some(create), Some(update), Some(append), Some(release)) = (
            api.create_cuda_provider_options,
            api.update_cuda_provider_options,
            api.session_options_append_execution_provider_cuda_v2,
            api.release_cuda_provider_options,
        ) else {
            return Err(OrtError("this ONNX Runtime library has no CUDA provider entry points".into()));
        };
        let options = diagnostics::cuda_options(options)?;
        let (keys, values) = c_pairs(&options)?;
        let key_ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr()).collect();
        let value_ptrs: Vec<*const c_char> = values.iter().map(|v| v.as_ptr()).collect();
        unsafe {
            let mut cuda = null_mut();
            check(api, create(&mut cuda))?;
            let result = check(api, update(cuda, key_ptrs.as_ptr(), value_ptrs.as_ptr(), key_ptrs.len()))
                .and_then(|()| check(api, append(self.ptr.as_ptr(), cuda)));
            release(cuda);
            result
        }
    }

    /// Appends the TensorRT execution provider with `options` (`key=value`: `device_id`,
    /// `trt_fp16_enable`, `trt_profile_min_shapes`, …; `…_TensorRT_V2`).
    pub fn append_tensorrt(&mut self, options: &[(String, String)]) -> Result<(), OrtError> {
        let api = self.api;
        let (Some(create), Some(update), Some(append), Some(release)) = (
            api.create_tensorrt_provider_options,
            api.update_tensorrt_provider_options,
            api.session_options_append_execution_provider_tensorrt_v2,
            api.release_tensorrt_provider_options,
        ) else {
            return Err(OrtError("this ONNX Runtime library has no TensorRT provider entry points".into()));
        };
        let (keys, values) = c_pairs(options)?;
        let key_ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr()).collect();
        let value_ptrs: Vec<*const c_char> = values.iter().map(|v| v.as_ptr()).collect();
        unsafe {
            let mut trt = null_mut();
            check(api, create(&mut trt))?;
            let result = check(api, update(trt, key_ptrs.as_ptr(), value_ptrs.as_ptr(), key_ptrs.len()))
                .and_then(|()| check(api, append(self.ptr.as_ptr(), trt)));
            release(trt);
            result
        }
    }
}

/// Provider options as C strings (a NUL inside one is an error).
fn c_pairs(options: &[(String, String)]) -> Result<(Vec<CString>, Vec<CString>), OrtError> {
    let c = |text: &str| {
        CString::new(text).map_err(|_| OrtError(format!("provider option {text:?} holds a NUL byte")))
    };
    let keys = options.iter().map(|(k, _)| c(k)).collect::<Result<Vec<_>, _>>()?;
    let values = options.iter().map(|(_, v)| c(v)).collect::<Result<Vec<_>, _>>()?;
    Ok((keys, values))
}

impl Drop for SessionOptions {
    fn drop(&mut self) {
        unsafe { (self.api.release_session_options)(self.ptr.as_ptr()) }
    }
}

/// Where a model comes from.
#[derive(Clone, Copy, Debug)]
pub enum ModelSource<'a> {
    File(&'a Path),
    /// the serialized ONNX model (e.g. one compiled into the library)
    Bytes(&'a [u8]),
}

impl std::fmt::Display for ModelSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelSource::File(path) => write!(f, "{}", path.display()),
            ModelSource::Bytes(bytes) => write!(f, "the {}-byte model in memory", bytes.len()),
        }
    }
}

/// An ONNX tensor element type (the values of `ONNXTensorElementDataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementType {
    Float32,
    Float16,
    Float64,
    Int32,
    Int64,
    Other(i32),
}

impl ElementType {
    fn from_raw(raw: c_int) -> ElementType {
        match raw {
            sys::ELEMENT_FLOAT => ElementType::Float32,
            sys::ELEMENT_FLOAT16 => ElementType::Float16,
            sys::ELEMENT_DOUBLE => ElementType::Float64,
            sys::ELEMENT_INT32 => ElementType::Int32,
            sys::ELEMENT_INT64 => ElementType::Int64,
            other => ElementType::Other(other),
        }
    }

    /// ONNX's spelling, as onnxruntime's Python API shows it ("tensor(float)").
    pub fn onnx_name(self) -> String {
        match self {
            ElementType::Float32 => "tensor(float)".into(),
            ElementType::Float16 => "tensor(float16)".into(),
            ElementType::Float64 => "tensor(double)".into(),
            ElementType::Int32 => "tensor(int32)".into(),
            ElementType::Int64 => "tensor(int64)".into(),
            ElementType::Other(raw) => format!("tensor(element type {raw})"),
        }
    }
}

/// A graph input or output as the session describes it.
#[derive(Clone, Debug)]
pub struct TensorSpec {
    pub name: String,
    pub c_name: CString,
    /// None: not a tensor (a sequence or map, e.g. a ZipMap output)
    pub element: Option<ElementType>,
    /// -1 for a dimension named or left free in the graph
    pub dims: Vec<i64>,
}

/// An `OrtSession`, released on drop.
///
/// ONNX Runtime documents `OrtApi::Run` as thread-safe on one session (a session's state
/// after creation is read-only; every run gets its own execution frame), so `Session` is
/// `Sync` and `run` takes `&self`: several threads may run batches through one session at
/// once. Creating and releasing a session are not concurrent with its runs (Rust's
/// ownership sees to that).
pub struct Session {
    ort: Arc<Ort>,
    ptr: NonNull<sys::OrtSession>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
}

unsafe impl Send for Session {}
unsafe impl Sync for Session {}

impl Session {
    pub fn open(
        ort: &Arc<Ort>,
        source: ModelSource<'_>,
        options: &SessionOptions,
    ) -> Result<Session, OrtError> {
        let api = ort.api();
        let env = ort.env()?;
        let mut ptr = null_mut();
        let status = unsafe {
            match source {
                ModelSource::File(path) => {
                    let c_path = CString::new(path.as_os_str().as_bytes())
                        .map_err(|_| OrtError(format!("model path {} holds a NUL byte", path.display())))?;
                    (api.create_session)(env.as_ptr(), c_path.as_ptr(), options.ptr.as_ptr(), &mut ptr)
                }
                ModelSource::Bytes(bytes) => (api.create_session_from_array)(
                    env.as_ptr(),
                    bytes.as_ptr() as *const c_void,
                    bytes.len(),
                    options.ptr.as_ptr(),
                    &mut ptr,
                ),
            }
        };
        unsafe { check(api, status) }
            .map_err(|e| OrtError(format!("ONNX Runtime cannot load {source}: {}", e.0)))?;
        let ptr = NonNull::new(ptr).ok_or_else(|| OrtError("CreateSession returned null".into()))?;
        let mut session = Session { ort: Arc::clone(ort), ptr, inputs: Vec::new(), outputs: Vec::new() };
        session.inputs = session.describe(false)?;
        session.outputs = session.describe(true)?;
        Ok(session)
    }

    pub fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    pub fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    pub fn ort(&self) -> &Arc<Ort> {
        &self.ort
    }

    /// The `OrtSession` (for `binding.rs`); it stays owned by `self`.
    pub(super) fn raw(&self) -> *mut sys::OrtSession {
        self.ptr.as_ptr()
    }

    /// The graph's inputs (or outputs): names, element types and dimensions.
    fn describe(&self, outputs: bool) -> Result<Vec<TensorSpec>, OrtError> {
        let api = self.ort.api();
        let session = self.ptr.as_ptr();
        let mut allocator = null_mut();
        let mut count = 0usize;
        unsafe {
            check(api, (api.get_allocator_with_default_options)(&mut allocator))?;
            let counter = if outputs { api.session_get_output_count } else { api.session_get_input_count };
            check(api, counter(session, &mut count))?;
        }
        let mut specs = Vec::with_capacity(count);
        for index in 0..count {
            let name = unsafe {
                let mut raw: *mut c_char = null_mut();
                let namer = if outputs { api.session_get_output_name } else { api.session_get_input_name };
                check(api, namer(session, index, allocator, &mut raw))?;
                let name = CStr::from_ptr(raw).to_owned();
                check(api, (api.allocator_free)(allocator, raw as *mut c_void))?;
                name
            };
            let mut info = null_mut();
            unsafe {
                let typer =
                    if outputs { api.session_get_output_type_info } else { api.session_get_input_type_info };
                check(api, typer(session, index, &mut info))?;
            }
            let info = TypeInfo { api, ptr: info };
            let (element, dims) = info.tensor()?;
            specs.push(TensorSpec { name: name.to_string_lossy().into_owned(), c_name: name, element, dims });
        }
        Ok(specs)
    }

    /// Runs the graph on `inputs` (name, tensor) and returns the outputs named `outputs`, in
    /// that order. Thread-safe (see the type's documentation).
    pub fn run(&self, inputs: &[(&CStr, &Tensor<'_>)], outputs: &[&CStr]) -> Result<Vec<Value>, OrtError> {
        let api = self.ort.api();
        let input_names: Vec<*const c_char> = inputs.iter().map(|(name, _)| name.as_ptr()).collect();
        let input_values: Vec<*const sys::OrtValue> =
            inputs.iter().map(|(_, tensor)| tensor.value.ptr.as_ptr() as *const _).collect();
        let output_names: Vec<*const c_char> = outputs.iter().map(|name| name.as_ptr()).collect();
        let mut output_values: Vec<*mut sys::OrtValue> = vec![null_mut(); outputs.len()];
        let status = unsafe {
            (api.run)(
                self.ptr.as_ptr(),
                null(),
                input_names.as_ptr(),
                input_values.as_ptr(),
                inputs.len(),
                output_names.as_ptr(),
                outputs.len(),
                output_values.as_mut_ptr(),
            )
        };
        // own whatever came back first, so an error releases it too
        let owned: Vec<Option<Value>> =
            output_values.into_iter().map(|ptr| NonNull::new(ptr).map(|ptr| Value { api, ptr })).collect();
        unsafe { check(api, status) }.map_err(|e| OrtError(format!("ONNX Runtime run failed: {}", e.0)))?;
        owned
            .into_iter()
            .zip(outputs)
            .map(|(value, name)| {
                value.ok_or_else(|| OrtError(format!("ONNX Runtime returned no value for output {name:?}")))
            })
            .collect()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        unsafe { (self.ort.api().release_session)(self.ptr.as_ptr()) }
    }
}

/// An `OrtTypeInfo`, released on drop.
struct TypeInfo {
    api: &'static OrtApi,
    ptr: *mut sys::OrtTypeInfo,
}

impl TypeInfo {
    /// (element type, dims) of a tensor type; (None, []) for any other type.
    fn tensor(&self) -> Result<(Option<ElementType>, Vec<i64>), OrtError> {
        let api = self.api;
        unsafe {
            let mut onnx_type: c_int = 0;
            check(api, (api.get_onnx_type_from_type_info)(self.ptr, &mut onnx_type))?;
            if onnx_type != sys::ONNX_TYPE_TENSOR {
                return Ok((None, Vec::new()));
            }
            let mut tensor_info = null();
            check(api, (api.cast_type_info_to_tensor_info)(self.ptr, &mut tensor_info))?;
            if tensor_info.is_null() {
                return Ok((None, Vec::new()));
            }
            // owned by the type info: not released here
            let (element, dims) = shape_of(api, tensor_info)?;
            Ok((Some(element), dims))
        }
    }
}

impl Drop for TypeInfo {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            unsafe { (self.api.release_type_info)(self.ptr) }
        }
    }
}

/// # Safety
/// `info` is a live tensor type-and-shape info.
unsafe fn shape_of(
    api: &OrtApi,
    info: *const sys::OrtTensorTypeAndShapeInfo,
) -> Result<(ElementType, Vec<i64>), OrtError> {
    let mut raw: c_int = 0;
    check(api, (api.get_tensor_element_type)(info, &mut raw))?;
    let mut count = 0usize;
    check(api, (api.get_dimensions_count)(info, &mut count))?;
    let mut dims = vec![0i64; count];
    check(api, (api.get_dimensions)(info, dims.as_mut_ptr(), count))?;
    Ok((ElementType::from_raw(raw), dims))
}

/// An `OrtValue`, released on drop (here: the outputs of a run).
pub struct Value {
    api: &'static OrtApi,
    ptr: NonNull<sys::OrtValue>,
}

impl Value {
    /// Element type and shape of a tensor value.
    pub fn tensor_shape(&self) -> Result<(ElementType, Vec<i64>), OrtError> {
        let api = self.api;
        unsafe {
            let mut info = null_mut();
            check(api, (api.get_tensor_type_and_shape)(self.ptr.as_ptr(), &mut info))?;
            let shape = shape_of(api, info);
            (api.release_tensor_type_and_shape_info)(info);
            shape
        }
    }

    /// The tensor's data as `count` elements of `T`, copied out.
    ///
    /// # Safety
    /// The tensor's element type is `T` and it holds at least `count` elements.
    pub unsafe fn copy_data<T: Copy>(&self, count: usize) -> Result<Vec<T>, OrtError> {
        let mut data = null_mut();
        check(self.api, (self.api.get_tensor_mutable_data)(self.ptr.as_ptr(), &mut data))?;
        if count == 0 {
            return Ok(Vec::new());
        }
        if data.is_null() {
            return Err(OrtError("ONNX Runtime returned a tensor without data".into()));
        }
        Ok(std::slice::from_raw_parts(data as *const T, count).to_vec())
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        unsafe { (self.api.release_value)(self.ptr.as_ptr()) }
    }
}

/// Input data lent to ONNX Runtime without a copy.
#[derive(Clone, Copy)]
pub enum TensorData<'a> {
    Int64(&'a [i64]),
    Int32(&'a [i32]),
    Float32(&'a [f32]),
}

/// An input tensor over borrowed data: `'a` keeps the data alive as long as ONNX Runtime
/// may read it.
pub struct Tensor<'a> {
    value: Value,
    _data: PhantomData<&'a [u8]>,
}

impl<'a> Tensor<'a> {
    pub fn new(ort: &Ort, data: TensorData<'a>, shape: &[i64]) -> Result<Tensor<'a>, OrtError> {
        let (ptr, bytes, count, element) = match data {
            TensorData::Int64(d) => {
                (d.as_ptr() as *const c_void, std::mem::size_of_val(d), d.len(), sys::ELEMENT_INT64)
            }
            TensorData::Int32(d) => {
                (d.as_ptr() as *const c_void, std::mem::size_of_val(d), d.len(), sys::ELEMENT_INT32)
            }
            TensorData::Float32(d) => {
                (d.as_ptr() as *const c_void, std::mem::size_of_val(d), d.len(), sys::ELEMENT_FLOAT)
            }
        };
        let expected: i64 = shape.iter().product();
        if shape.iter().any(|&d| d < 0) || expected as usize != count {
            return Err(OrtError(format!("{count} values do not fill a tensor of shape {shape:?}")));
        }
        let api = ort.api();
        let cpu_memory = ort.cpu_memory()?;
        let mut value = null_mut();
        unsafe {
            // ONNX Runtime only reads input tensors: the pointer is `mut` in the C signature only
            check(
                api,
                (api.create_tensor_with_data_as_ort_value)(
                    cpu_memory.as_ptr(),
                    ptr as *mut c_void,
                    bytes,
                    shape.as_ptr(),
                    shape.len(),
                    element,
                    &mut value,
                ),
            )?;
        }
        let value = NonNull::new(value).ok_or_else(|| OrtError("CreateTensor returned null".into()))?;
        Ok(Tensor { value: Value { api, ptr: value }, _data: PhantomData })
    }
}

/// What a developer can ask of ONNX Runtime through the environment, to see where a model's
/// time goes (read at each session's creation; unset, nothing changes):
/// - `PULPIE_RT_ORT_LOG_LEVEL`: ONNX Runtime's log severity, 0 (verbose: every node's
///   provider, among much else) to 4 (fatal); default 3 (errors);
/// - `PULPIE_RT_ORT_PROFILE`: a file prefix; each session writes ONNX Runtime's profile
///   (`<prefix>_<date>.json`, every node's time in every run) when it closes;
/// - `PULPIE_RT_ORT_CUDA_OPTIONS`: `key=value,key=value` CUDA provider options set over the
///   engine's own (`sdpa_kernel=2`, say: which attention kernels ONNX Runtime may choose).
mod diagnostics {
    use super::OrtError;
    use std::ffi::{c_int, CString};

    pub fn cuda_options(options: &[(String, String)]) -> Result<Vec<(String, String)>, OrtError> {
        let asked = std::env::var("PULPIE_RT_ORT_CUDA_OPTIONS").unwrap_or_default();
        with_overrides(options, &asked)
    }

    /// `options` with each `key=value` of `asked` (comma-separated) set over them.
    pub fn with_overrides(
        options: &[(String, String)],
        asked: &str,
    ) -> Result<Vec<(String, String)>, OrtError> {
        let mut options = options.to_vec();
        for pair in asked.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| OrtError(format!("PULPIE_RT_ORT_CUDA_OPTIONS: '{pair}' is not key=value")))?;
            let (key, value) = (key.trim().to_string(), value.trim().to_string());
            match options.iter_mut().find(|(k, _)| *k == key) {
                Some(option) => option.1 = value,
                None => options.push((key, value)),
            }
        }
        Ok(options)
    }

    pub fn log_level() -> c_int {
        std::env::var("PULPIE_RT_ORT_LOG_LEVEL")
            .ok()
            .and_then(|v| v.trim().parse::<c_int>().ok())
            .filter(|level| (0..=4).contains(level))
            .unwrap_or(super::sys::LOGGING_LEVEL_ERROR)
    }

    pub fn profile_prefix() -> Option<CString> {
        std::env::var("PULPIE_RT_ORT_PROFILE")
            .ok()
            .filter(|p| !p.is_empty())
            .and_then(|p| CString::new(p).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::diagnostics::with_overrides;

    #[test]
    fn cuda_options_asked_through_the_environment_set_over_the_engines() {
        let own = vec![("device_id".to_string(), "0".to_string()), ("use_tf32".to_string(), "0".to_string())];
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        assert_eq!(with_overrides(&own, "").unwrap(), own);
        assert_eq!(
            with_overrides(&own, " sdpa_kernel=18 , use_tf32=1").unwrap(),
            pairs(&[("device_id", "0"), ("use_tf32", "1"), ("sdpa_kernel", "18")])
        );
        assert_eq!(
            with_overrides(&own, "sdpa_kernel").unwrap_err().0,
            "PULPIE_RT_ORT_CUDA_OPTIONS: 'sdpa_kernel' is not key=value"
        );
    }
}
