#!/usr/bin/env python3
"""The peer of bench/bench_query_table.c: sentence-transformers on the same model and queries, one
query per call, one CPU thread: encode_query (the Router's SparseStaticEmbedding: tokenizer + table,
no forward pass) against encode_document (MLM transformer + SpladePooling, the forward pass).

  python3 bench/query_table_st.py [--model cache/rand-distil-base-docv3] [--queries FILE] [--rounds 2]
          [--limit N]
Prints ms/query wall and CPU per round (A B A B), and the best."""
import argparse
import json
import os
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="cache/rand-distil-base-docv3")
    ap.add_argument("--queries", default="../shared/data/scifact/queries.jsonl")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="first N queries only (the forward pass is slow)")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    import sentence_transformers
    from sentence_transformers import SparseEncoder
    m = SparseEncoder(a.model, device="cpu")
    with open(a.queries, encoding="utf-8") as f:
        qs = [json.loads(l)["text"] for l in f if l.strip()]
    if a.limit:
        qs = qs[:a.limit]
    print("sentence-transformers %s, torch %s, %d queries, 1 thread, load average %.2f" %
          (sentence_transformers.__version__, torch.__version__, len(qs), os.getloadavg()[0]))
    best = {}
    for r in range(a.rounds):
        for name, fn in (("query table", m.encode_query), ("forward pass", m.encode_document)):
            w0, c0 = time.perf_counter(), time.process_time()
            for q in qs:
                fn([q], convert_to_tensor=True)
            w, c = 1e3 * (time.perf_counter() - w0) / len(qs), 1e3 * (time.process_time() - c0) / len(qs)
            print("round %d %-13s %9.4f ms/query wall %9.4f ms/query CPU" % (r, name, w, c))
            b = best.get(name, (1e30, 1e30))
            best[name] = (min(b[0], w), min(b[1], c))
    print("best: " + ", ".join("%s %.4f ms wall (%.4f CPU)" % (k, v[0], v[1]) for k, v in best.items()) +
          "; load average %.2f" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
