//! Builds lexbor (the HTML parser and serializer the core calls, `src/lexbor.rs`) into a static
//! library linked into the core. lexbor's C sources are not part of this repository: they are
//! the copy in the selectolax source distribution on PyPI (the version the reference's parser
//! lock pins, `SELECTOLAX_VERSION`), taken from one of:
//!
//! - `PULPIE_RT_LEXBOR_SRC`: a directory holding lexbor's sources (lexbor's own root, with
//!   `source/lexbor/…`, or an unpacked selectolax sdist, with `lexbor/source/lexbor/…`);
//! - otherwise the sdist itself, fetched from the package index by `tools/pypi_download.py`
//!   (Python's standard library, no pip), checked against `SDIST_SHA256` and unpacked into `PULPIE_RT_LEXBOR_CACHE` (the Makefile points it at
//!   `build/lexbor`, so every build of the checkout shares one copy) or else into `OUT_DIR`.
//!
//! The modules compiled are what parsing a document and serializing it need (core, dom, html,
//! tag, ns and the POSIX port), with the system C compiler (`CC`, else `cc`) and archiver
//! (`AR`, else `ar`); `-O3` with hidden visibility (its functions inlined into one another),
//! where selectolax's own build uses `-O0`. With a cache directory the archive is kept there
//! too, keyed by compiler, flags and target, so a new profile or a clean `target/` does not
//! compile lexbor again.

use std::collections::hash_map::DefaultHasher;
use std::env;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The selectolax release whose sdist carries the lexbor sources (lexbor 3.0.0), and the
/// sha256 of that file on PyPI.
const SELECTOLAX_VERSION: &str = "0.4.10";
const SDIST_SHA256: &str = "89764b4d1e32d38e635dfb270a639fc707af4315b863fd161357a517321e5046";

/// lexbor modules under `source/lexbor/` that parsing and serializing a document link against
/// (css, selectors, style, url, … are not needed), and `encoding` (the WHATWG Encoding
/// Standard's labels and decoders, `src/decode.rs`).
const MODULES: &[&str] = &["core", "dom", "html", "tag", "ns", "ports/posix", "encoding"];
const CFLAGS: &[&str] = &["-O3", "-fPIC", "-fvisibility=hidden", "-std=c99", "-DLEXBOR_STATIC", "-w"];
const LIB_NAME: &str = "lexbor_pulpie";
/// The parse with a bound on each element's attributes (`src/lexbor.rs`), C against lexbor's
/// headers, and its archive's name.
const PARSE_SOURCE: &str = "src/lexbor_parse.c";
const PARSE_LIB_NAME: &str = "pulpie_rt_lexbor_parse";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PULPIE_RT_LEXBOR_SRC");
    println!("cargo:rerun-if-env-changed=PULPIE_RT_LEXBOR_CACHE");
    println!("cargo:rerun-if-env-changed=CC");
    println!("cargo:rerun-if-env-changed=AR");
    if let Err(message) = header_constants() {
        eprintln!("\nerror: cannot read pulpie_rt_core's headers\n\n{message}\n");
        std::process::exit(1);
    }
    if let Err(message) = build() {
        eprintln!("\nerror: cannot build lexbor for pulpie_rt_core\n\n{message}\n");
        std::process::exit(1);
    }
}

fn build() -> Result<(), String> {
    if env::var("CARGO_CFG_TARGET_FAMILY").as_deref() != Ok("unix") {
        return Err("lexbor is built here for Unix-like targets only (its POSIX port)".into());
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let cache = env::var_os("PULPIE_RT_LEXBOR_CACHE").map(PathBuf::from);
    let root = lexbor_root(cache.as_deref().unwrap_or(&out_dir))?;
    let source = root.join("source");
    check_notice(&root);

    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let ar = env::var("AR").unwrap_or_else(|_| "ar".into());
    let target = env::var("TARGET").unwrap_or_default();
    let files = c_files(&source)?;
    let mut key = DefaultHasher::new();
    (SELECTOLAX_VERSION, &cc, CFLAGS, &target, &source, files.len()).hash(&mut key);
    let lib_dir = match &cache {
        Some(dir) => dir.join(format!("lib-{:016x}", key.finish())),
        // keyed too: a build folder kept across a change of flags builds lexbor again
        None => out_dir.join(format!("lexbor-lib-{:016x}", key.finish())),
    };
    let archive = lib_dir.join(format!("lib{LIB_NAME}.a"));
    if !archive.is_file() {
        let lexbor = Compiler { cc: &cc, ar: &ar, flags: CFLAGS };
        compile(&lexbor, &source, &files, &out_dir.join("lexbor-obj"), &lib_dir, &archive)?;
    }
    // this crate's own C, against the lexbor just built: compiled every build (one file), and
    // linked before lexbor, whose functions it calls
    println!("cargo:rerun-if-changed={PARSE_SOURCE}");
    let parse_dir = out_dir.join("lexbor-parse");
    let parse_archive = parse_dir.join(format!("lib{PARSE_LIB_NAME}.a"));
    let parse_flags: Vec<&str> = CFLAGS.iter().copied().filter(|f| *f != "-w").chain(["-Wall"]).collect();
    let ours = Compiler { cc: &cc, ar: &ar, flags: &parse_flags };
    compile(
        &ours,
        &source,
        &[PathBuf::from(PARSE_SOURCE)],
        &parse_dir.join("obj"),
        &parse_dir,
        &parse_archive,
    )?;
    println!("cargo:rustc-link-search=native={}", parse_dir.display());
    println!("cargo:rustc-link-lib=static={PARSE_LIB_NAME}");
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=static={LIB_NAME}");
    Ok(())
}

/// The headers' `#define PULPIE_RT_* <integer>` constants as Rust constants
/// (`$OUT_DIR/header_constants.rs`, included by `src/abi.rs`): the headers are their one
/// definition. A `u` suffix makes one `u32` (`ull`: `u64`), none an `i32` (the C `int`).
fn header_constants() -> Result<(), String> {
    let mut out = String::from("// generated by core/build.rs from core/include/*.h: do not edit\n");
    for header in HEADERS {
        println!("cargo:rerun-if-changed={header}");
        let text = std::fs::read_to_string(header).map_err(|e| format!("{header}: {e}"))?;
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some("#define"), Some(name), Some(value)) = (words.next(), words.next(), words.next())
            else {
                continue;
            };
            if !name.starts_with("PULPIE_RT_") {
                continue;
            }
            let (digits, kind) = if let Some(digits) = value.strip_suffix("ull") {
                (digits, "u64")
            } else if let Some(digits) = value.strip_suffix('u') {
                (digits, "u32")
            } else {
                (value, "i32")
            };
            if digits.trim_start_matches('-').is_empty()
                || !digits.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit())
            {
                return Err(format!("{header}: {name}: not a decimal integer: {value}"));
            }
            out.push_str(&format!("pub const {name}: {kind} = {digits};\n"));
        }
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    std::fs::write(out_dir.join("header_constants.rs"), out).map_err(|e| e.to_string())
}

/// The headers of the core's ABI (the C SDK's, the Python package's).
const HEADERS: [&str; 2] = ["include/pulpie_rt.h", "include/pulpie_rt_internal.h"];

/// lexbor's root directory (the one holding `source/lexbor`), from `PULPIE_RT_LEXBOR_SRC` or
/// from the sdist unpacked under `dir`.
fn lexbor_root(dir: &Path) -> Result<PathBuf, String> {
    if let Some(given) = env::var_os("PULPIE_RT_LEXBOR_SRC") {
        let given = PathBuf::from(given);
        for root in [given.clone(), given.join("lexbor")] {
            if is_lexbor_root(&root) {
                return Ok(root);
            }
        }
        return Err(format!(
            "PULPIE_RT_LEXBOR_SRC={} holds no lexbor sources (looked for source/lexbor/html/ \
             and lexbor/source/lexbor/html/ in it)",
            given.display()
        ));
    }
    let root = dir.join(format!("selectolax-{SELECTOLAX_VERSION}-lexbor"));
    if is_lexbor_root(&root) {
        return Ok(root);
    }
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    fetch_sdist(dir, &root)?;
    if !is_lexbor_root(&root) {
        return Err(format!("{} holds no lexbor sources after unpacking", root.display()));
    }
    Ok(root)
}

fn is_lexbor_root(root: &Path) -> bool {
    root.join("source/lexbor/html/serialize.c").is_file()
}

/// Download the selectolax sdist (`tools/pypi_download.py`: the package index read with Python's
/// standard library, no pip, which a build's isolated environment lacks), check its sha256 and
/// unpack its `lexbor/` folder as `root` (in a temporary folder first, then renamed: concurrent
/// builds never see half a copy).
fn fetch_sdist(dir: &Path, root: &Path) -> Result<(), String> {
    const SCRIPT: &str = r#"
import importlib.util, os, sys, tarfile, tempfile
tool, version, sha256, dir, root = sys.argv[1:6]
spec = importlib.util.spec_from_file_location("pypi_download", tool)
pypi = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pypi)
with tempfile.TemporaryDirectory(dir=dir) as tmp:
    try:
        sdist = pypi.download("selectolax", f"selectolax-{version}.tar.gz", sha256, tmp)
    except pypi.DownloadError as exc:
        sys.exit(f"selectolax {version}: {exc}")
    prefix = f"selectolax-{version}/lexbor/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)
                   and (m.isfile() or m.isdir())]
        if hasattr(tarfile, "data_filter"):
            tar.extractall(tmp, members=members, filter="data")
        else:
            tar.extractall(tmp, members=members)
    try:
        os.rename(os.path.join(tmp, prefix.rstrip("/")), root)
    except OSError:
        if not os.path.isdir(root):  # another build may have put it there meanwhile
            raise
"#;
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/pypi_download.py");
    println!("cargo:rerun-if-changed={}", tool.display());
    let mut pythons: Vec<String> =
        ["PYO3_PYTHON", "PYTHON_SYS_EXECUTABLE"].iter().filter_map(|name| env::var(name).ok()).collect();
    pythons.extend(["python3".to_string(), "python".to_string()]);
    pythons.dedup();
    let mut failures = Vec::new();
    for python in &pythons {
        let status = Command::new(python)
            .arg("-c")
            .arg(SCRIPT)
            .arg(&tool)
            .args([SELECTOLAX_VERSION, SDIST_SHA256])
            .arg(dir)
            .arg(root)
            .status();
        match status {
            Ok(s) if s.success() => return Ok(()),
            Ok(s) => {
                // a Python that runs and fails has said why (above): another one would fail alike
                return Err(format!(
                    "fetching lexbor's C sources with `{python}` failed ({s}); see the message above.\n{}",
                    offline_hint()
                ));
            }
            Err(e) => failures.push(format!("`{python}`: {e}")),
        }
    }
    Err(format!("no Python to fetch lexbor's C sources with ({}).\n{}", failures.join("; "), offline_hint()))
}

fn offline_hint() -> String {
    format!(
        "Without the package index, download selectolax-{SELECTOLAX_VERSION}.tar.gz elsewhere \
         (sha256 {SDIST_SHA256}), unpack it and set \
         PULPIE_RT_LEXBOR_SRC=/path/to/selectolax-{SELECTOLAX_VERSION}"
    )
}

/// lexbor's NOTICE and LICENSE must travel with binaries that include it (Apache-2.0 section
/// 4(a) and 4(d); BSD-2-Clause for parts of its core module): THIRD_PARTY_NOTICES.md reproduces
/// them (pyproject.toml installs it with the package). Lines of theirs missing there (another
/// lexbor version) are reported.
fn check_notice(root: &Path) {
    let notices = Path::new(env!("CARGO_MANIFEST_DIR")).join("../THIRD_PARTY_NOTICES.md");
    println!("cargo:rerun-if-changed={}", notices.display());
    let Ok(ours) = fs::read_to_string(&notices) else {
        println!("cargo:warning=THIRD_PARTY_NOTICES.md is missing: lexbor's licence notices must ship with the core");
        return;
    };
    for name in ["NOTICE", "LICENSE"] {
        let Ok(text) = fs::read_to_string(root.join(name)) else {
            println!("cargo:warning=lexbor's {name} file is missing from its sources");
            continue;
        };
        if let Some(line) = text.lines().map(str::trim).filter(|l| !l.is_empty()).find(|l| !ours.contains(l))
        {
            println!("cargo:warning=THIRD_PARTY_NOTICES.md lacks lexbor's {name} line {line:?}");
        }
    }
}

fn c_files(source: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for module in MODULES {
        let mut stack = vec![source.join("lexbor").join(module)];
        while let Some(dir) = stack.pop() {
            let entries = fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            for entry in entries {
                let path = entry.map_err(|e| e.to_string())?.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|x| x == "c") {
                    files.push(path);
                }
            }
        }
    }
    files.sort();
    Ok(files)
}

/// A C compiler and archiver, and the compiler's flags.
struct Compiler<'a> {
    cc: &'a str,
    ar: &'a str,
    flags: &'a [&'a str],
}

/// Compile every file (as many compilers at once as cargo allows) and archive the objects.
fn compile(
    Compiler { cc, ar, flags }: &Compiler,
    source: &Path,
    files: &[PathBuf],
    obj_dir: &Path,
    lib_dir: &Path,
    archive: &Path,
) -> Result<(), String> {
    fs::create_dir_all(obj_dir).map_err(|e| e.to_string())?;
    fs::create_dir_all(lib_dir).map_err(|e| e.to_string())?;
    let jobs: usize = env::var("NUM_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(1).max(1);
    let mut objects = Vec::new();
    let mut running: Vec<(Child, PathBuf)> = Vec::new();
    let wait = |(mut child, file): (Child, PathBuf)| -> Result<(), String> {
        let status = child.wait().map_err(|e| e.to_string())?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`{cc}` failed ({status}) on {}", file.display()))
        }
    };
    for (i, file) in files.iter().enumerate() {
        let rel = file.strip_prefix(source).unwrap_or(file);
        let stem = rel.to_string_lossy().replace(['/', '\\'], "_");
        let object = obj_dir.join(format!("{i:03}_{stem}.o"));
        let child = Command::new(cc)
            .args(*flags)
            .arg("-I")
            .arg(source)
            .arg("-c")
            .arg(file)
            .arg("-o")
            .arg(&object)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run the C compiler `{cc}` ({e}); set CC to one"))?;
        running.push((child, file.clone()));
        objects.push(object);
        if running.len() >= jobs {
            wait(running.remove(0))?;
        }
    }
    for job in running {
        wait(job)?;
    }
    // archive under a temporary name, then rename: a shared cache never holds half an archive
    let partial = PathBuf::from(format!("{}.{}", archive.display(), std::process::id()));
    let _ = fs::remove_file(&partial);
    let status = Command::new(ar)
        .arg("crs")
        .arg(&partial)
        .args(&objects)
        .status()
        .map_err(|e| format!("cannot run the archiver `{ar}` ({e}); set AR to one"))?;
    if !status.success() {
        return Err(format!("`{ar} crs` failed ({status})"));
    }
    fs::rename(&partial, archive).map_err(|e| e.to_string())
}
