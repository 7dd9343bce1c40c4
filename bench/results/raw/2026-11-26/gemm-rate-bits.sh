#!/bin/sh
# bits.sh: cmp vectors of base and branch for several files/threads/batches/precisions
fail=0
for prec in bf16 int8; do for f in /work/main/tmp/scr/d256.ids /work/main/tmp/scr/d512.ids tmp/mixed.ids; do
 for th in 1 2; do for bt in 8 1 3; do
  /tmp/gemm-base/build-nc/bench/bench_encode_ids cache/rand-bert-base $f $th $bt /tmp/gb-a.vec $prec >/dev/null 2>&1
  build-nc/bench/bench_encode_ids cache/rand-bert-base $f $th $bt /tmp/gb-b.vec $prec >/dev/null 2>&1
  if cmp -s /tmp/gb-a.vec /tmp/gb-b.vec && [ -s /tmp/gb-a.vec ]; then r=same; else r=DIFF; fail=1; fi
  echo "$prec $(basename $f) threads $th batch $bt: $r $(stat -c %s /tmp/gb-a.vec)"
 done; done
done; done
exit $fail
