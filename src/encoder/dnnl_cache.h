/* The oneDNN state that src/encoder/'s oneDNN users share (gemm_dnnl.c: bf16 and fp32 matmuls;
 * gemm_dnnl_int8.c: int8): the process's CPU engine, and per calling thread a stream, the dense
 * tiles units compute into and a table of matmul primitives keyed by kind and unit shape. Each
 * thread owns its state (freed when it exits), so team members never share mutable oneDNN objects;
 * its stream is made with oneDNN's OpenMP pinned to one thread (the team owns the threading).
 * Only with SPLADE_HAVE_DNNL. Private to src/encoder/. */
#ifndef SPLADE_DNNL_CACHE_H
#define SPLADE_DNNL_CACHE_H

#include "encoder/gemm_dnnl.h"

#include <oneapi/dnnl/dnnl.h> /* the path the Makefile tests for oneDNN */
#include <stdint.h>

/* A 2-D memory descriptor: r x c elements of dt with strides (sr, sc); 0, or -1 when oneDNN refuses. */
int splade_dnnl_md(dnnl_memory_desc_t *d, int64_t r, int64_t c, dnnl_data_type_t dt, int64_t sr, int64_t sc);

/* The process's CPU engine, made on first call; NULL when oneDNN has none (the reason is then in
 * splade_error_detail() of the thread that asked first). */
dnnl_engine_t splade_dnnl_engine(void);

/* What a primitive is for: the kinds' weight layouts live in different structs, so a freed
 * layout's address reused by another kind cannot hit the wrong primitive. ATTN: attention_bf16.c's
 * two products (no weights of a model: both operands are activations). */
typedef enum {
    SPLADE_DNNL_KIND_BF16,
    SPLADE_DNNL_KIND_F32,
    SPLADE_DNNL_KIND_S8,
    SPLADE_DNNL_KIND_ATTN,
    SPLADE_DNNL_KINDS
} splade_dnnl_kind;

/* A unit's matmul: rows x K times K x P into a destination of row stride ldc, weights in layout
 * w_md (compared by address: the linear's own descriptor, or a kind's sentinel). flags only tell
 * entries apart. */
typedef struct {
    splade_dnnl_kind kind;
    int32_t rows, K, P, ldc;
    int flags;
    const dnnl_memory_desc_t *w_md;
} splade_dnnl_key;

typedef struct {
    splade_dnnl_key key;
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, bias, dst; /* data handles set per run; bias NULL when the matmul has none */
} splade_dnnl_prim;

typedef struct {
    splade_dnnl_prim *e;
    int n, cap;
} splade_dnnl_table;

typedef struct {
    dnnl_stream_t stream;
    /* Cache-line aligned (the state is allocated so): oneDNN's 64-byte stores into a tile that
     * straddles lines cost the int8 path ~2.5% of its CPU time. */
    _Alignas(64) float tile[SPLADE_DNNL_ROWS * SPLADE_DNNL_PANEL];       /* a bf16 / fp32 unit's output */
    _Alignas(64) int32_t tile_s32[SPLADE_DNNL_ROWS * SPLADE_DNNL_PANEL]; /* an int8 unit's s32 sums */
    /* The primitives made so far, one table per kind: a lookup scans its own kind's shapes only
     * (each row count of a short batch has its own, so a table can grow to hundreds). */
    splade_dnnl_table table[SPLADE_DNNL_KINDS];
} splade_dnnl_thread;

/* This thread's state, made (64-byte aligned) on its first call; NULL without engine or memory. */
splade_dnnl_thread *splade_dnnl_thread_state(void);

/* The primitive for key in t, made on first use from make(key) (which returns NULL when oneDNN has
 * no such matmul); NULL without memory or primitive. */
typedef dnnl_primitive_desc_t (*splade_dnnl_make_pd)(const splade_dnnl_key *key);
splade_dnnl_prim *splade_dnnl_prim_get(splade_dnnl_thread *t, const splade_dnnl_key *key, splade_dnnl_make_pd make);

/* Runs e on t's stream with these data (bias ignored when e has none) and waits: 0, or -1 when
 * oneDNN fails. */
int splade_dnnl_prim_run(splade_dnnl_thread *t, const splade_dnnl_prim *e, const void *src, const void *wei,
                         const void *bias, void *dst);

#endif
