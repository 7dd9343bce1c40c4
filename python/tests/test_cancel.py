"""Ctrl-C (SIGINT) stops a long library call: a child process runs Index.build / Encoder.encode over a
generated corpus of 3,000 documents, the test interrupts it once the work is under way, and checks that
KeyboardInterrupt came within about one chunk of documents (not at the end of the work), that the
previous index is byte for byte the same and still opens and answers, that no temporary or lock file
is left, and that the encoder works afterwards with the same results."""
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from conftest import EXAMPLE, MODEL, need_model

N_DOCS = 3000

CHILD = r"""
import signal, sys, time
# started from a shell's background job, the child may inherit SIGINT ignored (then Python installs no
# handler of its own): give it Python's, as an interactive session has
signal.signal(signal.SIGINT, signal.default_int_handler)
from splade_index import Encoder, Index
what, model, idx, corpus = sys.argv[1:5]
enc = Encoder(model, device="cpu")
texts = [l for l in open(corpus, encoding="utf-8")]
def progress(done, total):
    print("progress", done, time.monotonic(), flush=True)
try:
    if what == "build":
        Index.build(idx, corpus=corpus, model=enc, progress=progress)
    else:
        print("progress", 0, time.monotonic(), flush=True)
        enc.encode(texts)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
    probe = ["protein folding", "black hole"] * 40
    a, b = enc.encode(probe), Encoder(model, device="cpu").encode(probe)
    print("after", int((a != b).nnz), a.nnz, flush=True)
    sys.exit(42)
print("completed", flush=True)
"""


def write_corpus(path, n, seed=3):
    rng = random.Random(seed)
    words = ("protein cell gene tumor virus binding receptor expression patients mice study brain "
             "insulin signal pathway clinical trial dose risk mutation structure").split()
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(80, 200)))
            f.write(json.dumps({"_id": f"g{i}", "title": "", "text": text}) + "\n")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def interrupt_child(what, idx, corpus, after_reports=2, delay=None):
    """Starts the child, waits for `after_reports` progress lines and then `delay` seconds (default:
    half the time between the last two reports, so that the signal lands inside a chunk, between two
    encoder batches), sends SIGINT; returns (seconds one chunk took, seconds from SIGINT to
    KeyboardInterrupt, the child's output lines, exit status)."""
    if sys.platform == "win32":
        pytest.skip("POSIX signals")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    p = subprocess.Popen([sys.executable, "-c", CHILD, what, MODEL, idx, corpus], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    lines, times = [], []
    try:
        while len(times) < after_reports:
            line = p.stdout.readline()
            assert line, f"child ended early: {lines} {p.stderr.read()}"
            lines.append(line.split())
            if lines[-1][0] == "progress":
                times.append(time.monotonic())
        time.sleep(delay if delay is not None else (times[-1] - times[-2]) / 2)
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
    lines += [line.split() for line in out.splitlines()]
    got = [line for line in lines if line[0] == "interrupted"]
    assert got, f"no KeyboardInterrupt in the child: {lines[-3:]} {err[-2000:]}"
    chunk = times[-1] - times[-2] if len(times) > 1 else 0.0
    return chunk, float(got[0][1]) - sent, lines, p.returncode


def check_encoder_after(lines):
    after = [line for line in lines if line[0] == "after"]
    assert after and after[0][1] == "0" and int(after[0][2]) > 0, lines[-3:]


def test_ctrl_c_stops_a_corpus_build_and_keeps_the_previous_index(tmp_path):
    need_model()
    from splade_index import Index
    idx = str(tmp_path / "idx")
    previous = Index.build(idx, corpus=os.path.join(EXAMPLE, "corpus.jsonl"), model=MODEL, device="cpu")
    before_ids, before_scores = previous.search(["volcano", "black hole"], k=5)
    previous.close()
    spx = os.path.join(idx, "index.spx")
    digest = sha(spx)
    corpus = str(tmp_path / "big.jsonl")
    write_corpus(corpus, N_DOCS)

    chunk, latency, lines, rc = interrupt_child("build", idx, corpus)
    assert rc == 42 and not any(line[0] == "completed" for line in lines)
    reported = [int(line[1]) for line in lines if line[0] == "progress"]
    assert max(reported) < N_DOCS, "the build ran to its end"
    # within the chunk in flight (the encoder stops before its next batch of 16), plus slack for a loaded
    # machine; all remaining chunks would take many times that
    assert latency < chunk + 2.0, (latency, chunk)
    print(f"stopped {latency:.3f} s after SIGINT; a chunk of 256 documents takes {chunk:.3f} s")
    check_encoder_after(lines)

    assert sha(spx) == digest, "the previous index was modified"
    assert sorted(os.listdir(idx)) == ["index.spx"], "temporary or lock files left behind"
    ix = Index.open(idx)
    assert len(ix) == 40
    after_ids, after_scores = ix.search(["volcano", "black hole"], k=5)
    assert (after_ids == before_ids).all() and (after_scores == before_scores).all()


def test_ctrl_c_stops_a_long_encode_within_a_batch(tmp_path):
    """One library call for all 3,000 texts: Ctrl-C stops it before the encoder's next batch."""
    need_model()
    corpus = str(tmp_path / "big.jsonl")
    write_corpus(corpus, N_DOCS)
    from splade_index import Encoder
    enc = Encoder(MODEL, device="cpu")
    with open(corpus, encoding="utf-8") as f:
        sample = [next(f) for _ in range(256)]
    start = time.monotonic()
    enc.encode(sample)  # one chunk's worth, the scale of "promptly"
    chunk = time.monotonic() - start
    enc.close()
    # a second into the one call (of ~12 chunks' work): only the encoder's own flag can stop it soon
    _, latency, lines, rc = interrupt_child("encode", str(tmp_path / "unused"), corpus, after_reports=1, delay=1.0)
    assert rc == 42 and not any(line[0] == "completed" for line in lines)
    assert latency < chunk + 2.0, (latency, chunk)
    print(f"stopped {latency:.3f} s after SIGINT; 256 texts take {chunk:.3f} s")
    check_encoder_after(lines)


def test_raising_progress_callback_stops_the_build(tmp_path, encoder):
    """A progress callable that raises stops the build like Ctrl-C: its exception comes out of
    Index.build once the library stopped, and the previous index stays."""
    from splade_index import Index
    idx = str(tmp_path / "idx")
    Index.build(idx, corpus=os.path.join(EXAMPLE, "corpus.jsonl"), model=encoder)
    digest = sha(os.path.join(idx, "index.spx"))
    corpus = str(tmp_path / "big.jsonl")
    write_corpus(corpus, 600)
    calls = []

    def progress(done, total):
        calls.append(done)
        raise RuntimeError("stop here")
    with pytest.raises(RuntimeError, match="stop here"):
        Index.build(idx, corpus=corpus, model=encoder, progress=progress)
    assert calls == [256]  # the first report, after the first chunk; none after
    assert sha(os.path.join(idx, "index.spx")) == digest
    assert sorted(os.listdir(idx)) == ["index.spx"]
    assert not encoder._cancel.is_set()  # the flag is cleared: the encoder goes on
    assert encoder.encode(["still works"]).nnz > 0
    # a first build stopped so leaves no folder behind
    with pytest.raises(RuntimeError, match="stop here"):
        Index.build(tmp_path / "fresh", corpus=corpus, model=encoder, progress=progress)
    assert not os.path.exists(tmp_path / "fresh")
