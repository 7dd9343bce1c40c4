#!/bin/sh
# Issue #14's realistic collection at 1 M documents, on the GPU machine (device `run`): SciFact's
# sentences recombined into N documents (tools/make_realistic_collection.py), encoded on the GPU by
# splade-tiny (bf16; the development VM needs ~2 hours of CPU for the same), then ours and the peers
# (Seismic, BMP, PISA, wheels carried in .whl) built on the same vectors and queried one thread
# each on the host's idle cores (taskset), recall@10 against brute force (peers_query.py exact).
# Builds run side by side (16 cores; peer builds multi-threaded through bench/query/peers_mt.py);
# query passes run one after another, each pinned to its own core.
#
# Phases, so that one device call stays under 10 minutes (the machine keeps tmp/ while warm):
#   PHASE=prep  generate, encode, build everything (background builds, waited for up to PREP_WAIT s)
#   PHASE=query wait for the builds, time the queries, evaluate; tables to $OUT/real1m.txt
#   PHASE=all   both
# One-time set-up here (see bench/gpu.sh's header for .gpu/):
#   mkdir -p .gpu/peer_query && cp ../shared/peer/query/peers_query.py .gpu/peer_query/
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl pyseismic-lsr bmp orjson
# Run: run(command="PHASE=all sh bench/realistic_1m.sh", carry=[".gpu/lm-sysroot.tar.gz", ".gpu/scifact",
#      ".gpu/peer_query", ".whl", "cache/splade-tiny"])
# Two calls: phase prep carrying the model, SciFact and .whl (~45 MiB), then at once phase query
# carrying .whl-pisa (python-terrier and its pure-Python needs, pandas; ~22 MiB; the image has numpy
# and scipy): PISA is built while ours and Seismic are timed on another core.
# To outlive a call's end (the machine stays warm 30 s), start prep in its own session and poll:
#   (PHASE=prep setsid sh bench/realistic_1m.sh >/tmp/prep.out 2>&1 &); for i in $(seq 108); do
#     [ -f tmp/r1m/prep.finished ] && break; sleep 5; done; cat /tmp/real1m-out/real1m.log
# Knobs: N (documents, 1000000), MODEL (the encoder, cache/splade-tiny; e.g. a bert-base-shaped one
# made by ../shared/peer/encode_peers.py make), R1M_DIR (tmp/r1m), METHODS / ROUNDS (ours' methods timed, rounds),, SLOW_Q (queries for the slow exact peers, 100), GPU_SEARCH=0 (skip
# the GPU batch search), PEERS=0 (ours only: no brute force, no peer builds), PREP_WAIT (s), SKIP_PISA=1 (pyterrier is not carried by default),
# SKIP_SEISMIC=1 / SKIP_BMP=1 (their 1 M builds took ~10 / > 12 minutes here, sharing cores; Seismic alone
# on 14 threads takes ~3 minutes: bench/query/seismic_1m.sh builds it with larger n_postings).
set -u
OUT=${OUT:-/tmp/real1m-out}
mkdir -p "$OUT"
BUILD=${BUILD:-build-gpu}
W=${R1M_DIR:-tmp/r1m}
N=${N:-1000000}
LOG="$OUT/real1m.log"
T0=$(date +%s)
say() { echo "[real1m +$(( $(date +%s) - T0 ))s] $*" | tee -a "$LOG"; }
PHASE=${PHASE:-all}
mkdir -p "$W/idx" "$W/runs"
R=$W/results.jsonl
export RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
for wd in .whl .whl-pisa; do # peers' wheels (no network there); PISA's (pyterrier, ~22 MB) carried apart
    [ -d $wd ] && [ ! -f /tmp/site/.$wd ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target /tmp/site $wd/*.whl >>"$LOG" 2>&1 && touch /tmp/site/.$wd
done
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
# pip --target drops a wheel's data files: tbb's libtbb.so.2 (PISA's) is one
for f in .whl-pisa/tbb-*.whl; do [ -f "$f" ] && mkdir -p /tmp/site/lib && python3 -c "
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if '/lib/' in n and not n.endswith('/'):
        open(os.path.join('/tmp/site/lib', os.path.basename(n)), 'wb').write(z.read(n))" "$f"; done  # the image has no unzip
export LD_LIBRARY_PATH=/tmp/site/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
NCPU=$(getconf _NPROCESSORS_ONLN)
QCORE=$((NCPU - 1))          # query passes run alone on the last core
BCORES=0-$((NCPU > 4 ? NCPU - 5 : 0))  # builds keep off the last four
export PEERS_QUERY=${PEERS_QUERY:-.gpu/peer_query/peers_query.py} BUILD_THREADS=${BUILD_THREADS:-12}
H="python3 bench/query/peers_mt.py"
SQ=$BUILD/bench/sq_latency
TIMEV=""; [ -x /usr/bin/time ] && TIMEV="/usr/bin/time -v"
BUILDS="ours exact"; [ -n "${SKIP_SEISMIC:-}" ] || BUILDS="$BUILDS seismic"; [ -n "${SKIP_BMP:-}" ] || BUILDS="$BUILDS bmp"
[ "${PEERS:-1}" = 0 ] && BUILDS=ours
has_pisa() { [ -z "${SKIP_PISA:-}" ] && python3 -c "import pyterrier_pisa" >/dev/null 2>&1; }

. bench/device_build.sh
build_sq() { # bench/query/sq_latency: our methods timed in process, one thread
    [ -x "$SQ" ] && return 0
    mkdir -p "$(dirname "$SQ")"
    # shellcheck disable=SC2086
    ${MK_CC:-cc} -O2 -Iinclude bench/query/sq_latency.c "$BUILD/libsplade.a" -lutf8proc -ljansson -lopenblas \
        -lcurl -lstreamvbyte -lz -lm -ldl ${MK_LD:--pthread} -o "$SQ" >>"$LOG" 2>&1 || say "sq_latency build FAILED"
}
prep() {
    say "commit ${GIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}, $(getconf _NPROCESSORS_ONLN) cores, N=$N"
    mk -j16 all >>"$LOG" 2>&1 || { say "BUILD FAILED"; tail -20 "$LOG"; return 1; }
    [ "${GPU_SEARCH:-1}" = 1 ] && { mk "$BUILD/bench/bench_gpu_search" >>"$LOG" 2>&1 || say "bench_gpu_search build FAILED"; }
    build_sq
    [ -f "$W/corpus.jsonl" ] || { say "generate $N documents";
        python3 tools/make_realistic_collection.py "$N" "$W" --scifact .gpu/scifact >>"$LOG" 2>&1; }
    if [ ! -s "$W/docs.vec.jsonl" ]; then
        if [ "${PEERS:-1}" = 0 ]; then # ours alone: build straight from the texts (no 3.8 GB JSONL to parse)
            say "build from the texts on the GPU (${MODEL:-cache/splade-tiny}, bf16)"
            t0=$(date +%s.%N)
            $TIMEV "$BUILD/splade-index" build "$W/corpus.jsonl" -o "$W/idx/ours" --model "${MODEL:-cache/splade-tiny}" \
                --device "${ENC_DEVICE:-cuda}" --quiet >"$W/ours.build.txt" 2>&1 || { say "build FAILED"; tail -5 "$W/ours.build.txt"; return 1; }
            say "  built in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
            echo done >"$W/ours.done"
            "$BUILD/splade-index" encode --model "${MODEL:-cache/splade-tiny}" --device "${ENC_DEVICE:-cuda}" --quiet \
                --input "$W/queries.jsonl" >"$W/q.vec.jsonl" 2>>"$LOG"
            touch "$W/prep.finished"
            return 0
        fi
        say "encode documents on the GPU (${MODEL:-cache/splade-tiny}, bf16)"
        t0=$(date +%s.%N)
        "$BUILD/splade-index" encode --model "${MODEL:-cache/splade-tiny}" --device "${ENC_DEVICE:-cuda}" --quiet --input "$W/corpus.jsonl" \
            >"$W/docs.vec.jsonl" 2>>"$LOG" || { say "encode FAILED"; return 1; }
        say "  encoded $(wc -l <"$W/docs.vec.jsonl") docs in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
        "$BUILD/splade-index" encode --model "${MODEL:-cache/splade-tiny}" --device "${ENC_DEVICE:-cuda}" --quiet --input "$W/queries.jsonl" \
            >"$W/q.vec.jsonl" 2>>"$LOG"
        head -n "${SLOW_Q:-100}" "$W/q.vec.jsonl" >"$W/q.slow.jsonl"
    fi
    say "builds side by side: $BUILDS"
    [ -d "$W/idx/ours" ] || ( taskset -c "$BCORES" $TIMEV "$BUILD/splade-index" build --vectors "$W/docs.vec.jsonl" \
        -o "$W/idx/ours" --threads 16 --quiet >"$W/ours.build.txt" 2>&1; echo done >"$W/ours.done" ) &
    [ "${PEERS:-1}" = 0 ] && { waitfor "${PREP_WAIT:-420}"; return 0; }
    [ -f "$W/work/exact.json" ] || ( taskset -c "$BCORES" $H exact "$W/docs.vec.jsonl" "$W/q.vec.jsonl" "$W/work" >"$W/exact.txt" 2>&1;
        echo done >"$W/exact.done" ) &
    [ -f "$W/seismic.done" ] || [ -n "${SKIP_SEISMIC:-}" ] || ( taskset -c "$BCORES" $H build seismic "$W/docs.vec.jsonl" "$W/idx/seismic" --label seismic \
        >"$W/seismic.build.txt" 2>&1; echo done >"$W/seismic.done" ) &
    [ -f "$W/bmp.done" ] || [ -n "${SKIP_BMP:-}" ] || ( taskset -c "$BCORES" $H build bmp "$W/docs.vec.jsonl" "$W/idx/bmp-b32-l127" --label bmp-b32-l127 --param bsize=32 \
        --param levels=127 >"$W/bmp.build.txt" 2>&1; echo done >"$W/bmp.done" ) &
    start_pisa
    waitfor "${PREP_WAIT:-420}"
    touch "$W/prep.finished"
}
start_pisa() { # PISA's wheels may come with a later call (phase query): built then, beside the timings
    if has_pisa && [ ! -f "$W/pisa.done" ] && [ ! -f "$W/pisa.started" ]; then
        touch "$W/pisa.started"
        ( taskset -c "$BCORES" $H build pisa "$W/docs.vec.jsonl" "$W/idx/pisa" --label pisa >"$W/pisa.build.txt" 2>&1;
          echo done >"$W/pisa.done" ) &
    fi
}
waitfor() { # seconds: until every started build wrote its .done
    i=0
    while [ $i -lt "$1" ]; do
        left=""
        for s in $BUILDS ${WAIT_PISA:+pisa}; do [ -f "$W/$s.done" ] || left="$left $s"; done
        [ -z "$left" ] && { say "all builds done"; return 0; }
        sleep 5; i=$((i + 5))
    done
    say "still building after $1 s:$left"
}
qpass() { # SYSTEM LABEL POINT QUERIES [--param ...]: one timed query pass on an idle core
    sys=$1 label=$2 point=$3 q=$4; shift 4
    taskset -c "$QCORE" $H query "$sys" "$W/idx/$label" "$q" "$W/runs/$label.$point.trec" "$W/runs/$label.$point.lat" \
        --label "$label" --point "$point" "$@" 2>>"$LOG" | tail -1 >>"$R"
    tail -1 "$R" | cut -c1-400 >>"$LOG"
}
ours_only_tail() { # PEERS=0: per-query times and features back (to replay auto's rule), GPU search
    # shellcheck disable=SC2086
    ${MK_CC:-cc} -O2 -Iinclude -Isrc bench/query/query_features.c "$BUILD/libsplade.a" -lutf8proc -ljansson -lopenblas \
        -lcurl -lstreamvbyte -lz -lm -ldl ${MK_LD:--pthread} -o "$W/query_features" >>"$LOG" 2>&1 && "$W/query_features" "$W/idx/ours" "$W/q.vec.jsonl" >"$W/runs/features.txt"
    tar czf "$OUT/real1m_perquery.tgz" -C "$W/runs" . 2>>"$LOG"
    for a in ${METHODS:-auto wtaat taat bmp wmaxscore}; do grep "\"point\": \"$a\"" "$R" | cut -c1-400; done
    if [ "${GPU_SEARCH:-1}" = 1 ] && [ -f bench/gpu_search.sh ]; then
        say "GPU batch search on the 1 M index (bench/gpu_search.sh)"
        OMP_NUM_THREADS=$NCPU GS_THREADS=$NCPU GS_KERNELS=atomic GS_REPEAT=${GS_REPEAT:-2} SKIP_SCIFACT=1 SKIP_REPLICA=1 \
            SKIP_SYN=1 BUILD=$BUILD OUT=$OUT INDEX="$W/idx/ours" VQUERIES="$W/q.vec.jsonl" sh bench/gpu_search.sh >>"$LOG" 2>&1 ||
            say "  gpu_search.sh FAILED"
        cat "$OUT/gpu-search.txt" 2>/dev/null | tail -15
    fi
}
query() {
    build_sq
    start_pisa
    waitfor "${QUERY_WAIT:-300}"  # PISA, started just now, is waited for before its own queries
    rm -f "$R"
    say "ours: $(grep -E 'Elapsed|Maximum resident' "$W/ours.build.txt" | tr -s ' ' | tr '\n' ';')"
    for rnd in $(seq "${ROUNDS:-2}"); do
        for a in ${METHODS:-auto wtaat taat bmp wmaxscore}; do
            qpass ours ours "$a" "$W/q.vec.jsonl" --param sq_latency="$SQ" --param algo=$a
        done
    done
    [ "${PEERS:-1}" = 0 ] && { ours_only_tail; return 0; }
    for pt in "qc5-hf0.9 5 0.9" "qc10-hf0.9 10 0.9" "qc20-hf0.9 20 0.9" "qc40-hf1 40 1.0"; do
        set -- $pt
        [ -f "$W/seismic.done" ] && qpass seismic seismic "$1" "$W/q.vec.jsonl" --param query_cut=$2 --param heap_factor=$3
    done
    [ -f "$W/pisa.started" ] && WAIT_PISA=1 waitfor "${PISA_WAIT:-240}"
    [ -f "$W/pisa.done" ] && for a in maxscore block_max_wand; do qpass pisa pisa "$a" "$W/q.slow.jsonl" --param algo=$a; done
    [ -f "$W/bmp.done" ] && qpass bmp bmp-b32-l127 exact "$W/q.slow.jsonl" --param alpha=1 --param beta=1
    # ours on the same slow-peer subset, for a like-for-like ratio
    qpass ours ours auto-slowq "$W/q.slow.jsonl" --param sq_latency="$SQ" --param algo=auto
    for s in seismic bmp pisa; do [ -f "$W/$s.build.txt" ] && tail -1 "$W/$s.build.txt" | grep '^{' >>"$R"; done
    say "eval (recall@10 against brute force)"
    $H eval "$W/work" "$R" >"$OUT/real1m.txt" 2>>"$LOG" || say "eval FAILED"
    cat "$OUT/real1m.txt"
    cut -d' ' -f1-5 "$W/runs/ours.taat.trec" >"$W/taat.cut" 2>/dev/null
    for a in auto wtaat bmp wmaxscore; do # every exact method's run equals taat's (ranks, ids, scores)
        if [ ! -s "$W/taat.cut" ] || [ ! -s "$W/runs/ours.$a.trec" ]; then say "$a: no run to compare"; continue; fi
        cut -d' ' -f1-5 "$W/runs/ours.$a.trec" | cmp -s "$W/taat.cut" - && say "$a: identical to taat" ||
            say "$a: DIFFERS from taat"
    done
    python3 tools/vector_stats.py "$W/docs.vec.jsonl" "$W/q.vec.jsonl" >"$OUT/real1m_stats.md" 2>>"$LOG" ||
        say "vector_stats failed"
    if [ "${GPU_SEARCH:-1}" = 1 ] && [ -f bench/gpu_search.sh ]; then
        say "GPU batch search on the 1 M index (bench/gpu_search.sh)"
        OMP_NUM_THREADS=$NCPU GS_THREADS=$NCPU SKIP_SCIFACT=1 SKIP_REPLICA=1 SKIP_SYN=1 BUILD=$BUILD OUT=$OUT \
            INDEX="$W/idx/ours" VQUERIES="$W/q.vec.jsonl" sh bench/gpu_search.sh >>"$LOG" 2>&1 ||
            say "  gpu_search.sh FAILED"
    fi
    cp "$R" "$OUT/real1m_results.jsonl"
}
case $PHASE in
    prep) prep ;;
    query) query ;;
    all) prep && query ;;
esac
say "done ($PHASE)"
