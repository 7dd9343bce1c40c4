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
    SPLADE_ERR_MISMATCH = -16,    /* index built with another model / settings */
    SPLADE_ERR_CANCELLED = -17    /* the caller's cancel flag was set (splade_encoder_opts.cancel,
                                     splade_ingest_opts.cancel, splade_builder_set_cancel) */
} splade_status;

/* Version of the library actually loaded (SPLADE_VERSION is the one compiled against). */
SPLADE_API const char *splade_version(void);

/* Short static description of a status code. Never NULL. */
SPLADE_API const char *splade_strerror(int status);

/* Detail of the last failure on this thread ("" if none). Static, thread-local
 * storage: valid until the next failure on this thread; do not free. */
SPLADE_API const char *splade_error_detail(void);

/* Clears the thread's error detail. */
SPLADE_API void splade_clear_error(void);

/* Diagnostics. The library never prints: what it has to say beyond a status (a device fallback, a
 * skipped input line, a download under way) goes to the log callback, as sqlite's SQLITE_CONFIG_LOG
 * does; with none set (the default) it is dropped. msg is one line without a newline, valid only
 * during the call. The callback may be called from any thread that runs library code, so it must be
 * thread safe; splade_set_log itself may be called at any time (NULL turns logging off). The CLI
 * installs one printing "splade-index: MSG" on stderr (src/cli/cli_output.c). */
enum { SPLADE_LOG_ERROR = 0, SPLADE_LOG_WARNING = 1, SPLADE_LOG_INFO = 2, SPLADE_LOG_DEBUG = 3 };
typedef void (*splade_log_fn)(void *user, int level, const char *msg);
SPLADE_API void splade_set_log(splade_log_fn fn, void *user);

/* Progress of a long operation (an index build, a model download), reported through the callback
 * in that operation's options (splade_ingest_opts, splade_fetch_opts): per operation rather than
 * global, so that two builds in one process report to their own owners. `stage` names what is
 * counted (documented at each option); done < total in every call but a stage's last, which has
 * done == total (total 0 before then: the size is not known in advance). Called on the thread that
 * runs the operation; NULL: no calls. */
typedef void (*splade_progress_fn)(void *user, const char *stage, uint64_t done, uint64_t total);

#ifdef __cplusplus
}
#endif
#endif
