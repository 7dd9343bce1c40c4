"""splade_index.integrations.milvus against Milvus Lite (pip milvus-lite: the client API of a Milvus
cluster run in process; its 3.x engine searches exactly, so this tests the hand-off, not Milvus's
speed). On a SciFact subset (the first N_DOCS documents, the first N_QUERIES queries: encoding the
5,183 documents with splade-tiny takes minutes on 2 shared cores), Milvus's top-10 is compared with
splade-index's on the same vectors: Milvus's scores must be the exact float dot products (nothing
lost in the hand-off), ours within our 8-bit quantization's error of them, and the two top-10s the
same documents except where the exact scores are closer than that error. Skips visibly when
pymilvus / milvus-lite or SciFact are absent."""
import itertools
import json
import os

import numpy as np
import pytest

from conftest import SCIFACT, doc_text

pytest.importorskip("pymilvus", reason="pymilvus not installed (python/tests/check.sh installs it when online)")
pytest.importorskip("milvus_lite", reason="milvus-lite not installed (python/tests/check.sh installs it when online)")

N_DOCS, N_QUERIES, K = 1000, 200, 10


def first(path, n):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in itertools.islice(f, n)]


@pytest.fixture(scope="module")
def scifact():
    corpus, queries = os.path.join(SCIFACT, "corpus.jsonl"), os.path.join(SCIFACT, "queries.jsonl")
    if not (os.path.isfile(corpus) and os.path.isfile(queries)):
        pytest.skip(f"SciFact absent at {SCIFACT}")
    docs, qs = first(corpus, N_DOCS), first(queries, N_QUERIES)
    return [d["_id"] for d in docs], [doc_text(d) for d in docs], [q["text"] for q in qs]


def quantization_bound(q, x, doc_scale):
    """Largest |quantized score - exact score| for query row q and document row x (dicts): per shared
    term, an impact is off by at most one unit (half a unit of rounding, or the floor at impact 1)."""
    qs = max(q.values()) / 255.0
    return sum(q[t] * doc_scale + w * qs + doc_scale * qs for t, w in x.items() if t in q)


def test_milvus_top10_matches_ours(tmp_path, encoder, scifact):
    from splade_index import Index
    from splade_index.integrations.milvus import MilvusSparse, csr_rows
    ids, texts, queries = scifact
    X = encoder.encode(texts)
    Q = encoder.encode(queries, chunk=None)
    ix = Index.build(str(tmp_path / "idx"), vectors=X, ids=ids, model=encoder)
    ours_ids, ours_scores = ix.search(Q, k=K)

    m = MilvusSparse(str(tmp_path / "milvus.db"), "scifact", encoder)
    m.create()
    assert m.insert_vectors(ids, X, batch_size=300) == N_DOCS  # 4 requests
    assert m.count() == N_DOCS
    theirs = m.search(Q, k=K)

    rows, qrows = dict(zip(ids, csr_rows(X))), csr_rows(Q)
    doc_scale = float(np.float32(X.max() / 255.0))
    exact = lambda q, d: sum(w * rows[d].get(t, 0.0) for t, w in q.items())
    same_sets = 0
    for i, q in enumerate(qrows):
        mine = [d for d in ours_ids[i] if d != ""]
        other = [d for d, _ in theirs[i]]
        assert len(other) == len(mine), f"query {i}: {len(other)} Milvus hits, {len(mine)} ours"
        for d, s in theirs[i]:  # the hand-off loses nothing: float32 dot products
            assert s == pytest.approx(exact(q, d), rel=1e-5, abs=1e-6), f"query {i} doc {d}"
        for d, s in zip(mine, ours_scores[i]):
            assert abs(s - exact(q, d)) <= quantization_bound(q, rows[d], doc_scale) * 1.0001 + 1e-6, \
                f"query {i} doc {d}: ours {s}, exact {exact(q, d)}"
        if set(mine) == set(other):
            same_sets += 1
            continue
        # a difference only where the exact scores are within the quantization error of the cut
        cut = min(s for _, s in theirs[i])
        slack = 2 * max(quantization_bound(q, rows[d], doc_scale) for d in set(mine) | set(other))
        for d in set(mine) ^ set(other):
            assert abs(exact(q, d) - cut) <= slack + 1e-6, \
                f"query {i}: {d} differs (exact {exact(q, d)}, Milvus 10th {cut}, error bound {slack})"
    print(f"\nMilvus Lite vs splade-index, SciFact first {N_DOCS} docs / {N_QUERIES} queries: "
          f"{same_sets}/{len(qrows)} identical top-{K} sets")
    assert same_sets >= 0.8 * len(qrows)


def test_milvus_bad_input(tmp_path, encoder):
    from splade_index.integrations.milvus import MilvusSparse
    m = MilvusSparse(str(tmp_path / "m.db"), "c", encoder)
    m.create()
    with pytest.raises(ValueError, match="exists"):
        m.create()
    m.create(drop=True)
    X = encoder.encode(["a", "b"])
    with pytest.raises(ValueError, match="1 ids for 2 vectors"):
        m.insert_vectors(["x"], X)
    X0 = X.copy()
    X0.data[X0.indptr[0]:X0.indptr[1]] = 0
    X0.eliminate_zeros()
    with pytest.raises(ValueError, match="'x' has an empty vector"):
        m.insert_vectors(["x", "y"], X0)
