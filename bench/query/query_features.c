/* Per-query statistics of auto's choice (src/query/choose.c), one line per query, for replaying
 * measured per-query times through candidate rules (bench/query/replay_auto.py):
 *   query_features INDEX_DIR QVECTORS.jsonl > FEATURES.txt
 * Columns: terms with postings, postings, documents, rho (postings / documents), share of the
 * postings in lists over >= 10% of the documents, largest impact / sum of impacts, clustering gain
 * unweighted and weighted by query impact (expected doc-id ranges if the postings were spread at
 * random, R (1 - e^(-df / R)), over the ranges the terms occur in). Build (after make NO_CUDA=1 BUILD=build-nc):
 *   cc -O2 -Iinclude -Isrc bench/query/query_features.c build-nc/libsplade.a -lutf8proc -ljansson -lopenblas \
 *      -lcurl -lstreamvbyte -lz -lm -pthread -o query_features */
#include <stdio.h>
#include <math.h>
#include "splade.h"
#include "splade/index.h"
#include "splade/query.h"
#include "splade/query_input.h"
#include "index/segment.h"
#include "index/format.h"
int main(int argc, char **argv)
{
    splade_index *ix; splade_query_set qs;
    if (splade_index_open(argv[1], &ix) < 0 || splade_query_set_from_vectors(ix, argv[2], &qs) < 0) return 1;
    for (int i = 0; i < qs.n; i++) {
        const splade_qvec *q = &qs.q[i];
        double er = 0, pr = 0, wer = 0, wpr = 0, post = 0, lng = 0, docs = 0, qsum = 0, qmax = 0; int nt = 0;
        for (int g = 0; g < splade_index_n_segments(ix); g++) {
            const splade_segment *sg = splade_index_segment(ix, g);
            docs += sg->n_docs;
            for (int j = 0; j < q->n; j++) {
                splade_term_postings tp;
                splade_index_postings(sg->ix, splade_segment_term(sg, q->terms[j]), &tp);
                if (!tp.n_postings || !q->impacts[j]) continue;
                post += tp.n_postings; nt++;
                if (tp.n_postings >= sg->n_docs / 10) lng += tp.n_postings;
                splade_term_ranges tr; splade_index_ranges(sg->ix, splade_segment_term(sg, q->terms[j]), &tr);
                double R = (sg->n_docs + 63) / 64, e = R * (1 - exp(-(double)tp.n_postings / R));
                er += e; pr += tr.n; wer += q->impacts[j] * e; wpr += q->impacts[j] * (double)tr.n;
            }
        }
        for (int j = 0; j < q->n; j++) { qsum += q->impacts[j]; if (q->impacts[j] > qmax) qmax = q->impacts[j]; }
        printf("%d %.0f %.0f %.4f %.4f %.4f %.4f %.4f\n", nt, post, docs, post / docs, lng / post, qmax / qsum, er / pr, wer / wpr);
    }
    return 0;
}
