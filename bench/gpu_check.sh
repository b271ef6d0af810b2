#!/usr/bin/env bash
# Everything that needs an NVIDIA GPU, in one run of at most ~8 minutes on a fresh machine:
#
#   1. environment: reuse a working one, else install the project + GPU extras from wheels in
#      .whl/ (no package registry needed; see "Filling .whl/" below)
#   2. tiny test checkpoint -> ONNX bundle (verified) -> TensorRT FP16 engine
#   3. Orange-Small-shaped random checkpoint (Llama-3 vocabulary) -> fp32 bundle -> TensorRT
#      FP16 engine; fp16 bundle for ONNX Runtime CUDA
#   4. TensorRT-vs-PyTorch label parity on real pages (tiny checkpoint, reference in bf16)
#   5. the GPU benchmark: TensorRT / ORT CUDA vs the reference (bf16) on 500 real pages
#   6. the token distribution with the Llama-3 vocabulary (CPU)
#
# Usage:  bench/gpu_check.sh [OUT_DIR] [--cpu-dry-run]
#   OUT_DIR defaults to $OUT, else bench/results/gpu-<UTC time>. It receives gpu_check.json
#   (every step's status and seconds, and the figures), gpu-bench.json, parity.json,
#   tokens.json and gpu_check.log.
#   --cpu-dry-run: no GPU here - run the same steps on the CPU with a 2-layer model of the
#   real vocabulary and a handful of pages; the engine steps report "no GPU" (expected);
#   speed figures mean nothing. Proves the script and everything it calls work.
#
# Filling .whl/ (on a machine with a package registry and the GPU box's OS, CPU and Python):
#   pip download -d .whl setuptools wheel torch==2.13.0 transformers==5.23.0 \
#       selectolax==0.4.10 'onnxruntime-gpu>=1.18' 'tensorrt-cu12>=10' 'cuda-python>=12' \
#       '.[dev,export,bench]'
#   pip download -d .whl --no-deps pulpie==0.0.2
# (torch==2.13.0 from the default index on Linux x86_64 is the CUDA build; never another torch.)
set -uo pipefail

cd "$(dirname "$0")/.."
DRY_RUN=0
OUT_DIR="${OUT:-}"
for arg in "$@"; do
    case "$arg" in
        --cpu-dry-run) DRY_RUN=1 ;;
        -h|--help) sed -n 2,30p "$0"; exit 0 ;;
        *) OUT_DIR="$arg" ;;
    esac
done
OUT_DIR="${OUT_DIR:-bench/results/gpu-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT_DIR"
OUT_DIR="$(cd "$OUT_DIR" && pwd)"
BUILD="${BUILD:-build/gpu-check}"
mkdir -p "$BUILD"
LOG="$OUT_DIR/gpu_check.log"
STEPS="$OUT_DIR/steps.tsv"
: > "$STEPS"
START=$(date +%s)
BUDGET_S=${BUDGET_S:-480}

log() { echo "[gpu_check +$(( $(date +%s) - START ))s] $*" | tee -a "$LOG"; }
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }

SLOW=1  # timeout multiplier: 3 on a CPU dry run (a small shared CPU box)
# step NAME TIMEOUT_S COMMAND...: runs, logs, records "name rc seconds" (never aborts the run)
step() {
    local name="$1" limit=$(( $2 * SLOW )); shift 2
    local t0; t0=$(date +%s)
    log "== $name (timeout ${limit}s): $*"
    timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
    local rc=$?
    local dt=$(( $(date +%s) - t0 ))
    printf '%s\t%s\t%s\n' "$name" "$rc" "$dt" >> "$STEPS"
    log "   $name: rc=$rc in ${dt}s"
    return $rc
}

# ---------------------------------------------------------------- 1. environment
PY=""
usable() {  # $1 = python; GPU mode also needs CUDA torch, TensorRT, ORT CUDA, cuda-python
    "$1" - <<EOF >/dev/null 2>&1
import pulpie_rt, pulpie, transformers, torch
if not $DRY_RUN:
    import tensorrt, onnxruntime
    from cuda.bindings import runtime
    assert torch.cuda.is_available()
    assert "CUDAExecutionProvider" in onnxruntime.get_available_providers()
EOF
}
for candidate in "${PYTHON:-}" .venv/bin/python .venv-gpu/bin/python; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && usable "$candidate"; then
        PY="$candidate"; break
    fi
done
if [ -z "$PY" ]; then
    if [ ! -d .whl ]; then
        log "no usable environment and no .whl/ folder of wheels: see the header of $0"
        printf 'env\t2\t0\n' >> "$STEPS"
    else
        log "installing from .whl/ into .venv-gpu (no package index)"
        t0=$(date +%s)
        python3 -m venv .venv-gpu
        PIPI=(.venv-gpu/bin/python -m pip install -q --no-index --find-links .whl)
        { "${PIPI[@]}" setuptools wheel \
          && "${PIPI[@]}" torch==2.13.0 \
          && "${PIPI[@]}" --no-build-isolation -e '.[dev,export,bench]' selectolax==0.4.10 \
               transformers==5.23.0 \
          && "${PIPI[@]}" --no-deps pulpie==0.0.2 \
          && { .venv-gpu/bin/python -m pip uninstall -y -q onnxruntime || true; } \
          && "${PIPI[@]}" onnxruntime-gpu tensorrt-cu12 cuda-python; } >>"$LOG" 2>&1
        printf 'env\t%s\t%s\n' "$?" "$(( $(date +%s) - t0 ))" >> "$STEPS"
        usable .venv-gpu/bin/python && PY=.venv-gpu/bin/python
    fi
fi
if [ -z "$PY" ]; then
    log "FAILED: no working Python environment (see $LOG)"
    exit 2
fi
log "python: $PY"
RT=("$PY" -m pulpie_rt.cli)

if [ "$DRY_RUN" = 1 ]; then
    SLOW=3; BUDGET_S=$(( BUDGET_S * SLOW ))
    SHAPE=mini; PAGES=4; PARITY_PAGES=4; TOKEN_PAGES=40
    SIDES=(ours-pipeline ref-loop ours-loop)
    log "CPU DRY RUN: GPU steps are expected to report 'no GPU'; figures mean nothing"
else
    nvidia-smi >>"$LOG" 2>&1 || { log "FAILED: nvidia-smi finds no GPU"; exit 2; }
    SHAPE=orange-small; PAGES=500; PARITY_PAGES=100; TOKEN_PAGES=""
    SIDES=(ours-pipeline ref-pipeline ref-loop ours-loop)
fi

# ---------------------------------------------------------------- 2. tiny: bundle + engine
# A bundle already in $BUILD (a rerun on the same machine) is reused unless FRESH=1.
exported() { [ "${FRESH:-0}" != 1 ] && [ -f "$1/manifest.json" ] && [ -f "$1/model.onnx" ]; }
TINY=tests/fixtures/tiny-eurobert
exported "$BUILD/tiny-onnx" && log "reusing $BUILD/tiny-onnx" || \
    step tiny-export 120 "${RT[@]}" export "$TINY" --out "$BUILD/tiny-onnx" --precision fp32
engine_in() { [ "${FRESH:-0}" != 1 ] && ls "$1"/*.engine >/dev/null 2>&1; }
engine_in "$BUILD/tiny-onnx" && log "reusing the engine in $BUILD/tiny-onnx" || \
    step tiny-engine 150 "${RT[@]}" engine "$BUILD/tiny-onnx" --gpu auto --precision fp16
TINY_ENGINE=$(ls "$BUILD"/tiny-onnx/*.engine 2>/dev/null | head -1)

# ---------------------------------------------------------------- 3. Orange-Small-shaped
SMALL="$BUILD/$SHAPE-random"
if exported "$BUILD/$SHAPE-onnx" && [ -f "$SMALL/config.json" ]; then
    log "reusing $SMALL and $BUILD/$SHAPE-onnx"
else
    step small-checkpoint 120 "$PY" -m pulpie_rt.bench.random_checkpoint "$SMALL" \
        --shape "$SHAPE"
    step small-export 150 "${RT[@]}" export "$SMALL" --out "$BUILD/$SHAPE-onnx" \
        --precision fp32 --no-verify
fi
engine_in "$BUILD/$SHAPE-onnx" && log "reusing the engine in $BUILD/$SHAPE-onnx" || \
    step small-engine 240 "${RT[@]}" engine "$BUILD/$SHAPE-onnx" --gpu auto --precision fp16
SMALL_ENGINE=$(ls "$BUILD/$SHAPE-onnx"/*.engine 2>/dev/null | head -1)
ORT_BUNDLE="$BUILD/$SHAPE-onnx"
if [ "$DRY_RUN" = 0 ] && exported "$BUILD/$SHAPE-onnx-fp16"; then
    ORT_BUNDLE="$BUILD/$SHAPE-onnx-fp16"
elif [ "$DRY_RUN" = 0 ] && [ "$(left)" -gt 200 ]; then
    step small-export-fp16 120 "${RT[@]}" export "$SMALL" --out "$BUILD/$SHAPE-onnx-fp16" \
        --precision fp16 --no-verify && ORT_BUNDLE="$BUILD/$SHAPE-onnx-fp16"
fi

# ---------------------------------------------------------------- 4. parity
PARITY_ARGS=(parity --checkpoint "$TINY" --pages "$PARITY_PAGES" --out "$OUT_DIR/parity.json")
if [ -n "$TINY_ENGINE" ]; then PARITY_ARGS+=(--engine "$TINY_ENGINE"); fi
if [ "$DRY_RUN" = 1 ]; then PARITY_ARGS+=(--bundle "$BUILD/tiny-onnx" --cpu-dry-run --light); fi
step parity 150 "$PY" -m pulpie_rt.bench.gpu "${PARITY_ARGS[@]}"

# ---------------------------------------------------------------- 5. GPU bench
BENCH_BUDGET=$(( $(left) - 60 ))
[ "$BENCH_BUDGET" -lt 60 ] && BENCH_BUDGET=60
BENCH_ARGS=(bench --checkpoint "$SMALL" --pages "$PAGES" --bundle "$ORT_BUNDLE"
            --sides "${SIDES[@]}" --time-budget "$BENCH_BUDGET" --out "$OUT_DIR/gpu-bench.json")
if [ -n "$SMALL_ENGINE" ]; then BENCH_ARGS+=(--engine "$SMALL_ENGINE"); fi
if [ "$DRY_RUN" = 1 ]; then BENCH_ARGS+=(--cpu-dry-run --light); fi
step gpu-bench $(( (BENCH_BUDGET + 120) / SLOW )) "$PY" -m pulpie_rt.bench.gpu "${BENCH_ARGS[@]}"

# ---------------------------------------------------------------- 6. token distribution
TOKEN_ARGS=(--out "$OUT_DIR/tokens.json")
if [ -n "$TOKEN_PAGES" ]; then TOKEN_ARGS+=(--pages "$TOKEN_PAGES"); fi
step tokens 120 "$PY" -m pulpie_rt.bench.token_report "${TOKEN_ARGS[@]}"

# ---------------------------------------------------------------- summary
"$PY" - "$OUT_DIR" "$STEPS" "$DRY_RUN" "$(( $(date +%s) - START ))" <<'EOF' | tee -a "$LOG"
import json, sys
from pathlib import Path
out, steps_file, dry_run, total = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
steps = []
for line in steps_file.read_text().splitlines():
    name, rc, seconds = line.split("\t")
    steps.append({"step": name, "rc": int(rc), "seconds": int(seconds)})
# Without a GPU the engine steps must stop with the clear "no GPU" exit code 3.
expected = {"tiny-engine": 3, "small-engine": 3} if dry_run else {}
for s in steps:
    s["ok"] = s["rc"] == expected.get(s["step"], 0)
summary = {"cpu_dry_run": dry_run, "total_seconds": total, "steps": steps,
           "passed": all(s["ok"] for s in steps)}
for name in ("parity", "gpu-bench", "tokens"):
    path = out / f"{name}.json"
    if path.is_file():
        summary[name] = json.loads(path.read_text())
(out / "gpu_check.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
for s in steps:
    print(f"  {s['step']:<18} rc={s['rc']:<4} {s['seconds']:>4}s  {'ok' if s['ok'] else 'FAILED'}")
print(f"gpu_check: {'PASSED' if summary['passed'] else 'FAILED'} in {total}s "
      f"({'CPU dry run' if dry_run else 'GPU'}); results in {out}/gpu_check.json")
sys.exit(0 if summary["passed"] else 1)
EOF
