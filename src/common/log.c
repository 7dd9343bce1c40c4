/* The log callback (include/splade.h, src/common/log.h). */
#include "common/log.h"
#include "splade.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

/* A mutex rather than two atomics: the function and its user pointer must change together. The
 * callback runs outside it, so it may log or reset the callback itself. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static splade_log_fn log_fn;
static void *log_user;

void splade_set_log(splade_log_fn fn, void *user)
{
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
}

void splade_log(int level, const char *fmt, ...)
{
    pthread_mutex_lock(&log_lock);
    splade_log_fn fn = log_fn;
    void *user = log_user;
    pthread_mutex_unlock(&log_lock);
    if (!fn)
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fn(user, level, msg);
}
