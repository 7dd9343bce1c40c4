/* The CLI's stderr log callback and progress bar (cli_output.h). */
#include "cli/cli_output.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "splade.h"

/* Set by the command before it calls the library; read by the callback (one command per process). */
static struct {
    int quiet, bare_info;
} cli_log;

static void log_to_stderr(void *user, int level, const char *msg)
{
    (void)user;
    if (level >= SPLADE_LOG_DEBUG || (level == SPLADE_LOG_INFO && cli_log.quiet))
        return;
    fprintf(stderr, "%s%s\n", level == SPLADE_LOG_INFO && cli_log.bare_info ? "" : "splade-index: ", msg);
}

void splade_cli_log_install(void) { splade_set_log(log_to_stderr, NULL); }
void splade_cli_log_quiet(int quiet) { cli_log.quiet = quiet; }
void splade_cli_log_bare_info(int bare) { cli_log.bare_info = bare; }

double splade_cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int splade_cli_bar_start(splade_cli_bar *b, int quiet)
{
    b->start = b->last = splade_cli_now();
    b->unknown_total = 0;
    return !quiet && isatty(2);
}

static void draw(const splade_cli_bar *b, uint64_t done, uint64_t total, double now)
{
    double el = now - b->start, rate = el > 0 ? (double)done / el : 0;
    if (total) {
        int width = 30, fill = (int)(width * (double)done / (double)total);
        double eta = rate > 0 ? (double)(total - (done < total ? done : total)) / rate : 0;
        fprintf(stderr, "\r[%.*s%*s] %llu/%llu docs  %.0f docs/s  ETA %.0fs ", fill,
                "##############################", width - fill, "", (unsigned long long)done,
                (unsigned long long)total, rate, eta);
    } else {
        fprintf(stderr, "\r%llu docs  %.0f docs/s ", (unsigned long long)done, rate);
    }
}

void splade_cli_bar_progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
    splade_cli_bar *b = user;
    (void)stage; /* a build reports one stage, "documents" */
    double now = splade_cli_now();
    if (done != total) {
        b->unknown_total = total == 0;
        if (now - b->last < 0.1)
            return;
        b->last = now;
        draw(b, done, total, now);
        return;
    }
    draw(b, done, b->unknown_total ? 0 : total, now); /* the last call: done == total */
    fputc('\n', stderr);
}
