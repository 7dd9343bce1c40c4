"""Threads, worker processes, pickling and Ctrl-C."""
import multiprocessing as mp
import os
import pickle
import signal
import threading
import time

import numpy as np
import pytest

from conftest import EXAMPLE, read_jsonl

QUERIES = [q["text"] for q in read_jsonl(os.path.join(EXAMPLE, "queries.jsonl"))]


def run_threads(fn, n=4):
    out, errors = [None] * n, []

    def work(i):
        try:
            out[i] = fn()
        except BaseException as e:  # noqa: B902 - reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    return out


def test_threads_search_identical(example_index, encoder):
    from splade_index import Index
    ix = Index.open(example_index)
    Q = encoder.encode(QUERIES * 20)
    ids, scores = ix.search(Q, k=10, threads=1)
    for i2, s2 in run_threads(lambda: ix.search(Q, k=10, threads=2)):
        assert (i2 == ids).all() and (s2 == scores).all()
    t_ids, t_scores = ix.search(QUERIES, k=10)
    for i2, s2 in run_threads(lambda: ix.search(QUERIES, k=10)):
        assert (i2 == t_ids).all() and (s2 == t_scores).all()


def test_threads_encode_identical(encoder):
    X = encoder.encode(QUERIES)
    for Y in run_threads(lambda: encoder.encode(QUERIES)):
        assert (X != Y).nnz == 0


def test_gil_released_during_search(example_index, encoder):
    """A Python thread keeps running while another thread is inside the C searcher."""
    from splade_index import Index
    ix = Index.open(example_index)
    Q = encoder.encode(QUERIES * 2000)
    ticks, done = [0], threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0)
    t = threading.Thread(target=count)
    t.start()
    try:
        start = ticks[0]
        lib_before = time.perf_counter()
        ix._search_chunk(Q, 100, 1)  # one C call of all 16,000 queries
        elapsed = time.perf_counter() - lib_before
    finally:
        done.set()
        t.join()
    assert ticks[0] - start > 10, f"the other thread ran {ticks[0] - start} times in {elapsed:.3f} s"


def test_pickle_round_trip(example_index, encoder):
    from splade_index import Encoder, Index
    ix = Index.open(example_index)
    ix2 = pickle.loads(pickle.dumps(ix))
    assert ix2.path == ix.path and len(ix2) == len(ix)
    enc2 = pickle.loads(pickle.dumps(encoder))
    assert isinstance(enc2, Encoder) and (enc2.encode(QUERIES) != encoder.encode(QUERIES)).nnz == 0


def _worker_search(ix, texts):
    ids, scores = ix.search(texts, k=5)
    return ids.tolist(), scores.tolist()


def test_spawned_worker_reopens_and_searches(example_index):
    from splade_index import Index
    ix = Index.open(example_index)
    ids, scores = ix.search(QUERIES, k=5)
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        results = pool.starmap(_worker_search, [(ix, QUERIES), (ix, QUERIES[:3])])
    assert results[0] == (ids.tolist(), scores.tolist())
    ids3, scores3 = ix.search(QUERIES[:3], k=5)  # encoded together: see Encoder.encode's chunk
    assert results[1] == (ids3.tolist(), scores3.tolist())


def test_ctrl_c_stops_a_long_encode(encoder):
    """SIGINT during a long encode (one library call) raises KeyboardInterrupt before the encoder's
    next batch, and the encoder works afterwards (in-process; test_cancel.py runs a child process)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    texts = ["the quick brown fox jumps over the lazy dog " * 6] * 20000
    # A shell's background job (`make test &`, some CI runners) starts with SIGINT ignored, and Python
    # then installs no handler of its own: put Python's back for the test's duration.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        encoder.encode(texts)
    stopped = time.perf_counter() - start
    one = time.perf_counter()
    encoder.encode(texts[:256])
    chunk = time.perf_counter() - one
    timer.cancel()
    signal.signal(signal.SIGINT, previous)
    # stopped within a chunk's time (plus slack for a loaded machine), far from all 79 chunks' work
    assert stopped < 0.3 + 3 * chunk + 1.0, (stopped, chunk)
    assert (encoder.encode(QUERIES) != encoder.encode(QUERIES)).nnz == 0
