# Loads a splade vectors jsonl (docs) and the queries into CSR matrices over one vocabulary; pickles them.
import sys, orjson, numpy as np, scipy.sparse as sp, pickle
docs, queries, out = sys.argv[1], sys.argv[2], sys.argv[3]
vocab = {}
def load(path, grow):
    ip=[0]; ix=[]; dt=[]
    with open(path,'rb') as f:
        for line in f:
            v = orjson.loads(line)['vector']
            for t, w in v.items():
                i = vocab.get(t)
                if i is None:
                    if not grow: continue
                    i = vocab[t] = len(vocab)
                ix.append(i); dt.append(w)
            ip.append(len(ix))
    return np.array(ip, np.int64), np.array(ix, np.int32), np.array(dt, np.float32)
d = load(docs, True); q = load(queries, True)
V = len(vocab)
X = sp.csr_matrix((d[2], d[1], d[0]), shape=(len(d[0])-1, V)); X.sort_indices()
Q = sp.csr_matrix((q[2], q[1], q[0]), shape=(len(q[0])-1, V)); Q.sort_indices()
pickle.dump((X, Q, vocab), open(out, 'wb'), protocol=4)
print(X.shape, X.nnz, Q.shape, Q.nnz)
