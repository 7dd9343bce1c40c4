/* Terminal progress bar (see progress.h). */
#include "index/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

double splade_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void splade_progress_start(splade_progress *p, uint64_t total, int quiet)
{
    p->enabled = !quiet && isatty(2);
    p->total = total;
    p->start = p->last = splade_now();
}

static void draw(const splade_progress *p, uint64_t done, double now)
{
    double el = now - p->start, rate = el > 0 ? (double)done / el : 0;
    if (p->total) {
        int width = 30, fill = (int)(width * (double)done / (double)p->total);
        double eta = rate > 0 ? (double)(p->total - (done < p->total ? done : p->total)) / rate : 0;
        fprintf(stderr, "\r[%.*s%*s] %llu/%llu docs  %.0f docs/s  ETA %.0fs ", fill,
                "##############################", width - fill, "", (unsigned long long)done,
                (unsigned long long)p->total, rate, eta);
    } else {
        fprintf(stderr, "\r%llu docs  %.0f docs/s ", (unsigned long long)done, rate);
    }
}

void splade_progress_update(splade_progress *p, uint64_t done)
{
    if (!p->enabled)
        return;
    double now = splade_now();
    if (now - p->last < 0.1)
        return;
    p->last = now;
    draw(p, done, now);
}

void splade_progress_finish(splade_progress *p, uint64_t done)
{
    if (!p->enabled)
        return;
    draw(p, done, splade_now());
    fputc('\n', stderr);
}
