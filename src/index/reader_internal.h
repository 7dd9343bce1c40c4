/* The opened index (reader.c validates the file, tables.c interprets its sections). */
#ifndef SPLADE_INDEX_READER_INTERNAL_H
#define SPLADE_INDEX_READER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "index/format.h"
#include "index/manifest.h"
#include "index/segment.h"
#include "splade/index.h"

struct splade_index {
    char path[4096];
    uint8_t *map;
    size_t size;
    const uint8_t *sec[SEC_COUNT_];
    uint64_t sec_len[SEC_COUNT_];
    splade_index_info info;
    const uint32_t *vocab_off;
    const char *vocab;
    const splade_term_entry *terms;
    const splade_block_entry *blocks;
    const splade_range_term *range_terms;
    const uint64_t *id_off;
    const char *ids;
    const uint64_t *store_off;
    const char *store;
    char *model_name, *model_dir;
    uint32_t *lookup;       /* hash slots (term + 1) for an unsorted vocabulary, built on demand */
    uint32_t n_lookup;
    atomic_int lookup_ready; /* release-stored once lookup is complete: readers need no lock */
    _Atomic long long learned[SPLADE_INDEX_LEARNED]; /* segment.h: the search code's counters */
    pthread_mutex_t lookup_lock; /* serialises the one build of lookup among threads sharing ix */
    struct splade_forward *fwd; /* forward.h: built on demand for approximate rescoring */
    atomic_int fwd_ready;       /* release-stored once fwd is complete */
    pthread_mutex_t fwd_lock;   /* serialises its one build (and impact_order's) */
    struct splade_impact_order *imo; /* impact_order.h: built on demand for a posting budget */
    atomic_int imo_ready;       /* release-stored once imo is complete */
    int threads;            /* threads the open-time checks may use (1 for splade_index_open) */
    int lean;               /* the checks release the pages they have read (splade_index_open_fd_lean) */
    const uint32_t *docseq; /* a file's DOCSEQ section, NULL when absent */
    /* Segments (segment.h). A single file: one, itself (one_seg). A snapshot of a folder with a
     * MANIFEST (snapshot.c): the files it names, opened, with their deletions and term remaps. */
    int n_segs;
    splade_segment *segs;
    splade_segment one_seg;
    uint32_t max_seg_docs;
    int is_snapshot;
    splade_index **files;   /* snapshot: the segment files (owned) */
    splade_manifest man;    /* snapshot: the generation it opened */
    char *uvocab;           /* snapshot of --vectors segments: the union vocabulary (owned) */
    uint32_t *uvocab_off;
};

/* Opens the snapshot named by DIR/MANIFEST (snapshot.c); SPLADE_ERR_NOT_FOUND when there is none. */
int splade_snapshot_open(const char *dir, int threads, splade_index **out);
void splade_snapshot_free(splade_index *ix);
/* The same for a merge, which streams the segments once: each file's pages, read by its checks, are
 * released from the process (MADV_DONTNEED; they stay in the page cache) before the next file is
 * opened, so the open costs one segment of RSS, not the index. */
int splade_snapshot_open_lean(const char *dir, int threads, splade_index **out);
/* A zeroed index with its lock ready (reader.c). */
splade_index *splade_index_alloc(void);
/* The segment of snapshot document g (< n_docs) and its internal id there. */
const splade_segment *splade_snapshot_locate(const splade_index *ix, uint32_t g, uint32_t *local);
/* Sets up a single file's one segment (after its tables were parsed). */
void splade_index_single_segment(splade_index *ix);

int splade_index_parse_tables(splade_index *ix);

/* splade_index_open with every check of the file spread over `threads` threads: the same checks,
 * the same result and error (the builder's verification of a new file, install.c). */
int splade_index_open_threads(const char *path, int threads, splade_index **out);

/* The same checks on an open file descriptor (read from, not closed); path names it in messages.
 * The builder verifies its own temporary file through the descriptor it wrote, never by a path
 * that something else could have replaced in between. */
int splade_index_open_fd(int fd, const char *path, int threads, splade_index **out);
/* The same checks, releasing each part of the mapping from the process once checked (MADV_DONTNEED;
 * the pages stay in the page cache), so that verifying a file costs a few pieces of RSS, not the
 * file: for a writer that verifies a file it does not search (merge.c's new segment). */
int splade_index_open_fd_lean(int fd, const char *path, int threads, splade_index **out);
/* With ix->lean: drops the whole pages inside [from, to) from the process. */
void splade_index_release(const splade_index *ix, const void *from, const void *to);

#endif
