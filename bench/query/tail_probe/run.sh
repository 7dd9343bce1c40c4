#!/bin/sh
# Per-query profile of wtaat against taat on one index (issue #14, the latency tail), pinned to one
# core: builds an instrumented copy of src/query/wtaat.c (patch_wtaat.py) into the probe, runs both
# methods (one warm-up pass), prints analyze.py's summary. From the checkout, after
# `make NO_CUDA=1 BUILD=build-nc`:
#   sh bench/query/tail_probe/run.sh INDEX QVECTORS.jsonl OUT_DIR     (CPU=1: the core; ORACLE=1, see probe.c)
set -e
D=bench/query/tail_probe O=$3 B=${BUILD:-build-nc}
mkdir -p "$O"
python3 $D/patch_wtaat.py src/query/wtaat.c "$O/wtaat_prof.c"
FL="-std=c11 -D_GNU_SOURCE -O2 -Iinclude -Isrc"
# shellcheck disable=SC2086
cc $FL -c "$O/wtaat_prof.c" -o "$O/wtaat_prof.o"
# shellcheck disable=SC2086
cc $FL $D/probe.c "$O/wtaat_prof.o" "$B/libsplade.a" -lutf8proc -ljansson -lopenblas -lcurl -lstreamvbyte -lz -lm \
    -ldl -pthread -o "$O/probe"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c "${CPU:-1}" "$O/probe" "$1" "$2" 5 >"$O/wtaat.txt"
taskset -c "${CPU:-1}" "$O/probe" "$1" "$2" 2 >"$O/taat.txt"
python3 $D/analyze.py "$O/wtaat.txt" "$O/taat.txt"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
