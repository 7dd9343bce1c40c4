#!/usr/bin/env python3
# bench/query/range_size_study.py (issue #14 design study, 2026-11-25): paths are the development VM's;
#   tmp/sq/sq_latency --order /work/tmpq/r100k.idx /tmp/r100k.order   # the index's document order, first
# then python3 bench/query/range_size_study.py > table.md
# Design study: how many ranges stay live (bound >= final k-th score) for range sizes 64/32/16,
# in the index's document order, per query; median vs slowest (longest) queries.
import json, sys, numpy as np, scipy.sparse as sp
order = [l.strip() for l in open('/tmp/r100k.order')]
pos = {d: i for i, d in enumerate(order)}
N = len(order)
vocab = {}
rows, cols, vals = [], [], []
with open('/work/r1m/docs.vec.jsonl') as f:
    for line in f:
        j = json.loads(line)
        if j['id'] not in pos:
            continue
        r = pos[j['id']]
        for t, w in j['vector'].items():
            rows.append(r); cols.append(vocab.setdefault(t, len(vocab))); vals.append(w)
D = sp.csr_matrix((np.array(vals, np.float32), (rows, cols)), shape=(N, len(vocab)))
print('docs', N, 'terms', len(vocab), 'postings', D.nnz, file=sys.stderr)
Q = []
for line in open('/work/tmpq/realq.vec.jsonl'):
    j = json.loads(line)
    Q.append({vocab[t]: w for t, w in j['vector'].items() if t in vocab})
Dc = D.tocsc()
res = {R: [] for R in (64, 32, 16, 8)}
nterms = []
for qi, q in enumerate(Q):
    ts = np.array(list(q.keys())); ws = np.array(list(q.values()), np.float32)
    sub = Dc[:, ts]
    scores = sub @ ws
    theta = np.sort(scores)[-10]
    nterms.append(len(ts))
    subd = sub.toarray()  # N x |q|
    for R in res:
        nr = (N + R - 1) // R
        pad = nr * R - N
        m = np.pad(subd, ((0, pad), (0, 0))).reshape(nr, R, len(ts)).max(axis=1)
        bound = m @ ws
        res[R].append(float((bound >= theta).mean()))
    if qi % 200 == 0: print(qi, file=sys.stderr)
nterms = np.array(nterms)
idx = np.argsort(nterms)
groups = {'all': idx, 'middle 10%': idx[int(len(idx)*0.45):int(len(idx)*0.55)], 'longest 5%': idx[int(len(idx)*0.95):], 'longest 1%': idx[int(len(idx)*0.99):]}
print('| queries | terms (mean) | ' + ' | '.join('live ranges, %d docs' % R for R in res) + ' |')
print('|---|---:|' + '---:|' * len(res))
for g, ix in groups.items():
    print('| %s | %.0f | ' % (g, nterms[ix].mean()) + ' | '.join('%.0f%%' % (100 * np.mean([res[R][i] for i in ix])) for R in res) + ' |')
