"""Index.search against `splade-index query`: the same TREC lines; CSR round trips."""
import itertools
import json
import os

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import EXAMPLE, MODEL, SCIFACT, cli, doc_text, read_jsonl, trec_lines


def cli_run(index, *args):
    out = cli("query", "-i", index, *args, "--output", "-").stdout
    return out.splitlines()


def test_search_texts_equals_cli_queries(example_index):
    from splade_index import Index
    queries = read_jsonl(os.path.join(EXAMPLE, "queries.jsonl"))
    ix = Index.open(example_index)
    ids, scores = ix.search([q["text"] for q in queries], k=10)
    assert ids.shape == scores.shape == (len(queries), 10) and ids.dtype == object and scores.dtype == np.float64
    want = cli_run(example_index, "--queries", os.path.join(EXAMPLE, "queries.jsonl"), "-k", "10")
    assert trec_lines([q["_id"] for q in queries], ids, scores) == want


def test_search_approximate_equals_cli(example_index):
    """query_cut / rescore / bound_factor / budget: the run of `splade-index query --query-cut N
    --rescore R --bound-factor F --budget B` line for line; every rescored hit carries its document's
    exact score; a cut keeping every term with rescoring (and a budget of every posting) is the exact
    search; bad values are refused."""
    from splade_index import Index, InvalidArgumentError
    queries = read_jsonl(os.path.join(EXAMPLE, "queries.jsonl"))
    qids, texts = [q["_id"] for q in queries], [q["text"] for q in queries]
    ix = Index.open(example_index)
    n_docs = ix.info["n_docs"]
    all_ids, all_scores = ix.search(texts, k=n_docs)  # every matching document with its exact score
    exact = [dict(zip(r_ids, r_scores)) for r_ids, r_scores in zip(all_ids, all_scores)]
    for qc, r, bf, b in ((2, 5, 0.0, 0), (3, 20, 0.0, 0), (3, 0, 0.0, 0), (4, 0, 0.7, 0), (2, 30, 0.8, 0),
                         (3, 20, 0.0, 40)):
        ids, scores = ix.search(texts, k=10, query_cut=qc, rescore=r, bound_factor=bf, budget=b)
        args = ["--query-cut", str(qc)] + (["--rescore", str(r)] if r else []) + \
            (["--bound-factor", str(bf)] if bf else []) + (["--budget", str(b)] if b else [])
        want = cli_run(example_index, "--queries", os.path.join(EXAMPLE, "queries.jsonl"), "-k", "10", *args)
        assert trec_lines(qids, ids, scores) == want, (qc, r, bf, b)
        if r and not bf:
            for row, (r_ids, r_scores) in enumerate(zip(ids, scores)):
                for d, sc in zip(r_ids, r_scores):
                    if d != "":
                        assert sc == exact[row][d]
    ids, scores = ix.search(texts, k=10, query_cut=100000, rescore=50)
    assert (ids == all_ids[:, :10]).all() and np.array_equal(scores, all_scores[:, :10])
    ids, scores = ix.search(texts, k=10, query_cut=100000, rescore=50, budget=2**31 - 1)  # every posting
    assert (ids == all_ids[:, :10]).all() and np.array_equal(scores, all_scores[:, :10])
    for bad in (dict(rescore=10), dict(query_cut=-1), dict(query_cut=3, bound_factor=2.0),
                dict(query_cut=3, rescore=70000), dict(query_cut=3, device="cuda"),
                dict(query_cut=3, budget=100), dict(query_cut=3, rescore=10, budget=-1),
                dict(query_cut=3, rescore=10, budget=100, bound_factor=0.5)):
        with pytest.raises(InvalidArgumentError):
            ix.search(texts, k=10, **bad)


def test_calibrate_equals_cli(example_index):
    """Index.calibrate picks what `splade-index query --recall-target` picks on the same queries (the
    CLI calibrates on up to 200 of the batch: all of the example's), and searching with it gives the
    CLI's run; a target of 1 answers with the exact scores; bad targets are refused."""
    from splade_index import Index, InvalidArgumentError
    queries = read_jsonl(os.path.join(EXAMPLE, "queries.jsonl"))
    qids, texts = [q["_id"] for q in queries], [q["text"] for q in queries]
    ix = Index.open(example_index)
    for target in (0.5, 1.0):
        opts = ix.calibrate(texts, target, k=10)
        assert set(opts) == {"query_cut", "rescore", "budget", "recall"}
        assert opts["recall"] >= target
        run = cli("query", "-i", example_index, "--queries", os.path.join(EXAMPLE, "queries.jsonl"), "-k", "10",
                  "--recall-target", str(target), "--output", "-")
        said = "--query-cut %d --rescore %d --budget %d" % (opts["query_cut"], opts["rescore"], opts["budget"])
        assert (said in run.stderr) if opts["query_cut"] else ("searching exactly" in run.stderr), run.stderr
        search = {key: opts[key] for key in ("query_cut", "rescore", "budget")}
        ids, scores = ix.search(texts, k=10, **search)
        assert trec_lines(qids, ids, scores) == run.stdout.splitlines()
    exact_ids, exact_scores = ix.search(texts, k=10)
    assert np.array_equal(scores, exact_scores)  # target 1: every query's top 10 scores as the exact ones
    for bad in (0, -0.5, 1.5):
        with pytest.raises(InvalidArgumentError):
            ix.calibrate(texts, bad)
    with pytest.raises(InvalidArgumentError):
        ix.calibrate([], 0.9)


def test_search_scifact_slice_equals_cli(tmp_path):
    """SciFact (../shared): the first 150 documents indexed by the CLI, the first 300 queries, top 100:
    the Python run is the CLI's run line for line. A slice keeps the suite's CPU time down; the
    code path is the one the whole collection takes."""
    corpus = os.path.join(SCIFACT, "corpus.jsonl")
    if not os.path.isfile(corpus):
        pytest.skip(f"{SCIFACT} absent (../shared beside the checkout)")
    from splade_index import Index
    from conftest import need_model
    need_model()
    with open(corpus, encoding="utf-8") as f, open(tmp_path / "corpus.jsonl", "w", encoding="utf-8") as g:
        g.writelines(itertools.islice(f, 150))
    with open(os.path.join(SCIFACT, "queries.jsonl"), encoding="utf-8") as f, \
            open(tmp_path / "queries.jsonl", "w", encoding="utf-8") as g:
        g.writelines(itertools.islice(f, 300))
    idx = str(tmp_path / "idx")
    cli("build", str(tmp_path / "corpus.jsonl"), "-o", idx, "--model", MODEL, "--device", "cpu", "--quiet")
    queries = read_jsonl(tmp_path / "queries.jsonl")
    ids, scores = Index.open(idx).search([q["text"] for q in queries], k=100)
    want = cli_run(idx, "--queries", str(tmp_path / "queries.jsonl"), "-k", "100")
    got = trec_lines([q["_id"] for q in queries], ids, scores)
    assert len(want) > 1000 and got == want


def test_vector_queries_equal_cli(example_index, encoder, tmp_path):
    """A CSR matrix of query vectors against `query --vector-queries` on the same vectors."""
    from splade_index import Index
    queries = read_jsonl(os.path.join(EXAMPLE, "queries.jsonl"))
    Q = encoder.encode([q["text"] for q in queries])
    vocab = encoder.vocab
    with open(tmp_path / "qv.jsonl", "w", encoding="utf-8") as f:
        for q, i in zip(queries, range(Q.shape[0])):
            row = Q[i]
            vec = {vocab[t]: float(w) for t, w in zip(row.indices, row.data)}
            f.write(json.dumps({"id": q["_id"], "vector": vec}) + "\n")
    ids, scores = Index.open(example_index).search(Q, k=20)
    want = cli_run(example_index, "--vector-queries", str(tmp_path / "qv.jsonl"), "-k", "20")
    assert trec_lines([q["_id"] for q in queries], ids, scores) == want


def test_csr_round_trip(encoder, tmp_path):
    """encode -> build from vectors -> search with vectors and with texts: the same answers, each
    document its own best match."""
    from splade_index import Index
    docs = read_jsonl(os.path.join(EXAMPLE, "corpus.jsonl"))
    X = encoder.encode([doc_text(d) for d in docs])
    ix = Index.build(tmp_path / "rt", vectors=X, ids=[d["_id"] for d in docs], model=encoder)
    assert len(ix) == len(docs) and sorted(ix.ids) == sorted(d["_id"] for d in docs)  # ids by internal order
    ids, scores = ix.search(X, k=3)
    assert list(ids[:, 0]) == [d["_id"] for d in docs]
    texts = [doc_text(d) for d in docs]
    ids2, scores2 = ix.search(texts, k=3)
    assert (ids2 == ids).all() and (scores2 == scores).all()
    # scipy formats other than float32 CSR are converted (one copy)
    ids3, scores3 = ix.search(sp.coo_matrix(X.astype(np.float64)), k=3)
    assert (ids3 == ids).all() and (scores3 == scores).all()


def test_vectors_without_model_vocab_and_padding(tmp_path):
    """A vocabulary of our own (no model): columns are its tokens; fewer matches than k pad with
    "" and -inf; text queries are refused with the library's reason."""
    from splade_index import Index, UnsupportedError
    X = sp.csr_matrix(np.array([[1.0, 0, 2.0], [0, 3.0, 0], [0.5, 0.5, 0]], dtype=np.float32))
    ix = Index.build(tmp_path / "v", vectors=X, ids=["a", "b", "c"], vocab=["dog", "cat", "fish"],
                     titles=["A", "B", "C"], texts=["first", "second", "third"])
    assert ix.vocab == ["dog", "cat", "fish"]  # a given vocabulary keeps its order: column = term id
    q = sp.csr_matrix(np.array([[0, 0, 1.0]], dtype=np.float32))
    ids, scores = ix.search(q, k=3)
    assert list(ids[0]) == ["a", "", ""] and scores[0, 0] > 0 and np.isneginf(scores[0, 1:]).all()
    assert ix.doc("b") == ("B", "second")
    with pytest.raises(UnsupportedError, match="precomputed vectors"):
        ix.search("dog")


def test_doc_len_and_missing_id(example_index):
    from splade_index import Index, NotFoundError
    ix = Index.open(example_index)
    assert len(ix) == 40
    assert ix.doc("astro-1")[0] == "Black holes"
    with pytest.raises(NotFoundError, match="nope"):
        ix.doc("nope")
    ids, scores = ix.search("volcano", k=60)  # more than the 40 documents
    assert ids.shape == (1, 60) and ids[0, -1] == "" and np.isneginf(scores[0, -1])


def test_large_batch_runs_in_chunks_with_the_same_answers(example_index, encoder):
    """More than 4,096 queries go through the worker thread in calls of 4,096: the same rows as a
    small batch of the same queries, in order."""
    from splade_index import Index
    from splade_index.index import SEARCH_CHUNK
    queries = [q["text"] for q in read_jsonl(os.path.join(EXAMPLE, "queries.jsonl"))]
    Q = encoder.encode(queries)
    reps = SEARCH_CHUNK // len(queries) + 2
    big = sp.vstack([Q] * reps, format="csr")
    assert big.shape[0] > SEARCH_CHUNK
    ix = Index.open(example_index)
    ids, scores = ix.search(Q, k=7)
    bids, bscores = ix.search(big, k=7)
    assert bids.shape == (big.shape[0], 7)
    assert (bids == np.tile(ids, (reps, 1))).all() and (bscores == np.tile(scores, (reps, 1))).all()
    e_ids, e_scores = ix.search(Q[:0], k=7)
    assert e_ids.shape == e_scores.shape == (0, 7)


def test_search_device_gpu_equals_cpu(example_index, encoder):
    """search(device="cuda"/"auto") answers exactly as the CPU (on the GPU when one is usable; else
    the CPU after one warning for "cuda", none for "auto"); a bad device is an InvalidArgumentError."""
    import warnings
    from splade_index import Index, InvalidArgumentError
    queries = [q["text"] for q in read_jsonl(os.path.join(EXAMPLE, "queries.jsonl"))]
    ix = Index.open(example_index)
    enc = encoder.encode(queries)
    x = sp.vstack([enc, sp.csr_matrix((1, enc.shape[1]), dtype=enc.dtype)]).tocsr()  # and an empty query
    want = ix.search(x, k=7)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = ix.search(x, k=7, device="cuda")
        got_auto = ix.search(x, k=7, device="auto")
    for a, b in (got, want), (got_auto, want):
        assert (a[0] == b[0]).all() and np.array_equal(a[1], b[1])
    if ix._gpu is False:  # no usable GPU: one warning ("cuda"), none for "auto"
        assert len(w) == 1 and "GPU search unavailable" in str(w[0].message)
    else:
        assert not w and ix._gpu
    with pytest.raises(InvalidArgumentError):
        ix.search(x, k=7, device="gpux")
    ix.close()
