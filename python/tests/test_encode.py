"""Encoder against the CLI: same vectors, same tokens, same index."""
import filecmp
import json
import os

import numpy as np
import scipy.sparse as sp

from conftest import EXAMPLE, MODEL, cli, doc_text, read_jsonl

CORPUS = os.path.join(EXAMPLE, "corpus.jsonl")


def cli_vectors(*args):
    """`splade-index encode` output: [(id, [(token, weight as printed)])], the literal text of each
    weight kept (json's parse_float=str)."""
    out = cli("encode", "--model", MODEL, "--device", "cpu", "--quiet", *args).stdout
    rows = [json.loads(line, parse_float=str, object_pairs_hook=list) for line in out.splitlines()]
    return [(dict(r)["id"], dict(r)["vector"]) for r in rows]


def python_printed(encoder, row):
    """A row as the CLI prints it: tokens by ascending id, weights with %.6g (cmd_encode.c)."""
    vocab = encoder.vocab
    return [(vocab[t], "%.6g" % w) for t, w in zip(row.indices, row.data)]


def test_encode_equals_cli_output(encoder):
    """Every term and every printed weight of every document of data/example. The CLI prints weights
    with %.6g (6 significant digits, float32 needs 9), so this compares what it prints; the
    index route below compares the full-precision vectors through the index file."""
    docs = read_jsonl(CORPUS)
    X = encoder.encode([doc_text(d) for d in docs])
    assert isinstance(X, sp.csr_matrix) and X.dtype == np.float32 and X.shape == (len(docs), encoder.vocab_size)
    want = cli_vectors("--input", CORPUS)
    assert [i for i, _ in want] == [d["_id"] for d in docs]
    for i, (_, vec) in enumerate(want):
        assert python_printed(encoder, X[i]) == vec, f"document {i}"


def test_encode_top_k_threshold_equal_cli(encoder):
    texts = ["a black hole swallows light", "the ocean tides follow the moon", ""]
    for k, t in ((5, None), (None, 0.5), (3, 0.8)):
        args = (["--top-k", str(k)] if k else []) + (["--threshold", str(t)] if t is not None else [])
        want = cli_vectors(*args, *texts)
        X = encoder.encode(texts, top_k=k, threshold=t)
        for i in range(len(texts)):
            assert python_printed(encoder, X[i]) == want[i][1], (k, t, i)
        if k:
            assert np.diff(X.indptr).max() <= k


def test_index_from_python_vectors_is_the_cli_index_byte_for_byte(encoder, tmp_path, monkeypatch):
    """Full precision: the CLI's `build` (its own encoder) and an index built from Python's
    vectors hold the same 8-bit impacts, scale, ids and texts: the files are identical."""
    from splade_index import Index
    env = {"SOURCE_DATE_EPOCH": "1700000000"}
    monkeypatch.setenv("SOURCE_DATE_EPOCH", env["SOURCE_DATE_EPOCH"])
    cli("build", CORPUS, "-o", str(tmp_path / "cli"), "--model", MODEL, "--device", "cpu", "--quiet", env=env)
    docs = read_jsonl(CORPUS)
    X = encoder.encode([doc_text(d) for d in docs])
    Index.build(tmp_path / "vec", vectors=X, ids=[d["_id"] for d in docs], titles=[d.get("title", "") for d in docs],
                texts=[d["text"] for d in docs], model=encoder)
    Index.build(tmp_path / "corpus", corpus=CORPUS, model=encoder)
    cli_file = str(tmp_path / "cli" / "index.spx")
    assert filecmp.cmp(cli_file, str(tmp_path / "vec" / "index.spx"), shallow=False)
    assert filecmp.cmp(cli_file, str(tmp_path / "corpus" / "index.spx"), shallow=False)


def test_tokenize_equals_cli(encoder):
    texts = ["Hello, World! naïve café", "[CLS] literal [MASK] tokens", "", "x " * 400]
    out = cli("tokenize", "--model", MODEL, "--max-length", "256", *texts).stdout
    assert encoder.tokenize(texts) == [json.loads(line) for line in out.splitlines()]
    assert encoder.tokenize("a b", max_length=3) == [[101, 1037, 102]]


def test_vocab_decode(encoder):
    assert len(encoder.vocab) == encoder.vocab_size == 30522
    assert encoder.vocab[101] == "[CLS]"
    X = encoder.encode(["a black hole"])
    d = encoder.decode(X[0])
    assert list(d.values()) == sorted(d.values(), reverse=True)
    assert d["black"] == float(X[0, encoder.vocab.index("black")])
    assert len(d) == X.nnz


def test_empty_and_bytes_inputs(encoder):
    assert encoder.encode([]).shape == (0, encoder.vocab_size)
    a = encoder.encode("caf\u00e9")
    b = encoder.encode([b"caf\xc3\xa9"])
    assert (a != b).nnz == 0
    # ill-formed UTF-8 is dropped by the tokenizer, as for a file
    assert (encoder.encode([b"caf\xc3\xa9\xff"]) != a).nnz == 0
