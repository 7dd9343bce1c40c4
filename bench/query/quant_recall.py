"""Where our recall against the float brute force goes (issue #14): recall@10 (tie-aware, the harness's)
of the exact top-10 under several quantizations of the same vectors, against the float top-10.
  python3 bench/query/quant_recall.py WORK      (WORK: a ../shared/peer/query `exact` folder)
Rows: d8 q8 = the index today (docs/FORMAT.md: one 8-bit scale for all documents, 8-bit queries);
q12 / qfloat = finer query impacts; dfloat = unquantized documents; dterm8 = an 8-bit scale per term
(the scale folded into the query's impacts)."""
import importlib.util
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("pq", os.environ.get(
    "PEERS_QUERY", os.path.join(HERE, "../../../shared/peer/query/peers_query.py")))
pq = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pq)


def per_query(m, levels):
    m = m.copy()
    for i in range(m.shape[0]):
        s, e = m.indptr[i], m.indptr[i + 1]
        if e > s:
            m.data[s:e] = pq.quantize(m.data[s:e], m.data[s:e].max(), levels)
    return m


def per_term(d):
    c = d.tocsc(copy=True)
    n = np.diff(c.indptr)
    colmax = np.zeros(d.shape[1])
    has = n > 0
    colmax[has] = np.maximum.reduceat(c.data, c.indptr[:-1][has])
    mx = np.repeat(colmax, n)
    c.data = np.clip(np.floor(c.data * 255.0 / mx + 0.5), 1, 255) * (mx / 255.0)
    return c.tocsr()


def main():
    work = sys.argv[1]
    doc_ids, d, q_ids, q = pq.load_work(work)
    ex = json.load(open(os.path.join(work, "exact.json")))
    row_of = {x: i for i, x in enumerate(doc_ids)}
    d8 = d.copy()
    d8.data = pq.quantize(d.data, d.data.max())
    dt = per_term(d)
    for name, dm, qm in (("d8 q8", d8, per_query(q, 255)), ("d8 q12", d8, per_query(q, 4095)), ("d8 qfloat", d8, q),
                         ("dterm8 q8", dt, per_query(q, 255)), ("dterm8 qfloat", dt, q), ("dfloat q8", d, per_query(q, 255))):
        top, _ = pq.topk_all(dm, qm)
        run = {qid: [doc_ids[j] for j in t] for qid, t in zip(q_ids, top)}
        print(f"{name:14s} recall@10 vs float {pq.recall(run, d, q, q_ids, row_of, ex['float']['kth'], ex['float']['top']):.4f}",
              flush=True)


if __name__ == "__main__":
    main()
