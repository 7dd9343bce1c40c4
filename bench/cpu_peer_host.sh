#!/bin/sh
# bench/cpu_peer.py on the GPU machine's processor (issue #13: "on the development machine and on
# the GPU host's CPU"), from a copy of /work/main's tree with these carried (tmp/ is git-ignored):
#   tmp/cpu.tar         git archive of the branch (git -C WORKTREE archive -o /work/main/tmp/cpu.tar HEAD)
#   tmp/cpu_dnnl.tgz    usr/include/oneapi + usr/lib/x86_64-linux-gnu/{libdnnl,libgomp,libOpenCL}.so*
#                       (Debian 12's; the image has no libdnnl)
#   tmp/cpu_whl/        wheels of onnx, ml_dtypes, protobuf (the image has onnxruntime, not onnx)
#   tmp/cpu_shared/     data/bert-base-uncased/{vocab.txt,tokenizer_config.json}, data/scifact/{corpus,queries}.jsonl
#   .gpu/lm-sysroot.tar.gz   the -dev packages the image lacks (bench/gpu.sh)
# run(timeout_s=300, command="sh -c 'mkdir -p /tmp/w && tar xf tmp/cpu.tar -C /tmp/w && sh /tmp/w/bench/cpu_peer_host.sh'")
# Writes $OUT/cpu_peer_host.txt. Knobs: PEER_ARGS (default: bert-base shape, 1 and 2 threads), SKIP_X9,
# LAB_ARGS (run bench_gemm_query with these on core LAB_CORE, default 8), SKIP_PEER, BASE_TAR.
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LOG=$OUT/cpu_peer_host.txt
cd /tmp/w || exit 1
say() { echo "[+$(( $(date +%s) - T0 ))s] $*" | tee -a "$LOG"; }
T0=$(date +%s)
: >"$LOG"
say "host: $(grep -m1 'model name' /proc/cpuinfo); $(nproc) cores; flags: $(grep -m1 flags /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512f|avx512_bf16|avx512_vnni|amx_bf16|amx_int8)$' | tr '\n' ' ')"
SR=/opt/lm-sysroot; mkdir -p $SR && tar xzf "$SRC/.gpu/lm-sysroot.tar.gz" -C $SR
# oneDNN (and the libgomp / libOpenCL it links) into the sysroot; its headers where the Makefile
# looks for them (its test for oneDNN), the system's own libraries left alone
tar xzf "$SRC/tmp/cpu_dnnl.tgz" -C $SR && mkdir -p /usr/include && cp -a $SR/usr/include/oneapi /usr/include/
L=$SR/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH="$L:$L/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p build-nc && touch build-nc/.deps-ok
mk() { make NO_CUDA=1 BUILD=build-nc CC="gcc -isystem $SR/usr/include -isystem $SR/usr/include/x86_64-linux-gnu/openblas-pthread" \
    LDFLAGS="-pthread -L$L -L$L/openblas-pthread -Wl,-rpath,$L:$L/openblas-pthread" "$@"; }
mk -j16 all build-nc/bench/bench_encode_ids build-nc/bench/bench_cpu_peak build-nc/bench/bench_gemm_bf16x9 build-nc/bench/bench_gemm_query >"$OUT/build.log" 2>&1 || { say "BUILD FAILED"; tail -20 "$OUT/build.log" | tee -a "$LOG"; exit 1; }
say "built"
# does emulating fp32 GEMMs with bf16 products on AMX pay on this processor? (bench_gemm_bf16x9.c;
# SKIP_X9=1 leaves it out)
[ "${SKIP_X9:-0}" = 1 ] || for t in 1 2; do taskset -c 0-$((t - 1)) build-nc/bench/bench_gemm_bf16x9 --threads $t >>"$LOG" 2>&1; done
# the fp32 small-row GEMM lab (bench_gemm_query.c), one pinned core: LAB_ARGS="--reps 5" runs it
if [ -n "${LAB_ARGS:-}" ]; then
    taskset -c ${LAB_CORE:-8} build-nc/bench/bench_cpu_peak >>"$LOG" 2>&1
    # shellcheck disable=SC2086
    taskset -c ${LAB_CORE:-8} build-nc/bench/bench_gemm_query $LAB_ARGS >>"$LOG" 2>&1
    say "lab done"
fi
[ "${SKIP_PEER:-0}" = 1 ] && exit 0
python3 -c "import onnx" 2>/dev/null || pip install --no-index --no-deps "$SRC"/tmp/cpu_whl/*.whl >>"$LOG" 2>&1
python3 -c "import onnx, onnxruntime, safetensors; print('onnx', onnx.__version__, 'ort', onnxruntime.__version__)" >>"$LOG" 2>&1
python3 tools/make_random_model.py --out cache/rand-bert-base --layers 12 --hidden 768 --heads 12 --intermediate 3072 \
    --numpy --vocab-bias=-2.85 --shared "$SRC/tmp/cpu_shared" --quiet || { say "model FAILED"; exit 1; }
sync; sleep 3 # the model's 440 MB of dirty pages written back before anything is timed
say "model written"
# BASE_TAR (a git archive of another commit, carried): its bench_encode_ids timed in the same
# rotation (cpu_peer.py --baseline), for before/after ratios on the same host
BASELINE=""
if [ -n "${BASE_TAR:-}" ]; then
    mkdir -p /tmp/wb && tar xf "$SRC/$BASE_TAR" -C /tmp/wb && mkdir -p /tmp/wb/build-nc && touch /tmp/wb/build-nc/.deps-ok
    (cd /tmp/wb && mk -j16 build-nc/bench/bench_encode_ids build-nc/bench/bench_cpu_peak >"$OUT/build-base.log" 2>&1) || { say "BASE BUILD FAILED"; exit 1; }
    BASELINE="--baseline /tmp/wb/build-nc/bench"
    say "base built"
fi
# shellcheck disable=SC2086
python3 bench/cpu_peer.py --shared "$SRC/tmp/cpu_shared" --models cache/rand-bert-base $BASELINE ${PEER_ARGS:---reps 1 --queries 20 --docs 4 --precision fp32 bf16 int8} >>"$LOG" 2>&1
say "done (rc $?)"
