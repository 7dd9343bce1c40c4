#!/bin/sh
# realistic 1 M, ours: every exact method's per-query CPU time (for the p99 / median oracle), one pass each
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
export GIT_COMMIT=${GIT_COMMIT:-unknown}
PHASE=prep PEERS=0 SKIP_SEISMIC=1 SKIP_BMP=1 SKIP_PISA=1 GPU_SEARCH=0 OUT=$OUT sh bench/realistic_1m.sh >/dev/null 2>&1
echo "prep done +$(( $(date +%s) - T0 ))s"; tail -3 $OUT/real1m.log
W=tmp/r1m; SQ=build-gpu/bench/sq_latency; Q=$(( $(getconf _NPROCESSORS_ONLN) - 1 ))
cpu() { cut -d' ' -f2 "$1" | sort -g | awk '{v[NR]=$1; s+=$1} END {printf "median %.1f mean %.1f p99 %.1f", v[int(NR/2)+1], s/NR, v[int(NR*0.99)+1]}'; }
mkdir -p $W/runs
for a in ${METHODS:-auto wtaat bmp wmaxscore maxscore taat}; do
  taskset -c $Q $SQ $W/idx/ours $W/q.vec.jsonl $W/runs/t.$a.trec $OUT/t.$a.lat $a 10 1 >$W/runs/t.$a.out 2>&1
  echo "$a: $(cpu $OUT/t.$a.lat) +$(( $(date +%s) - T0 ))s"
done
cp $W/q.vec.jsonl $OUT/q.vec.jsonl
for a in wtaat bmp wmaxscore maxscore taat; do cmp -s $W/runs/t.auto.trec $W/runs/t.$a.trec && echo "auto = $a (run files identical)"; done
echo "all done +$(( $(date +%s) - T0 ))s"
