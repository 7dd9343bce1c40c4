/* The request bodies of the engines splade-index feeds (src/cli/export_format.c): documents for
 * `export`, index templates for `export --print-mapping`, query bodies for `encode --queries`.
 * Each engine's documented shape is cited where it is written, and tests/cli/test_export.sh checks
 * the output against it. */
#ifndef SPLADE_CLI_EXPORT_FORMAT_H
#define SPLADE_CLI_EXPORT_FORMAT_H

#include <stdint.h>
#include <stdio.h>

typedef enum {
    EXPORT_OPENSEARCH,        /* OpenSearch rank_features (neural sparse search): token strings */
    EXPORT_OPENSEARCH_SPARSE, /* OpenSearch 3.3+ sparse_vector (neural sparse ANN, Seismic): token ids */
    EXPORT_ELASTICSEARCH,     /* Elasticsearch sparse_vector: token strings */
    EXPORT_QDRANT,            /* Qdrant named sparse vector: indices / values */
    EXPORT_MILVUS,            /* Milvus SPARSE_FLOAT_VECTOR (RESTful v2 JSON): token ids */
    EXPORT_COLUMNS,           /* {"id", "term_ids", "weights"} JSONL: the input of the Parquet writer */
} export_engine;

typedef struct {
    export_engine engine;
    const char *target; /* the engine's index / collection name */
    const char *field;  /* the vector field's name */
    int batch;          /* Qdrant / Milvus: points per request body */
    int k;              /* queries: hits asked for */
} export_target;

/* One vector: tokens and token ids side by side (ids < 0 only where the format needs none). */
typedef struct {
    const char *id;
    int32_t n;
    const char *const *tokens;
    const int32_t *ids;
    const float *weights;
} export_vec;

/* 0 with *e set, or -1 when s names no format. names_out lists them for messages. */
int export_parse_engine(const char *s, export_engine *e);
extern const char export_engine_names[];
/* 1 when the engine's keys are token ids (a vocabulary is needed to turn tokens into ids). */
int export_needs_ids(export_engine e);

/* Writes one document (bulk action + source for OpenSearch / Elasticsearch, a point or row into the
 * current batch for Qdrant / Milvus, a line for columns). */
void export_write_doc(FILE *f, const export_target *t, const export_vec *v);
/* Closes a pending Qdrant / Milvus batch (after the last document). */
void export_finish(FILE *f, const export_target *t);
/* The index / collection template for the engine, as one JSON object. */
void export_print_mapping(FILE *f, const export_target *t);
/* The engine's search request body for one query vector, on one line. */
void export_write_query(FILE *f, const export_target *t, const export_vec *v);

#endif
