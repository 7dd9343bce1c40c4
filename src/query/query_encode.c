/* Query sets from text: placeholder until the encoder (include/splade/encoder.h) is in the tree. */
#include "splade.h"
#include "splade/query_input.h"

int splade_query_set_from_texts(splade_index *ix, const char *const *texts, int n,
                                const splade_query_encode_opts *opts, splade_query_set *out)
{
    (void)ix, (void)texts, (void)n, (void)opts, (void)out;
    return splade_fail(SPLADE_ERR_UNSUPPORTED, "text queries need the encoder, not in this build yet; "
                                               "use --vector-queries");
}

int splade_query_set_from_file(splade_index *ix, const char *path, const splade_query_encode_opts *opts,
                               splade_query_set *out)
{
    (void)path;
    return splade_query_set_from_texts(ix, NULL, 0, opts, out);
}
