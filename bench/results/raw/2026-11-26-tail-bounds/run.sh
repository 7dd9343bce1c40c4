Q=/work/tmpq/queries.vec.jsonl
for r in 1 2 3; do
  unset ORACLE; taskset -c 1 /tmp/sqo /work/r1m/r333k.idx $Q base.$r.trec base.$r.lat wtaat 10 1 | sed "s/^/r$r 333k base /"
  ORACLE=1 taskset -c 1 /tmp/sqo /work/r1m/r333k.idx $Q orc.$r.trec orc.$r.lat wtaat 10 1 | sed "s/^/r$r 333k oracle /"
  unset ORACLE; taskset -c 1 /tmp/sq4 /work/r4/r333k4.idx $Q r16.$r.trec r16.$r.lat wtaat 10 1 | sed "s/^/r$r 333k range16 /"
  unset ORACLE; taskset -c 1 /tmp/sqo /work/r1md/r1md.idx $Q m.$r.trec m.$r.lat wtaat 10 1 | sed "s/^/r$r 1M base /"
  ORACLE=1 taskset -c 1 /tmp/sqo /work/r1md/r1md.idx $Q mo.$r.trec mo.$r.lat wtaat 10 1 | sed "s/^/r$r 1M oracle /"
done
for r in 1 2 3; do cmp base.$r.trec orc.$r.trec && cmp base.$r.trec r16.$r.trec && cmp m.$r.trec mo.$r.trec && echo "round $r identical"; done
