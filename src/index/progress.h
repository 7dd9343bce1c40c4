/* Build progress through the caller's callback (splade_progress_fn, include/splade.h): keeps the
 * contract that done < total in every call but the last, which has done == total. */
#ifndef SPLADE_INDEX_PROGRESS_H
#define SPLADE_INDEX_PROGRESS_H

#include <stdint.h>

#include "splade.h"

typedef struct {
    splade_progress_fn fn;  /* NULL: no calls */
    void *user;
    const char *stage;
    uint64_t total;         /* 0 when unknown */
} splade_progress;

void splade_progress_start(splade_progress *p, splade_progress_fn fn, void *user, const char *stage, uint64_t total);
/* done so far; not reported once it reaches a known total (only the last call may). */
void splade_progress_update(const splade_progress *p, uint64_t done);
/* The stage's last call: done == total == the final count. */
void splade_progress_finish(const splade_progress *p, uint64_t done);

#endif
