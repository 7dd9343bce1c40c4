/* The builder's state, shared by builder.c (collecting documents), invert.c (postings) and
 * writer.c (the file). Not part of the public API. */
#ifndef SPLADE_INDEX_BUILDER_INTERNAL_H
#define SPLADE_INDEX_BUILDER_INTERNAL_H

#include <sys/types.h>

#include "index/format.h"
#include "index/strtab.h"
#include "splade/index.h"

struct splade_manifest_seg;

#define NO_VECTOR UINT64_MAX
#define SPLADE_MAX_THREADS 64 /* threads the inversion uses at most */

/* The exclusive build lock of an index folder (install.c): flock on DIR/.lock, which records the
 * holder (pid, host, start time) for the message a second writer gets. */
typedef struct {
    int held;
    int fd;
    dev_t dev;             /* the folder's identity: a write into the same folder reuses the lock */
    ino_t ino;
    int made_dir;          /* DIR did not exist: removed again on release if nothing was installed */
    char path[4096];       /* DIR/.lock */
} splade_dir_lock;

void splade_dir_lock_release(splade_dir_lock *l);

struct splade_index_builder {
    int dynamic_vocab;     /* vocabulary from token strings (--vectors) */
    strtab vocab;
    int32_t n_terms;
    strtab ids;            /* corpus ids, hashed for the duplicate check */
    strtab store;          /* "title NUL snippet NUL" per document */
    long *lines;           /* input line of each document, for duplicate messages */
    char *where;           /* the input of the first document (messages of splade_index_add) */
    uint64_t *fwd_off;     /* per document: start in fterms/fweights, NO_VECTOR until set */
    uint32_t *fwd_len;
    uint32_t doc_cap;
    int32_t *fterms;       /* forward vectors, back to back */
    float *fweights;
    uint64_t fn, fcap;
    int has_model;
    char *model_name, *model_dir;
    uint64_t fingerprint;
    int lowercase;
    int query_table;       /* SPLADE_IX_QUERY_TABLE */
    int32_t max_length;
    uint32_t n_truncated;
    int keep_order;        /* internal ids = corpus order (no reordering, reorder.c) */
    int threads;           /* threads the inversion may use; <= 0: all online cores (splade_build_threads) */
    int allow_empty;       /* may replace a non-empty index with one without postings */
    int fixed_time;        /* build_time was given (splade_builder_set_build_time), else the time of writing */
    uint64_t build_time;   /* Unix seconds recorded in the index when fixed_time */
    float fixed_scale;     /* doc_scale to quantize with (splade_builder_set_doc_scale); 0: the collection's */
    uint64_t n_clipped;    /* out: postings saturated at 255 under fixed_scale (last write) */
    float written_scale;   /* out: the doc_scale of the last file written */
    splade_dir_lock lock;  /* taken by splade_builder_lock, released by splade_builder_free */
    const volatile int *cancel; /* the caller's flag, read between the write's stages; NULL: none */
    /* Bounded memory (spill.c): the documents so far become a segment of spill_dir once the estimate
     * reaches `memory`; all of them are installed in one generation at the end. */
    uint64_t memory;       /* budget in bytes; 0: unbounded */
    int spill_append;      /* 1: the spills are added to the index (add): its doc_scale and sequence */
    char *spill_dir;
    uint32_t n_vectors;    /* documents with a vector: a spill waits until every document has one */
    struct splade_manifest_seg *spills; /* written, not yet installed; seq_base relative to the first */
    int n_spills, spill_cap, spills_installed;
    uint64_t spill_gen;    /* the generation they are named for (seg-<gen>-<k>.spx) */
    uint64_t spilled_docs, spilled_postings;
    uint32_t spilled_truncated;
    splade_build_stats spill_st; /* the spills' times and counts, summed */
    strtab seen;           /* ids of spilled documents (duplicate check), hashed */
    long *seen_lines;
    uint32_t seen_cap;
    int merge_limit;       /* a bounded build's merge policy (splade_builder_set_merge_policy): 0 default, < 0 off */
    int n_merged;          /* out: segments the policy merged after the last bounded build */
};

/* Document d's forward terms / weights (fwd_len[d] of them). The arrays stay NULL while no document
 * has a term, and NULL + 0 is undefined behaviour in C (UBSan, fuzz_vectors: a corpus of empty
 * vectors), so every reader goes through these. */
static inline const int32_t *fwd_terms(const splade_index_builder *b, uint32_t d)
{
    return b->fterms ? b->fterms + b->fwd_off[d] : NULL;
}
static inline const float *fwd_weights(const splade_index_builder *b, uint32_t d)
{
    return b->fweights ? b->fweights + b->fwd_off[d] : NULL;
}

/* The postings of a builder, ready to write. */
typedef struct {
    splade_term_entry *terms;   /* [n_terms] */
    splade_block_entry *blocks; /* [n_blocks] */
    uint64_t n_blocks;
    int n_parts;                /* POSTINGS and RANGES, each in n_parts pieces written back to back */
    uint8_t *post_part[SPLADE_MAX_THREADS]; /* encoded blocks; the last part ends with 16 zero bytes */
    size_t post_part_len[SPLADE_MAX_THREADS];
    size_t postings_len;        /* sum of the parts, including the padding */
    float doc_scale;
    uint64_t n_postings;
    uint32_t n_terms_used;
    splade_range_term *range_terms; /* [n_terms] */
    uint8_t *rng_part[SPLADE_MAX_THREADS]; /* per term: u8 maxima, streamvbyte delta-coded range ids; + 16 zero bytes */
    size_t rng_part_len[SPLADE_MAX_THREADS];
    size_t ranges_len;
    int32_t *vocab_order;       /* sorted vocabulary: VOCAB entry i is builder term vocab_order[i]; NULL: identity */
    uint32_t *doc_order;        /* internal id i is builder document doc_order[i] (reorder.c); NULL: identity */
    uint32_t *docseq;           /* DOCSEQ section (writer.c); NULL: not written (offset = internal id) */
    uint64_t n_clipped;         /* postings whose impact was clipped to 255 (fixed doc_scale only) */
    double reorder_s;           /* seconds spent choosing doc_order */
    double scatter_s, encode_s; /* seconds in the radix passes / block and range encoding */
} splade_inverted;

int splade_invert(const splade_index_builder *b, splade_inverted *out);

/* spill.c. Whether id is one of the builder's documents, spilled or not (its input line into *line). */
int splade_builder_has_id(const splade_index_builder *b, const char *id, size_t len, long *line);
/* After document vectors are set: writes the documents so far as a segment when the budget is reached. */
int splade_builder_maybe_spill(splade_index_builder *b);
/* build: the remaining documents as the last segment, then every spilled segment in one new generation. */
int splade_spill_install_build(splade_index_builder *b, const char *dir, splade_build_stats *st);
/* Unlinks the spilled segments that were never installed (a failed build or add). */
void splade_spill_discard(splade_index_builder *b);

/* Inverts and installs the builder's documents as DIR/name (a segment: segments.c) instead of
 * DIR/index.spx, the caller holding DIR's lock (b's, or `lock`'s). Same steps as
 * splade_builder_write: temporary file, fsync, verify, rename, fsync DIR. */
int splade_builder_write_named(splade_index_builder *b, const char *dir, const char *name, splade_build_stats *st);

/* The folder lock of every writer (install.c): taken with splade_dir_lock_take, released with
 * splade_dir_lock_release. SPLADE_ERR_IO naming the holder when another process has it. */
int splade_dir_lock_take(const char *dir, splade_dir_lock *l);
/* Whether l holds the lock of folder dir. */
int splade_dir_lock_holds(const splade_dir_lock *l, const char *dir);
/* Removes the temporary files of killed writers (.index.spx.tmp-*, .MANIFEST.tmp-*); lock held. */
void splade_remove_stale(const char *dir);
/* Creates DIR/<prefix><pid>-<random> exclusively (O_EXCL), its path into tmp. */
int splade_create_temp(const char *dir, const char *prefix, char *tmp, size_t cap, int *fd);
/* The prefix of an index file's temporaries (DIR/.index.spx.tmp-<pid>-<random>). */
#define SPLADE_TMP_PREFIX "." SPLADE_INDEX_FILE ".tmp-"
/* Makes the complete temporary file fd (at tmp) DIR/name: fsync and verify (on threads; lean: the
 * checked pages leave the process as the check goes, splade_index_open_fd_lean), a last look at
 * *cancel (may be NULL), rename, fsync DIR. Removes tmp on failure; closes fd. */
int splade_install_temp(int fd, const char *tmp, const char *dir, const char *name, int threads, int lean,
                        const volatile int *cancel, double *verify_s);
/* fsync of a folder (after a rename in it). */
int splade_sync_dir(const char *dir);

/* Threads to use: requested (> 0) or all online cores, at most SPLADE_MAX_THREADS, 1 for small
 * collections (n_postings). The index does not depend on it. */
int splade_build_threads(int requested, uint64_t n_postings);
void splade_inverted_free(splade_inverted *inv);

/* Writes the index file into fd (an empty file the caller created; path names it in messages) on
 * `threads` threads: complete when this returns OK, but not yet fsynced (the caller does that). */
int splade_write_file(const splade_index_builder *b, const splade_inverted *inv, int fd, const char *path,
                      int threads, uint64_t *file_bytes);

#endif
