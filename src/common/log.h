/* Library diagnostics through the callback set with splade_set_log (include/splade.h). */
#ifndef SPLADE_COMMON_LOG_H
#define SPLADE_COMMON_LOG_H


#ifdef __cplusplus
extern "C" {
#endif

/* Formats one message and hands it to the log callback; nothing (not even the formatting) when
 * none is set. level: SPLADE_LOG_*. */
void splade_log(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
