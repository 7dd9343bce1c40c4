/* Fuzz helpers for the index targets: a small valid index built once from synthetic vectors
 * (multi-block terms, rare terms, empty documents), and a search over every top-k method. */
#ifndef SPLADE_FUZZ_INDEX_FIXTURE_H
#define SPLADE_FUZZ_INDEX_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "splade.h"
#include "splade/index.h"
#include "splade/query.h"

#define FX_ALGOS 7 /* SPLADE_ALGO_BMM .. SPLADE_ALGO_AUTO */

/* A scratch folder for builds: /dev/shm when present (no disk fsync), else /tmp. */
static const char *fx_scratch_dir(const char *tag)
{
    static char dir[256];
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/splade_fuzz_%s_%d", base, tag, (int)getpid());
    return dir;
}

/* Builds the fixture index into dir (docs 0..n_docs-1, ~40 terms; term t0 in every document so it
 * spans several blocks and ranges). Returns 0 or a status. */
static inline int fx_build(const char *dir, int n_docs)
{
    splade_index_builder *b;
    int rc = splade_builder_create(NULL, 0, NULL, &b);
    if (rc < 0)
        return rc;
    unsigned seed = 12345;
    for (int d = 0; rc == 0 && d < n_docs; d++) {
        char id[32], tok[32];
        snprintf(id, sizeof id, "doc%d", d);
        uint32_t doc;
        rc = splade_builder_add_doc(b, "fixture", id, d % 7 ? "" : "A title", "body \xc3\xa9 text", d + 1, &doc);
        int32_t terms[8];
        float w[8];
        int n = 0;
        if (d % 11 != 5) { /* some documents stay empty */
            for (int i = 0; rc == 0 && i < 6; i++) {
                seed = seed * 1103515245u + 12345u;
                int t = i == 0 ? 0 : (int)((seed >> 8) % 40);
                snprintf(tok, sizeof tok, i == 1 && d % 3 == 0 ? "\xe2\x82\xac%d" : "t%d", t);
                int32_t id32;
                rc = splade_builder_term(b, tok, strlen(tok), &id32);
                int dup = 0;
                for (int j = 0; j < n; j++)
                    dup |= terms[j] == id32;
                if (rc == 0 && !dup) {
                    terms[n] = id32;
                    w[n++] = 0.01f + (float)((seed >> 4) % 1000) / 100.0f;
                }
            }
        }
        if (rc == 0)
            rc = splade_builder_set_vector(b, doc, terms, w, n);
    }
    if (rc == 0)
        rc = splade_builder_write(b, dir, NULL);
    splade_builder_free(b);
    return rc;
}

/* Reads a whole file into *data (malloc'd). */
static inline int fx_slurp(const char *path, uint8_t **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *data = malloc(n > 0 ? (size_t)n : 1);
    *size = *data && n >= 0 ? fread(*data, 1, (size_t)n, f) : 0;
    fclose(f);
    return *data && (long)*size == n ? 0 : -1;
}

static inline void fx_remove_index(const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, SPLADE_INDEX_FILE);
    unlink(p);
    rmdir(dir);
}

/* Searches q with every method at k; with `exact` (the index is known valid) traps unless every
 * method returns the same hits. Touches every returned hit's id, title and snippet. */
static inline void fx_search_all(const splade_index *ix, splade_searcher *s, const splade_qvec *q, int k, int exact)
{
    splade_hit *ref = calloc((size_t)k, sizeof *ref), *h = calloc((size_t)k, sizeof *h);
    int n_ref = -1;
    for (int a = 0; ref && h && a < FX_ALGOS; a++) {
        int n = 0;
        if (splade_search(s, q, k, (splade_algo)a, h, &n) != SPLADE_OK)
            continue;
        if (n < 0 || n > k)
            __builtin_trap();
        for (int i = 0; i < n; i++) {
            size_t len;
            const char *id = splade_index_doc_id(ix, h[i].doc, &len);
            const char *title, *snip;
            splade_index_doc_text(ix, h[i].doc, &title, &snip);
            volatile size_t sink = len + strlen(title) + strlen(snip) + (len ? (uint8_t)id[len - 1] : 0);
            (void)sink;
            (void)splade_hit_score(ix, q, h[i].score);
        }
        if (!exact)
            continue;
        for (int i = 1; i < n; i++) /* best first, ties by lower doc id */
            if (h[i].score > h[i - 1].score || (h[i].score == h[i - 1].score && h[i].doc <= h[i - 1].doc))
                __builtin_trap();
        if (n_ref < 0) {
            n_ref = n;
            memcpy(ref, h, (size_t)n * sizeof *h);
        } else if (n != n_ref || memcmp(ref, h, (size_t)n * sizeof *h) != 0) {
            fprintf(stderr, "method %d disagrees with method 0 at k=%d\n", a, k);
            __builtin_trap();
        }
    }
    free(ref);
    free(h);
}

#endif
