/* Reading the vector goldens of tools/make_model_goldens.py (tests/data/models/NAME.jsonl): a meta
 * line, then {"id","text","ids","truncated","vec":[[term,weight],...]} per text. Header-only, test code. */
#ifndef SPLADE_TEST_GOLDEN_VECTORS_H
#define SPLADE_TEST_GOLDEN_VECTORS_H

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "splade/sparse.h"

typedef struct {
    char *id, *text;
    int32_t *ids, n_ids;
    int truncated;
    int32_t *terms, n;
    float *w;
} gv_row;

typedef struct {
    char sha[65], route[16];
    int max_length;
    gv_row *g;
    int n;
} gv_file;

static inline int32_t *gv_ints(json_t *a, int32_t *n)
{
    *n = (int32_t)json_array_size(a);
    int32_t *x = malloc((size_t)(*n + 1) * sizeof *x);
    for (int32_t i = 0; i < *n; i++)
        x[i] = (int32_t)json_integer_value(json_array_get(a, (size_t)i));
    return x;
}

static inline void gv_parse_row(json_t *r, gv_row *g)
{
    json_t *vec = json_object_get(r, "vec");
    g->id = strdup(json_string_value(json_object_get(r, "id")));
    g->text = strdup(json_string_value(json_object_get(r, "text")));
    g->truncated = json_is_true(json_object_get(r, "truncated"));
    g->ids = gv_ints(json_object_get(r, "ids"), &g->n_ids);
    g->n = (int32_t)json_array_size(vec);
    g->terms = malloc((size_t)(g->n + 1) * sizeof *g->terms);
    g->w = malloc((size_t)(g->n + 1) * sizeof *g->w);
    for (int32_t i = 0; i < g->n; i++) {
        json_t *p = json_array_get(vec, (size_t)i);
        g->terms[i] = (int32_t)json_integer_value(json_array_get(p, 0));
        g->w[i] = (float)json_number_value(json_array_get(p, 1));
    }
}

static inline int gv_load(const char *path, gv_file *gf)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    memset(gf, 0, sizeof *gf);
    int cap = 64;
    gf->g = calloc((size_t)cap, sizeof *gf->g);
    char *line = NULL;
    size_t lcap = 0;
    for (int first = 1; getline(&line, &lcap, f) > 0; first = 0) {
        json_t *r = json_loads(line, 0, NULL);
        if (!r) {
            free(line);
            fclose(f);
            return -1;
        }
        if (first) {
            json_t *meta = json_object_get(r, "meta");
            snprintf(gf->sha, sizeof gf->sha, "%s", json_string_value(json_object_get(meta, "safetensors_sha256")));
            const char *route = json_string_value(json_object_get(meta, "route"));
            snprintf(gf->route, sizeof gf->route, "%s", route ? route : "document");
            gf->max_length = (int)json_integer_value(json_object_get(meta, "max_length"));
        } else {
            if (gf->n == cap)
                gf->g = realloc(gf->g, (size_t)(cap *= 2) * sizeof *gf->g);
            gv_parse_row(r, &gf->g[gf->n++]);
        }
        json_decref(r);
    }
    free(line);
    fclose(f);
    return 0;
}

static inline void gv_free(gv_file *gf)
{
    for (int i = 0; i < gf->n; i++) {
        gv_row *g = &gf->g[i];
        free(g->id), free(g->text), free(g->ids), free(g->terms), free(g->w);
    }
    free(gf->g);
}

/* Max |diff| over the union of terms; *only_one set when a term >= tol is on one side only. */
static inline double gv_compare(const gv_row *g, const splade_sparse *v, double tol, int32_t *only_one)
{
    double worst = 0.0;
    int32_t i = 0, j = 0;
    *only_one = -1;
    while (i < g->n || j < v->n) {
        int32_t tg = i < g->n ? g->terms[i] : INT32_MAX, tv = j < v->n ? v->terms[j] : INT32_MAX;
        double a = tg <= tv ? g->w[i] : 0.0, b = tv <= tg ? v->weights[j] : 0.0;
        if ((a == 0.0) != (b == 0.0) && fmax(a, b) >= tol && *only_one < 0)
            *only_one = tg < tv ? tg : tv;
        worst = fabs(a - b) > worst ? fabs(a - b) : worst;
        i += tg <= tv;
        j += tv <= tg;
    }
    return worst;
}

/* SHA-256 of DIR/model.safetensors through the system tool: 1 equal, 0 different, -1 unknown. */
static inline int gv_sha_matches(const char *dir, const char *sha)
{
    char cmd[600], out[80] = "";
    snprintf(cmd, sizeof cmd, "sha256sum '%s/model.safetensors' 2>/dev/null", dir);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int ok = fgets(out, sizeof out, p) != NULL;
    pclose(p);
    return ok ? strncmp(out, sha, 64) == 0 : -1;
}

#endif
