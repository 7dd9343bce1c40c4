/* Progress reports of a build (see progress.h). The drawing (a bar, its rate limit) is the
 * caller's: the CLI's is src/cli/cli_progress.c. */
#include "index/progress.h"

void splade_progress_start(splade_progress *p, splade_progress_fn fn, void *user, const char *stage, uint64_t total)
{
    *p = (splade_progress){.fn = fn, .user = user, .stage = stage, .total = total};
}

void splade_progress_update(const splade_progress *p, uint64_t done)
{
    /* the total is a line count: a last line without a newline can make done reach it early */
    if (p->fn && (p->total == 0 || done < p->total))
        p->fn(p->user, p->stage, done, p->total);
}

void splade_progress_finish(const splade_progress *p, uint64_t done)
{
    if (p->fn)
        p->fn(p->user, p->stage, done, done);
}
