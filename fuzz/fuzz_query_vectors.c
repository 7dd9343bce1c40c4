/* Fuzz target: query vectors JSONL (`query --vector-queries`) -> vectors reader -> term lookup ->
 * quantized query -> every top-k method over a small valid index. Every method must return the
 * same hits (exact top-k), so a disagreement is a crash here.
 * (Query texts go through the tokenizer, fuzzed by fuzz_tokenizer, then the encoder, whose input
 * is token ids only; the parsing a query file adds is this JSON path.) */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_index_fixture.h"
#include "fuzz_memfile.h"
#include "splade/query_input.h"

static splade_index *ix;
static splade_searcher *srch;

static void init_once(void)
{
    if (ix)
        return;
    const char *dir = fx_scratch_dir("qvec");
    if (fx_build(dir, 300) != 0 || splade_index_open(dir, &ix) != 0 || splade_searcher_create(ix, &srch) != 0) {
        fprintf(stderr, "fuzz_query_vectors: fixture failed: %s\n", splade_error_detail());
        abort();
    }
    fx_remove_index(dir); /* the mapping stays valid */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    char path[64];
    int fd = memfile_open(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    splade_query_set qs;
    if (splade_query_set_from_vectors(ix, path, &qs) == SPLADE_OK) {
        for (int i = 0; i < qs.n && i < 8; i++) {
            const splade_qvec *q = &qs.q[i];
            for (int j = 0; j < q->n; j++) /* qvec contract: distinct ascending ids, impacts 1..255 */
                if (q->impacts[j] == 0 || (j && q->terms[j] <= q->terms[j - 1]) || q->terms[j] < 0 ||
                    (uint32_t)q->terms[j] >= splade_index_get_info(ix)->n_terms)
                    __builtin_trap();
            fx_search_all(ix, srch, q, 10, 1);
            fx_search_all(ix, srch, q, 1, 1);
        }
        splade_query_set_free(&qs);
    }
    close(fd);
    return 0;
}
