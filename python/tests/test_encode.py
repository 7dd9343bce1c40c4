"""Encoder against the CLI: same vectors, same tokens, same index."""
import ctypes
import filecmp
import json
import os
import random

import numpy as np
import scipy.sparse as sp

from conftest import EXAMPLE, MODEL, cli, doc_text, read_jsonl

CORPUS = os.path.join(EXAMPLE, "corpus.jsonl")


_strtof = ctypes.CDLL(None).strtof  # the C library's parser: the CLI's own round trip (cmd_encode.c)
_strtof.restype, _strtof.argtypes = ctypes.c_float, [ctypes.c_char_p, ctypes.c_void_p]


def f32_bits(text):
    """The float32 a printed weight reads back to (strtof, as the CLI checked), as its bit pattern."""
    return np.float32(_strtof(text.encode(), None)).view(np.uint32)


def cli_vectors(*args):
    """`splade-index encode` output: [(id, [(token, float32 bits)])]. The CLI prints each weight with
    the shortest of %.6g .. %.9g that strtof reads back to the same float32, so the bits are exact."""
    out = cli("encode", "--model", MODEL, "--device", "cpu", "--quiet", *args).stdout
    rows = [json.loads(line, parse_float=str, parse_int=str, object_pairs_hook=list) for line in out.splitlines()]
    return [(dict(r)["id"], [(tok, f32_bits(w)) for tok, w in dict(r)["vector"]]) for r in rows]


def python_rows(encoder, X):
    """Python's rows in the CLI's shape: tokens by ascending id, float32 bits."""
    vocab = encoder.vocab
    return [[(vocab[t], w) for t, w in zip(X[i].indices, X[i].data.view(np.uint32))] for i in range(X.shape[0])]


def assert_same_vectors(encoder, X, want):
    assert isinstance(X, sp.csr_matrix) and X.dtype == np.float32 and X.shape == (len(want), encoder.vocab_size)
    got = python_rows(encoder, X)
    for i, (_, vec) in enumerate(want):
        assert got[i] == vec, f"text {i}: first difference at " + str(
            next((j, a, b) for j, (a, b) in enumerate(zip(got[i] + [None] * len(vec), vec + [None] * len(got[i])))
                 if a != b))


def test_encode_equals_cli_bit_for_bit(encoder):
    """Every term and the exact float32 of every weight of every document of data/example."""
    docs = read_jsonl(CORPUS)
    X = encoder.encode([doc_text(d) for d in docs])
    want = cli_vectors("--input", CORPUS)
    assert [i for i, _ in want] == [d["_id"] for d in docs]
    assert_same_vectors(encoder, X, want)


def random_texts(n, seed):
    """Texts of vocabulary words, accented and non-Latin letters, CJK, emoji, combining marks,
    punctuation and whitespace, of lengths from empty to far beyond max_length."""
    rng = random.Random(seed)
    words = ["protein", "folding", "cell", "the", "of", "black", "hole", "naïve", "café", "Ünïcödé", "日本語",
             "中文", "한국어", "Ελληνικά", "кириллица", "עברית", "العربية", "e\u0301", "😀", "👩‍🔬", "ﬁ", "Å",
             "...", "--", "(x)", "[MASK]", "[CLS]", "##ing", "3.14", "1,000", "\t", "\u00a0", "x" * 40]
    texts = ["", " ", "\n\t "]
    while len(texts) < n:
        k = rng.choice([1, 3, 10, 40, 120, 400, 700])
        texts.append(" ".join(rng.choice(words) for _ in range(k)))
    rng.shuffle(texts)
    return texts


def test_encode_random_texts_equal_cli_bit_for_bit(encoder, tmp_path):
    """300 random texts (over one CLI chunk of 256, so the chunking is exercised; empty, unicode, and
    texts truncated at max_length among them), through `encode --input` and as TEXT arguments."""
    texts = random_texts(300, seed=10)
    with open(tmp_path / "t.jsonl", "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"_id": f"t{i}", "title": "", "text": t}, ensure_ascii=False) + "\n")
    X = encoder.encode(texts)
    assert encoder.last_truncated > 0 and X[texts.index("")].nnz > 0
    want = cli_vectors("--input", str(tmp_path / "t.jsonl"))
    assert [i for i, _ in want] == [f"t{i}" for i in range(len(texts))]
    assert_same_vectors(encoder, X, want)
    assert_same_vectors(encoder, X, cli_vectors("--", *texts))  # arguments: the same chunks of 256
    # one group (query --queries' grouping) is another batching: the same vectors up to the last bits
    Y = encoder.encode(texts, chunk=None)
    assert abs(Y - X).max() <= 1e-5 * X.max()


def test_encode_top_k_threshold_equal_cli(encoder):
    texts = ["a black hole swallows light", "the ocean tides follow the moon", ""]
    for k, t in ((5, None), (None, 0.5), (3, 0.8)):
        args = (["--top-k", str(k)] if k else []) + (["--threshold", str(t)] if t is not None else [])
        X = encoder.encode(texts, top_k=k, threshold=t)
        assert_same_vectors(encoder, X, cli_vectors(*args, *texts))
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


def test_cpu_precision_opt_in():
    """The CPU computes in fp32 unless precision is given (issue #13): None and "fp32" are the same
    bits; "bf16" (where the CPU has AMX / AVX512-BF16) moves weights by bf16 rounding only, and is
    the CLI's `--precision bf16` bit for bit."""
    import pytest
    from splade_index import Encoder, SpladeError
    texts = ["A black hole traps light.", "The Moon drives tides and p53 regulates apoptosis."]
    base = Encoder(MODEL, device="cpu").encode(texts)
    assert (base != Encoder(MODEL, device="cpu", precision="fp32").encode(texts)).nnz == 0
    try:
        enc = Encoder(MODEL, device="cpu", precision="bf16")
    except SpladeError as e:
        pytest.skip("no bf16 on this CPU/build: %s" % e)
    X = enc.encode(texts)
    diff = abs(X - base)
    assert 0 < diff.max() < 0.1, "bf16 must run (differ) yet stay close"
    assert_same_vectors(enc, X, cli_vectors("--precision", "bf16", *texts))


def test_cpu_int8_opt_in():
    """precision="int8" (issue #13): the CPU's int8 forward where it has VNNI / AMX-INT8 (else a
    SpladeError naming what is missing), close to fp32 (tests/test_encoder_cpu_int8.c holds the
    tolerance) and the CLI's `--precision int8` bit for bit; int8 is CPU-only, so device "cuda"
    with it is an error, whatever the machine."""
    import pytest
    from splade_index import Encoder, SpladeError
    with pytest.raises(SpladeError, match="CPU only"):
        Encoder(MODEL, device="cuda", precision="int8")
    texts = ["A black hole traps light.", "The Moon drives tides and p53 regulates apoptosis."]
    base = Encoder(MODEL, device="cpu").encode(texts)
    try:
        enc = Encoder(MODEL, device="cpu", precision="int8")
    except SpladeError as e:
        assert "needs" in str(e)
        pytest.skip("no int8 on this CPU/build: %s" % e)
    X = enc.encode(texts)
    diff = abs(X - base)
    assert 0 < diff.max() < 0.3, "int8 must run (differ) yet stay close"
    assert_same_vectors(enc, X, cli_vectors("--precision", "int8", *texts))
