#!/usr/bin/env python3
"""What the Python package costs over the C library, for the same work (bench/results/python-*.md).

1. Encoding: a corpus (default: all of SciFact from ../shared, else data/example) through
   `splade-index encode --input` (one process: model load, encode, JSON printing to /dev/null) and
   through splade_index (Encoder(...) + encode(): model load, one library call, CSR matrix). Same
   model, device, threads and chunks of 256 texts (hence the same vectors: checked bit for bit first,
   untimed, with --verify).
2. Building (--build): `splade-index build CORPUS` against Index.build(corpus=...) (model load,
   splade_ingest_corpus, inversion, write, fsync, verification); the two files are compared byte for
   byte (SOURCE_DATE_EPOCH fixed) with --verify.
3. Search: a batch of 1,000 query vectors (the corpus's queries, encoded) on the index of that corpus,
   top 10, one thread: Index.search(csr) against the C searcher alone (the one splade_search_batch
   call inside it, on the same quantized queries), per query; the CLI's `query --vector-queries`
   (reading JSONL, writing TREC) for reference.

Every comparison runs its two sides interleaved (A B, then B A, ...) --repeat times and reports the
median and every sample, so that load from other processes falls on both sides alike.

Usage: PYTHONPATH=python SPLADE_LIB=build/libsplade.so.0 python3 bench/python_overhead.py \
           [--cli build/splade-index] [--model cache/splade-tiny] [--docs N] [--threads 2] [--repeat 3] \
           [--build] [--verify]
"""
import argparse
import ctypes
import filecmp
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
SCIFACT = os.path.join(REPO, "..", "shared", "data", "scifact")
EPOCH = "1700000000"


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def interleaved(a, b, repeat):
    """Samples of a() and b(), alternating which goes first: ([a seconds], [b seconds])."""
    ta, tb = [], []
    for r in range(repeat):
        if r % 2 == 0:
            ta.append(timed(a))
            tb.append(timed(b))
        else:
            tb.append(timed(b))
            ta.append(timed(a))
    return ta, tb


def fmt(samples):
    return f"median {statistics.median(samples):.3f} s (" + ", ".join(f"{s:.3f}" for s in samples) + ")"


def slice_file(src, dest, n):
    with open(src, encoding="utf-8") as f, open(dest, "w", encoding="utf-8") as g:
        g.writelines(itertools.islice(f, n) if n else f)


def cli_vectors_bits(out, vocab_index):
    """`encode` output -> list of (term ids, float32 bits), parsing each weight with the C library's
    strtof (the CLI prints the shortest text that reads back to the same float32)."""
    strtof = ctypes.CDLL(None).strtof
    strtof.restype, strtof.argtypes = ctypes.c_float, [ctypes.c_char_p, ctypes.c_void_p]
    rows = []
    for line in out.splitlines():
        vec = json.loads(line, parse_float=str, parse_int=str, object_pairs_hook=list)[1][1]
        rows.append(([vocab_index[t] for t, _ in vec],
                     [np.float32(strtof(w.encode(), None)).view(np.uint32) for _, w in vec]))
    return rows


def verify_encode(cli_cmd, X, vocab):
    out = subprocess.run(cli_cmd, capture_output=True, text=True, check=True).stdout
    rows = cli_vectors_bits(out, {t: i for i, t in enumerate(vocab)})
    assert len(rows) == X.shape[0], (len(rows), X.shape[0])
    bits = X.data.view(np.uint32)
    for i, (terms, w) in enumerate(rows):
        s, e = X.indptr[i], X.indptr[i + 1]
        if list(X.indices[s:e]) != terms or list(bits[s:e]) != w:
            return f"document {i} differs"
    return f"identical: {X.shape[0]} vectors, {X.nnz} weights, every term and every float32 bit"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "splade-index"))
    ap.add_argument("--model", default=os.path.join(REPO, "cache", "splade-tiny"))
    ap.add_argument("--docs", type=int, default=0, help="first N documents (0: all)")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--build", action="store_true", help="also time CLI build against Index.build(corpus=)")
    ap.add_argument("--verify", action="store_true", help="check the vectors and index files are identical")
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
    print(f"library {splade_index.library_path} {splade_index.version()}; CLI {a.cli}; corpus {what}, "
          f"{len(texts)} docs; threads {a.threads}; {a.repeat} interleaved repeats; load average "
          f"{os.getloadavg()[0]:.2f} at start")

    # 1. encoding
    cli_cmd = [a.cli, "encode", "--input", corpus, "--model", a.model, "--device", "cpu", "--quiet",
               "--threads", str(a.threads)]
    enc = Encoder(a.model, device="cpu", threads=a.threads)
    if a.verify:
        print("encode vectors, Python vs CLI:", verify_encode(cli_cmd, enc.encode(texts), enc.vocab))
    t_cli, t_py = interleaved(lambda: subprocess.run(cli_cmd, stdout=subprocess.DEVNULL, check=True),
                              lambda: Encoder(a.model, device="cpu", threads=a.threads).encode(texts), a.repeat)
    ratio = statistics.median(t_py) / statistics.median(t_cli)
    print(f"encode: CLI {fmt(t_cli)}; Python (load + encode) {fmt(t_py)}: Python/CLI = {ratio:.3f}")

    # 2. building
    os.environ["SOURCE_DATE_EPOCH"] = EPOCH  # both sides: byte-identical files
    if a.build:
        cli_idx, py_idx = os.path.join(tmp, "cli-idx"), os.path.join(tmp, "py-idx")
        build_cmd = [a.cli, "build", corpus, "-o", cli_idx, "--model", a.model, "--device", "cpu", "--quiet",
                     "--threads", str(a.threads)]
        t_bcli, t_bpy = interleaved(
            lambda: subprocess.run(build_cmd, stdout=subprocess.DEVNULL, check=True),
            lambda: Index.build(py_idx, corpus=corpus, model=a.model, device="cpu", threads=a.threads).close(),
            a.repeat)
        ratio_b = statistics.median(t_bpy) / statistics.median(t_bcli)
        print(f"build: CLI {fmt(t_bcli)}; Python Index.build(corpus=) {fmt(t_bpy)}: Python/CLI = {ratio_b:.3f}")
        if a.verify:
            same = filecmp.cmp(os.path.join(cli_idx, "index.spx"), os.path.join(py_idx, "index.spx"), shallow=False)
            print(f"index files, Python vs CLI: {'byte-identical' if same else 'DIFFERENT'}")

    # 3. search
    idx = os.path.join(tmp, "idx")
    ix = Index.build(idx, corpus=corpus, model=enc)
    qtexts = [json.loads(line)["text"] for line in open(qsrc, encoding="utf-8")]
    qtexts = list(itertools.islice(itertools.cycle(qtexts), a.queries))
    Q = enc.encode(qtexts)
    ix.search(Q, k=10, threads=1)  # warm: id table, page cache
    reps = max(a.repeat * 5, 15)
    t_c, t_search = [], []
    for r in range(reps):  # interleaved, as above
        pair = [lambda: t_c.append(c_search_only(ix, Q, 10)),
                lambda: t_search.append(timed(lambda: ix.search(Q, k=10, threads=1)))]
        for f in (pair if r % 2 == 0 else pair[::-1]):
            f()
    mc, ms = statistics.median(t_c), statistics.median(t_search)
    per_q = (ms - mc) / Q.shape[0] * 1e6
    print(f"search {Q.shape[0]} vector queries, k=10, 1 thread, {reps} interleaved repeats: Index.search median "
          f"{ms * 1e3:.2f} ms (min {min(t_search) * 1e3:.2f}), C searcher (splade_search_batch) median "
          f"{mc * 1e3:.2f} ms (min {min(t_c) * 1e3:.2f}): Python adds {per_q:.2f} us per query (medians)")
    vocab = enc.vocab
    qv = os.path.join(tmp, "qv.jsonl")
    with open(qv, "w", encoding="utf-8") as f:
        for i in range(Q.shape[0]):
            r = Q[i]
            f.write(json.dumps({"id": str(i), "vector": {vocab[t]: float(w) for t, w in zip(r.indices, r.data)}}) + "\n")
    t_cliq = [timed(lambda: subprocess.run([a.cli, "query", "-i", idx, "--vector-queries", qv, "-k", "10",
                                            "--threads", "1", "--output", os.devnull], check=True))
              for _ in range(a.repeat)]
    print(f"CLI query --vector-queries (process: read JSONL, search, write TREC): median "
          f"{statistics.median(t_cliq) * 1e3:.1f} ms")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    ix.close()
    shutil.rmtree(tmp, ignore_errors=True)


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
