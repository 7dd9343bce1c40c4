"""Index.add / update / delete / merge / info (include/splade/segments.h) against independent
references: after any sequence of them the index answers like ONE index built by the CLI from the
live documents in the order they were added (`build --vectors LIVE --doc-scale` of the index's
doc_scale: same ids, same scores, same ranks); the corpus path equals the CLI's `add`."""
import json
import os
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import EXAMPLE, MODEL, cli, read_jsonl, trec_lines

V = 400


def random_docs(rng, n, first):
    """n sparse vectors over V columns, coarse weights (ties), ids d<first>..."""
    rows, cols, vals = [], [], []
    for i in range(n):
        k = int(rng.integers(1, 20))
        c = np.unique(np.minimum(rng.integers(0, V, k), rng.integers(0, V, k)))
        rows += [i] * len(c)
        cols += c.tolist()
        vals += (rng.integers(1, 5, len(c)) * 0.5).tolist()
    x = sp.csr_matrix((np.array(vals, np.float32), (rows, cols)), shape=(n, V))
    return x, [f"d{first + i}" for i in range(n)]


def write_vectors(path, x, ids):
    with open(path, "w", encoding="utf-8") as f:
        for i, doc_id in enumerate(ids):
            row = x.getrow(i)
            f.write(json.dumps({"id": doc_id, "vector": {str(int(c)): float(w) for c, w in
                                                         zip(row.indices, row.data)}}) + "\n")


def assert_same_as_single_build(ix, live, tmp_path, rng):
    """live: [(id, row)] in the order they were added. Every query of a random set, k = 1..50."""
    from splade_index import Index
    path = tmp_path / "live.jsonl"
    x = sp.vstack([r for _, r in live]).tocsr() if live else sp.csr_matrix((0, V), dtype=np.float32)
    write_vectors(path, x, [d for d, _ in live])
    ref_dir = str(tmp_path / "ref")
    shutil.rmtree(ref_dir, ignore_errors=True)
    cli("build", "--vectors", str(path), "-o", ref_dir, "--doc-scale", repr(float(ix.info["doc_scale"])), "--quiet")
    ref = Index.open(ref_dir)
    assert len(ix) == len(ref) == len(live)
    assert sorted(ix.ids) == sorted(d for d, _ in live)
    q, _ = random_docs(rng, 30, 0)
    # the reference's columns are its own sorted vocabulary: map the query's tokens onto each index
    for k in (1, 7, 50):
        got = ix.search(remap(q, ix), k=k)
        want = ref.search(remap(q, ref), k=k)
        assert (got[0] == want[0]).all() and (got[1] == want[1]).all()
    ref.close()


def remap(q, ix):
    """Query columns ("0".."V-1" tokens) as ix's term ids (tokens it lacks dropped)."""
    pos = {t: i for i, t in enumerate(ix.vocab)}
    q = q.tocoo()
    keep = [j for j, c in enumerate(q.col) if str(c) in pos]
    return sp.csr_matrix((q.data[keep], (q.row[keep], [pos[str(q.col[j])] for j in keep])),
                         shape=(q.shape[0], len(ix.vocab)), dtype=np.float32)


def test_add_update_delete_merge_equal_single_build(tmp_path):
    from splade_index import Index, DuplicateIdError
    rng = np.random.default_rng(7)
    x, ids = random_docs(rng, 300, 0)
    ix = Index.build(str(tmp_path / "ix"), vectors=x, ids=ids, vocab=[str(i) for i in range(V)])
    live = [(d, x.getrow(i)) for i, d in enumerate(ids)]
    info = ix.info()
    assert info["generation"] == 0 and len(info["segments"]) == 1 and info["n_docs"] == 300

    y, yids = random_docs(rng, 1200, 300)  # >= 1024 documents: a reordered segment
    st = ix.add(vectors=y, ids=yids, vocab=[str(i) for i in range(V)], merge=False)
    assert st["n_added"] == 1200 and st["n_replaced"] == 0 and st["generation"] == 1
    live += [(d, y.getrow(i)) for i, d in enumerate(yids)]
    assert len(ix.info()["segments"]) == 2 and len(ix) == 1500
    assert_same_as_single_build(ix, live, tmp_path, rng)

    with pytest.raises(DuplicateIdError, match="d5"):
        ix.add(vectors=y[:1], ids=["d5"], vocab=[str(i) for i in range(V)])
    assert len(ix) == 1500

    gone = [f"d{i}" for i in range(0, 1500, 7)]
    st = ix.delete(gone + ["nope", "d0"])
    assert st["n_deleted"] == len(gone) and st["n_unknown"] == 1 and '"nope"' in st["unknown"]
    live = [(d, r) for d, r in live if d not in set(gone)]
    assert ix.info()["n_deleted"] == len(gone)
    assert_same_as_single_build(ix, live, tmp_path, rng)

    u, _ = random_docs(rng, 2, 0)
    st = ix.update(vectors=u, ids=["d1", "d2"], vocab=[str(i) for i in range(V)], merge=False)
    assert st["n_replaced"] == 2
    live = [(d, r) for d, r in live if d not in ("d1", "d2")] + [("d1", u.getrow(0)), ("d2", u.getrow(1))]
    assert_same_as_single_build(ix, live, tmp_path, rng)

    before = ix.info()
    assert before["n_deleted"] == len(gone) + 2  # the updated documents' old versions too
    st1 = ix.merge(max_segments=2)
    assert st1["n_merged"] == 2 and len(ix.info()["segments"]) == 2 and ix.info()["generation"] > before["generation"]
    assert_same_as_single_build(ix, live, tmp_path, rng)
    st = ix.merge()
    assert st1["n_dropped"] + st["n_dropped"] == len(gone) + 2
    info = ix.info()
    assert len(info["segments"]) == 1 and info["n_deleted"] == 0 and st["bytes_out"] > 0
    assert_same_as_single_build(ix, live, tmp_path, rng)
    assert ix.merge()["n_merged"] == 0  # one segment without deletions: nothing to do


def test_delete_strict_and_errors(tmp_path):
    from splade_index import Index, NotFoundError
    rng = np.random.default_rng(3)
    x, ids = random_docs(rng, 50, 0)
    ix = Index.build(str(tmp_path / "ix"), vectors=x, ids=ids)
    with pytest.raises(NotFoundError, match="nothing deleted"):
        ix.delete(["d1", "missing"], strict=True)
    assert len(ix) == 50 and ix.info()["generation"] == 0
    assert ix.delete("d1")["n_deleted"] == 1 and len(ix) == 49
    assert ix.delete([])["n_deleted"] == 0
    other = Index.open(str(tmp_path / "ix"))
    shutil.rmtree(tmp_path / "ix")
    with pytest.raises(NotFoundError):
        other.delete(["d2"])


def test_add_corpus_equals_cli_add(example_index, tmp_path):
    """The corpus path: Index.add of new documents encoded with the index's model answers exactly like
    `splade-index add` of the same file on a copy (TREC runs of the example queries)."""
    from conftest import need_model
    from splade_index import Index
    need_model()
    extra = tmp_path / "extra.jsonl"
    with open(extra, "w", encoding="utf-8") as f:
        for d in read_jsonl(os.path.join(EXAMPLE, "corpus.jsonl"))[:20]:
            d["_id"] = "new-" + str(d["_id"])
            d["text"] = d.get("text", "") + " extra words"
            f.write(json.dumps(d) + "\n")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    shutil.copytree(example_index, a)
    shutil.copytree(example_index, b)
    ix = Index.open(a)
    st = ix.add(corpus=str(extra), device="cpu", merge=False)
    assert st["n_added"] == 20
    cli("add", str(extra), "-i", b, "--device", "cpu", "--no-merge", "--quiet")
    queries = read_jsonl(os.path.join(EXAMPLE, "queries.jsonl"))
    ids, scores = ix.search([q["text"] for q in queries], k=10)
    want = cli("query", "-i", b, "--queries", os.path.join(EXAMPLE, "queries.jsonl"), "-k", "10",
               "--output", "-").stdout.splitlines()
    assert trec_lines([q["_id"] for q in queries], ids, scores) == want
    assert any(d.startswith("new-") for d in ids.ravel())
    info = ix.info()
    assert len(info["segments"]) == 2 and info["segments"][1]["n_docs"] == 20


def test_merge_cancel_flag_reaches_the_library(tmp_path, monkeypatch):
    """Index.merge passes its cancel flag (the one Ctrl-C sets) to splade_index_merge_opts: a flag
    already set stops the merge with CancelledError and the generation stays; then it merges."""
    from splade_index import Index, CancelledError, _call
    rng = np.random.default_rng(11)
    x, ids = random_docs(rng, 40, 0)
    ix = Index.build(str(tmp_path / "ix"), vectors=x, ids=ids)
    y, yids = random_docs(rng, 40, 40)
    ix.add(vectors=y, ids=yids, merge=False)
    g = ix.info()["generation"]

    class SetFlag(_call.Flag):
        def __init__(self):
            super().__init__()
            self.set()
    monkeypatch.setattr(_call, "Flag", SetFlag)
    with pytest.raises(CancelledError, match="cancelled"):
        ix.merge()
    assert ix.info()["generation"] == g and len(ix.info()["segments"]) == 2
    assert sorted(os.listdir(tmp_path / "ix")) == sorted(["MANIFEST", "index.spx", ix.info()["segments"][1]["file"]])
    monkeypatch.undo()
    assert ix.merge()["n_merged"] == 2 and len(ix.info()["segments"]) == 1


def test_bounded_add_writes_several_segments(tmp_path):
    """memory= (`add --memory`): past the budget the documents so far become a segment; all of them
    are installed together and answer like one build; then the policy merges them down."""
    from splade_index import Index
    rng = np.random.default_rng(5)
    x, ids = random_docs(rng, 50, 0)
    vocab = [str(i) for i in range(V)]
    ix = Index.build(str(tmp_path / "ix"), vectors=x, ids=ids, vocab=vocab)
    y, yids = random_docs(rng, 1500, 50)
    st = ix.add(vectors=y, ids=yids, vocab=vocab, memory=64 << 10, merge=False)
    segs = ix.info()["segments"]
    assert st["n_added"] == 1500 and len(segs) >= 3 and st["generation"] == 1
    live = [(d, x.getrow(i)) for i, d in enumerate(ids)] + [(d, y.getrow(i)) for i, d in enumerate(yids)]
    assert_same_as_single_build(ix, live, tmp_path, rng)
    st = ix.merge(max_segments=2)
    assert st["n_merged"] == len(segs) - 1 and len(ix.info()["segments"]) == 2
    assert_same_as_single_build(ix, live, tmp_path, rng)
