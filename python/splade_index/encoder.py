"""Encoder: text -> SPLADE sparse vectors as a scipy.sparse.csr_matrix (n x V, float32)."""
import ctypes
import os
import threading

import numpy as np
import scipy.sparse as sp

from . import _call, _lib
from ._lib import lib, check, byref

# The unit in which the library sorts texts by length into batches: `splade-index encode`'s
# (SPLADE_ENCODE_CHUNK, src/cli/cmd_encode.c; the build's 32 x 8), so that the vectors are the ones
# the CLI prints. All texts still go to the library in one call (splade_encoder_encode_chunked).
CHUNK = _lib.ENCODE_CHUNK


def as_bytes(text):
    """UTF-8 bytes of a str (lone surrogates passed through: the tokenizer drops ill-formed bytes, as
    for a file) or bytes as they are."""
    if isinstance(text, (bytes, bytearray)):
        return bytes(text)
    if not isinstance(text, str):
        raise TypeError(f"texts must be str or bytes, not {type(text).__name__}")
    return text.encode("utf-8", "surrogatepass")


def _free_sparse(vecs, n):
    for i in range(n):
        lib.splade_sparse_free(byref(vecs[i]))


def sparse_rows_to_csr(vecs, n, n_cols):
    """Copies n splade_sparse rows into one CSR matrix (the one copy: the C rows are separate arrays)."""
    lens = np.fromiter((vecs[i].n for i in range(n)), dtype=np.int64, count=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=indptr[1:])
    nnz = int(indptr[-1])
    indices = np.empty(nnz, dtype=np.int32)
    data = np.empty(nnz, dtype=np.float32)
    ip, dp = indices.ctypes.data, data.ctypes.data
    for i in range(n):
        k = int(lens[i])
        if k:
            off = int(indptr[i]) * 4
            ctypes.memmove(ip + off, vecs[i].terms, k * 4)
            ctypes.memmove(dp + off, vecs[i].weights, k * 4)
    return sp.csr_matrix((data, indices, indptr.astype(np.int32) if nnz < 2**31 else indptr), shape=(n, n_cols))


def _env(name):
    v = os.environ.get(name)
    return os.fsencode(v) if v else None


def _model_paths():
    """Where models are looked for, from the environment as the CLI reads it (src/cli/cli_env.c):
    $SPLADE_MODEL, then $SPLADE_CACHE, else $HOME/.cache/splade-index. The library reads none."""
    cache = _env("SPLADE_CACHE")
    if cache is None and _env("HOME"):
        cache = _env("HOME") + b"/.cache/splade-index"
    return _lib.ModelPaths(cache_dir=cache, default_model=_env("SPLADE_MODEL"), default_origin=b"$SPLADE_MODEL")


class Model:
    """A loaded model folder (splade_model): shared by the encoders made from it."""

    def __init__(self, model, ptr=None):
        """model: a folder, ORG/NAME or None, resolved as the CLI resolves --model; or ptr: a
        splade_model* the library loaded (splade_index_load_model), owned from now on."""
        if ptr is None:
            buf = ctypes.create_string_buffer(4096)
            arg = None if model is None else os.fsencode(model)
            check(lib.splade_model_resolve(arg, byref(_model_paths()), buf, len(buf)))
            ptr = ctypes.c_void_p()
            check(lib.splade_model_load(buf.value, byref(ptr)))
        self.ptr = ptr  # splade_model is opaque: read through its accessors
        self.dir = os.fsdecode(lib.splade_model_dir(ptr))
        self.vocab_size = lib.splade_model_config(ptr).contents.vocab_size
        self.fingerprint = lib.splade_model_fingerprint(ptr)
        self.tokenizer = lib.splade_model_tokenizer(ptr)

    def token(self, i):
        p = lib.splade_tokenizer_token(self.tokenizer, i)
        # rows past vocab.txt (padded embeddings) get the CLI's name for them (cmd_encode.c)
        return ctypes.string_at(p).decode("utf-8", "surrogateescape") if p else f"[unused_id_{i}]"

    def __del__(self):
        if getattr(self, "ptr", None):
            lib.splade_model_free(self.ptr)
            self.ptr = None


class Encoder:
    """SPLADE encoder over a Hugging Face model folder (or ORG/NAME fetched by `splade-index fetch-model`;
    None: $SPLADE_MODEL, then the default splade-tiny), as the CLI resolves --model.

    device: "auto" (GPU when usable), "cpu", "cuda", or a GPU list: "cuda:all", "cuda:0,2" (one encoder per
    GPU, vectors identical to one GPU's; docs/GPU_ENCODER.md); precision: None (the GPU in bf16, the CPU in fp32), "bf16",
    "fp32" (given, it sets the CPU's format too: bf16 on the CPU is opt-in, AMX / AVX512-BF16) or "int8" (the CPU
    only: int8 GEMMs with VNNI / AMX-INT8; bench/results/encoder-cpu-int8-2026-11-25.md); threads: CPU threads (None: all cores); max_length: tokens per text including
    [CLS]/[SEP] (capped at the model's); batch_size: texts per forward pass (None: the device's default).

    One encoder runs one call at a time (calls from several Python threads queue on a lock; the
    GIL is released while the C library works). Picklable: a worker process re-loads the model
    from its folder.
    """

    def __init__(self, model=None, device="auto", precision=None, threads=None, max_length=256, batch_size=None):
        self._args = (model, device, precision, threads, max_length, batch_size)
        self.model_name = model.dir if isinstance(model, Model) else model
        self._model = model if isinstance(model, Model) else Model(model)
        # set on Ctrl-C while a call of this encoder runs (_call.py); every C encoder below reads it
        self._cancel = _call.Flag()
        self._opts = _lib.EncoderOpts()
        lib.splade_encoder_opts_init(byref(self._opts))
        self._opts.threads, self._opts.max_length, self._opts.quiet = threads or 0, max_length or 0, 1
        self._opts.batch_size, self._opts.cancel = batch_size or 0, self._cancel.address
        prec = ctypes.c_int()
        # "auto", "cpu", "cuda", or a GPU list: "cuda:all", "cuda:0,2" (one encoder per GPU, issue #17)
        check(lib.splade_parse_devices(device.encode() if device else None, byref(self._opts)))
        check(lib.splade_parse_precision(precision.encode() if precision else None, byref(prec)))
        self._opts.precision = prec.value
        if precision:  # the CPU computes in bf16 only when asked (issue #13)
            check(lib.splade_parse_cpu_precision(precision.encode(), byref(prec)))
            self._opts.cpu_precision = prec.value
        self._lock = threading.Lock()
        self._encoders = {}  # (batch_size, threads) -> splade_encoder*
        self._vocab = None
        self._handle(batch_size, threads)  # fail now, not at the first encode
        self.device = {_lib.DEVICE_CPU: "cpu", _lib.DEVICE_CUDA: "cuda"}[lib.splade_encoder_device(self._handle())]

    def __reduce__(self):
        return (Encoder, self._args)

    def _handle(self, batch_size=None, threads=None):
        """The C encoder for these settings (created once: on the GPU each one holds its buffers)."""
        key = (batch_size or self._opts.batch_size, threads or self._opts.threads)
        h = self._encoders.get(key)
        if h is None:
            o = _lib.EncoderOpts.from_buffer_copy(self._opts)
            o.batch_size, o.threads = key
            h = ctypes.c_void_p()
            check(lib.splade_encoder_create(self._model.ptr, byref(o), byref(h)))
            self._encoders[key] = h = h.value
        return h

    @property
    def max_length(self):
        """Effective max_length (tokens including [CLS]/[SEP]) after defaults and the model's cap."""
        return lib.splade_encoder_max_length(self._handle())

    @property
    def model_dir(self):
        return self._model.dir

    @property
    def vocab_size(self):
        return self._model.vocab_size

    @property
    def vocab(self):
        """Token of every column of the encoded matrices (vocab.txt; "[unused_id_N]" past it)."""
        if self._vocab is None:
            self._vocab = [self._model.token(i) for i in range(self._model.vocab_size)]
        return self._vocab

    def _c_encode(self, h, texts, chunk):
        """One C call encoding byte strings `chunk` at a time (0: all together). Returns (ctypes array of
        splade_sparse the caller frees with free_rows, count, texts cut at max_length); on failure
        the library has freed every row. Runs on the worker thread of _call.run."""
        n = len(texts)
        ptrs = (ctypes.c_char_p * max(n, 1))(*texts)
        lens = (ctypes.c_size_t * max(n, 1))(*map(len, texts))
        vecs = (_lib.Sparse * max(n, 1))()
        cut = ctypes.c_int()
        if n:
            check(lib.splade_encoder_encode_chunked(h, ptrs, lens, n, chunk, vecs, byref(cut)))
        return vecs, n, cut.value

    def _rows(self, texts, chunk=CHUNK, batch_size=None, threads=None):
        """encode() without the CSR copy: (C rows, count, truncated), freed by free_rows. Ctrl-C sets
        the encoder's cancel flag (the library stops before its next batch) and raises
        KeyboardInterrupt with nothing left allocated."""
        h = self._handle(batch_size, threads)
        with self._lock:  # Ctrl-C while waiting for another thread's call raises here, flag untouched
            return _call.run(lambda: self._c_encode(h, texts, int(chunk or 0)), flags=(self._cancel,),
                             free=lambda r: _free_sparse(r[0], r[1]))

    free_rows = staticmethod(_free_sparse)

    def encode(self, texts, batch_size=None, top_k=None, threshold=None, chunk=CHUNK):
        """Encodes texts (str or bytes; a single str is one text) -> csr_matrix (n x V, float32),
        row i = text i, columns = vocabulary ids ascending. top_k keeps each row's top_k largest
        weights (ties: lower id), threshold drops weights <= threshold, exactly as the CLI's
        --top-k / --threshold. Texts longer than max_length tokens are truncated; the count of
        the last call is in .last_truncated.

        All texts go to the library in one call, which sorts them by length into batches `chunk`
        texts at a time. A text's weights can differ in the last bit with the batch it lands in, so
        chunk=256 (default) gives exactly `splade-index encode`'s vectors, chunk=None (one group)
        exactly those `splade-index query --queries` searches with. Ctrl-C stops the call before
        its next batch (KeyboardInterrupt)."""
        if isinstance(texts, (str, bytes)):
            texts = [texts]
        data = [as_bytes(t) for t in texts]
        vecs, n, cut = self._rows(data, chunk, batch_size)
        try:
            if threshold is not None or top_k:
                self._select(vecs, n, threshold, top_k)
            X = sparse_rows_to_csr(vecs, n, self.vocab_size)
        finally:
            _free_sparse(vecs, n)
        self.last_truncated = cut
        return X

    @staticmethod
    def _select(vecs, n, threshold, top_k):
        """--threshold then --top-k on the C rows, with the library's own selection
        (splade_sparse_from_pairs: the top_k largest, ties to the lower term id)."""
        thr = np.float32(threshold or 0.0)
        for i in range(n):
            v = vecs[i]
            if v.n == 0:
                continue
            terms = np.ctypeslib.as_array(v.terms, (v.n,))
            weights = np.ctypeslib.as_array(v.weights, (v.n,))
            keep = weights > thr
            t, w = np.ascontiguousarray(terms[keep]), np.ascontiguousarray(weights[keep])
            out = _lib.Sparse()
            check(lib.splade_sparse_from_pairs(t.ctypes.data, w.ctypes.data, len(t), int(top_k or 0), byref(out)))
            lib.splade_sparse_free(byref(vecs[i]))
            vecs[i] = out

    def encode_queries(self, texts, top_k=None, threshold=None):
        """Queries use the same encoder as documents in SPLADE (splade-tiny, SPLADE v2/++ shared
        weights); this is encode() under the name retrieval libraries use."""
        return self.encode(texts, top_k=top_k, threshold=threshold)

    def tokenize(self, texts, max_length=None):
        """WordPiece ids of each text, [CLS] ... [SEP], truncated to max_length (default: the
        encoder's): what the encoder sees, as `splade-index tokenize` prints it."""
        if isinstance(texts, (str, bytes)):
            texts = [texts]
        cap = int(max_length or self.max_length)
        buf = (ctypes.c_int32 * cap)()
        n = ctypes.c_int32()
        out = []
        for t in texts:
            b = as_bytes(t)
            check(lib.splade_tokenize(self._model.tokenizer, b, len(b), cap, buf, byref(n)))
            out.append(list(buf[:n.value]))
        return out

    def decode(self, row):
        """{token: weight} of one encoded row (a 1 x V sparse matrix or row of one), heaviest first."""
        row = sp.csr_matrix(row)
        if row.shape[0] != 1:
            raise ValueError(f"decode takes one row, got {row.shape[0]}")
        vocab = self.vocab
        order = np.lexsort((row.indices, -row.data))
        return {vocab[row.indices[j]]: float(row.data[j]) for j in order}

    def close(self):
        """Frees the C encoders and the model now (also done when the object is collected)."""
        for h in self._encoders.values():
            lib.splade_encoder_free(h)
        self._encoders = {}
        self._model = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_encoders", None):
            self.close()

    def __repr__(self):
        return f"Encoder({self.model_name!r}, device={self.device!r}, max_length={self.max_length})"
