#!/bin/sh
# The one command for the GPU machine: build (sm_90a), CUDA tests (the backend tests run their
# case tables on the CPU and on the GPU in bf16 and fp32; the encoder's bf16 cases again with the
# erf GELU), compute-sanitizer (memcheck + racecheck) at small shapes on the LM head and encoder
# tests, bench-lmhead, the kernel lab (tools/kernel_lab: every variant checked, then timed), the
# PyTorch peer, bench/gpu_encoder.sh (fixed shapes + real SciFact documents), then the side-by-side
# tables (LM head, then the end-to-end encoder) last.
# Logs and JSON go to $OUT (<= 8 files). Aim: <= ~7 minutes in all. Past a call's 10 minutes:
# run(command="sh bench/device_bg.sh start 'KNOBS... sh bench/gpu.sh'"), then `sh bench/device_bg.sh wait`.
#
# Re-run it (device `run` tool), after this one-time setup here in the repo root:
#   mkdir -p .gpu/scifact .gpu/bert-base-uncased && cp ../shared/data/scifact/corpus.jsonl .gpu/scifact/ &&
#   cp ../shared/data/bert-base-uncased/{tokenizer.json,vocab.txt,tokenizer_config.json} .gpu/bert-base-uncased/ &&
#   cp ../shared/peer/torch_splade_peer.py .gpu/ && make models   # cache/splade-tiny (for the tiny test)
# then:
#   mkdir -p .gpu/scifact/qrels && cp ../shared/data/scifact/queries.jsonl .gpu/scifact/ &&
#   cp ../shared/data/scifact/qrels/test.tsv .gpu/scifact/qrels/     # the reference pipeline
#   run(kind="nvidia-h200", timeout_s=600, command="sh bench/gpu.sh",
#       carry=[".gpu/lm-sysroot.tar.gz", ".gpu/torch_splade_peer.py", ".gpu/scifact",
#              ".gpu/bert-base-uncased", "cache/splade-tiny"])
# (about 40 MiB carried; all of .gpu is over the 64 MiB limit, so name the files one by one.)
#
# The GPU image lacks the -dev packages of cmocka, jansson, utf8proc and streamvbyte (and has no
# network for apt): carry .gpu/lm-sysroot.tar.gz too. To rebuild it on a Debian/Ubuntu box:
#   mkdir d sr && cd d && apt-get download libcmocka0 libcmocka-dev libjansson4 libjansson-dev \
#     libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libutf8proc2 libutf8proc-dev \
#     libstreamvbyte0 libstreamvbyte-dev libgfortran5 libquadmath0 zlib1g zlib1g-dev && cd .. && \
#   for f in d/*.deb; do dpkg -x $f sr; done && find sr -name '*.a' -delete && rm -rf sr/usr/share && \
#   tar czf .gpu/lm-sysroot.tar.gz -C sr usr
#
# Knobs: BENCH_ARGS (bench-lmhead options; default the full grid), PEER_TIMEOUT (s, 240; the peer's
# encoder rows come last), SKIP_PEER=1, SKIP_SANITIZER=1, SKIP_ENCODER=1, SKIP_AGREEMENT=1 (the GPU vs
# CPU vectors over all SciFact documents, bf16 and fp32; AGREEMENT_ARGS: its options), SKIP_CLI=1 (the CLI's
# SciFact build/query/eval on the GPU and the CPU), SKIP_GPU_SEARCH=1 (issue #14: bench/gpu_search.sh, GPU batch
# search vs the CPU's on SciFact and 1 M synthetic documents), SKIP_MGPU=1 (issue #17: index bytes of cuda:0 against
# cuda:0,0 / cuda:all, and bench_multi_gpu's scaling; MGPU_SPECS, MGPU_R; the whole build of SciFact xMGPU_BUILD_R
# (20; 0: none) per GPU list through bench/gpu_pipeline.sh, MGPU_ROUNDS, MGPU_BASE_BIN: an older build beside it), SEG_BMP=1 (issue #12: bench/segments_bmp.sh, 1 M documents), SKIP_LAB=1 (the kernel lab: build/lab programs and the
# tile rows; LAB_LMHEAD_ARGS / LAB_ATTN_ARGS / LAB_GEMM_ARGS: the programs' options, e.g. "5 7 --B 128 --S 256"), NCU=1
# (profile), GIT_COMMIT (when .git did not travel); for short LM-head runs: PREBUILT=dir (carried binaries
# dir/splade-index with dir/libsplade.so.0 and dir/libsplade-cuda.so beside it — the library loads the GPU
# code from there —, dir/tests/test_lmhead_backends, dir/lab/* built here: no build when they start),
# TESTS_ONLY="test_a test_b", SKIP_POISON=1, SAN_SPECS="memcheck test_lmhead_backends:*/gpu-* ..." (pairs
# "tool test[:cmocka name pattern]"), LAB_SPECS="B S V tile group tma;..." ('-' = default), PEER_SCRIPT (a
# filtered copy of the peer, e.g. .gpu/torch_lmhead_peer.py = its LM-head loop only).
set -u
OUT=${OUT:-/tmp/splade-gpu-out}
mkdir -p "$OUT"
BUILD=build-gpu
LOG="$OUT/gpu_sh.log"
T0=$(date +%s)
say() { echo "[gpu.sh +$(( $(date +%s) - T0 ))s] $*" | tee -a "$LOG"; }
: >"$LOG"
# GIT_COMMIT first: the .git that travels to the GPU machine can be older than the working tree
COMMIT=${GIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
say "commit $COMMIT, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv >>"$LOG" 2>&1

. bench/device_build.sh

PRE_OK=0
if [ -n "${PREBUILT:-}" ] && [ -x "$PREBUILT/splade-index" ] && "$PREBUILT/splade-index" --help >/dev/null 2>&1; then
    BUILD=$PREBUILT; PRE_OK=1; say "using prebuilt binaries in $BUILD (no build)"
fi
if [ $PRE_OK = 0 ]; then
    say "build: make BUILD=$BUILD -j16"
    if ! mk -j16 >>"$LOG" 2>&1; then
        say "BUILD FAILED"; tail -30 "$LOG"; exit 1
    fi
fi
# the random-weight models of other architectures (DistilBERT, Router, multilingual) that
# test_models compares on the GPU: written here (pure Python, ~35 s) rather than carried (65 MB)
# (bert-base-uncased's vocab.txt + tokenizer_config.json from .gpu/, as ../shared does not travel)
case " ${TESTS_ONLY:-test_models} " in *" test_models "*) NEED_TEST_MODELS=1 ;; *) NEED_TEST_MODELS=0 ;; esac
[ -d cache/rand-distilbert ] || [ $NEED_TEST_MODELS = 0 ] || { say "make_model_goldens.py --models-only (test models)";
    mkdir -p /tmp/splade-shared/data && cp -r .gpu/bert-base-uncased /tmp/splade-shared/data/ &&
    SPLADE_SHARED=/tmp/splade-shared python3 tools/make_model_goldens.py --models-only >>"$LOG" 2>&1 ||
    say "  test models FAILED"; }
TESTS=""
for t in tests/test_*.c; do
    n=$(basename "$t" .c)
    case "$n" in *gpu*|*_backends) TESTS="$TESTS $n"; continue ;; esac
    grep -qE 'cuda_runtime|splade_gpu_probe|splade_lmhead_gpu' "$t" && TESTS="$TESTS $n"
done
[ -n "${TESTS_ONLY:-}" ] && TESTS=$TESTS_ONLY
[ $PRE_OK = 1 ] || for n in $TESTS; do mk "$BUILD/tests/$n" >>"$LOG" 2>&1 || say "build of $n FAILED"; done

rc=0
for n in $TESTS; do
    say "test $n"
    timeout 150 "$BUILD/tests/$n" >>"$LOG" 2>&1; trc=$?
    if [ $trc -eq 0 ]; then say "  $n: ok"; else say "  $n: FAILED (rc $trc)"; rc=1; fi
    if [ $trc -eq 124 ] && [ "$n" = test_lmhead_backends ]; then
        say "LM head test timed out (hang?): stopping here"; tail -40 "$LOG"; exit 1
    fi
done
grep -E '^\s+\[lmhead\]|^\[  (PASSED|FAILED|SKIPPED) \]' "$LOG" | tail -60

# The encoder's bf16 cases (random models) once more in other configurations: one setting, then
# test_encoder_backends under it. encoder_variant LABEL TIMEOUT VAR=VALUE
encoder_variant() {
    say "test test_encoder_backends, $3 (random models, gpu-bf16)"
    if env "$3" SPLADE_GPU_TEST_SMALL=1 SPLADE_TEST_FILTER='*/gpu-bf16' timeout "$2" \
        "$BUILD/tests/test_encoder_backends" >>"$LOG" 2>&1; then
        say "  test_encoder_backends ($1): ok"
    else
        say "  test_encoder_backends ($1): FAILED"; rc=1
    fi
}
if echo "$TESTS" | grep -q test_encoder_backends; then
    # the exact erf GELU (the default is the fused tanh epilogue)
    encoder_variant erf 60 SPLADE_GPU_GELU=erf
    # the mma.sync attention (gpu_attention.cu) at every head size: on Hopper the default at head size
    # 64 is the wgmma kernel (gpu_attention_wgmma.cu), so this keeps the other GPUs' path tested
    encoder_variant "mma attention" 60 SPLADE_GPU_ATTN=mma
    # every batch through the encoder's own small-batch GEMMs (gpu_gemm_small.cu), then none (all
    # cuBLASLt): by default only batches of <= 64 tokens and single sequences take them
    for sg in 1000000 0; do
        encoder_variant "small GEMM $sg" 90 SPLADE_GPU_SMALL_GEMM=$sg
    done
fi
grep -E 'rel-L2' "$LOG" | tail -30

# Poisoned runs: every activation buffer (and the naive head's logits) filled with 3.4e38 before
# each forward. initcheck cannot see cuBLAS/cuBLASLt's own stores on this GPU and flags our kernels'
# reads of GEMM outputs; these runs show every element read was written (else results break).
# (The bf16 backend, as before the bf16 and fp32 tests became one file; SPLADE_TEST_FILTER='*/gpu-*'
# would poison the fp32 backend's buffers too.)
for tb in test_lmhead_backends test_encoder_backends; do
    [ -x "$BUILD/tests/$tb" ] || continue
    [ "${SKIP_POISON:-0}" = 1 ] && continue
    say "poisoned buffers: $tb (SPLADE_GPU_POISON=1, gpu-bf16)"
    if SPLADE_GPU_POISON=1 SPLADE_LMHEAD_TEST_SMALL=1 SPLADE_GPU_TEST_SMALL=1 SPLADE_TEST_FILTER='*/gpu-bf16' \
        timeout 120 "$BUILD/tests/$tb" >>"$LOG" 2>&1; then
        say "  $tb poisoned: ok"
    else
        say "  $tb poisoned: FAILED"; rc=1
    fi
done

if [ "${SKIP_SANITIZER:-0}" != 1 ] && command -v compute-sanitizer >/dev/null; then
    # The backend tests at small shapes, GPU backends only (":pattern" = the cmocka names run; a
    # backend test names "<case>/<backend>"): the LM head's bf16 and fp32 heads under memcheck and
    # initcheck, bf16 under racecheck and synccheck; the encoder's random models (~15 s) under
    # memcheck, initcheck and synccheck, racecheck on the bf16 long sequences only (the attention's
    # K/V ring refills; the whole test is > 40 s). test_gpu_sparse: racecheck on the compaction
    # kernels alone (racecheck over the whole encoder forward runs past the limit).
    SAN_SPECS=${SAN_SPECS:-memcheck test_lmhead_backends:*/gpu-* racecheck test_lmhead_backends:*/gpu-bf16 \
initcheck test_lmhead_backends:*/gpu-* synccheck test_lmhead_backends:*/gpu-bf16 \
memcheck test_encoder_backends:*/gpu-* racecheck test_encoder_backends:test_long_sequences/gpu-bf16 \
initcheck test_encoder_backends:*/gpu-* synccheck test_encoder_backends:*/gpu-* \
memcheck test_gpu_sparse racecheck test_gpu_sparse:test_compact_synthetic initcheck test_gpu_sparse \
synccheck test_gpu_sparse memcheck test_gpu_search:test_term_outside_index \
racecheck test_gpu_search:test_term_outside_index memcheck test_gpu_small_gemm racecheck test_gpu_small_gemm \
initcheck test_gpu_small_gemm}
    set -f # the cmocka patterns hold '*': no file-name expansion while the specs are split
    set -- $SAN_SPECS
    while [ $# -ge 2 ]; do
        tool=$1; tb=${2%%:*}; flt=""
        case "$2" in *:*) flt=${2#*:} ;; esac
        shift 2
        [ -x "$BUILD/tests/$tb" ] || continue
        # initcheck: the program marks what cuBLAS wrote through NVTX (src/gpu/init_mark.cu)
        nvtx=""; [ "$tool" = initcheck ] && nvtx="--nvtx yes"
        say "compute-sanitizer --tool $tool $tb (small shapes${flt:+, $flt})"
        if SPLADE_LMHEAD_TEST_SMALL=1 SPLADE_GPU_TEST_SMALL=1 SPLADE_TEST_FILTER="${flt:-*}" \
            SPLADE_GPU_TEST_FILTER="${flt:-*}" timeout 240 \
            compute-sanitizer --tool $tool $nvtx --error-exitcode 3 "$BUILD/tests/$tb" >"$OUT/.san" 2>&1; then
            say "  $tool $tb: clean ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/.san" | tail -1))"
        else
            say "  $tool $tb: FAILED"; rc=1; head -40 "$OUT/.san"
        fi
        cat "$OUT/.san" >>"$LOG"; rm -f "$OUT/.san"
    done
    set +f
fi

say "bench-lmhead ${BENCH_ARGS:-}"
# SM clock, power and temperature every 200 ms while the grid runs, and again during the lab rows: grid
# rows (each after the previous shape's heavy naive/cuBLAS runs) read slower than lab rows (a fresh
# process each), and this says whether the clocks differ
clk_start() { nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader,nounits \
    -lms 200 >"$OUT/$1" 2>/dev/null & SMI=$!; }
clk_stop() {
    kill "$SMI" 2>/dev/null; wait "$SMI" 2>/dev/null
    python3 - "$OUT/$1" "$2" <<'PY' | tee -a "$OUT/bench_lmhead.txt"
import sys
rows = []
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split(",")]
    try:
        rows.append((float(f[1]), float(f[2]), float(f[3])))
    except (IndexError, ValueError):
        pass
if rows:
    c = sorted(r[0] for r in rows)
    print(f"clocks during {sys.argv[2]}: SM MHz min {c[0]:.0f} median {c[len(c) // 2]:.0f} max {c[-1]:.0f}, "
          f"power mean {sum(r[1] for r in rows) / len(rows):.0f} W max {max(r[1] for r in rows):.0f} W, "
          f"temperature max {max(r[2] for r in rows):.0f} C ({len(rows)} samples)")
PY
}
clk_start clocks.csv
# shellcheck disable=SC2086
timeout 150 "$BUILD/splade-index" bench-lmhead ${BENCH_ARGS:-} --json "$OUT/bench_lmhead.json" \
    2>&1 | tee "$OUT/bench_lmhead.txt" || rc=1
clk_stop clocks.csv "the bench-lmhead grid"

if [ "${SKIP_LAB:-0}" != 1 ]; then
    # The kernel lab (tools/kernel_lab/README.md): each program checks every variant against its CPU
    # reference, then times them; the tables go to lab.txt (and the log). A failed check fails the run.
    [ $PRE_OK = 1 ] || mk lab >>"$LOG" 2>&1 || say "  build of the kernel lab (make lab) FAILED"
    : >"$OUT/lab.txt"
    for prog in lmhead_fused attention layer_gemm; do
        if [ ! -x "$BUILD/lab/$prog" ]; then
            # a PREBUILT folder may come without lab/ (short LM-head runs): say so; a build here must have it
            if [ $PRE_OK = 1 ]; then say "lab: no $BUILD/lab/$prog (PREBUILT): skipped"; else say "lab: no $BUILD/lab/$prog"; rc=1; fi
            continue
        fi
        case $prog in
            lmhead_fused) largs=${LAB_LMHEAD_ARGS:-} ;;
            attention) largs=${LAB_ATTN_ARGS:-} ;;
            *) largs=${LAB_GEMM_ARGS:-} ;;
        esac
        say "lab: $prog $largs"
        # shellcheck disable=SC2086
        timeout 150 "$BUILD/lab/$prog" $largs >"$OUT/.lab" 2>&1; lrc=$?
        cat "$OUT/.lab" >>"$OUT/lab.txt"; cat "$OUT/.lab" >>"$LOG"
        grep -E '^\||FAIL|n/a|lab:' "$OUT/.lab"; rm -f "$OUT/.lab"
        [ $lrc -eq 0 ] || { say "  lab $prog FAILED (rc $lrc)"; rc=1; }
    done
    # Tile rows of the library's kernels through bench-lmhead: each wgmma tile forced, and the raster
    # group off (group = B), one shape each. Fields: B S V tile group tma; tile "auto" = the planner's
    # choice, group 0 = the planner's, tma '-' = default; tiles 128x256 / 256x128 run the TMA kernel
    # unless tma=0
    LAB_SPECS=${LAB_SPECS:-32 256 30522 128x256 0 -;32 256 30522 256x128 0 -;32 256 30522 192x256 0 0;\
128 256 30522 auto 0 -;128 256 30522 128x256 128 -;256 128 30522 256x128 0 -;256 128 30522 128x256 0 -;\
256 128 30522 192x256p2 0 0;32 256 30522 128x256 0 -}
    clk_start clocks_lab.csv
    echo "$LAB_SPECS" | tr ';' '\n' | while read -r lb ls lv lt lg lm; do
        [ -n "$lb" ] || continue
        say "lab: B=$lb S=$ls V=$lv tile $lt group $lg tma ${lm:--}"
        if [ "$lg" = 0 ]; then unset SPLADE_LMHEAD_GROUP; else export SPLADE_LMHEAD_GROUP=$lg; fi
        if [ "$lt" = auto ]; then unset SPLADE_LMHEAD_WGMMA_TILE; else export SPLADE_LMHEAD_WGMMA_TILE=$lt; fi
        if [ "${lm:--}" = - ]; then unset SPLADE_LMHEAD_TMA; else export SPLADE_LMHEAD_TMA=$lm; fi
        timeout 60 "$BUILD/splade-index" bench-lmhead --B $lb --S $ls --V $lv \
            2>&1 | grep -E ' fused ' | sed "s/^/lab B=$lb S=$ls tile=$lt group=$lg tma=${lm:--}: /" | tee -a "$OUT/bench_lmhead.txt"
        unset SPLADE_LMHEAD_GROUP SPLADE_LMHEAD_WGMMA_TILE SPLADE_LMHEAD_TMA
    done
    clk_stop clocks_lab.csv "the lab rows"
fi

if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
    # one profiled launch of the fused kernel at B=32 S=256 V=30522: is it the L2 or the tensor pipe?
    say "ncu: fused kernel, B=32 S=256 V=30522"
    timeout 120 ncu --kernel-name regex:lmhead_ --launch-skip 3 --launch-count 1 --section SpeedOfLight \
        --metrics lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,gpu__time_duration.sum \
        "$BUILD/splade-index" bench-lmhead --B 32 --S 256 --V 30522 >"$OUT/.ncu" 2>&1 || say "  ncu failed"
    grep -vE '^(B |32 )' "$OUT/.ncu" | grep -E 'lts__|dram__|sm__|smsp__|gpu__time|Throughput|Duration|==PROF==|Error' \
        | tee -a "$OUT/bench_lmhead.txt"
    rm -f "$OUT/.ncu"
fi

PEER_SCRIPT=${PEER_SCRIPT:-.gpu/torch_splade_peer.py}
if [ "${SKIP_PEER:-0}" != 1 ] && [ -f "$PEER_SCRIPT" ]; then
    say "torch peer $PEER_SCRIPT (timeout ${PEER_TIMEOUT:-240}s)"
    OUT="$OUT" PYTHONUNBUFFERED=1 timeout "${PEER_TIMEOUT:-240}" python3 "$PEER_SCRIPT" \
        >"$OUT/torch_peer.log" 2>&1 || say "  torch peer ended early (rc $?); rows so far kept"
elif [ "${SKIP_PEER:-0}" != 1 ]; then
    say "no .gpu/torch_splade_peer.py (copy it from /work/shared/peer and carry .gpu)"
fi

if [ "${SKIP_ENCODER:-0}" != 1 ] && [ -f bench/gpu_encoder.sh ]; then
    say "bench/gpu_encoder.sh"
    mk "$BUILD/bench/bench_encoder_gpu" >>"$LOG" 2>&1 || say "  build of bench_encoder_gpu FAILED"
    # writes encoder-gpu.txt straight into $OUT (a sub-folder's files would count against the 8)
    OUT="$OUT" BUILD=$BUILD BENCH_BIN="$BUILD/bench/bench_encoder_gpu" timeout 150 sh bench/gpu_encoder.sh \
        >>"$LOG" 2>&1 || say "  gpu_encoder.sh FAILED"
    grep -E '^###|^\| (fixed|docs)' "$OUT/encoder-gpu.txt" 2>/dev/null
fi

if [ "${SKIP_REFERENCE:-0}" != 1 ] && [ -f .gpu/scifact/queries.jsonl ] && [ -d cache/splade-tiny ]; then
    # issue 4's quality reference: transformers vectors of splade-tiny, exact dot products, nDCG@10
    say "reference SciFact pipeline (transformers, splade-tiny)"
    PYTHONUNBUFFERED=1 timeout 120 python3 tools/reference_scifact.py --model cache/splade-tiny \
        --data .gpu/scifact --out "$OUT" >>"$LOG" 2>&1 || say "  reference_scifact.py FAILED"
    [ -f "$OUT/reference.json" ] && python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1])), indent=1)[:1500])" "$OUT/reference.json"
fi

if [ "${SKIP_AGREEMENT:-0}" != 1 ]; then
    # issue 3: splade-tiny vectors on the GPU (bf16 default, fp32 mode) against the CPU's, every
    # SciFact document (.gpu/scifact/corpus.jsonl); the table goes to agreement.txt and the summary
    say "GPU vs CPU vectors, all SciFact documents: bench_gpu_agreement ${AGREEMENT_ARGS:-}"
    [ $PRE_OK = 1 ] || mk "$BUILD/bench/bench_gpu_agreement" >>"$LOG" 2>&1 || say "  build of bench_gpu_agreement FAILED"
    if [ -x "$BUILD/bench/bench_gpu_agreement" ]; then
        # shellcheck disable=SC2086
        timeout 300 "$BUILD/bench/bench_gpu_agreement" ${AGREEMENT_ARGS:-} >"$OUT/agreement.txt" 2>&1; arc=$?
        [ $arc -eq 0 ] || { say "  bench_gpu_agreement FAILED (rc $arc)"; rc=1; }
        cat "$OUT/agreement.txt"
    fi
fi

if [ "${SKIP_CLI:-0}" != 1 ] && [ -f .gpu/scifact/queries.jsonl ] && [ -d cache/splade-tiny ]; then
    # The CLI end to end on the GPU (src/encoder/encoder.c over its CUDA backend): SciFact built with
    # splade-tiny on the GPU in bf16 and fp32 and on the CPU, each queried (queries on the CPU) and
    # scored; then the GPU build again under a batch-token cap that forces the out-of-memory halving.
    # nDCG@10: fp32 on the GPU within 0.0005 of the CPU's, bf16 within 0.002.
    say "CLI on the GPU: SciFact build/query/eval (cli.txt)"
    mk all >>"$LOG" 2>&1 || say "  build of the CLI FAILED"
    Q=.gpu/scifact/queries.jsonl; QR=.gpu/scifact/qrels/test.tsv; CI=/tmp/splade-cli-gpu
    rm -rf $CI && mkdir -p $CI
    { echo "| build | docs/s | ndcg@10 | run identical to CPU |"; echo "|---|---:|---:|---|"; } >"$OUT/cli.txt"
    for spec in "cpu fp32" "cuda bf16" "cuda fp32" "cuda-capped bf16"; do
        set -- $spec; dev=$1; prec=$2; cap=
        [ "$dev" = cuda-capped ] && dev=cuda cap=2000
        ix=$CI/$1-$prec.idx
        t0=$(date +%s.%N)
        SPLADE_MAX_BATCH_TOKENS=$cap SOURCE_DATE_EPOCH=1700000000 timeout 300 "$BUILD/splade-index" build \
            .gpu/scifact/corpus.jsonl -o "$ix" --model cache/splade-tiny --device "$dev" --precision "$prec" \
            >>"$LOG" 2>&1 || { say "  build $spec FAILED"; rc=1; continue; }
        t1=$(date +%s.%N)
        "$BUILD/splade-index" query --queries $Q -i "$ix" -k 100 --output "$ix.trec" >>"$LOG" 2>&1 ||
            { say "  query $spec FAILED"; rc=1; continue; }
        nd=$("$BUILD/splade-index" eval --run "$ix.trec" --qrels $QR --metrics ndcg@10 2>>"$LOG" | awk '/^ndcg@10/ {print $3}')
        same=-; [ -f $CI/cpu-fp32.idx.trec ] && [ "$spec" != "cpu fp32" ] &&
            { cmp -s $CI/cpu-fp32.idx.trec "$ix.trec" && same=yes || same=no; }
        printf '| %s | %s | %s | %s |\n' "$spec" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", 5183 / (b - a) }')" \
            "$nd" "$same" >>"$OUT/cli.txt"
    done
    # fp32 vectors are within ~1e-6 of the CPU's, yet a weight on an 8-bit quantization boundary can
    # move one impact unit, so the runs may differ in a few scores: the check is on nDCG@10
    awk -F'|' '$2 ~ /cpu fp32/ {c = $4} $2 ~ /cuda fp32/ {f = $4} $2 ~ /cuda bf16/ {b = $4}
        END { d32 = f - c; d16 = b - c; if (d32 < 0) d32 = -d32; if (d16 < 0) d16 = -d16;
              exit !(c > 0 && d32 <= 0.0005 && d16 <= 0.002) }' "$OUT/cli.txt" ||
        { say "  nDCG@10 on the GPU strays from the CPU's (fp32 > 0.0005 or bf16 > 0.002)"; rc=1; }
    cat "$OUT/cli.txt"
fi

if [ "${SKIP_GPU_SEARCH:-0}" != 1 ] && [ -f bench/gpu_search.sh ]; then
    # Issue #14 item 4: GPU batch search against the CPU's batch search (gpu-search.txt)
    say "GPU batch search: bench/gpu_search.sh (gpu-search.txt)"
    mk all "$BUILD/bench/bench_gpu_search" "$BUILD/bench/bench_index" >>"$LOG" 2>&1 || say "  build for gpu_search.sh FAILED"
    BUILD=$BUILD OUT=$OUT GIT_COMMIT=$COMMIT sh bench/gpu_search.sh >>"$LOG" 2>&1 || { say "  gpu_search.sh FAILED"; rc=1; }
    grep -E '^\| GPU|^\| CPU|identical|^GPU:' "$OUT/gpu-search.txt"
fi

if [ "${SEG_BMP:-0}" = 1 ]; then
    # Issue #12: BMP over 10 unmerged segments vs one file on this quiet host (bench/segments_bmp.sh)
    say "segments: BMP over 10 segments vs one file (segments_bmp.txt)"
    mk "$BUILD/bench/bench_index" >>"$LOG" 2>&1 && BUILD=$BUILD OUT=$OUT sh bench/segments_bmp.sh >>"$LOG" 2>&1 ||
        { say "  segments_bmp FAILED"; rc=1; }
fi

if [ "${SKIP_MGPU:-0}" != 1 ] && [ -f .gpu/scifact/corpus.jsonl ] && [ -d cache/splade-tiny ]; then
    # Several GPUs (issue #17): SciFact built with splade-tiny on cuda:0 and on the GPU lists; the index
    # bytes must be cuda:0's (SOURCE_DATE_EPOCH fixed; SPLADE_GPU_GEMM_TUNE=0 on the one-GPU reference,
    # as the lists run: docs/GPU_ENCODER.md "Several GPUs"). cuda:0,0 = two encoders on GPU 0, so one
    # GPU checks the threads and the queue. Then bench_multi_gpu: docs/s of a bert-base-shaped random
    # model per --device spec (MGPU_R copies of SciFact, default 4), vectors compared by hash.
    say "several GPUs: index bytes and scaling (mgpu.txt)"
    mk all "$BUILD/bench/bench_multi_gpu" "$BUILD/bench/bench_corpus_read" >>"$LOG" 2>&1 ||
        say "  build for the multi-GPU check FAILED"
    MI=/tmp/splade-mgpu; rm -rf $MI && mkdir -p $MI
    MSPECS=${MGPU_SPECS:-cuda:0 cuda:0,0 cuda:all}
    { echo "| build --device | s | index identical to cuda:0 (tune off) |"; echo "|---|---:|---|"; } >"$OUT/mgpu.txt"
    for spec in $MSPECS tune:cuda:0; do
        dev=${spec#tune:}; tune=0; [ "$spec" != "$dev" ] && tune=1
        ix=$MI/$(echo "$spec" | tr ':,' '__').idx
        t0=$(date +%s.%N)
        SPLADE_GPU_GEMM_TUNE=$tune SOURCE_DATE_EPOCH=1700000000 timeout 200 "$BUILD/splade-index" build \
            .gpu/scifact/corpus.jsonl -o "$ix" --model cache/splade-tiny --device "$dev" >>"$LOG" 2>&1 ||
            { say "  build --device $spec FAILED"; rc=1; continue; }
        t1=$(date +%s.%N)
        same=-; ref=$MI/cuda_0.idx
        if [ "$ix" != "$ref" ] && [ -d "$ref" ]; then
            same=yes; for f in "$ref"/*; do cmp -s "$f" "$ix/$(basename "$f")" || same=no; done
            [ "$(ls "$ref" | wc -l)" = "$(ls "$ix" | wc -l)" ] || same=no
            [ "$same" = yes ] || { [ $tune = 1 ] || rc=1; }
        fi
        printf '| %s%s | %.2f | %s |\n' "$dev" "$([ $tune = 1 ] && echo ' (tuned)')" \
            "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$same" >>"$OUT/mgpu.txt"
    done
    # add: the second half of SciFact appended to an index of the first half, per GPU list; the
    # index bytes after the add must be cuda:0's (tuning off), as for build
    head -n 2592 .gpu/scifact/corpus.jsonl >$MI/half1.jsonl; tail -n +2593 .gpu/scifact/corpus.jsonl >$MI/half2.jsonl
    for dev in $MSPECS; do
        ax=$MI/add-$(echo "$dev" | tr ':,' '__').idx
        SPLADE_GPU_GEMM_TUNE=0 SOURCE_DATE_EPOCH=1700000000 timeout 200 "$BUILD/splade-index" build $MI/half1.jsonl \
            -o "$ax" --model cache/splade-tiny --device cuda:0 >>"$LOG" 2>&1 &&
        SPLADE_GPU_GEMM_TUNE=0 SOURCE_DATE_EPOCH=1700000000 timeout 200 "$BUILD/splade-index" add $MI/half2.jsonl \
            -i "$ax" --model cache/splade-tiny --device "$dev" >>"$LOG" 2>&1 ||
            { say "  add --device $dev FAILED"; rc=1; continue; }
        ref=$MI/add-cuda_0.idx; [ "$ax" = "$ref" ] && continue
        same=yes; (cd "$ref" && find . -type f | sort) >$MI/l1; (cd "$ax" && find . -type f | sort) >$MI/l2
        cmp -s $MI/l1 $MI/l2 || same=no
        while read -r f; do cmp -s "$ref/$f" "$ax/$f" || same=no; done <$MI/l1
        echo "| add --device $dev | - | $same |" >>"$OUT/mgpu.txt"; [ $same = yes ] || rc=1
    done
    echo >>"$OUT/mgpu.txt"
    for tune in 0 1; do
        SPLADE_GPU_GEMM_TUNE=$tune timeout 200 "$BUILD/bench/bench_multi_gpu" .gpu/scifact/corpus.jsonl \
            "${MGPU_R:-4}" 2048 cuda:0 $([ $tune = 0 ] && echo "$MSPECS" | sed 's/cuda:0 //') \
            >>"$OUT/mgpu.txt" 2>&1 || { say "  bench_multi_gpu FAILED"; rc=1; }
        echo >>"$OUT/mgpu.txt"
    done
    # the whole `build` of SciFact xMGPU_BUILD_R (default 20) with a bert-base-shaped model, cuda:0 against
    # each list, A B A B (bench/gpu_pipeline.sh; the peers are not run here; encode identity on x4)
    if [ "${MGPU_BUILD_R:-20}" != 0 ] && [ -f .gpu/encode_peers.py ]; then
        bins=""; for dev in $MSPECS; do bins="$bins $(echo "$dev" | tr ':,' '__')=$BUILD@$dev"; done
        # MGPU_BASE_BIN=DIR (a build of an earlier commit): its rows beside ours, named base_*, same run
        [ -n "${MGPU_BASE_BIN:-}" ] && for dev in $MSPECS; do bins="$bins base_$(echo "$dev" | tr ':,' '__')=$MGPU_BASE_BIN@$dev"; done
        say "  build of SciFact x${MGPU_BUILD_R:-20} (bert-base shape) per GPU list:$bins"
        BINS="$bins" R=${MGPU_BUILD_R:-20} R_SMALL=4 ROUNDS=${MGPU_ROUNDS:-2} ENCODE_ROUNDS=1 SKIP_PEER=1 \
            PEER=.gpu/encode_peers.py TOK=.gpu/bert-base-uncased CORPUS=.gpu/scifact/corpus.jsonl \
            SPLADE_LD="${LD_LIBRARY_PATH:-}" OUT=$OUT/mgpu-build WORK=/tmp/splade-mgpu-build \
            sh bench/gpu_pipeline.sh >>"$LOG" 2>&1 || { say "  gpu_pipeline FAILED"; rc=1; }
        { echo; grep -E '^\| |identical' "$OUT/mgpu-build/pipeline.txt"; } >>"$OUT/mgpu.txt"
        grep 'identical to' "$OUT/mgpu-build/pipeline.txt" | grep -v 'base_' | grep -q 'index no' && rc=1
        # what the reading thread can feed the GPUs: the corpus parsed on 1..8 threads (corpus_batch.h)
        C=/tmp/splade-mgpu-build/corpus_x${MGPU_BUILD_R:-20}.jsonl
        [ -f "$C" ] && { echo; echo "corpus reading, $C:"; "$BUILD/bench/bench_corpus_read" "$C" 512 2; } >>"$OUT/mgpu.txt"
    fi
    grep -q '| NO |' "$OUT/mgpu.txt" && { say "  vectors differ between GPU lists"; rc=1; }
    cat "$OUT/mgpu.txt"
fi

say "summary"
python3 - "$OUT" "$COMMIT" <<'PY' | tee "$OUT/summary.md"
import json, os, sys
out, commit = sys.argv[1], sys.argv[2]
try:
    b = json.load(open(os.path.join(out, "bench_lmhead.json")))
except Exception as e:
    print("no bench_lmhead.json:", e); sys.exit(0)
peer = {}
p = os.path.join(out, "torch_peer.log")
if os.path.exists(p):
    for line in open(p):
        line = line.strip()
        if line.startswith("{"):
            try:
                r = json.loads(line)
            except Exception:
                continue
            if r.get("part") == "lmhead":
                peer[(r["B"], r["S"], r["V"], r["impl"])] = r
ours = {}
for r in b["rows"]:
    ours[(r["B"], r["S"], r["V"], r["impl"])] = r
shapes = sorted({(r["B"], r["S"], r["V"]) for r in b["rows"]}, key=lambda s: (s[2], s[0] * s[1], s[0]))
def ms(d, k):
    r = d.get(k)
    return r.get("ms") if r and r.get("ms") is not None and r.get("ok", True) else None
def f(x, p=3):
    return "-" if x is None else f"{x:.{p}f}"
def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}x"
print(f"LM head, {b['device']}, commit {commit}, median ms (same run); ratios = other / fused")
print()
print("| B | S | V | fused | fused v5 (cp.async) | fused mma.sync | naive (ours) | cuBLAS GEMM | cuBLAS GEMM V pad128 | torch eager | torch.compile | fused TFLOP/s | naive/fused | eager/fused | compile/fused | cuBLAS/fused | fused peak MiB | eager peak MiB |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (B, S, V) in shapes:
    fu = ms(ours, (B, S, V, "fused")); mm = ms(ours, (B, S, V, "fused_mma_sync")); v5 = ms(ours, (B, S, V, "fused_v5"))
    nv = ms(ours, (B, S, V, "naive")); g = ms(ours, (B, S, V, "cublas_gemm"))
    gp = ms(ours, (B, S, V, "cublas_gemm_vpad128"))
    te = ms(peer, (B, S, V, "naive_eager")); tc = ms(peer, (B, S, V, "torch_compile"))
    tf = ours.get((B, S, V, "fused"), {}).get("tflops")
    fpk = ours.get((B, S, V, "fused"), {}).get("peak_mib")
    epk = peer.get((B, S, V, "naive_eager"), {}).get("peak_mib")
    print(f"| {B} | {S} | {V} | {f(fu)} | {f(v5)} | {f(mm)} | {f(nv)} | {f(g)} | {f(gp)} | {f(te)} | {f(tc)} | {f(tf, 0)} | "
          f"{ratio(nv, fu)} | {ratio(te, fu)} | {ratio(tc, fu)} | {ratio(g, fu)} | {f(fpk, 1)} | {epk if epk is not None else '-'} |")
PY
grep '^clocks during' "$OUT/bench_lmhead.txt" | tee -a "$OUT/summary.md"
python3 - "$OUT" "$COMMIT" <<'PY' | tee -a "$OUT/summary.md"
# End-to-end encoder, last: ours (bench_encoder_gpu's first, default variant) vs the transformers peer.
import json, os, re, sys
out, commit = sys.argv[1], sys.argv[2]
peer = {}
p = os.path.join(out, "torch_peer.log")
if os.path.exists(p):
    for line in open(p):
        if line.startswith("{"):
            try:
                r = json.loads(line)
            except Exception:
                continue
            if r.get("part") == "encoder":
                peer[(r["B"], r["S"])] = r
ours, docs, mem, block = {}, [], "", 0
p = os.path.join(out, "encoder-gpu.txt")
if os.path.exists(p):
    for line in open(p):
        if line.startswith("###"):
            block += 1
        if block != 1:
            continue
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if c[0] == "fixed":
            ours[(int(c[1]), int(c[2]))] = (float(c[3]), float(c[4]))
        elif c[0].startswith("docs"):
            docs.append(line.strip())
        elif line.startswith("device memory after the fixed"):
            mem = line.strip()
print()
print(f"End-to-end SPLADE encoder (bert-base, L=12, fused head, default configuration), commit {commit}; "
      "peer = transformers BertForMaskedLM eager bf16 + SDPA + SPLADE max (same run)")
print()
print("| B | S | ours ms | ours docs/s | peer ms | peer docs/s | speed-up (docs/s) | peer peak MiB |")
print("|---|---|---|---|---|---|---|---|")
for k in sorted(set(ours) | set(peer)):
    o, r = ours.get(k), peer.get(k, {})
    pm = r.get("ms")
    sp = f"{(o[1] / r['docs_per_s']):.2f}x" if o and r.get("docs_per_s") else "-"
    print(f"| {k[0]} | {k[1]} | {o[0] if o else '-'} | {o[1] if o else '-'} | {pm if pm is not None else '-'} | "
          f"{r.get('docs_per_s', '-')} | {sp} | {r.get('peak_mib', '-')} |")
if docs:
    print("\nSciFact (5,183 docs, packed, ours):")
    for d in docs:
        print(d)
if mem:
    print("\n" + mem)
PY
if [ -s "$OUT/cli.txt" ]; then
    { echo; echo "CLI on the GPU (SciFact, splade-tiny, build + query + eval), commit $COMMIT"; echo;
      cat "$OUT/cli.txt"; } | tee -a "$OUT/summary.md"
fi
if [ -s "$OUT/mgpu.txt" ]; then
    { echo; echo "Several GPUs (issue #17), commit $COMMIT"; echo; cat "$OUT/mgpu.txt"; } | tee -a "$OUT/summary.md"
fi
if [ -s "$OUT/agreement.txt" ]; then  # bench_gpu_agreement's table, last
    { echo; echo "GPU vs CPU vectors (splade-tiny, bench_gpu_agreement), commit $COMMIT"; echo;
      grep -E '^\||^CPU:' "$OUT/agreement.txt"; } | tee -a "$OUT/summary.md"
fi
# At most 8 files come back from $OUT: everything goes into one archive, and the few files that
# bench/results/ quotes stay beside it.
( cd "$OUT" && tar czf /tmp/gpu-results.tar.gz --exclude=gpu_sh.log . ; mv /tmp/gpu-results.tar.gz . ;
  ls | grep -vxE 'gpu-results.tar.gz|summary.md|gpu_sh.log|bench_lmhead.json|reference.json|encoder-gpu.txt|lab.txt|gpu-search.txt' | xargs -r rm -f )
say "done (rc $rc)"
exit $rc
