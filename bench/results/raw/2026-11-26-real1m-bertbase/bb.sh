#!/bin/sh
# realistic 1 M encoded by a bert-base-shaped model (random weights, a trained model's sparsity): build on the
# GPU, vector statistics (first 50 k documents), ours exact and approximate, one thread
set -u
OUT=${OUT:-/tmp/o}; mkdir -p "$OUT"
T0=$(date +%s)
export GIT_COMMIT=${GIT_COMMIT:-unknown}
[ -d /tmp/rbb ] || python3 .gpu/encode_peers.py make /tmp/rbb .gpu/bert-base-uncased .gpu/scifact/corpus.jsonl 2>/dev/null | tail -1
echo "model +$(( $(date +%s) - T0 ))s"
MODEL=/tmp/rbb R1M_DIR=tmp/r1mb PHASE=prep PEERS=0 SKIP_SEISMIC=1 SKIP_BMP=1 SKIP_PISA=1 GPU_SEARCH=0 OUT=$OUT sh bench/realistic_1m.sh >/dev/null 2>&1
echo "prep done +$(( $(date +%s) - T0 ))s"; grep -v "^$" $OUT/real1m.log | tail -4; ls -la tmp/r1mb/idx/ours | tail -3
W=tmp/r1mb; SQ=build-gpu/bench/sq_latency; Q=$(( $(getconf _NPROCESSORS_ONLN) - 1 ))
head -n 50000 $W/corpus.jsonl > /tmp/c50k.jsonl
build-gpu/splade-index encode --model /tmp/rbb --device cuda --quiet --input /tmp/c50k.jsonl > /tmp/d50k.vec.jsonl
python3 tools/vector_stats.py /tmp/d50k.vec.jsonl $W/q.vec.jsonl > $OUT/stats.md 2>&1; cat $OUT/stats.md
cpu() { cut -d' ' -f2 "$1" | sort -g | awk '{v[NR]=$1; s+=$1} END {printf "median %.1f mean %.1f p99 %.1f", v[int(NR/2)+1], s/NR, v[int(NR*0.99)+1]}'; }
mkdir -p $W/runs
for a in taat auto wtaat bmp; do
  timeout 120 taskset -c $Q $SQ $W/idx/ours $W/q.vec.jsonl $W/runs/x.$a.trec $OUT/x.$a.lat $a 10 1 >/dev/null 2>&1
  echo "exact $a: $(cpu $OUT/x.$a.lat) +$(( $(date +%s) - T0 ))s"
done
for s in ${APPROX:-24:200:400000 30:300:600000 30:300:1000000 20:150:0}; do
  qc=${s%%:*} rest=${s#*:} rs=${rest%%:*} b=${rest#*:}
  n=qc$qc-r$rs-b$b
  QUERY_CUT=$qc RESCORE=$rs BUDGET=$b timeout 120 taskset -c $Q $SQ $W/idx/ours $W/q.vec.jsonl $W/runs/$n.trec $OUT/$n.lat auto 10 1 >/dev/null 2>&1
  echo "$n: $(cpu $OUT/$n.lat) recall $(python3 bench/query/recall.py $W/runs/x.taat.trec $W/runs/$n.trec | sed 's/.*recall@10 //')"
done
echo "all done +$(( $(date +%s) - T0 ))s"
