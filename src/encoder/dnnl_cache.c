/* oneDNN's engine and each thread's stream, tiles and primitives (dnnl_cache.h). */
#ifdef SPLADE_HAVE_DNNL
#include "encoder/dnnl_cache.h"
#include "common/fail.h"
#include "splade.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void omp_set_num_threads(int n); /* libgomp, which libdnnl links */

static dnnl_engine_t engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void make_engine(void)
{
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) {
        engine = NULL;
        splade_fail(SPLADE_ERR_UNSUPPORTED, "oneDNN: no CPU engine");
    }
}

int splade_dnnl_md(dnnl_memory_desc_t *d, int64_t r, int64_t c, dnnl_data_type_t dt, int64_t sr, int64_t sc)
{
    dnnl_dims_t dims = {r, c}, strides = {sr, sc};
    return dnnl_memory_desc_init_by_strides(d, 2, dims, dt, strides) == dnnl_success ? 0 : -1;
}

dnnl_engine_t splade_dnnl_engine(void)
{
    pthread_once(&engine_once, make_engine);
    return engine;
}

static pthread_key_t state_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void free_state(void *p)
{
    splade_dnnl_thread *t = p;
    for (int k = 0; k < SPLADE_DNNL_KINDS; k++) {
        for (int i = 0; i < t->table[k].n; i++) {
            splade_dnnl_prim *e = &t->table[k].e[i];
            dnnl_primitive_destroy(e->prim);
            dnnl_memory_destroy(e->src), dnnl_memory_destroy(e->wei), dnnl_memory_destroy(e->dst);
            if (e->bias)
                dnnl_memory_destroy(e->bias);
        }
        free(t->table[k].e);
    }
    if (t->stream)
        dnnl_stream_destroy(t->stream);
    free(t);
}

static void make_key(void) { pthread_key_create(&state_key, free_state); }

splade_dnnl_thread *splade_dnnl_thread_state(void)
{
    pthread_once(&key_once, make_key);
    splade_dnnl_thread *t = pthread_getspecific(state_key);
    if (t)
        return t;
    dnnl_engine_t eng = splade_dnnl_engine();
    if (!eng || !(t = aligned_alloc(64, (sizeof *t + 63) / 64 * 64)))
        return NULL;
    memset(t, 0, sizeof *t);
    omp_set_num_threads(1); /* this thread's oneDNN calls run on it alone */
    if (dnnl_stream_create(&t->stream, eng, dnnl_stream_default_flags) != dnnl_success) {
        free(t);
        return NULL;
    }
    pthread_setspecific(state_key, t);
    return t;
}

/* (kinds differ by table) */
static int same_key(const splade_dnnl_key *a, const splade_dnnl_key *b)
{
    return a->rows == b->rows && a->K == b->K && a->P == b->P && a->ldc == b->ldc && a->flags == b->flags &&
           a->w_md == b->w_md;
}

/* The primitive of pd and memory objects (no data yet) for its arguments. */
static int make_prim(splade_dnnl_prim *e, dnnl_primitive_desc_t pd)
{
    dnnl_engine_t eng = splade_dnnl_engine();
    const dnnl_memory_desc_t *b = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
    return dnnl_primitive_create(&e->prim, pd) == dnnl_success &&
           dnnl_memory_create(&e->src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), eng,
                              DNNL_MEMORY_NONE) == dnnl_success &&
           (!b || !b->ndims || dnnl_memory_create(&e->bias, b, eng, DNNL_MEMORY_NONE) == dnnl_success) &&
           dnnl_memory_create(&e->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), eng,
                              DNNL_MEMORY_NONE) == dnnl_success &&
           dnnl_memory_create(&e->wei, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), eng,
                              DNNL_MEMORY_NONE) == dnnl_success;
}

splade_dnnl_prim *splade_dnnl_prim_get(splade_dnnl_thread *t, const splade_dnnl_key *key, splade_dnnl_make_pd make)
{
    splade_dnnl_table *tab = &t->table[key->kind];
    for (int i = 0; i < tab->n; i++)
        if (same_key(&tab->e[i].key, key))
            return &tab->e[i];
    if (tab->n == tab->cap) {
        int cap = tab->cap ? 2 * tab->cap : 32;
        splade_dnnl_prim *e = realloc(tab->e, (size_t)cap * sizeof *e);
        if (!e)
            return NULL;
        tab->e = e, tab->cap = cap;
    }
    dnnl_primitive_desc_t pd = make(key);
    if (!pd)
        return NULL;
    splade_dnnl_prim *e = &tab->e[tab->n];
    memset(e, 0, sizeof *e);
    e->key = *key;
    int ok = make_prim(e, pd);
    dnnl_primitive_desc_destroy(pd);
    if (!ok)
        return NULL;
    tab->n++;
    return e;
}

int splade_dnnl_prim_run(splade_dnnl_thread *t, const splade_dnnl_prim *e, const void *src, const void *wei,
                         const void *bias, void *dst)
{
    dnnl_memory_set_data_handle(e->src, (void *)src);
    dnnl_memory_set_data_handle(e->wei, (void *)wei);
    dnnl_memory_set_data_handle(e->dst, dst);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->src}, {DNNL_ARG_WEIGHTS, e->wei}, {DNNL_ARG_DST, e->dst}};
    int n = 3;
    if (e->bias) {
        dnnl_memory_set_data_handle(e->bias, (void *)bias);
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, e->bias};
    }
    return dnnl_primitive_execute(e->prim, t->stream, n, args) == dnnl_success &&
                   dnnl_stream_wait(t->stream) == dnnl_success
               ? 0
               : -1;
}
#endif
