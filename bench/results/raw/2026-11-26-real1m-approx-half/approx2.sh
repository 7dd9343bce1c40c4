#!/bin/sh
# realistic 1 M, ours: exact (taat reference, auto) and the approximate mode's budget grid, after approx-half2
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
export GIT_COMMIT=${GIT_COMMIT:-unknown}
PHASE=prep PEERS=0 SKIP_SEISMIC=1 SKIP_BMP=1 SKIP_PISA=1 GPU_SEARCH=0 OUT=$OUT sh bench/realistic_1m.sh >/dev/null 2>&1
echo "prep done +$(( $(date +%s) - T0 ))s"; tail -2 $OUT/real1m.log
W=tmp/r1m; SQ=build-gpu/bench/sq_latency; Q=$(( $(getconf _NPROCESSORS_ONLN) - 1 ))
cpu() { cut -d' ' -f2 "$1" | sort -g | awk '{v[NR]=$1; s+=$1} END {printf "median %.1f mean %.1f p99 %.1f", v[int(NR/2)+1], s/NR, v[int(NR*0.99)+1]}'; }
mkdir -p $W/runs
for a in taat auto; do
  taskset -c $Q $SQ $W/idx/ours $W/q.vec.jsonl $W/runs/x.$a.trec $OUT/x.$a.lat $a 10 1 >/dev/null 2>&1
  echo "exact $a: $(cpu $OUT/x.$a.lat) +$(( $(date +%s) - T0 ))s"
done
for r in 1 2; do
  for s in ${APPROX:-24:200:300000 24:200:400000 30:300:400000 20:200:400000 30:300:500000}; do
    qc=${s%%:*} rest=${s#*:} rs=${rest%%:*} b=${rest#*:}
    n=qc$qc-r$rs-b$b
    QUERY_CUT=$qc RESCORE=$rs BUDGET=$b taskset -c $Q $SQ $W/idx/ours $W/q.vec.jsonl $W/runs/$n.trec $OUT/$n.$r.lat auto 10 1 >/dev/null 2>&1
    echo "round $r $n: $(cpu $OUT/$n.$r.lat) recall $(python3 bench/query/recall.py $W/runs/x.taat.trec $W/runs/$n.trec | sed 's/.*recall@10 //')"
  done
done
echo "all done +$(( $(date +%s) - T0 ))s"
