"""splade_index: SPLADE encoding, indexing and exact top-k search from Python, over libsplade.

    from splade_index import Encoder, Index
    enc = Encoder("cache/splade-tiny", device="cpu")
    X = enc.encode(["a black hole", "the moon"])          # scipy.sparse.csr_matrix, float32
    ix = Index.build("my.idx", corpus="data/example/corpus.jsonl", model=enc)
    ids, scores = ix.search(["why is the sky blue"], k=5)  # numpy arrays (1, 5)

docs/PYTHON.md has the whole API.
"""
from ._lib import version, path as library_path
from .encoder import Encoder
from .errors import (SpladeError, SpladeMemoryError, SpladeIOError, FormatError, ChecksumError, VersionError,
                     InvalidArgumentError, ModelError, GPUError, NotFoundError, NetworkError, DuplicateIdError,
                     UnsupportedError, MismatchError, CancelledError)
from .index import Index

__version__ = "0.1.0"
__all__ = ["Encoder", "Index", "version", "library_path", "SpladeError", "SpladeMemoryError", "SpladeIOError",
           "FormatError", "ChecksumError", "VersionError", "InvalidArgumentError", "ModelError", "GPUError",
           "NotFoundError", "NetworkError", "DuplicateIdError", "UnsupportedError", "MismatchError",
           "CancelledError"]
