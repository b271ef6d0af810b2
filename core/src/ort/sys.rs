//! Raw declarations of the part of ONNX Runtime's C API that this crate calls.
//!
//! Written from `onnxruntime_c_api.h` as of ORT_API_VERSION 29 (the header onnxruntime 1.29
//! ships; the function table `OrtApi` is append-only, so positions never move between
//! versions). Only the slots used here are named; the others are kept as anonymous
//! pointer-sized gaps so every named slot sits at its index in the table (`tests` below
//! checks each offset against the index read from the header). The newest slots used
//! (`SessionOptionsAppendExecutionProvider_CUDA_V2` and its options, 204–208) came with
//! ONNX Runtime 1.11, so `API_VERSION` asks for table version 11: any ONNX Runtime from 1.11
//! on serves it.
//!
//! Every function returns an `OrtStatus*` (null: success) unless noted; see `api.rs` for the
//! safe wrappers.

#![allow(non_camel_case_types, clippy::upper_case_acronyms)]

use std::ffi::{c_char, c_int, c_void};

/// The `OrtApi` version requested from `OrtApiBase::GetApi` (ONNX Runtime ≥ 1.11).
pub const API_VERSION: u32 = 11;

/// Opaque ONNX Runtime objects (only ever handled through pointers).
macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(
    OrtStatus,
    OrtEnv,
    OrtSession,
    OrtSessionOptions,
    OrtMemoryInfo,
    OrtValue,
    OrtRunOptions,
    OrtTypeInfo,
    OrtTensorTypeAndShapeInfo,
    OrtCUDAProviderOptionsV2,
    OrtTensorRTProviderOptionsV2,
    OrtIoBinding,
);

/// `OrtAllocator`: a version field and three function pointers; only ever passed back to
/// `AllocatorFree`, so its fields are not read here.
#[repr(C)]
pub struct OrtAllocator {
    _private: [u8; 0],
}

// ONNXTensorElementDataType (a C enum: int)
pub const ELEMENT_FLOAT: c_int = 1;
pub const ELEMENT_INT32: c_int = 6;
pub const ELEMENT_INT64: c_int = 7;
pub const ELEMENT_FLOAT16: c_int = 10;
pub const ELEMENT_DOUBLE: c_int = 11;

// ONNXType
pub const ONNX_TYPE_TENSOR: c_int = 1;

// OrtLoggingLevel
pub const LOGGING_LEVEL_ERROR: c_int = 3;

// GraphOptimizationLevel
pub const ORT_ENABLE_ALL: c_int = 99;

// OrtAllocatorType, OrtMemType
pub const ORT_DEVICE_ALLOCATOR: c_int = 0;
pub const ORT_ARENA_ALLOCATOR: c_int = 1;
pub const ORT_MEM_TYPE_DEFAULT: c_int = 0;

pub type Status = *mut OrtStatus;

/// `OrtApiBase`: the one exported structure (`OrtGetApiBase()`).
#[repr(C)]
pub struct OrtApiBase {
    /// null when the library does not serve that table version
    pub get_api: unsafe extern "C" fn(version: u32) -> *const OrtApi,
    pub get_version_string: unsafe extern "C" fn() -> *const c_char,
}

pub type GetApiBaseFn = unsafe extern "C" fn() -> *const OrtApiBase;

/// A table slot this crate does not call.
type Gap = *const c_void;

/// The first 209 slots of `OrtApi` (through `ReleaseCUDAProviderOptions`). The comment on
/// each field is its index in the table.
#[repr(C)]
pub struct OrtApi {
    _gap_0: [Gap; 2], // 0 CreateStatus, 1 GetErrorCode
    /// 2; the message is owned by the status
    pub get_error_message: unsafe extern "C" fn(status: *const OrtStatus) -> *const c_char,
    /// 3
    pub create_env:
        unsafe extern "C" fn(level: c_int, log_id: *const c_char, out: *mut *mut OrtEnv) -> Status,
    _gap_4: [Gap; 3], // 4 CreateEnvWithCustomLogger, 5-6 telemetry
    /// 7 (the path is `char*` on Linux)
    pub create_session: unsafe extern "C" fn(
        env: *const OrtEnv,
        model_path: *const c_char,
        options: *const OrtSessionOptions,
        out: *mut *mut OrtSession,
    ) -> Status,
    /// 8
    pub create_session_from_array: unsafe extern "C" fn(
        env: *const OrtEnv,
        model_data: *const c_void,
        model_data_length: usize,
        options: *const OrtSessionOptions,
        out: *mut *mut OrtSession,
    ) -> Status,
    /// 9; thread-safe on one session (see `api::Session`)
    pub run: unsafe extern "C" fn(
        session: *mut OrtSession,
        run_options: *const OrtRunOptions,
        input_names: *const *const c_char,
        inputs: *const *const OrtValue,
        input_len: usize,
        output_names: *const *const c_char,
        output_names_len: usize,
        outputs: *mut *mut OrtValue,
    ) -> Status,
    /// 10
    pub create_session_options: unsafe extern "C" fn(out: *mut *mut OrtSessionOptions) -> Status,
    _gap_11: [Gap; 3], // 11 SetOptimizedModelFilePath, 12 CloneSessionOptions, 13 SetSessionExecutionMode
    /// 14
    pub enable_profiling:
        unsafe extern "C" fn(options: *mut OrtSessionOptions, profile_file_prefix: *const c_char) -> Status,
    _gap_15: [Gap; 7], // 15 DisableProfiling … 21 SetSessionLogVerbosityLevel
    /// 22
    pub set_session_log_severity_level:
        unsafe extern "C" fn(options: *mut OrtSessionOptions, level: c_int) -> Status,
    /// 23
    pub set_session_graph_optimization_level:
        unsafe extern "C" fn(options: *mut OrtSessionOptions, level: c_int) -> Status,
    /// 24
    pub set_intra_op_num_threads:
        unsafe extern "C" fn(options: *mut OrtSessionOptions, threads: c_int) -> Status,
    /// 25
    pub set_inter_op_num_threads:
        unsafe extern "C" fn(options: *mut OrtSessionOptions, threads: c_int) -> Status,
    _gap_26: [Gap; 4], // 26 CreateCustomOpDomain … 29 RegisterCustomOpsLibrary
    /// 30
    pub session_get_input_count: unsafe extern "C" fn(session: *const OrtSession, out: *mut usize) -> Status,
    /// 31
    pub session_get_output_count: unsafe extern "C" fn(session: *const OrtSession, out: *mut usize) -> Status,
    _gap_32: [Gap; 1], // 32 SessionGetOverridableInitializerCount
    /// 33
    pub session_get_input_type_info:
        unsafe extern "C" fn(session: *const OrtSession, index: usize, out: *mut *mut OrtTypeInfo) -> Status,
    /// 34
    pub session_get_output_type_info:
        unsafe extern "C" fn(session: *const OrtSession, index: usize, out: *mut *mut OrtTypeInfo) -> Status,
    _gap_35: [Gap; 1], // 35 SessionGetOverridableInitializerTypeInfo
    /// 36; the name is allocated with `allocator` and freed with `allocator_free`
    pub session_get_input_name: unsafe extern "C" fn(
        session: *const OrtSession,
        index: usize,
        allocator: *mut OrtAllocator,
        out: *mut *mut c_char,
    ) -> Status,
    /// 37
    pub session_get_output_name: unsafe extern "C" fn(
        session: *const OrtSession,
        index: usize,
        allocator: *mut OrtAllocator,
        out: *mut *mut c_char,
    ) -> Status,
    _gap_38: [Gap; 1], // 38 SessionGetOverridableInitializerName
    /// 39
    pub create_run_options: unsafe extern "C" fn(out: *mut *mut OrtRunOptions) -> Status,
    _gap_40: [Gap; 8], // 40 RunOptionsSetRunLogVerbosityLevel … 47 RunOptionsUnsetTerminate
    /// 48; allocated by `allocator`, owned by the value
    pub create_tensor_as_ort_value: unsafe extern "C" fn(
        allocator: *mut OrtAllocator,
        shape: *const i64,
        shape_len: usize,
        element_type: c_int,
        out: *mut *mut OrtValue,
    ) -> Status,
    /// 49; the data stays owned by the caller and must outlive the value
    pub create_tensor_with_data_as_ort_value: unsafe extern "C" fn(
        info: *const OrtMemoryInfo,
        data: *mut c_void,
        data_len: usize,
        shape: *const i64,
        shape_len: usize,
        element_type: c_int,
        out: *mut *mut OrtValue,
    ) -> Status,
    _gap_50: [Gap; 1], // 50 IsTensor
    /// 51
    pub get_tensor_mutable_data: unsafe extern "C" fn(value: *mut OrtValue, out: *mut *mut c_void) -> Status,
    _gap_52: [Gap; 3], // 52 FillStringTensor … 54 GetStringTensorContent
    /// 55; `out` is null for a non-tensor type and is owned by the type info
    pub cast_type_info_to_tensor_info:
        unsafe extern "C" fn(info: *const OrtTypeInfo, out: *mut *const OrtTensorTypeAndShapeInfo) -> Status,
    /// 56
    pub get_onnx_type_from_type_info:
        unsafe extern "C" fn(info: *const OrtTypeInfo, out: *mut c_int) -> Status,
    _gap_57: [Gap; 3], // 57 CreateTensorTypeAndShapeInfo … 59 SetDimensions
    /// 60
    pub get_tensor_element_type:
        unsafe extern "C" fn(info: *const OrtTensorTypeAndShapeInfo, out: *mut c_int) -> Status,
    /// 61
    pub get_dimensions_count:
        unsafe extern "C" fn(info: *const OrtTensorTypeAndShapeInfo, out: *mut usize) -> Status,
    /// 62
    pub get_dimensions: unsafe extern "C" fn(
        info: *const OrtTensorTypeAndShapeInfo,
        dims: *mut i64,
        dims_len: usize,
    ) -> Status,
    _gap_63: [Gap; 2], // 63 GetSymbolicDimensions, 64 GetTensorShapeElementCount
    /// 65
    pub get_tensor_type_and_shape:
        unsafe extern "C" fn(value: *const OrtValue, out: *mut *mut OrtTensorTypeAndShapeInfo) -> Status,
    _gap_66: [Gap; 2], // 66 GetTypeInfo, 67 GetValueType
    /// 68; `name` "Cpu" or "Cuda"
    pub create_memory_info: unsafe extern "C" fn(
        name: *const c_char,
        allocator_type: c_int,
        device_id: c_int,
        mem_type: c_int,
        out: *mut *mut OrtMemoryInfo,
    ) -> Status,
    /// 69
    pub create_cpu_memory_info:
        unsafe extern "C" fn(allocator_type: c_int, mem_type: c_int, out: *mut *mut OrtMemoryInfo) -> Status,
    _gap_70: [Gap; 6], // 70 CompareMemoryInfo … 75 AllocatorAlloc
    /// 76
    pub allocator_free: unsafe extern "C" fn(allocator: *mut OrtAllocator, p: *mut c_void) -> Status,
    _gap_77: [Gap; 1], // 77 AllocatorGetInfo
    /// 78; the default allocator is a process-wide object, never freed
    pub get_allocator_with_default_options: unsafe extern "C" fn(out: *mut *mut OrtAllocator) -> Status,
    _gap_79: [Gap; 13], // 79 AddFreeDimensionOverride … 91 KernelContext_GetOutput
    /// 92
    pub release_env: unsafe extern "C" fn(env: *mut OrtEnv),
    /// 93
    pub release_status: unsafe extern "C" fn(status: *mut OrtStatus),
    /// 94
    pub release_memory_info: unsafe extern "C" fn(info: *mut OrtMemoryInfo),
    /// 95
    pub release_session: unsafe extern "C" fn(session: *mut OrtSession),
    /// 96
    pub release_value: unsafe extern "C" fn(value: *mut OrtValue),
    /// 97
    pub release_run_options: unsafe extern "C" fn(options: *mut OrtRunOptions),
    /// 98
    pub release_type_info: unsafe extern "C" fn(info: *mut OrtTypeInfo),
    /// 99
    pub release_tensor_type_and_shape_info: unsafe extern "C" fn(info: *mut OrtTensorTypeAndShapeInfo),
    /// 100
    pub release_session_options: unsafe extern "C" fn(options: *mut OrtSessionOptions),
    _gap_101: [Gap; 24], // 101 ReleaseCustomOpDomain … 124 AddFreeDimensionOverrideByName
    /// 125; the array and its strings are freed with `release_available_providers`
    pub get_available_providers:
        unsafe extern "C" fn(out: *mut *mut *mut c_char, length: *mut c_int) -> Status,
    /// 126
    pub release_available_providers:
        unsafe extern "C" fn(providers: *mut *mut c_char, length: c_int) -> Status,
    _gap_127: [Gap; 4], // 127 GetStringTensorElementLength … 130 AddSessionConfigEntry
    /// 131; an allocator of `session` for memory `info` (released with `release_allocator`)
    pub create_allocator: unsafe extern "C" fn(
        session: *const OrtSession,
        info: *const OrtMemoryInfo,
        out: *mut *mut OrtAllocator,
    ) -> Status,
    /// 132
    pub release_allocator: unsafe extern "C" fn(allocator: *mut OrtAllocator),
    /// 133
    pub run_with_binding: unsafe extern "C" fn(
        session: *mut OrtSession,
        run_options: *const OrtRunOptions,
        binding: *const OrtIoBinding,
    ) -> Status,
    /// 134
    pub create_io_binding:
        unsafe extern "C" fn(session: *mut OrtSession, out: *mut *mut OrtIoBinding) -> Status,
    /// 135
    pub release_io_binding: unsafe extern "C" fn(binding: *mut OrtIoBinding),
    /// 136
    pub bind_input: unsafe extern "C" fn(
        binding: *mut OrtIoBinding,
        name: *const c_char,
        value: *const OrtValue,
    ) -> Status,
    /// 137
    pub bind_output: unsafe extern "C" fn(
        binding: *mut OrtIoBinding,
        name: *const c_char,
        value: *const OrtValue,
    ) -> Status,
    _gap_138: [Gap; 27], // 138 BindOutputToDevice … 164 CreateArenaCfgV2
    /// 165; a `key=value` of the run (`gpu_graph_id`: which CUDA graph a run captures or replays)
    pub add_run_config_entry:
        unsafe extern "C" fn(options: *mut OrtRunOptions, key: *const c_char, value: *const c_char) -> Status,
    _gap_166: [Gap; 4], // 166 CreatePrepackedWeightsContainer … 169 CreateSessionFromArrayWith…
    /// 170
    pub session_options_append_execution_provider_tensorrt_v2: Option<
        unsafe extern "C" fn(
            options: *mut OrtSessionOptions,
            tensorrt_options: *const OrtTensorRTProviderOptionsV2,
        ) -> Status,
    >,
    /// 171
    pub create_tensorrt_provider_options:
        Option<unsafe extern "C" fn(out: *mut *mut OrtTensorRTProviderOptionsV2) -> Status>,
    /// 172
    pub update_tensorrt_provider_options: Option<
        unsafe extern "C" fn(
            options: *mut OrtTensorRTProviderOptionsV2,
            keys: *const *const c_char,
            values: *const *const c_char,
            num_keys: usize,
        ) -> Status,
    >,
    _gap_173: [Gap; 1], // 173 GetTensorRTProviderOptionsAsString
    /// 174
    pub release_tensorrt_provider_options:
        Option<unsafe extern "C" fn(options: *mut OrtTensorRTProviderOptionsV2)>,
    _gap_175: [Gap; 29], // 175 EnableOrtCustomOps … 203 SynchronizeBoundOutputs (202, 203 unused:
    // RunWithBinding returns once the outputs are written)
    /// 204
    pub session_options_append_execution_provider_cuda_v2: Option<
        unsafe extern "C" fn(
            options: *mut OrtSessionOptions,
            cuda_options: *const OrtCUDAProviderOptionsV2,
        ) -> Status,
    >,
    /// 205
    pub create_cuda_provider_options:
        Option<unsafe extern "C" fn(out: *mut *mut OrtCUDAProviderOptionsV2) -> Status>,
    /// 206
    pub update_cuda_provider_options: Option<
        unsafe extern "C" fn(
            options: *mut OrtCUDAProviderOptionsV2,
            keys: *const *const c_char,
            values: *const *const c_char,
            num_keys: usize,
        ) -> Status,
    >,
    _gap_207: [Gap; 1], // 207 GetCUDAProviderOptionsAsString
    /// 208
    pub release_cuda_provider_options: Option<unsafe extern "C" fn(options: *mut OrtCUDAProviderOptionsV2)>,
}

#[cfg(test)]
mod tests {
    use super::OrtApi;
    use std::mem::{offset_of, size_of};

    /// Each named slot at its index in `onnxruntime_c_api.h`'s `struct OrtApi` (counted from
    /// the header, ORT_API_VERSION 29): a gap of the wrong width would shift every slot after it.
    #[test]
    fn slots_sit_at_their_header_index() {
        let slot = size_of::<usize>();
        let expected = [
            (offset_of!(OrtApi, get_error_message), 2),
            (offset_of!(OrtApi, create_env), 3),
            (offset_of!(OrtApi, create_session), 7),
            (offset_of!(OrtApi, create_session_from_array), 8),
            (offset_of!(OrtApi, run), 9),
            (offset_of!(OrtApi, create_session_options), 10),
            (offset_of!(OrtApi, enable_profiling), 14),
            (offset_of!(OrtApi, set_session_log_severity_level), 22),
            (offset_of!(OrtApi, set_session_graph_optimization_level), 23),
            (offset_of!(OrtApi, set_intra_op_num_threads), 24),
            (offset_of!(OrtApi, set_inter_op_num_threads), 25),
            (offset_of!(OrtApi, session_get_input_count), 30),
            (offset_of!(OrtApi, session_get_output_count), 31),
            (offset_of!(OrtApi, session_get_input_type_info), 33),
            (offset_of!(OrtApi, session_get_output_type_info), 34),
            (offset_of!(OrtApi, session_get_input_name), 36),
            (offset_of!(OrtApi, session_get_output_name), 37),
            (offset_of!(OrtApi, create_run_options), 39),
            (offset_of!(OrtApi, create_tensor_as_ort_value), 48),
            (offset_of!(OrtApi, create_tensor_with_data_as_ort_value), 49),
            (offset_of!(OrtApi, get_tensor_mutable_data), 51),
            (offset_of!(OrtApi, cast_type_info_to_tensor_info), 55),
            (offset_of!(OrtApi, get_onnx_type_from_type_info), 56),
            (offset_of!(OrtApi, get_tensor_element_type), 60),
            (offset_of!(OrtApi, get_dimensions_count), 61),
            (offset_of!(OrtApi, get_dimensions), 62),
            (offset_of!(OrtApi, get_tensor_type_and_shape), 65),
            (offset_of!(OrtApi, create_memory_info), 68),
            (offset_of!(OrtApi, create_cpu_memory_info), 69),
            (offset_of!(OrtApi, allocator_free), 76),
            (offset_of!(OrtApi, get_allocator_with_default_options), 78),
            (offset_of!(OrtApi, release_env), 92),
            (offset_of!(OrtApi, release_status), 93),
            (offset_of!(OrtApi, release_memory_info), 94),
            (offset_of!(OrtApi, release_session), 95),
            (offset_of!(OrtApi, release_value), 96),
            (offset_of!(OrtApi, release_run_options), 97),
            (offset_of!(OrtApi, release_type_info), 98),
            (offset_of!(OrtApi, release_tensor_type_and_shape_info), 99),
            (offset_of!(OrtApi, release_session_options), 100),
            (offset_of!(OrtApi, get_available_providers), 125),
            (offset_of!(OrtApi, release_available_providers), 126),
            (offset_of!(OrtApi, create_allocator), 131),
            (offset_of!(OrtApi, release_allocator), 132),
            (offset_of!(OrtApi, run_with_binding), 133),
            (offset_of!(OrtApi, create_io_binding), 134),
            (offset_of!(OrtApi, release_io_binding), 135),
            (offset_of!(OrtApi, bind_input), 136),
            (offset_of!(OrtApi, bind_output), 137),
            (offset_of!(OrtApi, add_run_config_entry), 165),
            (offset_of!(OrtApi, session_options_append_execution_provider_tensorrt_v2), 170),
            (offset_of!(OrtApi, create_tensorrt_provider_options), 171),
            (offset_of!(OrtApi, update_tensorrt_provider_options), 172),
            (offset_of!(OrtApi, release_tensorrt_provider_options), 174),
            (offset_of!(OrtApi, session_options_append_execution_provider_cuda_v2), 204),
            (offset_of!(OrtApi, create_cuda_provider_options), 205),
            (offset_of!(OrtApi, update_cuda_provider_options), 206),
            (offset_of!(OrtApi, release_cuda_provider_options), 208),
        ];
        for (offset, index) in expected {
            assert_eq!(offset, index * slot, "slot {index}");
        }
        assert_eq!(size_of::<OrtApi>(), 209 * slot);
    }
}
