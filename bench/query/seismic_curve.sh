#!/usr/bin/env bash
# Seismic's recall/latency curve on one collection with the peers' harness (../shared/peer/query),
# for issue #14's approximate-mode goal; one thread, k = 10, thread CPU per query (the harness's lat
# files, column 2):
#   PY=<python with pyseismic-lsr> bash bench/query/seismic_curve.sh DOCS QUERIES OUT [SETTINGS] [ROUND=1]
# SETTINGS: "query_cut:heap_factor ..."; builds OUT/idx/seismic once (pyseismic-lsr defaults) and the
# harness's float brute force (OUT/work) once; appends to OUT/results.jsonl (then: peers_query.py eval).
set -euo pipefail
DOCS=$1 QUERIES=$2 OUT=$3
SETTINGS=${4:-"3:0.9 5:0.9 7:0.9 10:0.9 15:0.9 20:0.9 10:1.0 20:1.0 5:0.8 10:0.8"}
ROUND=${5:-1}
PY=${PY:-python3}
H="$PY $(cd "$(dirname "$0")/../../../shared/peer/query" && pwd)/peers_query.py"
export RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT/idx" "$OUT/runs"
R=$OUT/results.jsonl
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -f "$OUT/work/exact.json" ] || nice -n 10 $H exact "$DOCS" "$QUERIES" "$OUT/work"
[ -d "$OUT/idx/seismic" ] || $H build seismic "$DOCS" "$OUT/idx/seismic" --label seismic | tail -1 >> "$R"
for s in $SETTINGS; do
  qc=${s%:*} hf=${s#*:}
  $H query seismic "$OUT/idx/seismic" "$QUERIES" "$OUT/runs/qc$qc-hf$hf.trec" "$OUT/runs/qc$qc-hf$hf.$ROUND.lat" \
    --label seismic --point "qc$qc-hf$hf" --param query_cut=$qc --param heap_factor=$hf | tail -1 >> "$R"
  echo "qc $qc hf $hf: cpu median/mean $(cut -d' ' -f2 "$OUT/runs/qc$qc-hf$hf.$ROUND.lat" | sort -g |
    awk '{v[NR]=$1; s+=$1} END {printf "%.1f %.1f", v[int(NR/2)+1], s/NR}')"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
