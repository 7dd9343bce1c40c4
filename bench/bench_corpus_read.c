/* Corpus reading throughput: what `build`'s reading thread does per chunk (src/common/corpus_batch.h:
 * lines read in order, parsed on T threads), for T = 1, 2, 4, 8 and the serial splade_corpus_next
 * beside it. Issue #17: a build of four GPUs was capped by one thread parsing JSON.
 *
 * usage: bench_corpus_read CORPUS.jsonl [CHUNK (512)] [PASSES (3)]
 * Prints documents/s and MB/s of text per row, the best of PASSES (the machine may be shared);
 * the file is read once before timing, so the page cache holds it. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/corpus_batch.h"
#include "splade.h"
#include "splade/corpus.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One pass; threads 0: splade_corpus_next. Returns the documents read, *bytes their text. */
static long pass(const char *path, int chunk, int threads, double *bytes)
{
    splade_corpus_reader *r;
    if (splade_corpus_open(path, &r) != SPLADE_OK) {
        fprintf(stderr, "bench_corpus_read: %s\n", splade_error_detail());
        exit(1);
    }
    long docs = 0;
    *bytes = 0;
    if (threads == 0) {
        splade_doc d;
        while (splade_corpus_next(r, &d) == 1) {
            docs++;
            *bytes += (double)d.text_len;
        }
    } else {
        splade_corpus_batch b = {0};
        while (splade_corpus_batch_read(r, &b, chunk, threads) > 0) {
            for (int i = 0; i < b.n; i++)
                if (b.lines[i]->rc == 1) {
                    docs++;
                    *bytes += (double)b.lines[i]->rec.doc.text_len;
                }
            splade_corpus_batch_clear(&b);
        }
        splade_corpus_batch_free(&b);
    }
    splade_corpus_close(r);
    return docs;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_corpus_read CORPUS.jsonl [CHUNK] [PASSES]\n");
        return 2;
    }
    const int chunk = argc > 2 ? atoi(argv[2]) : 512, passes = argc > 3 ? atoi(argv[3]) : 3;
    double bytes;
    pass(argv[1], chunk, 1, &bytes); /* into the page cache */
    printf("| reader | threads | docs | docs/s | MB/s |\n|---|---:|---:|---:|---:|\n");
    static const int threads[] = {0, 1, 2, 4, 8};
    for (int k = 0; k < 5; k++) {
        double best = 1e30;
        long docs = 0;
        for (int p = 0; p < passes; p++) {
            const double t0 = now();
            docs = pass(argv[1], chunk, threads[k], &bytes);
            const double dt = now() - t0;
            best = dt < best ? dt : best;
        }
        printf("| %s | %d | %ld | %.0f | %.1f |\n", threads[k] ? "batch" : "splade_corpus_next",
               threads[k] ? threads[k] : 1, docs, (double)docs / best, bytes / best / 1e6);
    }
    return 0;
}
