#!/usr/bin/env python3
"""What the Python package costs over the C library, for the same work (bench/results/python-*.md).

1. Encoding: a corpus (default: the first 512 SciFact documents from ../shared, else data/example)
   through `splade-index encode --input` (one process: model load, encode, JSON printing to /dev/null)
   and through splade_index (Encoder(...) + encode(): model load, encode, CSR matrix). Same model,
   device, threads, chunks of 256 texts. Ratio Python / CLI, best of --repeat.
2. Search: a batch of 1,000 query vectors (the corpus's first queries, encoded) on the index of
   that corpus, top 10, one thread: Index.search(csr) against the C searcher alone (the one
   splade_search_batch call inside it, on the same quantized queries), per query; the CLI's
   `query --vector-queries` (reading JSONL, writing TREC) for reference.

Usage: PYTHONPATH=python SPLADE_LIB=build/libsplade.so.0 python3 bench/python_overhead.py \
           [--cli build/splade-index] [--model cache/splade-tiny] [--docs 512] [--threads 2] [--repeat 3]
"""
import argparse
import ctypes
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
SCIFACT = os.path.join(REPO, "..", "shared", "data", "scifact")


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def slice_file(src, dest, n):
    with open(src, encoding="utf-8") as f, open(dest, "w", encoding="utf-8") as g:
        g.writelines(itertools.islice(f, n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "splade-index"))
    ap.add_argument("--model", default=os.path.join(REPO, "cache", "splade-tiny"))
    ap.add_argument("--docs", type=int, default=512)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import splade_index
    from splade_index import Encoder, Index

    tmp = tempfile.mkdtemp(prefix="pybench-")
    if os.path.isfile(os.path.join(SCIFACT, "corpus.jsonl")):
        corpus, qsrc, what = os.path.join(tmp, "corpus.jsonl"), os.path.join(SCIFACT, "queries.jsonl"), "SciFact"
        slice_file(os.path.join(SCIFACT, "corpus.jsonl"), corpus, a.docs)
    else:
        corpus, qsrc, what = os.path.join(REPO, "data/example/corpus.jsonl"), \
            os.path.join(REPO, "data/example/queries.jsonl"), "data/example"
    docs = [json.loads(line) for line in open(corpus, encoding="utf-8")]
    texts = [f"{d['title']} {d['text']}" if d.get("title") else d.get("text", d.get("contents", "")) for d in docs]
    print(f"library {splade_index.library_path} {splade_index.version()}; corpus {what}, {len(texts)} docs; "
          f"threads {a.threads}")

    # 1. encoding
    cli_cmd = [a.cli, "encode", "--input", corpus, "--model", a.model, "--device", "cpu", "--quiet",
               "--threads", str(a.threads)]
    t_cli = best(lambda: subprocess.run(cli_cmd, stdout=subprocess.DEVNULL, check=True), a.repeat)

    def py_encode():
        Encoder(a.model, device="cpu", threads=a.threads).encode(texts)
    t_py = best(py_encode, a.repeat)
    enc = Encoder(a.model, device="cpu", threads=a.threads)
    t_py_enc = best(lambda: enc.encode(texts), a.repeat)
    print(f"encode: CLI {t_cli:.3f} s, Python {t_py:.3f} s (load + encode; encode alone {t_py_enc:.3f} s): "
          f"Python/CLI = {t_py / t_cli:.3f}")

    # 2. search
    idx = os.path.join(tmp, "idx")
    ix = Index.build(idx, corpus=corpus, model=enc)
    qtexts = [json.loads(line)["text"] for line in open(qsrc, encoding="utf-8")]
    qtexts = list(itertools.islice(itertools.cycle(qtexts), a.queries))
    Q = enc.encode(qtexts)
    ids, scores = ix.search(Q, k=10, threads=1)
    t_search = best(lambda: ix.search(Q, k=10, threads=1), a.repeat * 5)
    t_c = min(c_search_only(ix, Q, 10) for _ in range(a.repeat * 5))
    per_q = (t_search - t_c) / Q.shape[0] * 1e6
    print(f"search {Q.shape[0]} vector queries, k=10, 1 thread: Index.search {t_search * 1e3:.2f} ms, "
          f"C searcher (splade_search_batch) {t_c * 1e3:.2f} ms: Python adds {per_q:.2f} us per query")
    vocab = enc.vocab
    qv = os.path.join(tmp, "qv.jsonl")
    with open(qv, "w", encoding="utf-8") as f:
        for i in range(Q.shape[0]):
            r = Q[i]
            f.write(json.dumps({"id": str(i), "vector": {vocab[t]: float(w) for t, w in zip(r.indices, r.data)}}) + "\n")
    t_cliq = best(lambda: subprocess.run([a.cli, "query", "-i", idx, "--vector-queries", qv, "-k", "10", "--threads",
                                          "1", "--output", os.devnull], check=True), a.repeat)
    print(f"CLI query --vector-queries (process: read JSONL, search, write TREC): {t_cliq * 1e3:.1f} ms")


def c_search_only(ix, Q, k):
    """The C searcher's share: splade_search_batch on queries quantized beforehand (not timed)."""
    from splade_index import _lib
    nq = Q.shape[0]
    qs = (_lib.Qvec * nq)()
    size = ctypes.sizeof(_lib.Qvec)
    ip, dp = Q.indices.ctypes.data, Q.data.ctypes.data
    for i in range(nq):
        s = int(Q.indptr[i])
        _lib.lib.splade_qvec_build(ip + 4 * s, dp + 4 * s, int(Q.indptr[i + 1]) - s, ix.info["n_terms"],
                                   ctypes.addressof(qs) + i * size)
    hits = np.zeros(nq * k * 2, dtype=np.uint32)
    n_hits = np.zeros(nq, dtype=np.int32)
    t = time.perf_counter()
    _lib.check(_lib.lib.splade_search_batch(ix._h, ctypes.addressof(qs), nq, k, _lib.ALGO_BMP, 1, hits.ctypes.data,
                                            n_hits.ctypes.data))
    t = time.perf_counter() - t
    for i in range(nq):
        _lib.lib.splade_qvec_free(ctypes.addressof(qs) + i * size)
    return t


if __name__ == "__main__":
    sys.exit(main())
