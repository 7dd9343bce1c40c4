/* The smallest program on the installed library: indexes a vectors file (JSONL
 * {"id", "vector": {token: weight}}, as `splade-index encode` writes it) and searches one query
 * vector given as TOKEN:WEIGHT arguments, through the public API only.
 *
 *   cc search.c $(pkg-config --cflags --libs splade) -o search
 *   ./search vectors.jsonl index-dir dog:1.0 cat:0.5
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <splade.h>
#include <splade/build.h>
#include <splade/index.h>
#include <splade/query.h>

enum { K = 10 };

/* Every library call returns a status; the detail names the file, line or field at fault. */
static int report(int rc, const char *what)
{
    if (rc < 0)
        fprintf(stderr, "search: %s: %s: %s\n", what, splade_strerror(rc), splade_error_detail());
    return rc;
}

static int build_index(const char *vectors, const char *dir)
{
    splade_index_builder *b = NULL;
    splade_ingest_opts io;
    splade_ingest_opts_init(&io); /* the defaults: no progress callback (silent), empty input refused */
    int rc = report(splade_builder_create(NULL, 0, NULL, &b), "create");  /* vocabulary grows */
    if (rc == SPLADE_OK)
        rc = report(splade_ingest_vectors(b, vectors, &io), vectors);
    if (rc == SPLADE_OK)
        rc = report(splade_builder_write(b, dir, NULL), dir);
    splade_builder_free(b);
    return rc;
}

/* TOKEN:WEIGHT arguments to a quantized query over the index's vocabulary (unknown tokens dropped). */
static int parse_query(splade_index *ix, char **args, int n, splade_qvec *q)
{
    int32_t *terms = calloc((size_t)n, sizeof *terms);
    float *weights = calloc((size_t)n, sizeof *weights);
    int rc = terms && weights ? SPLADE_OK : SPLADE_ERR_NOMEM;
    for (int i = 0; i < n && rc == SPLADE_OK; i++) {
        const char *colon = strrchr(args[i], ':');
        if (!colon) {
            fprintf(stderr, "search: '%s' is not TOKEN:WEIGHT\n", args[i]);
            rc = SPLADE_ERR_INVALID_ARG;
            break;
        }
        terms[i] = splade_index_term_lookup(ix, args[i], (size_t)(colon - args[i]));
        weights[i] = strtof(colon + 1, NULL);
    }
    if (rc == SPLADE_OK)
        rc = report(splade_qvec_build(terms, weights, n, splade_index_get_info(ix)->n_terms, q), "query");
    free(terms);
    free(weights);
    return rc;
}

static int search_and_print(splade_index *ix, const splade_qvec *q)
{
    splade_searcher *s = NULL;
    splade_hit hits[K];
    int n = 0;
    int rc = report(splade_searcher_create(ix, &s), "searcher");
    if (rc == SPLADE_OK)
        rc = report(splade_search(s, q, K, SPLADE_ALGO_BMP, hits, &n), "search");
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *id = splade_index_doc_id(ix, hits[i].doc, &len);
        printf("%d\t%.*s\t%.4f\n", i + 1, (int)len, id, splade_hit_score(ix, q, hits[i].score));
    }
    splade_searcher_free(s);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: search VECTORS.jsonl INDEX_DIR TOKEN:WEIGHT...\n");
        return 2;
    }
    printf("libsplade %s\n", splade_version());
    splade_index *ix = NULL;
    splade_qvec q = {0};
    int rc = build_index(argv[1], argv[2]);
    if (rc == SPLADE_OK)
        rc = report(splade_index_open(argv[2], &ix), argv[2]);
    if (rc == SPLADE_OK)
        rc = parse_query(ix, argv + 3, argc - 3, &q);
    if (rc == SPLADE_OK)
        rc = search_and_print(ix, &q);
    splade_qvec_free(&q);
    splade_index_close(ix);
    return rc == SPLADE_OK ? 0 : 1;
}
