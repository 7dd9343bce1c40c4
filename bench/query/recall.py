#!/usr/bin/env python3
"""recall@k of TREC runs against an exact run (ties at the k-th score count as found):
  python3 bench/query/recall.py EXACT.trec RUN.trec [RUN.trec ...]  -> one line per run"""
import collections
import sys


def read(path):
    run = collections.defaultdict(list)
    for line in open(path):
        qid, _, doc, _, score, _ = line.split()
        run[qid].append((doc, float(score)))
    return run


exact = read(sys.argv[1])
for path in sys.argv[2:]:
    run, found, total = read(path), 0, 0
    for qid, hits in exact.items():
        kth = hits[-1][1]
        got = {d for d, _ in run.get(qid, [])}
        tied = {d for d, s in hits if s == kth}
        for d, s in hits:
            total += 1
            found += d in got or (s == kth and len(got & tied) > 0)
    print(f"{path}: recall@10 {found / total:.4f}")
