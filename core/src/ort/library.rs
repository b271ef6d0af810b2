//! Finding and loading ONNX Runtime's shared library at run time.
//!
//! The core has no link-time dependency on ONNX Runtime (the Python package's build of the
//! core must not need it, and no Debian package ships it): `dlopen` finds
//! `libonnxruntime.so` when an engine is first asked for, in this order:
//!
//! 1. an explicit path (the caller's option, else `$PULPIE_RT_ORT_LIB`); when one is given,
//!    nothing else is tried, so a wrong path is an error rather than a silent fallback;
//! 2. `libonnxruntime.so.1` in the folder of the library holding this code (found with
//!    `dladdr`), so a C service can ship the two side by side;
//! 3. `libonnxruntime.so.1` through the dynamic linker's own search (`LD_LIBRARY_PATH`,
//!    rpath, `ld.so.cache`); a library of that soname already loaded in the process (a host
//!    program linked with ONNX Runtime) is found first and shared.
//!
//! glibc ≥ 2.34 has `dlopen`, `dlsym`, `dlerror` and `dladdr` in libc itself (older ones in
//! libdl, which Rust's std links on Linux), so the declarations below need no crate.
//!
//! A loaded library is never closed: ONNX Runtime keeps thread pools and process-wide state
//! (its `OrtEnv` singleton) that must not lose their code under them, so the handle lives
//! as long as the process, as if the library had been linked.

use super::sys::{GetApiBaseFn, OrtApi, OrtApiBase, API_VERSION};
use super::types::OrtError;
use std::ffi::{c_char, c_int, c_void, CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The environment variable naming the ONNX Runtime library file.
pub const LIBRARY_ENV: &str = "PULPIE_RT_ORT_LIB";
/// The file name looked for beside this library and on the dynamic linker's search path
/// (the SONAME of every ONNX Runtime 1.x release).
pub const LIBRARY_NAME: &str = "libonnxruntime.so.1";

const RTLD_NOW: c_int = 2;

#[repr(C)]
struct DlInfo {
    dli_fname: *const c_char,
    dli_fbase: *mut c_void,
    dli_sname: *const c_char,
    dli_saddr: *mut c_void,
}

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
    fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
}

/// A loaded ONNX Runtime: where it came from, its version and its C API table.
pub struct OrtLibrary {
    path: String,
    version: String,
    api: &'static OrtApi,
}

// The table is immutable static data inside the library, which is never unloaded.
unsafe impl Send for OrtLibrary {}
unsafe impl Sync for OrtLibrary {}

impl OrtLibrary {
    /// Loads ONNX Runtime from `explicit`, else `$PULPIE_RT_ORT_LIB`, else the default search
    /// (see the module's documentation).
    pub fn load(explicit: Option<&Path>) -> Result<OrtLibrary, OrtError> {
        let from_env = std::env::var_os(LIBRARY_ENV).filter(|v| !v.is_empty()).map(PathBuf::from);
        match explicit.map(Path::to_path_buf).or(from_env) {
            Some(path) => Self::load_file(&path),
            None => Self::load_default(),
        }
    }

    /// Loads exactly `path` (a file path, or a bare name for the dynamic linker to find).
    pub fn load_file(path: &Path) -> Result<OrtLibrary, OrtError> {
        let handle = open(path.as_os_str()).map_err(|why| {
            OrtError(format!("cannot load the ONNX Runtime library {}: {why}", path.display()))
        })?;
        unsafe { Self::from_handle(handle, &path.display().to_string()) }
    }

    /// `libonnxruntime.so.1` beside this library, then through the dynamic linker's search.
    fn load_default() -> Result<OrtLibrary, OrtError> {
        let mut tried = Vec::new();
        if let Some(dir) = own_directory() {
            let candidate = dir.join(LIBRARY_NAME);
            match open(candidate.as_os_str()) {
                Ok(handle) => return unsafe { Self::from_handle(handle, &candidate.display().to_string()) },
                Err(why) => tried.push(format!("{} ({why})", candidate.display())),
            }
        }
        match open(OsStr::new(LIBRARY_NAME)) {
            Ok(handle) => return unsafe { Self::from_handle(handle, LIBRARY_NAME) },
            Err(why) => tried.push(format!("{LIBRARY_NAME} on the dynamic linker's search path ({why})")),
        }
        Err(not_found(&tried))
    }

    /// # Safety
    /// `handle` is a live `dlopen` handle.
    unsafe fn from_handle(handle: *mut c_void, path: &str) -> Result<OrtLibrary, OrtError> {
        dlerror(); // clear a stale error
        let symbol = dlsym(handle, c"OrtGetApiBase".as_ptr());
        if symbol.is_null() {
            return Err(OrtError(format!(
                "{path} is not an ONNX Runtime library: it has no OrtGetApiBase symbol"
            )));
        }
        let get_api_base: GetApiBaseFn = std::mem::transmute(symbol);
        let base: *const OrtApiBase = get_api_base();
        if base.is_null() {
            return Err(OrtError(format!("{path}: OrtGetApiBase() returned null")));
        }
        let version = match ((*base).get_version_string)() {
            text if text.is_null() => "(unknown version)".to_string(),
            text => CStr::from_ptr(text).to_string_lossy().into_owned(),
        };
        let api = ((*base).get_api)(API_VERSION);
        if api.is_null() {
            return Err(OrtError(format!(
                "{path} is ONNX Runtime {version}, which does not serve C API version \
                 {API_VERSION}: pulpie-rt needs ONNX Runtime 1.{API_VERSION} or newer"
            )));
        }
        Ok(OrtLibrary { path: path.to_string(), version, api: &*api })
    }

    /// The file (or name) the library was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// ONNX Runtime's own version string, e.g. "1.32.0".
    pub fn version(&self) -> &str {
        &self.version
    }

    pub(crate) fn api(&self) -> &'static OrtApi {
        self.api
    }
}

/// The not-found error: every place looked at, and how to point at the library.
fn not_found(tried: &[String]) -> OrtError {
    OrtError(format!(
        "ONNX Runtime library not found; tried: {}. Set {LIBRARY_ENV} to the path of \
         libonnxruntime.so (the onnxruntime Python wheel holds it in \
         onnxruntime/capi/libonnxruntime.so.<version>) or put {LIBRARY_NAME} beside \
         this library",
        tried.join("; ")
    ))
}

/// `dlopen(name, RTLD_NOW)`: the handle, or `dlerror()`'s text.
fn open(name: &OsStr) -> Result<*mut c_void, String> {
    open_library(name)
}

/// `dlopen(name, RTLD_NOW)` for any library (the handle is never closed), or `dlerror()`'s
/// text.
pub(super) fn open_library(name: &OsStr) -> Result<*mut c_void, String> {
    let c_name = CString::new(name.as_bytes()).map_err(|_| "the path holds a NUL byte".to_string())?;
    unsafe {
        let handle = dlopen(c_name.as_ptr(), RTLD_NOW);
        if handle.is_null() {
            let error = dlerror();
            return Err(if error.is_null() {
                "dlopen failed".to_string()
            } else {
                CStr::from_ptr(error).to_string_lossy().into_owned()
            });
        }
        Ok(handle)
    }
}

/// Symbol `name` of a `dlopen` handle, or an error naming the library (`library`, as it was
/// asked for) and the missing symbol.
///
/// # Safety
/// `handle` is a live `dlopen` handle.
pub(super) unsafe fn symbol(
    handle: *mut c_void,
    library: &str,
    name: &CStr,
) -> Result<*mut c_void, OrtError> {
    let found = dlsym(handle, name.as_ptr());
    if found.is_null() {
        return Err(OrtError(format!("{library} has no symbol {}", name.to_string_lossy())));
    }
    Ok(found)
}

/// Extra folders of NVIDIA libraries to preload (`:`-separated: site-packages folders or
/// library folders), for a machine whose CUDA libraries are pip packages of another Python.
pub const GPU_LIBRARY_DIRS_ENV: &str = "PULPIE_RT_GPU_LIB_DIRS";

const RTLD_GLOBAL: c_int = 0x100;

/// The folders pip puts NVIDIA's libraries in under a site-packages folder `site`: the CUDA
/// wheels' `nvidia/<name>/lib` (CUDA 12) and `nvidia/cu13/lib` (CUDA 13), TensorRT's
/// `tensorrt_libs` (any `tensorrt*_libs`); a folder holding `lib*.so.*` files itself counts
/// as one. Sorted, so the order is the same on every machine.
pub fn gpu_library_dirs(site: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let children = |dir: &Path| -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> =
            std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
        found.sort();
        found
    };
    for child in children(&site.join("nvidia")) {
        for candidate in [child.join("lib"), child.join("lib64")] {
            if candidate.is_dir() {
                dirs.push(candidate);
            }
        }
    }
    for child in children(site) {
        let name = child.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with("tensorrt") && name.ends_with("_libs") && child.is_dir() {
            dirs.push(child);
        }
    }
    if dirs.is_empty() && children(site).iter().any(|f| is_versioned_library(f)) {
        dirs.push(site.to_path_buf());
    }
    dirs
}

/// One file per library: of `libX.so.N` files the highest major N (a PyTorch environment's CUDA
/// 12 libraries beside the CUDA 13 ones onnxruntime-gpu loads must not both be loaded, they
/// export the same symbols), and of one major the shortest name (the SONAME's, not a fuller
/// version's copy). In the order found.
fn newest_majors(files: Vec<PathBuf>) -> Vec<PathBuf> {
    let key = |path: &Path| -> (String, u64, usize) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let (stem, version) = name.split_once(".so.").unwrap_or((&name, ""));
        let major = version.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
        (stem.to_string(), major, name.len())
    };
    let mut best: std::collections::HashMap<String, (u64, usize, PathBuf)> = std::collections::HashMap::new();
    for path in &files {
        let (stem, major, length) = key(path);
        let better = best.get(&stem).is_none_or(|(m, l, _)| major > *m || (major == *m && length < *l));
        if better {
            best.insert(stem, (major, length, path.clone()));
        }
    }
    files.into_iter().filter(|p| best.get(&key(p).0).is_some_and(|(_, _, kept)| kept == p)).collect()
}

/// `lib<name>.so.<N...>`: a library under its SONAME or a fuller version.
fn is_versioned_library(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.starts_with("lib") && name.contains(".so.") && path.is_file()
}

/// What `preload_gpu_libraries` did: the libraries loaded and those that would not load
/// (with dlopen's reason), for a message when a provider still cannot load.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preloaded {
    pub dirs: Vec<PathBuf>,
    pub loaded: Vec<String>,
    pub failed: Vec<(String, String)>,
}

/// Loads (`RTLD_GLOBAL`) every versioned library of the NVIDIA folders found beside ONNX
/// Runtime's library `ort_library` (`<site-packages>/onnxruntime/capi/…`: the CUDA, cuDNN and
/// TensorRT wheels of the same environment) and in `PULPIE_RT_GPU_LIB_DIRS`, so that ONNX
/// Runtime's CUDA and TensorRT providers find their dependencies by SONAME without
/// `LD_LIBRARY_PATH`. Libraries that need others are retried until a pass loads nothing new
/// (the order dependencies ask for). Once per process; the result is shared.
pub fn preload_gpu_libraries(ort_library: &Path) -> &'static Preloaded {
    static DONE: std::sync::OnceLock<Preloaded> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let mut roots: Vec<PathBuf> = Vec::new();
        let real = std::fs::canonicalize(ort_library).unwrap_or_else(|_| ort_library.to_path_buf());
        if let Some(site) = real.parent().and_then(Path::parent).and_then(Path::parent) {
            roots.push(site.to_path_buf());
        }
        if let Some(extra) = std::env::var_os(GPU_LIBRARY_DIRS_ENV) {
            roots.extend(std::env::split_paths(&extra));
        }
        preload_from(&roots)
    })
}

/// `preload_gpu_libraries`' work over the site-packages (or library) folders `roots`.
pub fn preload_from(roots: &[PathBuf]) -> Preloaded {
    let mut done = Preloaded::default();
    for root in roots {
        for dir in gpu_library_dirs(root) {
            if !done.dirs.contains(&dir) {
                done.dirs.push(dir);
            }
        }
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in &done.dirs {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| d.flatten().map(|e| e.path()).filter(|p| is_versioned_library(p)).collect())
            .unwrap_or_default();
        found.sort();
        files.extend(found);
    }
    let mut pending = newest_majors(files);
    loop {
        let mut failed = Vec::new();
        let before = pending.len();
        for path in pending {
            let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else { continue };
            let handle = unsafe { dlopen(c_path.as_ptr(), RTLD_NOW | RTLD_GLOBAL) };
            if handle.is_null() {
                let error = unsafe { dlerror() };
                let why = if error.is_null() {
                    "dlopen failed".to_string()
                } else {
                    unsafe { CStr::from_ptr(error) }.to_string_lossy().into_owned()
                };
                failed.push((path, why));
            } else {
                done.loaded.push(path.display().to_string());
            }
        }
        if failed.is_empty() || failed.len() == before {
            done.failed = failed.into_iter().map(|(p, why)| (p.display().to_string(), why)).collect();
            return done;
        }
        pending = failed.into_iter().map(|(p, _)| p).collect();
    }
}

/// The folder of the shared object (or executable) holding this function's code.
fn own_directory() -> Option<PathBuf> {
    let mut info = DlInfo {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    let here = own_directory as *const c_void;
    if unsafe { dladdr(here, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    let file = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(OsStr::from_bytes(file.to_bytes()));
    // an executable may report a bare name (argv[0]); resolve it against the current folder
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    path.parent().map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_named_with_the_loaders_reason() {
        let error = OrtLibrary::load_file(Path::new("/nonexistent/libonnxruntime.so.1")).err().unwrap();
        assert_eq!(
            error.0,
            "cannot load the ONNX Runtime library /nonexistent/libonnxruntime.so.1: \
             /nonexistent/libonnxruntime.so.1: cannot open shared object file: No such file or \
             directory"
        );
    }

    #[test]
    fn a_library_without_the_entry_point_is_refused() {
        // libc is loaded in every process and has no OrtGetApiBase
        let error = OrtLibrary::load_file(Path::new("libc.so.6")).err().unwrap();
        assert_eq!(error.0, "libc.so.6 is not an ONNX Runtime library: it has no OrtGetApiBase symbol");
    }

    #[test]
    fn a_file_that_is_not_a_shared_object_is_refused() {
        let file = std::env::temp_dir().join(format!("pulpie-rt-not-a-library-{}.so", std::process::id()));
        std::fs::write(&file, b"not an ELF file").unwrap();
        let error = OrtLibrary::load_file(&file).err().unwrap();
        std::fs::remove_file(&file).unwrap();
        let shown = file.display().to_string();
        assert_eq!(error.0, format!("cannot load the ONNX Runtime library {shown}: {shown}: file too short"));
    }

    #[test]
    fn not_found_says_where_it_looked_and_how_to_point_at_it() {
        let error = not_found(&["/opt/x/libonnxruntime.so.1 (no such file)".to_string()]);
        assert_eq!(
            error.0,
            "ONNX Runtime library not found; tried: /opt/x/libonnxruntime.so.1 (no such file). \
             Set PULPIE_RT_ORT_LIB to the path of libonnxruntime.so (the onnxruntime Python \
             wheel holds it in onnxruntime/capi/libonnxruntime.so.<version>) or put \
             libonnxruntime.so.1 beside this library"
        );
    }

    #[test]
    fn own_directory_is_the_folder_of_this_code() {
        // in `cargo test` the code lives in the test executable
        let exe = std::env::current_exe().unwrap();
        assert_eq!(own_directory().unwrap(), std::fs::canonicalize(exe).unwrap().parent().unwrap());
    }

    /// The folders pip makes (nvidia/<name>/lib, nvidia/cu13/lib, tensorrt_libs) are found under
    /// a site-packages folder, and their versioned libraries loaded: one that needs another is
    /// retried after it, one that cannot load is reported with dlopen's reason.
    #[test]
    fn nvidia_wheels_libraries_are_found_and_preloaded() {
        let site = std::env::temp_dir().join(format!("pulpie-rt-site-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&site);
        for dir in ["nvidia/cublas/lib", "nvidia/cu13/lib", "tensorrt_libs", "onnxruntime/capi", "other"] {
            std::fs::create_dir_all(site.join(dir)).unwrap();
        }
        let zlib =
            ["/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib64/libz.so.1"]
                .into_iter()
                .find(|p| Path::new(p).is_file());
        let Some(zlib) = zlib else { return }; // no zlib to stand in for a CUDA library here
        std::fs::copy(zlib, site.join("nvidia/cu13/lib/libz.so.1")).unwrap();
        // an older major of the same library (CUDA 12 beside 13) and a fuller-version copy:
        // neither is loaded
        std::fs::write(site.join("nvidia/cublas/lib/libz.so.0"), b"older major").unwrap();
        std::fs::write(site.join("nvidia/cu13/lib/libz.so.1.2.13"), b"fuller name").unwrap();
        std::fs::write(site.join("tensorrt_libs/libbroken.so.10"), b"not an ELF file").unwrap();
        std::fs::write(site.join("nvidia/cublas/lib/README"), b"not a library").unwrap();
        assert_eq!(
            gpu_library_dirs(&site),
            vec![site.join("nvidia/cu13/lib"), site.join("nvidia/cublas/lib"), site.join("tensorrt_libs")]
        );
        let done = preload_from(std::slice::from_ref(&site));
        assert_eq!(done.loaded, vec![site.join("nvidia/cu13/lib/libz.so.1").display().to_string()]);
        assert_eq!(done.failed.len(), 1);
        assert_eq!(done.failed[0].0, site.join("tensorrt_libs/libbroken.so.10").display().to_string());
        assert!(done.failed[0].1.contains("libbroken.so.10"), "{}", done.failed[0].1);
        std::fs::remove_dir_all(&site).unwrap();
    }
}
