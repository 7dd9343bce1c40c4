#!/bin/sh
# Seismic's recall at 333k against its build's n_postings, to pick the 1M build (fraction scaling check)
H="python3 /work/shared/peer/query/peers_query.py"
[ -f $H ] || H="python3 /work/main/../shared/peer/query/peers_query.py"
export RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1
D=/work/r1m/docs.vec.jsonl Q=/work/tmpq/queries.vec.jsonl
for N in ${NS:-1170 2000}; do
  O=/work/sz/n$N; mkdir -p $O/runs; ln -sfn /work/tmpq/seismic333/work $O/work
  [ -d $O/idx ] || { /usr/bin/time -v $H build seismic $D $O/idx --label n$N --param n_postings=$N 2>$O/build.time | tail -1 >> $O/results.jsonl; }
  for s in 10:0.9 20:0.9 20:0.7 40:0.9; do qc=${s%:*} hf=${s#*:}
    $H query seismic $O/idx $Q $O/runs/qc$qc-hf$hf.trec $O/runs/qc$qc-hf$hf.lat --label n$N --point qc$qc-hf$hf --param query_cut=$qc --param heap_factor=$hf | tail -1 >> $O/results.jsonl
  done
  $H eval $O/work $O/results.jsonl > $O/eval.txt 2>&1
  echo "N=$N done $(date)"
done
