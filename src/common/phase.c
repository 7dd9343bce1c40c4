/* Phase timers (src/common/phase.h). */
#include "common/phase.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "common/log.h"
#include "common/settings.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double acc[SPLADE_PH_N];

static const char *const names[SPLADE_PH_N] = {
    "model_load", "gpu_open", "gpu_context", "gpu_handles", "gpu_weights", "read", "tokenize",
    "gpu_h2d", "gpu_launch", "gpu_wait", "collect", "set_vector", "output", "gpu_blas_warm",
    "gpu_plan", "encoder_free"};

double splade_phase_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int splade_phase_on(void) { return splade_settings_get()->timings; }

void splade_phase_add(int ph, double seconds)
{
    if (ph < 0 || ph >= SPLADE_PH_N || !splade_phase_on())
        return;
    pthread_mutex_lock(&mu);
    acc[ph] += seconds;
    pthread_mutex_unlock(&mu);
}

double splade_phase_since(int ph, double t0)
{
    const double now = splade_phase_now();
    splade_phase_add(ph, now - t0);
    return now;
}

void splade_phase_report(const char *what)
{
    if (!splade_phase_on())
        return;
    char line[1024];
    int n = snprintf(line, sizeof line, "timings (%s):", what ? what : "");
    pthread_mutex_lock(&mu);
    for (int i = 0; i < SPLADE_PH_N && n > 0 && (size_t)n < sizeof line; i++)
        if (acc[i] > 0)
            n += snprintf(line + n, sizeof line - (size_t)n, " %s %.3f", names[i], acc[i]);
    for (int i = 0; i < SPLADE_PH_N; i++)
        acc[i] = 0;
    pthread_mutex_unlock(&mu);
    if (what)
        splade_log(SPLADE_LOG_INFO, "%s s", line);
}
