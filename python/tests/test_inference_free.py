"""Inference-free ("doc-only") models (issue 15): Index.search on text encodes queries from the
model's query table, as `splade-index query` does, not by the forward pass; the runs are equal line
for line. Random-weight models of `make models` (cache/rand-docv3: sentence-transformers Router,
cache/rand-docv2-idf: plain folder + idf.json)."""
import os
import subprocess

import pytest

from conftest import CLI, EXAMPLE, REPO, cli, read_jsonl, trec_lines


@pytest.mark.parametrize("model", ["rand-docv3", "rand-docv2-idf"])
def test_search_texts_query_table_equals_cli(tmp_path, model):
    d = os.path.join(REPO, "cache", model)
    if not os.path.isdir(d):
        pytest.skip(f"{d} absent (run `make models`)")
    from splade_index import Index
    idx = str(tmp_path / "idx")
    cli("build", os.path.join(EXAMPLE, "corpus.jsonl"), "-o", idx, "--model", d, "--device", "cpu", "--quiet")
    qpath = os.path.join(EXAMPLE, "queries.jsonl")
    queries = read_jsonl(qpath)
    ix = Index.open(idx)
    ids, scores = ix.search([q["text"] for q in queries], k=10)
    run = str(tmp_path / "run.trec")
    cli("query", "-i", idx, "--queries", qpath, "-k", "10", "-o", run)
    with open(run) as f:
        want = f.read().splitlines()
    assert trec_lines([q["_id"] for q in queries], ids, scores) == want
    assert len(want) > 0
