/* splade-index public API: status codes and error reporting.
 *
 * Every fallible function returns SPLADE_OK (0) or a negative splade_status.
 * The failing call also records a one-line human message (naming the file,
 * line or field at fault) that splade_error_detail() returns until the next
 * failure on the same thread. */
#ifndef SPLADE_H
#define SPLADE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPLADE_VERSION "0.1.0"

/* Marks the library's public functions: libsplade.so is built with -fvisibility=hidden, so only
 * declarations carrying SPLADE_API are exported (tools/mark_public_api.sh adds it in include/). */
#if defined(__GNUC__)
#define SPLADE_API __attribute__((visibility("default")))
#else
#define SPLADE_API
#endif

typedef enum {
    SPLADE_OK = 0,
    SPLADE_ERR_NOMEM = -1,        /* allocation failed */
    SPLADE_ERR_IO = -2,           /* open/read/write/rename failed */
    SPLADE_ERR_FORMAT = -3,       /* malformed input file (JSON, JSONL, safetensors, index) */
    SPLADE_ERR_INVALID_ARG = -4,  /* caller passed an impossible argument */
    SPLADE_ERR_MODEL = -5,        /* model files disagree with each other or the config */
    SPLADE_ERR_UTF8 = -6,         /* invalid UTF-8 where it cannot be repaired */
    SPLADE_ERR_NO_GPU = -7,       /* CUDA asked for but absent or not compiled in */
    SPLADE_ERR_CUDA = -8,         /* a CUDA / cuBLAS call failed */
    SPLADE_ERR_GPU_OOM = -9,      /* device memory exhausted */
    SPLADE_ERR_CHECKSUM = -10,    /* stored checksum does not match the data */
    SPLADE_ERR_VERSION = -11,     /* unknown on-disk format version */
    SPLADE_ERR_NOT_FOUND = -12,   /* file, model or id not found */
    SPLADE_ERR_NETWORK = -13,     /* download failed */
    SPLADE_ERR_DUPLICATE = -14,   /* duplicate document id */
    SPLADE_ERR_UNSUPPORTED = -15, /* valid input this build does not handle */
    SPLADE_ERR_MISMATCH = -16     /* index built with another model / settings */
} splade_status;

/* Version of the library actually loaded (SPLADE_VERSION is the one compiled against). */
SPLADE_API const char *splade_version(void);

/* Short static description of a status code. Never NULL. */
SPLADE_API const char *splade_strerror(int status);

/* Detail of the last failure on this thread ("" if none). Static, thread-local
 * storage: valid until the next failure on this thread; do not free. */
SPLADE_API const char *splade_error_detail(void);

/* Records a printf-style detail for the current thread and returns `status`,
 * so call sites read `return splade_fail(SPLADE_ERR_FORMAT, "%s:%d: ...", f, l);` */
SPLADE_API int splade_fail(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Clears the thread's error detail. */
SPLADE_API void splade_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
