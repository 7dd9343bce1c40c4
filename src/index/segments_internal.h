/* Writing a segmented index folder (segments.c, merge.c): the steps every writer shares. */
#ifndef SPLADE_INDEX_SEGMENTS_INTERNAL_H
#define SPLADE_INDEX_SEGMENTS_INTERNAL_H

#include "index/builder_internal.h"
#include "index/manifest.h"
#include "splade/segments.h"
#include "splade/index.h"

/* `build` into a folder with a MANIFEST: the builder's documents become the only segment of the
 * next generation (fresh doc_scale, sequence from 0); the old files are removed. Lock held. */
int splade_segments_replace_all(splade_index_builder *b, const char *dir, splade_build_stats *st);

/* Removes every segment, deletion and temporary file of DIR that m does not name (index.spx too,
 * unless m names it). Lock held. */
void splade_segments_gc(const char *dir, const splade_manifest *m);
/* The same, sparing the segments `keep` spilled and has not installed yet (spill.c). */
void splade_segments_gc_keep(const char *dir, const splade_manifest *m, const splade_index_builder *keep);

/* The folder's current generation, for a writer holding the lock: DIR/MANIFEST, or one made up for
 * a single-file folder (naming index.spx, generation 0). SPLADE_ERR_NOT_FOUND without an index. */
int splade_segments_current(const char *dir, splade_manifest *m);

/* Installs m (generation already incremented by the caller), then removes what it no longer names. */
int splade_segments_install(const char *dir, const splade_manifest *m);

/* Merges segments of the open snapshot ix (of folder dir, lock held) whose indexes are marked in
 * pick[] into one new segment named seg-<gen>.spx, appended to out (a copy of ix's manifest with the
 * picked segments removed); its size into *bytes_out. merge.c. */
int splade_segments_merge_into(const splade_index *ix, const char *dir, const int *pick, int threads,
                               const volatile int *cancel, splade_manifest *out, uint64_t *bytes_out);

/* The merge of segments.h with the folder's lock held (merge.c): also the size-tiered policy after
 * an add and after a bounded build. */
int splade_merge_locked(const char *dir, int max_segments, int threads, const volatile int *cancel,
                        splade_merge_stats *st);

typedef struct {
    uint32_t n_docs;     /* live documents merged */
    uint64_t seq_base;   /* the lowest sequence number among them (next_seq when none) */
    uint64_t n_postings;
    uint64_t bytes;      /* the file's size */
    double verify_s;
} splade_merge_result;

/* The streaming merge (merge_stream.c): the live documents of ix's picked segments, in manifest
 * order, written as DIR/name (temporary file, fsync, verify on `threads`, rename) with doc_scale and
 * DOCSEQ offsets from res->seq_base. *cancel (NULL: none) is read between terms and before the
 * rename: SPLADE_ERR_CANCELLED, nothing installed. Lock held. */
int splade_merge_stream(const splade_index *ix, const char *dir, const char *name, const int *pick, int threads,
                        const volatile int *cancel, float doc_scale, uint64_t next_seq, splade_merge_result *res);

/* add: appends the builder's spilled segments (spill.c) to m, the next generation (the one they are
 * named for), after the index's sequence; m's segment array grows. */
int splade_spill_append(splade_index_builder *b, splade_manifest *m);

#endif
