#!/usr/bin/env python3
"""What each engine's stored precision does to SciFact results (docs/SCALE.md): the same splade-tiny
vectors scored exactly (brute force) with document weights as each engine keeps them, against
splade-index's own 8-bit index, by nDCG@10 (`splade-index eval`) and top-10 agreement with exact
float32 scoring.

  exact float32        Milvus SPARSE_FLOAT_VECTOR, Qdrant (default float32), our export's weights
  9 significant bits   Lucene FeatureField (Elasticsearch/OpenSearch rank_features, ES sparse_vector):
                       float32 bits >> 15 << 15, truncation, as FeatureField stores the value
  float16              Qdrant sparse index "datatype": "float16"
  8-bit over [0, C]    a model of OpenSearch sparse_vector's byte quantization with ceiling C (ingest
                       default 3, or the corpus maximum), clipping above C; ANN pruning not modelled
  splade-index         the real index (build --vectors) and query path (8-bit documents and queries)

Usage: PYTHONPATH=... SPLADE_LIB=... python3 bench/export_precision.py BUILD/splade-index VECTORS.jsonl
       ../shared/data/scifact [cache/splade-tiny]"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.sparse as sp


def load_vectors(path, vocab):
    col = {t: i for i, t in enumerate(vocab)}
    ids, rows, cols, vals = [], [], [], []
    with open(path, encoding="utf-8") as f:
        for r, line in enumerate(f):
            d = json.loads(line)
            ids.append(d["id"])
            for t, w in d["vector"].items():
                rows.append(r)
                cols.append(col[t])
                vals.append(w)
    return ids, sp.csr_matrix((np.array(vals, dtype=np.float32), (rows, cols)), shape=(len(ids), len(vocab)))


def lucene_feature(x):
    b = x.view(np.uint32) >> 15 << 15
    return b.view(np.float32)


def byte_quant(x, ceiling):
    return (np.round(np.minimum(x, ceiling) / ceiling * 255.0) * (ceiling / 255.0)).astype(np.float32)


def run_file(path, qids, ids, S, k=10):
    with open(path, "w") as f:
        for qi, q in enumerate(qids):
            row = S[qi]
            top = np.lexsort((np.arange(len(row)), -row))[:k]
            for rank, j in enumerate(top, 1):
                if row[j] > 0:
                    f.write(f"{q} Q0 {ids[j]} {rank} {row[j]:.9g} bench\n")
    return [set(np.lexsort((np.arange(S.shape[1]), -S[i]))[:k]) for i in range(S.shape[0])]


def ndcg(cli, run, qrels):
    out = subprocess.run([cli, "eval", "--run", run, "--qrels", qrels, "--metrics", "ndcg@10", "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["ndcg@10"] if out.strip().startswith("{") else out.strip()


def main():
    cli, vecs, scifact = sys.argv[1], sys.argv[2], sys.argv[3]
    model = sys.argv[4] if len(sys.argv) > 4 else "cache/splade-tiny"
    from splade_index import Encoder, Index
    enc = Encoder(model, device="cpu")
    ids, D = load_vectors(vecs, enc.vocab)
    qrels = os.path.join(scifact, "qrels", "test.tsv")
    want = {l.split("\t")[0] for l in open(qrels).read().split("\n")[1:] if l}
    queries = [json.loads(l) for l in open(os.path.join(scifact, "queries.jsonl"), encoding="utf-8")]
    queries = [q for q in queries if q["_id"] in want]
    qids = [q["_id"] for q in queries]
    Q = enc.encode([q["text"] for q in queries], chunk=None)
    dmax = float(D.data.max())
    variants = [("exact float32 (Milvus, Qdrant)", D.data),
                ("9 significant bits (Lucene FeatureField)", lucene_feature(D.data.copy())),
                ("float16 (Qdrant datatype float16)", D.data.astype(np.float16).astype(np.float32)),
                ("8-bit over [0, 3] (OpenSearch ingest ceiling default)", byte_quant(D.data, 3.0)),
                (f"8-bit over [0, {dmax:.3g}] (ceiling = corpus max)", byte_quant(D.data, dmax))]
    tmp = tempfile.mkdtemp()
    exact_top = None
    print(f"SciFact: {len(ids)} documents, {len(qids)} test queries; largest document weight {dmax:.4f}")
    print("| document weights as stored | nDCG@10 | same top-10 set as exact float32 |")
    print("|---|---|---|")
    for name, data in variants:
        Dv = sp.csr_matrix((data, D.indices, D.indptr), shape=D.shape)
        S = (Q @ Dv.T).toarray().astype(np.float64)
        run = os.path.join(tmp, "run.trec")
        tops = run_file(run, qids, ids, S)
        exact_top = exact_top or tops
        same = sum(a == b for a, b in zip(tops, exact_top))
        print(f"| {name} | {ndcg(cli, run, qrels)} | {same}/{len(qids)} |")
    ix = Index.build(os.path.join(tmp, "idx"), vectors=D, ids=ids, model=enc)
    got_ids, got_scores = ix.search(Q, k=10)
    run = os.path.join(tmp, "ours.trec")
    pos = {d: j for j, d in enumerate(ids)}
    with open(run, "w") as f:
        for qi, q in enumerate(qids):
            for rank, (d, s) in enumerate(zip(got_ids[qi], got_scores[qi]), 1):
                if d:
                    f.write(f"{q} Q0 {d} {rank} {s:.9g} bench\n")
    same = sum({pos[d] for d in got_ids[qi] if d} == exact_top[qi] for qi in range(len(qids)))
    print(f"| splade-index (8-bit documents and queries, doc_scale = max / 255) | {ndcg(cli, run, qrels)} | "
          f"{same}/{len(qids)} |")


if __name__ == "__main__":
    main()
