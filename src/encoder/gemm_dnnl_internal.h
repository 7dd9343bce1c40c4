/* What gemm_dnnl.c shares with the other oneDNN users of src/encoder/ (gemm_dnnl_int8.c): the
 * process's CPU engine and the calling thread's stream (created with oneDNN's OpenMP pinned to one
 * thread: the team owns the threading). Only with SPLADE_HAVE_DNNL. Private to src/encoder/. */
#ifndef SPLADE_GEMM_DNNL_INTERNAL_H
#define SPLADE_GEMM_DNNL_INTERNAL_H

#include <oneapi/dnnl/dnnl.h>

/* NULL when oneDNN has no CPU engine (the reason is in splade_error_detail()). */
dnnl_engine_t splade_dnnl_engine(void);
/* This thread's stream, made on its first call; NULL without memory or engine. */
dnnl_stream_t splade_dnnl_thread_stream(void);

#endif
