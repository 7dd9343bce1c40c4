"""`splade-index export --format parquet` (python3 -m splade_index.parquet behind it): the Parquet
file holds exactly the vectors of `export --format columns`, with the documented schema; bad input
to the writer is refused naming the line."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import EXAMPLE, MODEL, cli, need_model

pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (python/tests/check.sh installs it when online)")


def test_export_parquet_equals_columns(tmp_path):
    need_model()
    corpus = os.path.join(EXAMPLE, "corpus.jsonl")
    out = tmp_path / "v.parquet"
    env = {"SPLADE_PYTHON": sys.executable, "PYTHONPATH": os.pathsep.join(sys.path)}
    cli("export", "--quiet", "--format", "parquet", "--output", str(out), "--model", MODEL, "--device", "cpu",
        "--input", corpus, env=env)
    cols = [json.loads(l) for l in cli("export", "--quiet", "--format", "columns", "--model", MODEL, "--device", "cpu",
                                       "--input", corpus).stdout.splitlines()]
    t = pq.read_table(out)
    assert [str(f.type) for f in t.schema] == ["string", "list<element: int32>", "list<element: float>"]
    assert t.schema.names == ["id", "term_ids", "weights"]
    got = t.to_pylist()
    assert [(r["id"], r["term_ids"]) for r in got] == [(c["id"], c["term_ids"]) for c in cols]
    for r, c in zip(got, cols):  # float32 both ways: the JSON prints each float32 so that it reads back exactly
        assert np.array_equal(np.array(r["weights"], dtype=np.float32), np.array(c["weights"], dtype=np.float32))


def test_parquet_writer_bad_input(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "term_ids": [1], "weights": [0.5]}\n{"id": "b", "term_ids": [1, 2], "weights": [1]}\n')
    r = subprocess.run([sys.executable, "-m", "splade_index.parquet", str(tmp_path / "o.parquet"), "--input", str(bad)],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 1 and "line 2" in r.stderr
    r = subprocess.run([sys.executable, "-m", "splade_index.parquet", str(tmp_path / "o.parquet")], input="{oops\n",
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 1 and "line 1" in r.stderr


def test_export_parquet_without_writer(tmp_path):
    need_model()
    v = tmp_path / "v.jsonl"
    v.write_text('{"id": "a", "vector": {"the": 1.0}}\n')
    r = cli("export", "--quiet", "--format", "parquet", "--output", str(tmp_path / "x.parquet"), "--vectors", str(v),
            env={"SPLADE_PYTHON": "/nonexistent/python3"}, check=False)
    assert r.returncode == 1 and "Parquet writer" in r.stderr
