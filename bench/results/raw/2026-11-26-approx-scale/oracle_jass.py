# Score-at-a-time (JASS-style) candidate pass with a posting budget: the h heaviest query terms (lists over
# `share` of the documents left out), their postings in decreasing query-impact x weight order, the first
# rho of them accumulated; the C best accumulators rescored exactly (float). recall@10 vs exact, 300 queries.
import sys, pickle, numpy as np
X, Q, vocab = pickle.load(open(sys.argv[1], 'rb'))
ND = int(sys.argv[2]); X = X[:ND]
HS = [int(x) for x in sys.argv[3].split(',')]; RHOS = [int(x) for x in sys.argv[4].split(',')]
CS = [int(x) for x in sys.argv[5].split(',')]; SHARE = float(sys.argv[6]) if len(sys.argv) > 6 else 0.2
XT = X.T.tocsr(); df = np.diff(XT.indptr); N = X.shape[0]
rng = np.random.default_rng(0); qs = rng.choice(Q.shape[0], 300, replace=False)
R = {}; P_ = {}
for qi in qs:
    q = Q[qi]; idx = q.indices; w = q.data
    s = np.zeros(N, np.float32)
    for t, qw in zip(idx, w): s[XT.indices[XT.indptr[t]:XT.indptr[t+1]]] += qw * XT.data[XT.indptr[t]:XT.indptr[t+1]]
    top = np.argsort(-s, kind='stable')[:10]; ex = set(np.nonzero(s >= s[top[-1]])[0])
    o = np.argsort(-w); keep = [i for i in o if df[idx[i]] <= SHARE * N] if SHARE < 1 else list(o)
    for h in HS:
        sel = idx[keep[:h]]; qw = w[keep[:h]]
        D = np.concatenate([XT.indices[XT.indptr[t]:XT.indptr[t+1]] for t in sel])
        V = np.concatenate([a * XT.data[XT.indptr[t]:XT.indptr[t+1]] for t, a in zip(sel, qw)])
        o2 = np.argsort(-V, kind='stable'); D = D[o2]; V = V[o2]
        for rho in RHOS:
            b = min(rho, len(D)) if rho > 0 else len(D)
            P = np.bincount(D[:b], weights=V[:b], minlength=N)
            P_.setdefault((h, rho), []).append(b)
            for C in CS:
                cand = np.argpartition(-P, C)[:C]; cand = cand[P[cand] > 0]
                t10 = cand[np.argsort(-s[cand])[:10]]
                R.setdefault((h, rho, C), []).append(len(ex & set(t10)) / 10)
print('N', N, 'share', SHARE)
for (h, rho, C), r in sorted(R.items()):
    print('jass h%-3d rho %7d C %4d recall %.4f postings mean %7.0f' % (h, rho, C, np.mean(r), np.mean(P_[(h, rho)])), flush=True)
