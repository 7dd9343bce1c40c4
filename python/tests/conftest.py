"""Shared fixtures: the CLI and library under test, the model, the bundled example data.

$SPLADE_CLI names the splade-index binary to compare against (python/tests/check.sh sets it to the
build the library comes from); default: build/splade-index of this checkout."""
import json
import os
import shutil
import subprocess

import pytest

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(REPO, "data", "example")
SCIFACT = os.path.join(REPO, "..", "shared", "data", "scifact")
MODEL = os.path.join(REPO, "cache", "splade-tiny")
CLI = os.environ.get("SPLADE_CLI") or os.path.join(REPO, "build", "splade-index")


def need_model():
    if not os.path.isfile(os.path.join(MODEL, "model.safetensors")):
        pytest.skip(f"{MODEL} absent (run `make models`)")


def cli(*args, env=None, check=True):
    """Runs the CLI; returns the CompletedProcess (text mode)."""
    if not os.access(CLI, os.X_OK):
        pytest.skip(f"{CLI} not built")
    e = dict(os.environ, **(env or {}))
    r = subprocess.run([CLI, *args], capture_output=True, text=True, env=e)
    if check and r.returncode != 0:
        raise AssertionError(f"splade-index {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def doc_text(d):
    """The text the CLI encodes for a corpus record (include/splade/corpus.h)."""
    body = d.get("text", d.get("contents", ""))
    return f"{d['title']} {body}" if d.get("title") else body


def trec_lines(query_ids, ids, scores, tag="splade-index"):
    """TREC lines as `splade-index query --output` writes them (src/cli/cmd_query.c: %.9g)."""
    out = []
    for qid, row_ids, row_scores in zip(query_ids, ids, scores):
        for rank, (d, s) in enumerate(zip(row_ids, row_scores), 1):
            if d == "":
                break
            out.append(f"{qid} Q0 {d} {rank} {s:.9g} {tag}")
    return out


@pytest.fixture(scope="session")
def encoder():
    need_model()
    from splade_index import Encoder
    return Encoder(MODEL, device="cpu")


@pytest.fixture(scope="session")
def example_index(tmp_path_factory):
    """data/example indexed by the CLI."""
    need_model()
    d = str(tmp_path_factory.mktemp("example") / "idx")
    cli("build", os.path.join(EXAMPLE, "corpus.jsonl"), "-o", d, "--model", MODEL, "--device", "cpu", "--quiet")
    return d


@pytest.fixture
def model_copy(tmp_path):
    need_model()
    dest = tmp_path / "model"
    shutil.copytree(MODEL, dest)
    return str(dest)
