/* Request bodies per engine (export_format.h). The shapes, from each engine's documentation:
 * - OpenSearch rank_features + neural_sparse query_tokens: docs.opensearch.org, "Neural sparse search
 *   using raw vectors" and "Neural sparse query" (keys are token strings).
 * - OpenSearch sparse_vector (3.3+, method "seismic"): docs.opensearch.org/latest/mappings/
 *   supported-field-types/sparse-vector, "Neural sparse ANN search": keys are token ids as strings.
 * - Elasticsearch sparse_vector + sparse_vector query: elastic.co/guide/en/elasticsearch/reference/
 *   current/sparse-vector.html ("strictly positive values", "9 significant bits for the precision").
 * - Qdrant: api.qdrant.tech, "Upsert points" (PUT /collections/{name}/points {"points": [...]}),
 *   "Query points" ({"query": {"indices", "values"}, "using": name}); point ids are unsigned
 *   integers or UUIDs.
 * - Milvus RESTful v2 (/v2/vectordb/entities/insert and /search): a sparse vector is a JSON object
 *   {"<index>": value} (milvus-io/milvus#33231).
 * Elasticsearch and OpenSearch rank_features refuse a '.' in a feature name (it would name a
 * sub-field: elastic/elasticsearch#93756); as Elasticsearch's own text expansion does
 * (elastic/elasticsearch#94389), '.' is written as "__" in documents and queries alike. */
#include "cli/export_format.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli_json.h"

const char export_engine_names[] = "opensearch|opensearch-sparse|elasticsearch|qdrant|milvus|columns";

int export_parse_engine(const char *s, export_engine *e)
{
    static const char *names[] = {"opensearch", "opensearch-sparse", "elasticsearch", "qdrant", "milvus", "columns"};
    for (int i = 0; s && i < 6; i++)
        if (!strcmp(s, names[i])) {
            *e = (export_engine)i;
            return 0;
        }
    return -1;
}

int export_needs_ids(export_engine e)
{
    return e != EXPORT_OPENSEARCH && e != EXPORT_ELASTICSEARCH;
}

/* A token as a feature name: '.' becomes "__" (see the top of the file). */
static void put_feature(FILE *f, const char *tok)
{
    if (!strchr(tok, '.')) {
        splade_cli_json_string(f, tok);
        return;
    }
    size_t n = strlen(tok);
    char *s = malloc(2 * n + 1), *o = s;
    if (!s) { /* cannot happen for a vocabulary token; write it unchanged rather than nothing */
        splade_cli_json_string(f, tok);
        return;
    }
    for (const char *p = tok; *p; p++) {
        if (*p == '.') {
            *o++ = '_';
            *o++ = '_';
        } else {
            *o++ = *p;
        }
    }
    *o = 0;
    splade_cli_json_string(f, s);
    free(s);
}

/* {"token": w, ...} or {"id": w, ...} */
static void put_map(FILE *f, const export_vec *v, int by_id)
{
    fputc('{', f);
    for (int32_t i = 0; i < v->n; i++) {
        fputs(i ? ", " : "", f);
        if (by_id)
            fprintf(f, "\"%d\"", (int)v->ids[i]);
        else
            put_feature(f, v->tokens[i]);
        fputs(": ", f);
        splade_cli_json_weight(f, v->weights[i]);
    }
    fputc('}', f);
}

/* "indices": [...], "values": [...] */
static void put_columns(FILE *f, const export_vec *v, const char *ids_name, const char *values_name)
{
    fprintf(f, "\"%s\": [", ids_name);
    for (int32_t i = 0; i < v->n; i++)
        fprintf(f, "%s%d", i ? ", " : "", (int)v->ids[i]);
    fprintf(f, "], \"%s\": [", values_name);
    for (int32_t i = 0; i < v->n; i++) {
        fputs(i ? ", " : "", f);
        splade_cli_json_weight(f, v->weights[i]);
    }
    fputc(']', f);
}

/* Qdrant point ids are unsigned integers or UUIDs: a canonical decimal id that fits 64 bits is used
 * as it is, any other id becomes the UUID of its 128-bit FNV-1a hash (version 8, RFC 9562: a
 * deterministic, vendor-defined UUID), and the corpus id goes into the payload. */
static void put_point_id(FILE *f, const char *id)
{
    size_t n = strlen(id);
    int decimal = n > 0 && n <= 19 && (id[0] != '0' || n == 1) && strspn(id, "0123456789") == n;
    if (decimal) {
        fputs(id, f);
        return;
    }
    unsigned __int128 h = ((unsigned __int128)0x6c62272e07bb0142ull << 64) | 0x62b821756295c58dull;
    const unsigned __int128 prime = ((unsigned __int128)1 << 88) | 0x13b;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
        h ^= *p;
        h *= prime;
    }
    uint8_t b[16];
    for (int i = 0; i < 16; i++)
        b[i] = (uint8_t)(h >> (8 * (15 - i)));
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x80); /* version 8 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* variant 10 */
    fprintf(f, "\"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\"", b[0], b[1], b[2], b[3],
            b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static int in_batch; /* documents in the open Qdrant / Milvus batch (one export per process) */

static void batch_open(FILE *f, const export_target *t)
{
    if (in_batch++ == 0) {
        if (t->engine == EXPORT_QDRANT)
            fputs("{\"points\": [", f);
        else
            fputs("{\"collectionName\": ", f), splade_cli_json_string(f, t->target), fputs(", \"data\": [", f);
    } else {
        fputs(", ", f);
    }
}

void export_finish(FILE *f, const export_target *t)
{
    (void)t;
    if (in_batch)
        fputs("]}\n", f);
    in_batch = 0;
}

static void bulk_action(FILE *f, const export_target *t, const char *id)
{
    fputs("{\"index\": {\"_index\": ", f);
    splade_cli_json_string(f, t->target);
    fputs(", \"_id\": ", f);
    splade_cli_json_string(f, id);
    fputs("}}\n", f);
}

void export_write_doc(FILE *f, const export_target *t, const export_vec *v)
{
    switch (t->engine) {
    case EXPORT_OPENSEARCH:
    case EXPORT_OPENSEARCH_SPARSE:
    case EXPORT_ELASTICSEARCH:
        bulk_action(f, t, v->id);
        fputc('{', f);
        splade_cli_json_string(f, t->field);
        fputs(": ", f);
        put_map(f, v, t->engine == EXPORT_OPENSEARCH_SPARSE);
        fputs("}\n", f);
        return;
    case EXPORT_QDRANT:
        batch_open(f, t);
        fputs("{\"id\": ", f);
        put_point_id(f, v->id);
        fputs(", \"vector\": {", f);
        splade_cli_json_string(f, t->field);
        fputs(": {", f);
        put_columns(f, v, "indices", "values");
        fputs("}}, \"payload\": {\"id\": ", f);
        splade_cli_json_string(f, v->id);
        fputs("}}", f);
        break;
    case EXPORT_MILVUS:
        batch_open(f, t);
        fputs("{\"id\": ", f);
        splade_cli_json_string(f, v->id);
        fputs(", ", f);
        splade_cli_json_string(f, t->field);
        fputs(": ", f);
        put_map(f, v, 1);
        fputc('}', f);
        break;
    case EXPORT_COLUMNS:
        fputs("{\"id\": ", f);
        splade_cli_json_string(f, v->id);
        fputs(", ", f);
        put_columns(f, v, "term_ids", "weights");
        fputs("}\n", f);
        return;
    }
    if (in_batch >= t->batch)
        export_finish(f, t);
}

void export_print_mapping(FILE *f, const export_target *t)
{
    const char *fld = t->field;
    switch (t->engine) {
    case EXPORT_OPENSEARCH: /* PUT /<target> */
        fprintf(f, "{\"mappings\": {\"properties\": {\"id\": {\"type\": \"keyword\"}, \"%s\": {\"type\": \"rank_features\"}}}}\n", fld);
        return;
    case EXPORT_OPENSEARCH_SPARSE: /* PUT /<target>; the index setting enables the sparse ANN codec */
        fprintf(f, "{\"settings\": {\"index\": {\"sparse\": true}}, \"mappings\": {\"properties\": {\"%s\": "
                   "{\"type\": \"sparse_vector\", \"method\": {\"name\": \"seismic\", \"parameters\": "
                   "{\"approximate_threshold\": 1000000}}}}}}\n", fld);
        return;
    case EXPORT_ELASTICSEARCH: /* PUT /<target> */
        fprintf(f, "{\"mappings\": {\"properties\": {\"%s\": {\"type\": \"sparse_vector\"}}}}\n", fld);
        return;
    case EXPORT_QDRANT: /* PUT /collections/<target>; dot product over the raw weights, no IDF */
        fprintf(f, "{\"sparse_vectors\": {\"%s\": {\"index\": {\"on_disk\": false}}}}\n", fld);
        return;
    case EXPORT_MILVUS: /* POST /v2/vectordb/collections/create */
        fputs("{\"collectionName\": ", f);
        splade_cli_json_string(f, t->target);
        fprintf(f, ", \"schema\": {\"autoId\": false, \"fields\": [{\"fieldName\": \"id\", \"dataType\": \"VarChar\", "
                   "\"isPrimary\": true, \"elementTypeParams\": {\"max_length\": 1024}}, {\"fieldName\": \"%s\", "
                   "\"dataType\": \"SparseFloatVector\"}]}, \"indexParams\": [{\"fieldName\": \"%s\", \"indexName\": "
                   "\"%s_index\", \"metricType\": \"IP\", \"params\": {\"index_type\": \"SPARSE_INVERTED_INDEX\"}}]}\n",
                fld, fld, fld);
        return;
    case EXPORT_COLUMNS:
        fputs("{\"id\": \"string\", \"term_ids\": \"list<int32>\", \"weights\": \"list<float32>\"}\n", f);
        return;
    }
}

void export_write_query(FILE *f, const export_target *t, const export_vec *v)
{
    switch (t->engine) {
    case EXPORT_OPENSEARCH:
    case EXPORT_OPENSEARCH_SPARSE: /* GET /<target>/_search */
        fprintf(f, "{\"size\": %d, \"query\": {\"neural_sparse\": {", t->k);
        splade_cli_json_string(f, t->field);
        fputs(": {\"query_tokens\": ", f);
        put_map(f, v, t->engine == EXPORT_OPENSEARCH_SPARSE);
        if (t->engine == EXPORT_OPENSEARCH_SPARSE)
            fprintf(f, ", \"method_parameters\": {\"k\": %d}", t->k);
        fputs("}}}}\n", f);
        return;
    case EXPORT_ELASTICSEARCH: /* GET /<target>/_search */
        fprintf(f, "{\"size\": %d, \"query\": {\"sparse_vector\": {\"field\": ", t->k);
        splade_cli_json_string(f, t->field);
        fputs(", \"query_vector\": ", f);
        put_map(f, v, 0);
        fputs("}}}\n", f);
        return;
    case EXPORT_QDRANT: /* POST /collections/<target>/points/query */
        fputs("{\"query\": {", f);
        put_columns(f, v, "indices", "values");
        fputs("}, \"using\": ", f);
        splade_cli_json_string(f, t->field);
        fprintf(f, ", \"limit\": %d, \"with_payload\": true}\n", t->k);
        return;
    case EXPORT_MILVUS: /* POST /v2/vectordb/entities/search */
        fputs("{\"collectionName\": ", f);
        splade_cli_json_string(f, t->target);
        fputs(", \"data\": [", f);
        put_map(f, v, 1);
        fputs("], \"annsField\": ", f);
        splade_cli_json_string(f, t->field);
        fprintf(f, ", \"limit\": %d, \"outputFields\": [\"id\"], \"searchParams\": {\"metricType\": \"IP\"}}\n", t->k);
        return;
    case EXPORT_COLUMNS:
        fputs("{\"id\": ", f);
        splade_cli_json_string(f, v->id);
        fputs(", ", f);
        put_columns(f, v, "term_ids", "weights");
        fputs("}\n", f);
        return;
    }
}
