"""Exceptions: one SpladeError subclass per family of SPLADE_ERR_* status codes (include/splade.h).

Each carries .status (the negative C code), .reason (splade_strerror) and .detail (the library's
one-line message naming the file, line or field at fault). Subclasses also derive from the nearest
built-in exception, so `except FileNotFoundError`-style code keeps working where it makes sense.
"""


class SpladeError(Exception):
    """A libsplade call failed. str(e) is "reason: detail", as the CLI prints it."""

    def __init__(self, message, status=None, reason=None, detail=None):
        super().__init__(message)
        self.status, self.reason, self.detail = status, reason, detail if detail is not None else message


class SpladeMemoryError(SpladeError, MemoryError):
    """SPLADE_ERR_NOMEM: an allocation failed."""


class SpladeIOError(SpladeError, OSError):
    """SPLADE_ERR_IO: open/read/write/rename failed."""


class FormatError(SpladeError, ValueError):
    """SPLADE_ERR_FORMAT / _UTF8: a malformed input file (corpus line, JSON, safetensors, index)."""


class ChecksumError(FormatError):
    """SPLADE_ERR_CHECKSUM: a stored checksum does not match (a corrupted index)."""


class VersionError(FormatError):
    """SPLADE_ERR_VERSION: an unknown on-disk format version."""


class InvalidArgumentError(SpladeError, ValueError):
    """SPLADE_ERR_INVALID_ARG: an impossible argument (e.g. a weight <= 0 in a vector)."""


class ModelError(SpladeError):
    """SPLADE_ERR_MODEL: the model's files disagree with each other or the config."""


class GPUError(SpladeError):
    """SPLADE_ERR_NO_GPU / _CUDA / _GPU_OOM."""


class NotFoundError(SpladeError, LookupError):
    """SPLADE_ERR_NOT_FOUND: a file, model, index or document id that does not exist."""


class NetworkError(SpladeError):
    """SPLADE_ERR_NETWORK: a download failed."""


class DuplicateIdError(SpladeError, ValueError):
    """SPLADE_ERR_DUPLICATE: a document id given twice (the detail names both lines)."""


class UnsupportedError(SpladeError):
    """SPLADE_ERR_UNSUPPORTED: valid input this build or index does not handle."""


class MismatchError(SpladeError, ValueError):
    """SPLADE_ERR_MISMATCH: an index built with another model or settings."""


class CancelledError(SpladeError):
    """SPLADE_ERR_CANCELLED: a call stopped by its cancel flag. The package sets the flag on Ctrl-C and
    raises KeyboardInterrupt instead, so user code sees this only from a flag of its own."""


_BY_STATUS = {-1: SpladeMemoryError, -2: SpladeIOError, -3: FormatError, -4: InvalidArgumentError, -5: ModelError,
              -6: FormatError, -7: GPUError, -8: GPUError, -9: GPUError, -10: ChecksumError, -11: VersionError,
              -12: NotFoundError, -13: NetworkError, -14: DuplicateIdError, -15: UnsupportedError,
              -16: MismatchError, -17: CancelledError}


def raise_for_status(status, reason, detail):
    cls = _BY_STATUS.get(status, SpladeError)
    raise cls(f"{reason}: {detail}" if detail else reason, status, reason, detail)
