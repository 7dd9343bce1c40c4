#!/bin/sh
# The CUDA libraries are loaded only when a GPU path runs (src/gpu/cuda_loader.c): `--help`,
# `tokenize` and a `--device cpu` build map no cuBLAS/cuBLASLt/CUDA runtime (the dynamic loader's
# LD_DEBUG=files trace lists every object it opens); without a usable GPU `--device auto` still
# says in one line that it encodes on the CPU and succeeds, and `--device cuda` fails naming the
# flag and the reason. In a CUDA build, a stand-in libcuda.so.1 (an empty object) gets past the
# driver check: then libsplade-cuda.so is loaded on demand (cuBLAS not: it waits for a GEMM), the
# CUDA runtime refuses the fake driver, and the same fallback and error follow; a libsplade.so.0 with no
# libsplade-cuda.so beside it falls back naming the missing object. Uses cache/splade-tiny (`make models`).
set -u
ROOT=$(pwd)
BIN=${BUILD:-build}/splade-index
[ -x "$BIN" ] || { echo "missing $BIN"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
MODEL=$ROOT/cache/splade-tiny
CORPUS=$ROOT/data/example/corpus.jsonl
T=$(mktemp -d /tmp/splade_cli_lazycudaXXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
export SOURCE_DATE_EPOCH=1700000000   # byte-identical indexes of the same build
CUDA_LIBS='libcublas|libcublasLt|libcudart|libsplade-cuda'

# runs "$@" with the loader's trace in $T/trace (the command's stderr in $T/err, stdout in $T/out)
traced() {
    LD_DEBUG=files LD_DEBUG_OUTPUT="$T/trace" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    cat "$T"/trace.* >"$T/trace" 2>/dev/null; rm -f "$T"/trace.*
    return $rc
}
loaded_cuda() { grep -E "file=[^ ]*($CUDA_LIBS)" "$T/trace" | head -3; }

# 1. commands that need no GPU load no CUDA library
traced "$BIN" --help || fail "--help"
[ -s "$T/trace" ] || fail "LD_DEBUG gave no trace (not glibc?)"
l=$(loaded_cuda); [ -z "$l" ] || fail "--help loads CUDA libraries: $l"
if [ -d "$MODEL" ]; then
    traced "$BIN" tokenize --model "$MODEL" "Hello, world!" || fail "tokenize: $(cat "$T/err")"
    [ "$(cat "$T/out")" = "[101, 7592, 1010, 2088, 999, 102]" ] || fail "tokenize output: $(cat "$T/out")"
    l=$(loaded_cuda); [ -z "$l" ] || fail "tokenize loads CUDA libraries: $l"
    traced "$BIN" build "$CORPUS" -o cpu.idx --model "$MODEL" --device cpu --quiet || fail "build --device cpu: $(cat "$T/err")"
    l=$(loaded_cuda); [ -z "$l" ] || fail "build --device cpu loads CUDA libraries: $l"
else
    echo "note: $MODEL missing: tokenize and the builds not checked (make models)"
    exit 0
fi

# 2. --device auto / cuda without a usable GPU: one-line CPU notice, or a clear error
check_no_gpu() { # label; the reason expected in the notice (ERE), env prefix...
    label=$1; why=$2; shift 2
    traced env "$@" "$BIN" build "$CORPUS" -o auto.idx --model "$MODEL" --device auto ||
        fail "$label: build --device auto failed: $(cat "$T/err")"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$label: --device auto printed more than one line: $(cat "$T/err")"
    grep -qE "^splade-index: encoding on the CPU \(no GPU: .*($why)" "$T/err" ||
        fail "$label: --device auto notice: $(cat "$T/err")"
    cmp -s auto.idx/index.spx cpu.idx/index.spx || fail "$label: the auto build's index differs from the CPU's"
    env "$@" "$BIN" build "$CORPUS" -o cuda.idx --model "$MODEL" --device cuda --quiet >/dev/null 2>"$T/err" &&
        fail "$label: build --device cuda succeeded without a GPU"
    grep -qE "^splade-index build: .*--device cuda: no usable GPU \(.*($why)" "$T/err" ||
        fail "$label: --device cuda error: $(cat "$T/err")"
    [ ! -e cuda.idx/index.spx ] || fail "$label: --device cuda wrote an index"
    rm -rf auto.idx
}

"$BIN" build "$CORPUS" -o probe.idx --model "$MODEL" >/dev/null 2>"$T/err" || fail "build: $(cat "$T/err")"
grep -q "encoding on the CPU" "$T/err" || { echo "ok (a usable GPU here: the no-GPU fallback not checked)"; exit 0; }
check_no_gpu "no GPU" "."
if grep -q "no CUDA driver" "$T/err"; then
    # no driver: the fallback is decided before anything big is loaded ($T/trace: the auto build's)
    l=$(loaded_cuda); [ -z "$l" ] || fail "--device auto without a CUDA driver loads CUDA libraries: $l"
fi

# 3. CUDA build: the GPU code past the driver check (a stand-in libcuda.so.1 the runtime rejects)
[ -f "$(dirname "$BIN")/libsplade-cuda.so" ] || { echo "ok: CPU-only build, CUDA loaded by nothing"; exit 0; }
command -v cc >/dev/null || { echo "ok (no cc here: the stand-in driver part not run)"; exit 0; }
mkdir fakedrv && echo 'int splade_stand_in_driver;' | cc -shared -fPIC -x c - -o fakedrv/libcuda.so.1 ||
    fail "cannot build the stand-in libcuda.so.1"
check_no_gpu "stand-in driver" "CUDA driver|driver version|no CUDA-capable" LD_LIBRARY_PATH="$T/fakedrv"
traced env LD_LIBRARY_PATH="$T/fakedrv" "$BIN" build "$CORPUS" -o auto.idx --model "$MODEL" --device auto --quiet
grep -qE "file=[^ ]*libsplade-cuda.so .*dynamically loaded" "$T/trace" || fail "libsplade-cuda.so was not loaded on demand"
# cuBLAS/cuBLASLt are not libsplade-cuda.so's dependencies: loaded by their first call (src/gpu/cublas_lazy.c),
# which a driver the runtime refuses never reaches
grep -qE "file=[^ ]*libcublas" "$T/trace" && fail "cuBLAS loaded with libsplade-cuda.so, before any GEMM"
rm -rf auto.idx
LD_LIBRARY_PATH="$T/fakedrv" "$BIN" bench-lmhead >/dev/null 2>"$T/err" && fail "bench-lmhead succeeded without a GPU"
grep -q "bench-lmhead: no usable GPU (.*driver" "$T/err" || fail "bench-lmhead error: $(cat "$T/err")"

# a libsplade.so.0 without libsplade-cuda.so beside it (or above, or on the library path) names
# what is missing (the loader is in the library; the CLI finds it in ../lib, as installed)
mkdir -p lone/bin lone/lib && cp "$BIN" lone/bin/ && cp -L "$(dirname "$BIN")/libsplade.so.0" lone/lib/
BIN=$T/lone/bin/splade-index
check_no_gpu "no libsplade-cuda.so" "cannot load the GPU code \(libsplade-cuda.so" \
    LD_LIBRARY_PATH="$T/fakedrv"
echo "ok: no CUDA library loaded by --help, tokenize or a CPU build; no-GPU fallback and --device cuda error"
