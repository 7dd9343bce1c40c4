"""Long library calls on a worker thread, so that Ctrl-C stops them.

Python runs signal handlers in the main thread between bytecodes, so a KeyboardInterrupt cannot
arrive while the main thread is inside one long C call. Here the call runs on a worker thread (ctypes
releases the GIL for it) while the main thread waits with a timeout, which a signal interrupts. It
waits on an Event the worker sets when it is done, not in Thread.join(timeout): in CPython 3.11 (and
others with bpo-45274's handler in Thread._wait_for_tstate_lock) a KeyboardInterrupt raised inside
join() releases the running thread's state lock and marks it stopped, so is_alive() turns False while
the call still runs (seen here: the build's lock file was still held when the caller went on). On
KeyboardInterrupt the main thread sets the C cancel flag(s) the call reads
(splade_encoder_opts.cancel, splade_ingest_opts.cancel, splade_builder_set_cancel: between two
batches, chunks or stages), waits for the worker to return, clears the flags, frees what the call
produced if it finished anyway, and re-raises KeyboardInterrupt.

The work function checks its statuses on the worker thread itself (the C error detail is per
thread); its exception, if any, is re-raised on the calling thread.
"""
import ctypes
import threading

# How long the main thread blocks in one join: a signal interrupts the wait at once on POSIX; the
# loop keeps Ctrl-C working where it would not (and costs nothing while C works).
POLL_S = 0.25


class Flag:
    """A C int a call's cancel pointer points at (0: go on, 1: stop). Owned by the object whose C
    handles point at it (an Encoder, a build), so it outlives every call that reads it."""

    def __init__(self):
        self._c = ctypes.c_int(0)
        self.address = ctypes.addressof(self._c)

    def set(self):
        self._c.value = 1

    def clear(self):
        self._c.value = 0

    def is_set(self):
        return self._c.value != 0


def _wait(done):
    while not done.wait(POLL_S):
        pass


def _wait_uninterrupted(done):
    """Waits for the worker whatever further Ctrl-C come (it stops within a batch)."""
    while not done.is_set():
        try:
            _wait(done)
        except KeyboardInterrupt:
            pass


def run(work, flags=(), free=None):
    """Returns work(), run on a worker thread when called from the main thread (elsewhere no signal
    arrives: it runs in place). On KeyboardInterrupt: sets flags, waits for the worker, clears them,
    passes work's result to free() if it completed anyway, and re-raises KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        return work()
    box, done = {}, threading.Event()

    def target():
        try:
            box["result"] = work()
        except BaseException as e:  # noqa: B902 - re-raised on the calling thread
            box["error"] = e
        finally:
            done.set()  # the last thing the worker does: nothing of ours runs on it after this
    threading.Thread(target=target, name="splade_index call", daemon=True).start()
    try:
        _wait(done)
    except KeyboardInterrupt:
        for f in flags:
            f.set()
        _wait_uninterrupted(done)
        for f in flags:
            f.clear()
        if "result" in box and free is not None:
            free(box["result"])
        raise
    if "error" in box:
        err = box.pop("error")
        try:
            raise err
        finally:
            del err  # no reference cycle through the traceback
    return box["result"]
