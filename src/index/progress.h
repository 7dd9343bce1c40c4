/* Build progress bar on stderr: documents, docs/s and ETA, redrawn at most 10 times a second;
 * silent unless stderr is a terminal and the caller did not ask for quiet. */
#ifndef SPLADE_INDEX_PROGRESS_H
#define SPLADE_INDEX_PROGRESS_H

#include <stdint.h>

#include "splade.h"

typedef struct {
    int enabled;
    uint64_t total;   /* 0 when unknown (no ETA) */
    double start, last;
} splade_progress;

void splade_progress_start(splade_progress *p, uint64_t total, int quiet);
void splade_progress_update(splade_progress *p, uint64_t done);
void splade_progress_finish(splade_progress *p, uint64_t done);
/* Exported for the CLI's timings (monotonic seconds). */
SPLADE_API double splade_now(void);

#endif
