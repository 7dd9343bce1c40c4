"""Every error path raises a SpladeError subclass carrying the library's detail text, and a failed
build leaves the index in place answering as before."""
import os
import shutil

import pytest

from conftest import EXAMPLE, MODEL, cli, need_model


def test_missing_model(tmp_path):
    from splade_index import Encoder, NotFoundError, SpladeError
    with pytest.raises(NotFoundError) as e:
        Encoder(str(tmp_path / "no-such-model"), device="cpu")
    assert isinstance(e.value, SpladeError) and e.value.status == -12
    assert "no-such-model" in e.value.detail and e.value.detail in str(e.value)


def test_broken_model(model_copy):
    from splade_index import Encoder, SpladeError
    with open(os.path.join(model_copy, "model.safetensors"), "r+b") as f:
        f.truncate(1000)
    with pytest.raises(SpladeError) as e:
        Encoder(model_copy, device="cpu")
    assert "model.safetensors" in e.value.detail


def test_bad_corpus_line_keeps_previous_index(encoder, example_index, tmp_path):
    from splade_index import FormatError, Index
    idx = str(tmp_path / "idx")
    shutil.copytree(example_index, idx)
    before = Index.open(idx).search("volcano", k=5)
    bad = tmp_path / "bad.jsonl"
    with open(os.path.join(EXAMPLE, "corpus.jsonl"), encoding="utf-8") as f:
        lines = f.readlines()
    lines.insert(3, '{"_id": "x", "text": \n')
    bad.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(FormatError) as e:
        Index.build(idx, corpus=str(bad), model=encoder)
    assert f"{bad}:4" in e.value.detail, e.value.detail
    after = Index.open(idx).search("volcano", k=5)
    assert (before[0] == after[0]).all() and (before[1] == after[1]).all()
    assert sorted(os.listdir(idx)) == ["index.spx"], "stray files after a failed build"


def test_duplicate_id(encoder, tmp_path):
    from splade_index import DuplicateIdError, Index
    X = encoder.encode(["one", "two"])
    with pytest.raises(DuplicateIdError) as e:
        Index.build(tmp_path / "d", vectors=X, ids=["a", "a"], model=encoder)
    assert '"a"' in e.value.detail or "a" in e.value.detail.split()
    assert not os.path.exists(tmp_path / "d" / "index.spx")


def test_bad_vectors(encoder, tmp_path):
    import numpy as np
    import scipy.sparse as sp
    from splade_index import Index, InvalidArgumentError
    X = sp.csr_matrix(np.array([[1.0, -2.0]], dtype=np.float32))
    with pytest.raises(InvalidArgumentError) as e:
        Index.build(tmp_path / "n", vectors=X, ids=["a"], vocab=["x", "y"])
    assert e.value.status == -4 and e.value.detail
    with pytest.raises(InvalidArgumentError, match="ids"):
        Index.build(tmp_path / "n", vectors=X, ids=["a", "b"], vocab=["x", "y"])


def test_corrupted_index(example_index, tmp_path):
    from splade_index import FormatError, Index
    idx = tmp_path / "idx"
    shutil.copytree(example_index, idx)
    spx = idx / "index.spx"
    data = bytearray(spx.read_bytes())
    data[len(data) // 2] ^= 0xFF
    spx.write_bytes(bytes(data))
    with pytest.raises(FormatError) as e:  # ChecksumError is a FormatError
        Index.open(idx)
    assert str(spx) in e.value.detail and e.value.status in (-3, -10)
    spx.write_bytes(bytes(data[:100]))
    with pytest.raises(FormatError, match="index.spx: (truncated|corrupted)"):
        Index.open(idx)


def test_missing_index(tmp_path):
    from splade_index import Index, NotFoundError
    with pytest.raises(NotFoundError) as e:
        Index.open(tmp_path / "nothing")
    assert "no index here" in e.value.detail


def test_wrong_model_for_index(example_index, model_copy):
    """Another model's fingerprint (the same weights with another tokenizer setting) is refused, as
    by `splade-index query --model`, and the index still answers with its own model."""
    from splade_index import Index, MismatchError
    with open(os.path.join(model_copy, "tokenizer_config.json"), "w") as f:
        f.write('{"do_lower_case": false}\n')
    with pytest.raises(MismatchError) as e:
        Index.open(example_index, model=model_copy).search("volcano")
    assert "fingerprint" in e.value.detail and model_copy in e.value.detail
    r = cli("query", "-i", example_index, "--model", model_copy, "volcano", check=False)
    assert r.returncode == 1 and "mismatch" in r.stderr
    assert Index.open(example_index).search("volcano", k=1)[0][0, 0] != ""


def test_detail_is_read_on_the_failing_thread(tmp_path):
    """The detail is thread-local in C: failures on two threads at once keep their own messages."""
    import threading
    from splade_index import Index, NotFoundError
    seen = {}

    def fail(name):
        for _ in range(50):
            try:
                Index.open(tmp_path / name)
            except NotFoundError as e:
                if name not in e.detail:
                    seen[name] = e.detail
    ts = [threading.Thread(target=fail, args=(f"missing-{i}",)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert seen == {}


def test_bad_arguments():
    need_model()
    from splade_index import Encoder, InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="precision"):
        Encoder(MODEL, precision="fp8")
    with pytest.raises(InvalidArgumentError):
        Encoder(MODEL, device="tpu")
    for bad in ("cuda:", "cuda:x", "cuda:-1", "cuda:0,"):  # GPU lists (issue #17): usage errors anywhere
        with pytest.raises(InvalidArgumentError, match="cuda:all"):
            Encoder(MODEL, device=bad)
