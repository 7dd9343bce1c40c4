#!/usr/bin/env bash
# Issue #14's approximate-mode goal, ours and Seismic in one run: every round times our exact
# default, each of our approximate settings and each Seismic setting once, alternating ours and
# Seismic (A B A B ...); one thread, k = 10, thread CPU µs per query (one warm-up pass, then the
# timed one; Seismic through ../shared/peer/query's harness, its index loaded per setting).
# Recall@10 of every run against our exact TAAT run and against the harness's float brute force.
#   SQ=<sq_latency> bash bench/query/approx_vs_seismic.sh INDEX SEISMIC_OUT QVECTORS OUT [ROUNDS=3] \
#       [OURS="qc:bf:rescore[:budget] ..."] [SEISMIC="query_cut:heap_factor ..."]
# SEISMIC_OUT: a bench/query/seismic_curve.sh output folder (idx/seismic, work/exact_float.trec).
# SQ_BASE (optional): a second sq_latency (e.g. built from main) run with each of our settings right
# after SQ, so that a change and its base alternate too (A B Seismic A B Seismic ...).
set -euo pipefail
: "${SQ:?}"
IX=$1 SOUT=$2 Q=$3 OUT=$4 ROUNDS=${5:-3}
OURS=${6:-"10:0:100 9:0:100 8:0:200 11:0:100 35:0.8:0"}
SEIS=${7:-"5:0.9 7:0.9 10:0.9"}
HERE=$(cd "$(dirname "$0")" && pwd)
H="${PY:-python3} $HERE/../../../shared/peer/query/peers_query.py"
export RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT"
cpu() { cut -d' ' -f2 "$1" | sort -g | awk '{v[NR]=$1; s+=$1} END {printf "%.1f %.1f %.1f", v[int(NR/2)+1], s/NR, v[int(NR*0.99)+1]}'; }
rec() { echo "$(python3 "$HERE/recall.py" "$OUT/taat.trec" "$1" | sed 's/.*recall@10 //') $(python3 "$HERE/recall.py" "$SOUT/work/exact_float.trec" "$1" | sed 's/.*recall@10 //')"; }
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
"$SQ" "$IX" "$Q" "$OUT/taat.trec" "$OUT/taat.lat" taat 10 1 > /dev/null
set -- $SEIS
for r in $(seq "$ROUNDS"); do
  "$SQ" "$IX" "$Q" "$OUT/auto.trec" "$OUT/auto.$r.lat" auto 10 1 > /dev/null
  echo "round $r ours exact auto: cpu median/mean/p99 $(cpu "$OUT/auto.$r.lat") recall $(rec "$OUT/auto.trec") load $(cut -d' ' -f1 /proc/loadavg)"
  i=0
  for s in $OURS; do
    IFS=: read -r qc bf rs bu <<< "$s"; bu=${bu:-0} name=qc$qc-bf$bf-r$rs-b$bu
    QUERY_CUT=$qc BOUND_FACTOR=$bf RESCORE=$rs BUDGET=$bu "$SQ" "$IX" "$Q" "$OUT/$name.trec" "$OUT/$name.$r.lat" auto 10 1 > "$OUT/$name.$r.out"
    echo "round $r ours qc $qc bf $bf rescore $rs budget $bu: cpu median/mean/p99 $(cpu "$OUT/$name.$r.lat") recall $(rec "$OUT/$name.trec") load $(cut -d' ' -f1 /proc/loadavg)"
    if [ -n "${SQ_BASE:-}" ]; then
      QUERY_CUT=$qc BOUND_FACTOR=$bf RESCORE=$rs BUDGET=$bu "$SQ_BASE" "$IX" "$Q" "$OUT/base-$name.trec" "$OUT/base-$name.$r.lat" auto 10 1 > "$OUT/base-$name.$r.out"
      echo "round $r base qc $qc bf $bf rescore $rs budget $bu: cpu median/mean/p99 $(cpu "$OUT/base-$name.$r.lat") recall $(rec "$OUT/base-$name.trec") load $(cut -d' ' -f1 /proc/loadavg)"
    fi
    # a Seismic setting after each of ours (cycling through them)
    set -- $SEIS
    shift $((i % $#)); t=$1; i=$((i + 1))
    sq=${t%:*} hf=${t#*:} sn=seismic-qc$sq-hf$hf
    $H query seismic "$SOUT/idx/seismic" "$Q" "$OUT/$sn.trec" "$OUT/$sn.$r.$i.lat" --label seismic --point "qc$sq-hf$hf" \
      --param query_cut=$sq --param heap_factor=$hf > /dev/null
    echo "round $r seismic query_cut $sq heap_factor $hf: cpu median/mean/p99 $(cpu "$OUT/$sn.$r.$i.lat") recall $(rec "$OUT/$sn.trec") load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
