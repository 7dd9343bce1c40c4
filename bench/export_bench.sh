#!/bin/sh
# Throughput of `splade-index export` (docs/s per format, from a vectors file, an index and a corpus)
# against a Python json transform (what a user would otherwise script), and of the Ray pipeline
# (examples/ray_encode.py, 2 actors x 1 thread on a local 2-CPU cluster) against one-process
# `splade-index encode --threads 2`. Runs interleaved (A B A B), prints one line per run with wall
# and CPU seconds (user + sys of the process and its waited-for children) and the load average.
# Usage: BUILD=build-nc sh bench/export_bench.sh  (needs ../shared/data/scifact and cache/splade-tiny;
# PYTHONPATH with pyarrow and ray, SPLADE_LIB for the package, e.g. $BUILD/python-deps).
set -eu
BUILD=${BUILD:-build}
BIN=$(pwd)/$BUILD/splade-index
MODEL=$(pwd)/cache/splade-tiny
CORPUS=${CORPUS:-../shared/data/scifact/corpus.jsonl}
ROUNDS=${ROUNDS:-3}
SECTIONS=${SECTIONS:-"export encode ray"}  # which parts to run
has() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
T=$(mktemp -d /tmp/export_benchXXXXXX)
trap 'rm -rf "$T"' EXIT
VEC=${VEC:-$T/vec.jsonl}
[ -s "$VEC" ] || "$BIN" encode --quiet --device cpu --model "$MODEL" --input "$CORPUS" > "$VEC"
N=$(wc -l < "$VEC")
"$BIN" build --quiet --vectors "$VEC" -o "$T/vix" > /dev/null
run() { # LABEL DOCS -- command...; output to $T/out
    label=$1 docs=$2; shift 3
    /usr/bin/time -f "%e %U %S" -o "$T/time" "$@" > "$T/out" 2> "$T/err" || { cat "$T/err"; exit 1; }
    set -- $(cat "$T/time")
    awk -v l="$label" -v n="$docs" -v w="$1" -v u="$2" -v s="$3" -v la="$(cut -d' ' -f1 /proc/loadavg)" \
        'BEGIN { printf "%-34s %6d docs  wall %7.2f s  cpu %7.2f s  %9.0f docs/s wall  %9.0f docs/cpu-s  load %s\n", l, n, w, u + s, n / w, n / (u + s > 0 ? u + s : 1e-9), la }'
}
PEER='import json, sys
out = sys.stdout
for line in sys.stdin:
    r = json.loads(line)
    out.write(json.dumps({"index": {"_index": "splade", "_id": r["id"]}}) + "\n")
    out.write(json.dumps({"splade": {k.replace(".", "__"): v for k, v in r["vector"].items()}}) + "\n")'
has export && echo "== export from a vectors file ($N SciFact documents, splade-tiny vectors)"
has export && for r in $(seq "$ROUNDS"); do
    run "export opensearch (vectors)" "$N" -- "$BIN" export --quiet --format opensearch --vectors "$VEC"
    run "python json peer (opensearch)" "$N" -- sh -c "python3 -c '$PEER' < '$VEC'"
    for f in opensearch-sparse elasticsearch qdrant milvus columns; do
        run "export $f (vectors)" "$N" -- "$BIN" export --quiet --format "$f" --vectors "$VEC" --model "$MODEL"
    done
    run "export parquet (vectors)" "$N" -- "$BIN" export --quiet --format parquet --output "$T/v.parquet" \
        --vectors "$VEC" --model "$MODEL"
    run "export opensearch (index)" "$N" -- "$BIN" export --quiet --format opensearch --index "$T/vix"
    run "export qdrant (index)" "$N" -- "$BIN" export --quiet --format qdrant --index "$T/vix" --model "$MODEL"
done
M=${CORPUS_DOCS:-1024}
head -n "$M" "$CORPUS" > "$T/sub.jsonl"
has encode && echo "== encoding: export --input vs encode --input ($M documents, --threads 2)"
has encode && for r in $(seq "$ROUNDS"); do
    run "encode --input" "$M" -- "$BIN" encode --quiet --threads 2 --device cpu --model "$MODEL" --input "$T/sub.jsonl"
    run "export opensearch --input" "$M" -- "$BIN" export --quiet --threads 2 --format opensearch --device cpu \
        --model "$MODEL" --input "$T/sub.jsonl"
done
has ray && echo "== Ray: examples/ray_encode.py (2 actors x 1 thread, local cluster of 2 CPUs) vs encode --threads 2 ($M documents)"
has ray && for r in $(seq "$ROUNDS"); do
    run "encode --threads 2" "$M" -- "$BIN" encode --quiet --threads 2 --device cpu --model "$MODEL" --input "$T/sub.jsonl"
    cp "$T/out" "$T/encode.out"
    run "ray_encode.py 2 actors (total)" "$M" -- python3 examples/ray_encode.py "$T/sub.jsonl" "$T/shards" \
        --actors 2 --cpus 2 --model "$MODEL"
    grep "ray_encode:" "$T/err" | sed 's/^/    /'
    cat "$T"/shards/part-*.jsonl | cmp -s - "$T/encode.out" && echo "    shards identical to encode" ||
        echo "    SHARDS DIFFER from encode"
done
