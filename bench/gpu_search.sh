#!/bin/sh
# GPU batch search (issue #14, item 4) on the GPU machine: bench_gpu_search (queries/s of the GPU for
# batches of 100 and 1,000 beside the CPU's batch search on all host cores, same run, every GPU hit
# checked against the CPU's) on
#   - SciFact (splade-tiny, built here on the GPU from .gpu/scifact; queries encoded on the CPU), k = 10
#     and k = 1000, plus the CLI: `query --vector-queries --device cuda` against `--device cpu` (the
#     queries encoded once by `encode`: text queries with --device cuda would be encoded on the GPU,
#     in bf16, and score differently), TREC runs compared;
#   - SciFact x REPLICA_COPIES (default 193: 1,000,319 documents of real splade-tiny vectors, copies
#     after the first with 20% of their terms dropped and weights scaled by 0.7..1.3), the SciFact
#     queries, k = 10 (bench_gpu_search --replicate-from);
#   - a synthetic collection of SYN_DOCS documents (default 1,000,000; bench_index's generator: Zipf
#     terms, ~120 per document, ~25 per query), k = 10;
#   - an existing index when INDEX is set (the realistic 1 M collection): INDEX=DIR with
#     VQUERIES=Q.jsonl (vectors) or QUERIES=Q.jsonl (text; MODEL=DIR when the index's model folder is
#     elsewhere), k = $K (10).
# Called by bench/gpu.sh (SKIP_GPU_SEARCH=1 skips it) after its build, or alone after one:
#   BUILD=build-gpu OUT=/tmp/out sh bench/gpu_search.sh
# Knobs: GS_KERNELS (bench_gpu_search --kernels: atomic,window), SKIP_SCIFACT=1, SKIP_REPLICA=1, SKIP_SYN=1, SYN_DOCS, GS_REPEAT (rounds, 3), GS_THREADS (CPU peer, all cores).
# Writes $OUT/gpu-search.txt.
set -u
BUILD=${BUILD:-build}
OUT=${OUT:-/tmp/splade-gpu-out}
mkdir -p "$OUT"
R=$OUT/gpu-search.txt
B=$BUILD/bench/bench_gpu_search
T=${GS_THREADS:-$(nproc)}
REP=${GS_REPEAT:-3}
rc=0
say() { echo "[gpu_search.sh] $*" | tee -a "$R"; }
: >"$R"
say "commit ${GIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader >>"$R" 2>&1
[ -x "$B" ] || { say "no $B (make BUILD=$BUILD $B)"; exit 1; }

if [ -n "${INDEX:-}" ]; then
    say "existing index $INDEX"
    if [ -n "${VQUERIES:-}" ]; then qa="--vector-queries $VQUERIES"; else qa="--queries ${QUERIES:?set VQUERIES or QUERIES}"; fi
    # shellcheck disable=SC2086
    timeout 600 "$B" --dir "$INDEX" $qa ${MODEL:+--model "$MODEL"} --k "${K:-10}" --batches 100,1000 --kernels "${GS_KERNELS:-atomic,window}" \
        --threads "$T" --repeat "$REP" 2>&1 | tee -a "$R" || rc=1
fi

if [ "${SKIP_SCIFACT:-0}" != 1 ] && [ -f .gpu/scifact/corpus.jsonl ] && [ -d cache/splade-tiny ]; then
    IX=/tmp/gs-scifact.idx; Q=.gpu/scifact/queries.jsonl
    rm -rf $IX
    say "SciFact: build on the GPU (splade-tiny)"
    SOURCE_DATE_EPOCH=1700000000 timeout 120 "$BUILD/splade-index" build .gpu/scifact/corpus.jsonl -o $IX \
        --model cache/splade-tiny --device cuda >>"$R" 2>&1 || { say "  build FAILED"; rc=1; }
    for k in 10 1000; do
        say "SciFact, k = $k"
        timeout 200 "$B" --dir $IX --queries $Q --k $k --batches 100,1000 --threads "$T" --repeat "$REP" --kernels "${GS_KERNELS:-atomic,window}" \
            2>&1 | tee -a "$R" || rc=1
    done
    say "CLI: query --vector-queries --device cuda vs --device cpu (k = 100, TREC runs)"
    "$BUILD/splade-index" encode --input $Q --model cache/splade-tiny --device cpu --quiet >/tmp/gs-qv.jsonl ||
        { say "  encode FAILED"; rc=1; }
    for d in cpu cuda; do
        /usr/bin/time -f "$d: %e s wall, %M KB max RSS" "$BUILD/splade-index" query --vector-queries /tmp/gs-qv.jsonl \
            -i $IX -k 100 --device $d --output /tmp/gs-$d.trec 2>>"$R" || { say "  query --device $d FAILED"; rc=1; }
    done
    if cmp -s /tmp/gs-cpu.trec /tmp/gs-cuda.trec; then say "  runs identical ($(wc -l </tmp/gs-cpu.trec) lines)"
    else say "  runs DIFFER"; rc=1; fi
    if [ "${SKIP_REPLICA:-0}" != 1 ]; then
        C=${REPLICA_COPIES:-193}; RX=/tmp/gs-replica.idx
        rm -rf $RX
        say "SciFact x $C (bench_gpu_search --replicate-from), k = 10"
        timeout 400 "$B" --replicate-from $IX --copies "$C" --dir $RX --vector-queries /tmp/gs-qv.jsonl --k 10 \
            --batches 100,1000 --threads "$T" --repeat "$REP" --kernels "${GS_KERNELS:-atomic,window}" 2>&1 | tee -a "$R" || rc=1
        rm -rf $RX
    fi
fi

if [ "${SKIP_SYN:-0}" != 1 ]; then
    N=${SYN_DOCS:-1000000}; IX=/tmp/gs-syn.idx
    rm -rf $IX
    say "synthetic: $N documents (bench_index's generator, built with $T threads)"
    t0=$(date +%s)
    timeout 300 "$BUILD/bench/bench_index" --docs "$N" --queries 1000 --dir $IX --write-queries /tmp/gs-syn.q.jsonl \
        --methods 3 --threads "$T" >>"$R" 2>&1 || { say "  bench_index FAILED"; rc=1; }
    say "  generated, built and searched once (BMP) in $(( $(date +%s) - t0 )) s"
    timeout 300 "$B" --dir $IX --vector-queries /tmp/gs-syn.q.jsonl --k 10 --batches 100,1000 --threads "$T" \
        --repeat "$REP" --kernels "${GS_KERNELS:-atomic,window}" 2>&1 | tee -a "$R" || rc=1
fi
say "done (rc $rc)"
exit $rc
