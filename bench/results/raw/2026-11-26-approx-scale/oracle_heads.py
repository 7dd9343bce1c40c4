# Per-term impact heads (each list's N postings of largest weight, Seismic's capped lists): candidates =
# the C best documents by the partial score over the heads of the h heaviest query terms (lists over
# `share` of the documents left out, 1 = none), rescored exactly; C = 0: every document in the union
# (the coverage ceiling). recall@10 vs exact, 300 queries; "postings" = head postings summed.
import sys, pickle, numpy as np
X, Q, vocab = pickle.load(open(sys.argv[1], 'rb'))
ND = int(sys.argv[2]); X = X[:ND]
HS = [int(x) for x in sys.argv[3].split(',')]; NS = [int(x) for x in sys.argv[4].split(',')]
CS = [int(x) for x in sys.argv[5].split(',')]; SHARE = float(sys.argv[6]) if len(sys.argv) > 6 else 0.2
XT = X.T.tocsr(); df = np.diff(XT.indptr); N = X.shape[0]
# each list sorted by decreasing weight once
SI = np.empty_like(XT.indices); SD = np.empty_like(XT.data)
for t in range(XT.shape[0]):
    a, b = XT.indptr[t], XT.indptr[t+1]
    o = np.argsort(-XT.data[a:b], kind='stable'); SI[a:b] = XT.indices[a:b][o]; SD[a:b] = XT.data[a:b][o]
rng = np.random.default_rng(0); qs = rng.choice(Q.shape[0], 300, replace=False)
R = {}; P_ = {}; U_ = {}
for qi in qs:
    q = Q[qi]; idx = q.indices; w = q.data
    s = np.zeros(N, np.float32)
    for t, qw in zip(idx, w): s[XT.indices[XT.indptr[t]:XT.indptr[t+1]]] += qw * XT.data[XT.indptr[t]:XT.indptr[t+1]]
    top = np.argsort(-s, kind='stable')[:10]; ex = set(np.nonzero(s >= s[top[-1]])[0])
    o = np.argsort(-w); keep = [i for i in o if df[idx[i]] <= SHARE * N] if SHARE < 1 else list(o)
    for h in HS:
        for n in NS:
            sel = idx[keep[:h]]; qw = w[keep[:h]]
            D = np.concatenate([SI[XT.indptr[t]:min(XT.indptr[t]+n, XT.indptr[t+1])] for t in sel])
            V = np.concatenate([a * SD[XT.indptr[t]:min(XT.indptr[t]+n, XT.indptr[t+1])] for t, a in zip(sel, qw)])
            P = np.bincount(D, weights=V, minlength=N)
            P_.setdefault((h, n), []).append(len(D)); U_.setdefault((h, n), []).append(np.count_nonzero(P))
            for C in CS:
                if C == 0: cand = np.nonzero(P)[0]
                else: cand = np.argpartition(-P, C)[:C]; cand = cand[P[cand] > 0]
                t10 = cand[np.argsort(-s[cand])[:10]]
                R.setdefault((h, n, C), []).append(len(ex & set(t10)) / 10)
print('N', N, 'share', SHARE)
for (h, n, C), r in sorted(R.items()):
    print('heads h%-3d N %6d C %5d recall %.4f postings %7.0f docs %7.0f' % (h, n, C, np.mean(r), np.mean(P_[(h, n)]), np.mean(U_[(h, n)])), flush=True)
