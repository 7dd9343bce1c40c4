#!/bin/sh
# 333k stand-ins for 1M Seismic builds: n1170 = the default scaled (N 3500/3), n2333 = N 7000/3 with cf 0.05, mf 1.0
export PEERS_QUERY=/work/shared/peer/query/peers_query.py BUILD_THREADS=2
H="python3 /work/main/bench/query/peers_mt.py"
Q=/work/tmpq/queries.vec.jsonl D=/work/r1m/docs.vec.jsonl
O=/work/sz/n2333; mkdir -p $O/runs; ln -sfn /work/tmpq/seismic333/work $O/work
[ -d $O/idx ] || $H build seismic $D $O/idx --label n2333 --param n_postings=2333 --param centroid_fraction=0.05 --param max_fraction=1.0 | tail -1 >> $O/results.jsonl
export RAYON_NUM_THREADS=1
for N in 2333 1170; do O=/work/sz/n$N
  for s in ${PTS:-10:0.9 20:0.9 20:0.7 40:0.9 20:0.8 20:0.6 10:0.7 40:0.7}; do qc=${s%:*} hf=${s#*:}
    [ -f $O/runs/qc$qc-hf$hf.lat ] && continue
    taskset -c 1 $H query seismic $O/idx $Q $O/runs/qc$qc-hf$hf.trec $O/runs/qc$qc-hf$hf.lat --label n$N --point qc$qc-hf$hf --param query_cut=$qc --param heap_factor=$hf | tail -1 >> $O/results.jsonl
  done
  $H eval $O/work $O/results.jsonl > $O/eval.txt 2>&1
done
echo done
