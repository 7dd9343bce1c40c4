/* splade_fail: how library code reports a failure (internal; not installed).
 * Exported from libsplade.so all the same (SPLADE_API) because libsplade-cuda.so and the CLI record
 * their details through it, so that splade_error_detail() has one thread-local slot per process
 * (tests/cli/test_library.sh lists these internal exports). */
#ifndef SPLADE_COMMON_FAIL_H
#define SPLADE_COMMON_FAIL_H

#include "splade.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records a printf-style detail for the current thread and returns `status`,
 * so call sites read `return splade_fail(SPLADE_ERR_FORMAT, "%s:%d: ...", f, l);` */
SPLADE_API int splade_fail(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
