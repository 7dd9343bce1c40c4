/* Status codes and the thread-local error detail (see include/splade.h). */
#include "common/fail.h"
#include "splade.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char error_detail[1024];

const char *splade_strerror(int status)
{
    switch (status) {
    case SPLADE_OK: return "success";
    case SPLADE_ERR_NOMEM: return "out of memory";
    case SPLADE_ERR_IO: return "input/output error";
    case SPLADE_ERR_FORMAT: return "malformed input";
    case SPLADE_ERR_INVALID_ARG: return "invalid argument";
    case SPLADE_ERR_MODEL: return "invalid model";
    case SPLADE_ERR_UTF8: return "invalid UTF-8";
    case SPLADE_ERR_NO_GPU: return "no usable GPU";
    case SPLADE_ERR_CUDA: return "CUDA error";
    case SPLADE_ERR_GPU_OOM: return "out of GPU memory";
    case SPLADE_ERR_CHECKSUM: return "checksum mismatch";
    case SPLADE_ERR_VERSION: return "unsupported format version";
    case SPLADE_ERR_NOT_FOUND: return "not found";
    case SPLADE_ERR_NETWORK: return "network error";
    case SPLADE_ERR_DUPLICATE: return "duplicate id";
    case SPLADE_ERR_UNSUPPORTED: return "unsupported";
    case SPLADE_ERR_MISMATCH: return "model or settings mismatch";
    case SPLADE_ERR_CANCELLED: return "cancelled";
    default: return "unknown error";
    }
}

const char *splade_error_detail(void) { return error_detail; }

void splade_clear_error(void) { error_detail[0] = '\0'; }

int splade_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_detail, sizeof error_detail, fmt, ap);
    va_end(ap);
    return status;
}
