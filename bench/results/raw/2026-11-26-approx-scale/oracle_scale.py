# Issue #14 at scale: recall@10 vs postings touched per query for candidate generators that bound work.
# Candidates = the C best documents by a partial score; every candidate rescored exactly (float).
import sys, pickle, numpy as np
X, Q, vocab = pickle.load(open(sys.argv[1], 'rb'))
ND = int(sys.argv[2]) if len(sys.argv) > 2 else X.shape[0]
X = X[:ND]
XT = X.T.tocsr(); df = np.diff(XT.indptr); N = X.shape[0]
rng = np.random.default_rng(0); qs = rng.choice(Q.shape[0], 300, replace=False)
def lists(idx):
    return [(XT.indices[XT.indptr[t]:XT.indptr[t+1]], XT.data[XT.indptr[t]:XT.indptr[t+1]]) for t in idx]
Qd = []
for qi in qs:
    q = Q[qi]; idx = q.indices; w = q.data
    s = np.zeros(N, np.float32)
    for (d, v), qw in zip(lists(idx), w): s[d] += qw * v
    top = np.argsort(-s, kind='stable')[:10]
    Qd.append((idx, w, s, set(np.nonzero(s >= s[top[-1]])[0])))
def recall(P, s, ex, C):
    cand = np.argpartition(-P, C)[:C]; cand = cand[P[cand] > 0]
    t = cand[np.argsort(-s[cand])[:10]]
    return len(ex & set(t)) / 10
def cut_terms(idx, w, h, share):
    o = np.argsort(-w); keep = [i for i in o if df[idx[i]] <= share * N] if share < 1 else list(o)
    return keep[:h]
def scheme(name, h, C, share=0.2, rho=None, frac=None, head=None):
    rec = []; post = []
    for idx, w, s, ex in Qd:
        sel = cut_terms(idx, w, h, share)
        L = lists(idx[sel]); qw = w[sel]
        if head is not None:
            L = [(d[np.argsort(-v, kind='stable')[:head]], v[np.argsort(-v, kind='stable')[:head]]) for d, v in L]
        D = np.concatenate([d for d, v in L]); V = np.concatenate([q * v for (d, v), q in zip(L, qw)])
        n = len(D)
        if rho is not None or frac is not None:
            b = min(n, rho if rho is not None else int(frac * n))
            if b < n:
                k = np.argpartition(-V, b)[:b]; D = D[k]; V = V[k]
        P = np.bincount(D, weights=V, minlength=N)
        rec.append(recall(P, s, ex, C)); post.append(len(D))
    print('%-34s recall %.4f postings %7.0f (mean)  %7.0f (median)' % (name, np.mean(rec), np.mean(post), np.median(post)), flush=True)
mode = sys.argv[3] if len(sys.argv) > 3 else 'all'
print('N', N, 'postings', X.nnz)
if mode in ('all', 'cut'):
    for h in [10, 12, 14, 16, 20]:
        for C in [100, 200]:
            scheme('cut h%d C%d' % (h, C), h, C)
if mode in ('all', 'jass'):
    for h in [14, 20, 30, 53]:
        for rho in [20000, 40000, 60000, 100000]:
            for C in [100, 200, 400]:
                scheme('jass h%d rho%d C%d' % (h, rho, C), h, C, rho=rho)
if mode in ('all', 'head'):
    for h in [14, 20, 30]:
        for head in [2000, 4000, 8000]:
            for C in [100, 400]:
                scheme('head h%d N%d C%d' % (h, head, C), h, C, head=head)
