/* DIR/MANIFEST: the live segments of an index folder and their deleted documents, one generation
 * (docs/FORMAT.md, "Segments and the manifest"). Read by every reader of a segmented folder, written
 * only by the writer holding the folder's lock, always as a whole new file renamed into place. */
#ifndef SPLADE_INDEX_MANIFEST_H
#define SPLADE_INDEX_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#define SPLADE_MANIFEST_FILE "MANIFEST"
#define SPLADE_MANIFEST_VERSION 1
#define SPLADE_NAME_MAX 64

typedef struct splade_manifest_seg {
    char file[SPLADE_NAME_MAX];      /* seg-<generation>.spx, or index.spx (a converted single-file index) */
    uint32_t n_docs;                 /* documents in the file, deleted ones included */
    uint64_t seq_base;
    char deletions[SPLADE_NAME_MAX]; /* del-<generation>-<n>.del, "" when none is deleted */
    uint32_t n_deleted;
    uint64_t clipped;                /* postings saturated at 255 under the index's doc_scale */
} splade_manifest_seg;

typedef struct splade_manifest {
    uint64_t generation;
    float doc_scale;                 /* shared by every segment; 0 until one has postings */
    uint64_t next_seq;               /* sequence number of the next document added */
    int has_model;
    uint64_t fingerprint;
    char model_name[1024], model_dir[4096];
    int n_segs;
    splade_manifest_seg *segs;
} splade_manifest;

/* Reads DIR/MANIFEST: SPLADE_ERR_NOT_FOUND when the folder has none, SPLADE_ERR_FORMAT naming the
 * file and the field when it is malformed. m is freed with splade_manifest_free either way. */
int splade_manifest_read(const char *dir, splade_manifest *m);
/* Replaces DIR/MANIFEST atomically: DIR/.MANIFEST.tmp-<pid>-<random> written, fsynced, renamed onto
 * MANIFEST, DIR fsynced. The caller holds the folder's lock. */
int splade_manifest_write(const char *dir, const splade_manifest *m);
void splade_manifest_free(splade_manifest *m);
/* A deep copy (segs duplicated) with room for `extra` more segments. */
int splade_manifest_copy(const splade_manifest *from, int extra, splade_manifest *to);

/* Writes DIR/name through DIR/<prefix><pid>-<random>: written, fsynced, renamed (the caller fsyncs DIR). */
int splade_write_small_file(const char *dir, const char *prefix, const char *name, const void *data, size_t len);

/* Deletion files: the set of deleted internal ids of one segment (deletions.c). */
#define SPLADE_DEL_MAGIC "SPLDXDEL"
/* Reads DIR/name for a segment of n_docs documents: a bitset of ceil(n_docs / 64) words (owned by
 * the caller, free()), checked (magic, size, CRC, no bit at or past n_docs, n_deleted bits set). */
int splade_deletions_read(const char *dir, const char *name, uint32_t n_docs, uint32_t n_deleted, uint64_t **bits);
/* Writes DIR/name (temporary, fsync, verify, rename; the folder is fsynced with the manifest). */
int splade_deletions_write(const char *dir, const char *name, uint32_t n_docs, const uint64_t *bits,
                           uint32_t *n_deleted);

#endif
