"""splade_index.integrations.ray on a local Ray cluster (2 CPUs, splade-tiny on the CPU): the shards
EncodeChunks writes, concatenated in order, are byte for byte `splade-index encode --input` of the same
corpus (SciFact's first N_DOCS documents, 3 chunks of 256, so that two actors share the work; texts cut
at 128 tokens to keep the test short), and `build --vectors` takes them; EncodeBatch over an ordinary
Ray dataset gives the same vectors up to the last bits its batching may change. Skips visibly without
ray."""
import glob
import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import EXAMPLE, MODEL, SCIFACT, cli, need_model

ray = pytest.importorskip("ray", reason="ray not installed (python/tests/check.sh installs it when online)")

N_DOCS, MAX_LEN = 600, 128


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {k: os.environ[k] for k in ("SPLADE_LIB", "PYTHONPATH") if k in os.environ}})
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    src = os.path.join(SCIFACT, "corpus.jsonl")
    if not os.path.isfile(src):
        pytest.skip(f"SciFact absent at {SCIFACT}")
    path = tmp_path_factory.mktemp("ray") / "corpus.jsonl"
    with open(src, encoding="utf-8") as f, open(path, "w", encoding="utf-8") as out:
        for i, line in enumerate(itertools.islice(f, N_DOCS)):
            out.write(line + ("\n" if i % 100 == 7 else ""))  # blank lines: skipped by both
    return str(path)


def test_plan_chunks(corpus, tmp_path):
    from splade_index.integrations.ray import plan_chunks, read_chunk
    plan = plan_chunks(corpus)
    assert [p["chunk"] for p in plan] == [0, 1, 2]
    ids = [i for p in plan for i in read_chunk(p)[0]]
    want = [json.loads(l)["_id"] for l in open(corpus, encoding="utf-8") if l.strip()]
    assert ids == want and [len(read_chunk(p)[0]) for p in plan] == [256, 256, N_DOCS - 512]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"_id": "a", "text": "x"}\n{"_id": "b"}\n')
    with pytest.raises(ValueError, match="text"):
        read_chunk(plan_chunks(str(bad))[0])


def test_ray_shards_equal_encode(cluster, corpus, tmp_path):
    need_model()
    from splade_index.integrations.ray import EncodeChunks, plan_chunks
    out = tmp_path / "vectors"
    done = ray.data.from_items(plan_chunks(corpus)).map_batches(
        EncodeChunks, batch_size=1, concurrency=2, num_cpus=1,
        fn_constructor_kwargs={"out_dir": str(out), "model": MODEL, "device": "cpu", "threads": 1,
                               "max_length": MAX_LEN})
    rows = sorted(done.iter_rows(), key=lambda r: r["chunk"])
    assert [int(r["n"]) for r in rows] == [256, 256, N_DOCS - 512]
    shards = sorted(glob.glob(str(out / "part-*.jsonl")))
    assert len(shards) == 3
    got = b"".join(open(s, "rb").read() for s in shards)
    want = cli("encode", "--model", MODEL, "--device", "cpu", "--max-length", str(MAX_LEN), "--quiet",
               "--input", corpus).stdout.encode()
    assert got == want
    # build --vectors takes a shard as it is, add --vectors the others
    ix = str(tmp_path / "idx")
    cli("build", "--quiet", "--vectors", shards[0], "-o", ix)
    for s in shards[1:]:
        cli("add", "--quiet", "--vectors", s, "-i", ix)
    assert f"live documents: {N_DOCS} in 3 segments" in cli("info", "-i", ix).stdout


def test_encode_batch_on_a_dataset(cluster, encoder):
    from splade_index.integrations.ray import EncodeBatch
    rows = [json.loads(l) for l in open(os.path.join(EXAMPLE, "corpus.jsonl"), encoding="utf-8") if l.strip()]
    ds = ray.data.from_items([{"_id": r["_id"], "title": r.get("title", ""), "text": r["text"]} for r in rows])
    out = ds.map_batches(EncodeBatch, batch_size=16, concurrency=1, num_cpus=1,
                         fn_constructor_kwargs={"model": MODEL, "device": "cpu", "threads": 1}).take_all()
    got = {r["id"]: json.loads(r["vector"])["vector"] for r in out}
    X = encoder.encode([f"{r['title']} {r['text']}" if r.get("title") else r["text"] for r in rows])
    for i, r in enumerate(rows):
        want = {encoder.vocab[t]: float(w) for t, w in zip(X[i].indices, X[i].data)}
        assert got[r["_id"]].keys() == want.keys()
        np.testing.assert_allclose([got[r["_id"]][k] for k in want], list(want.values()), rtol=1e-5)


def test_example_script(corpus, tmp_path):
    """examples/ray_encode.py end to end on its own local cluster (a separate process)."""
    need_model()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, os.path.join(repo, "examples", "ray_encode.py"), corpus, str(tmp_path / "v"),
                        "--actors", "2", "--cpus", "2", "--model", MODEL, "--max-length", str(MAX_LEN)],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"{N_DOCS} documents in 3 shards" in r.stderr
