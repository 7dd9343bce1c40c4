/* Fuzz target: `build --vectors` end to end on arbitrary JSONL — vectors reader, builder (growing
 * vocabulary, duplicate ids), inversion, writer, verification, install — then the new index is
 * opened and queried with every method, which must agree. Inputs that fail to parse just return. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_index_fixture.h"
#include "fuzz_memfile.h"
#include "splade/build.h"

static const char *dir;

static void cleanup(void)
{
    fx_remove_index(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir) {
        dir = strdup(fx_scratch_dir("vectors"));
        atexit(cleanup);
    }
    char path[64];
    int fd = memfile_open(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    splade_index_builder *b;
    if (splade_builder_create(NULL, 0, NULL, &b) == SPLADE_OK) {
        splade_ingest_opts opts = {0};
        splade_build_stats st;
        splade_builder_allow_empty(b, 1); /* the folder is reused: an empty input must still be written and checked */
        if (splade_ingest_vectors(b, path, &opts) == SPLADE_OK && splade_builder_write(b, dir, &st) == SPLADE_OK) {
            splade_index *ix;
            if (splade_index_open(dir, &ix) != SPLADE_OK)
                __builtin_trap(); /* what build wrote must open */
            const splade_index_info *in = splade_index_get_info(ix);
            if (in->n_docs != st.n_docs || in->n_postings != st.n_postings)
                __builtin_trap();
            splade_searcher *s;
            int32_t terms[32];
            float w[32];
            int n = 0;
            for (uint32_t t = 0; t < in->n_terms && n < 32; t++, n++) {
                size_t len;
                const char *tok = splade_index_term(ix, (int32_t)t, &len);
                if (!tok || splade_index_term_lookup(ix, tok, len) != (int32_t)t)
                    __builtin_trap(); /* the sorted vocabulary must find its own terms */
                terms[n] = (int32_t)t;
                w[n] = 1.0f + (float)(t % 5);
            }
            splade_qvec q;
            if (splade_searcher_create(ix, &s) == SPLADE_OK) {
                if (splade_qvec_build(terms, w, n, in->n_terms, &q) == SPLADE_OK) {
                    fx_search_all(ix, s, &q, 5, 1);
                    splade_qvec_free(&q);
                }
                splade_searcher_free(s);
            }
            splade_index_close(ix);
        }
        splade_builder_free(b);
    }
    close(fd);
    return 0;
}
