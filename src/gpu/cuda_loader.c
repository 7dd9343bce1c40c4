/* The CUDA build's GPU entry points, loaded on first use. Every .cu file lives in
 * libsplade-cuda.so, which links cuBLAS, cuBLASLt and the CUDA runtime: mapping and relocating
 * those costs ~230 MB of RSS and ~0.1 s, which a program linked with them pays at every start,
 * even for `--help`. Here each entry point of encoder/gpu_encoder.h and lmhead_fused/lmhead.h that host code
 * calls loads the object once (pthread_once) and forwards to its definition, so only a GPU path
 * pays, and only once. When the CUDA driver (libcuda.so.1) is missing, nothing more is loaded:
 * no CUDA call could succeed without it. When anything cannot be loaded, the entry points answer
 * as src/gpu/no_cuda.c does (the probe says why; the others SPLADE_ERR_NO_GPU with the dlerror
 * text), so `--device auto` falls back to the CPU.
 *
 * Where libsplade-cuda.so is looked for (the first that exists is loaded):
 *   1. the directory of the program (or shared library) holding this code: build/splade-index
 *      finds build/libsplade-cuda.so;
 *   2. that directory's parent: build/tests/ and build/bench/ programs use the build's copy;
 *   3. the dynamic linker's own search for the bare name (LD_LIBRARY_PATH, the program's RUNPATH,
 *      /etc/ld.so.cache): an installed copy.
 * The object's references to host functions (splade_fail, ...) bind to the program's, which
 * exports them (-Wl,--dynamic-list=src/gpu/host_exports.list); it is linked -Bsymbolic so its own
 * calls never come back here. docs/GPU_ENCODER.md ("Loading"). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fail.h"
#include "gpu/loader.h"
#include "splade.h"
#include "encoder/gpu_encoder.h"
#include "lmhead_fused/lmhead.h"
#include "gpu/search.h"

#define CUDA_DRIVER "libcuda.so.1"

/* The forwarded entry points: one name each gives the table's field (typed from the header's
 * declaration) and the symbol looked up. */
#define CUDA_API(X)                                                                               \
    X(splade_gpu_probe)                                                                           \
    X(splade_gpu_encoder_create_ex)                                                               \
    X(splade_gpu_encoder_create_on)                                                               \
    X(splade_gpu_device_count)                                                                    \
    X(splade_gpu_warm_context)                                                                    \
    X(splade_gpu_warm_blas)                                                                       \
    X(splade_gpu_encoder_precision)                                                               \
    X(splade_gpu_encoder_forward)                                                                 \
    X(splade_gpu_encoder_forward_sparse)                                                          \
    X(splade_gpu_encoder_free)                                                                    \
    X(splade_lmhead_workspace_bytes)                                                              \
    X(splade_lmhead_gpu)                                                                          \
    X(splade_lmhead_fused_plan)                                                                   \
    X(splade_lmhead_gpu_fused)                                                                    \
    X(splade_lmhead_gpu_fp32)                                                                     \
    X(splade_gpu_search_open)                                                                     \
    X(splade_gpu_search_run)                                                                      \
    X(splade_gpu_search_bytes)                                                                    \
    X(splade_gpu_search_close)

#define API_FIELD(fn) __typeof__(fn) *fn;
typedef struct {
    CUDA_API(API_FIELD)
} cuda_api;

#define API_SYMBOL(fn) {#fn, offsetof(cuda_api, fn)},
static const struct {
    const char *name;
    size_t offset;
} api_symbols[] = {CUDA_API(API_SYMBOL)};

/* Written once under pthread_once, read-only after: no lock needed to read them. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cuda_api api;
static void *cuda_so;        /* NULL until loaded, and for good when loading failed */
static char so_path[PATH_MAX + 32];
static char load_error[PATH_MAX + 512];

/* The directory of the file holding this code, into dir; 0 when unknown. For the main program
 * dladdr gives argv[0] (maybe relative or bare), so /proc/self/exe names it. */
static int own_directory(char *dir)
{
    Dl_info info;
    const char *self = "/proc/self/exe";
    if (dladdr((void *)own_directory, &info) && info.dli_fname && info.dli_fname[0] == '/')
        self = info.dli_fname;
    if (!realpath(self, dir))
        return 0;
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    slash[slash == dir] = '\0'; /* "/prog" -> "/" */
    return 1;
}

/* dlopen's the first candidate that exists; the bare name (the linker's search) last. */
static void *open_cuda_so(void)
{
    const int flags = RTLD_NOW | RTLD_LOCAL; /* NOW: a missing host symbol fails here, not mid-run */
    char dir[PATH_MAX];
    if (own_directory(dir)) {
        const char *const rel[] = {"", "/.."};
        for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
            snprintf(so_path, sizeof so_path, "%s%s/%s", dir, rel[i], SPLADE_CUDA_SO);
            if (access(so_path, F_OK) == 0) {
                void *h = dlopen(so_path, flags);
                if (!h)
                    snprintf(load_error, sizeof load_error, "cannot load %s: %s", so_path, dlerror());
                return h;
            }
        }
    }
    snprintf(so_path, sizeof so_path, "%s", SPLADE_CUDA_SO);
    void *h = dlopen(so_path, flags);
    if (!h)
        snprintf(load_error, sizeof load_error, "cannot load the GPU code (%s next to the program or on the "
                 "library path): %s", SPLADE_CUDA_SO, dlerror());
    return h;
}

static void load_cuda(void)
{
    /* kept open for good: the CUDA runtime dlopen's it again itself */
    if (!dlopen(CUDA_DRIVER, RTLD_LAZY | RTLD_LOCAL)) {
        snprintf(load_error, sizeof load_error, "no CUDA driver: %s", dlerror());
        return;
    }
    void *h = open_cuda_so();
    if (!h)
        return;
    for (size_t i = 0; i < sizeof api_symbols / sizeof *api_symbols; i++) {
        void *p = dlsym(h, api_symbols[i].name);
        if (!p) {
            snprintf(load_error, sizeof load_error, "%s lacks %s (a stale build?)", so_path, api_symbols[i].name);
            dlclose(h);
            return;
        }
        memcpy((char *)&api + api_symbols[i].offset, &p, sizeof p);
    }
    cuda_so = h;
}

static int cuda_loaded(void)
{
    pthread_once(&load_once, load_cuda);
    return cuda_so != NULL;
}

static int no_gpu(void)
{
    return splade_fail(SPLADE_ERR_NO_GPU, "%s", load_error);
}

void *splade_gpu_symbol(const char *name)
{
    if (!cuda_loaded()) {
        no_gpu();
        return NULL;
    }
    void *p = dlsym(cuda_so, name);
    if (!p)
        splade_fail(SPLADE_ERR_NO_GPU, "%s lacks %s (a stale build?)", so_path, name);
    return p;
}

int splade_gpu_probe(char *name, size_t name_len)
{
    if (cuda_loaded())
        return api.splade_gpu_probe(name, name_len);
    if (name && name_len)
        snprintf(name, name_len, "%s", load_error);
    return 0;
}

int splade_gpu_encoder_create(const splade_model *m, splade_lmhead_kind head, splade_gpu_encoder **out)
{
    return splade_gpu_encoder_create_ex(m, head, SPLADE_PRECISION_BF16, out);
}

int splade_gpu_encoder_create_ex(const splade_model *m, splade_lmhead_kind head, splade_precision precision,
                                 splade_gpu_encoder **out)
{
    if (cuda_loaded())
        return api.splade_gpu_encoder_create_ex(m, head, precision, out);
    if (out)
        *out = NULL;
    return no_gpu();
}

int splade_gpu_encoder_create_on(const splade_model *m, splade_lmhead_kind head, splade_precision precision,
                                 int device, int tune, splade_gpu_encoder **out)
{
    if (cuda_loaded())
        return api.splade_gpu_encoder_create_on(m, head, precision, device, tune, out);
    if (out)
        *out = NULL;
    return no_gpu();
}

int splade_gpu_device_count(void) { return cuda_loaded() ? api.splade_gpu_device_count() : 0; }


int splade_gpu_warm_context(int device) { return cuda_loaded() ? api.splade_gpu_warm_context(device) : no_gpu(); }

int splade_gpu_warm_blas(int device) { return cuda_loaded() ? api.splade_gpu_warm_blas(device) : no_gpu(); }

/* An encoder exists only once the object is loaded: NULL never loads it (the CPU path frees
 * its NULL GPU encoder at every splade_encoder_free). */
splade_precision splade_gpu_encoder_precision(const splade_gpu_encoder *g)
{
    return g ? api.splade_gpu_encoder_precision(g) : SPLADE_PRECISION_BF16;
}

void splade_gpu_encoder_free(splade_gpu_encoder *g)
{
    if (g)
        api.splade_gpu_encoder_free(g);
}

int splade_gpu_encoder_forward(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets, int32_t B,
                               float *out_dense)
{
    if (!cuda_loaded())
        return no_gpu();
    return api.splade_gpu_encoder_forward(g, ids, offsets, B, out_dense);
}

int splade_gpu_encoder_forward_sparse(splade_gpu_encoder *g, const int32_t *ids, const int32_t *offsets,
                                      int32_t B, float threshold, splade_gpu_sparse *out)
{
    if (cuda_loaded())
        return api.splade_gpu_encoder_forward_sparse(g, ids, offsets, B, threshold, out);
    if (out)
        memset(out, 0, sizeof *out);
    return no_gpu();
}

size_t splade_lmhead_workspace_bytes(splade_lmhead_kind kind, const splade_lmhead_args *a)
{
    return cuda_loaded() ? api.splade_lmhead_workspace_bytes(kind, a) : 0;
}

int splade_lmhead_gpu(splade_lmhead_kind kind, const splade_lmhead_args *a, void *workspace,
                      size_t workspace_bytes, void *cublas_handle, void *stream)
{
    if (!cuda_loaded())
        return no_gpu();
    return api.splade_lmhead_gpu(kind, a, workspace, workspace_bytes, cublas_handle, stream);
}

int splade_lmhead_gpu_fp32(const splade_lmhead_args *a, void *stream)
{
    if (!cuda_loaded())
        return no_gpu();
    return api.splade_lmhead_gpu_fp32(a, stream);
}

int splade_lmhead_fused_plan(splade_fused_path path, const splade_lmhead_args *a, splade_lmhead_plan *plan)
{
    if (cuda_loaded())
        return api.splade_lmhead_fused_plan(path, a, plan);
    if (plan)
        memset(plan, 0, sizeof *plan);
    return no_gpu();
}

int splade_lmhead_gpu_fused(splade_fused_path path, const splade_lmhead_args *a, void *stream)
{
    if (!cuda_loaded())
        return no_gpu();
    return api.splade_lmhead_gpu_fused(path, a, stream);
}

int splade_gpu_search_open(const splade_gpu_postings *p, int device, splade_gpu_search **out)
{
    if (cuda_loaded())
        return api.splade_gpu_search_open(p, device, out);
    if (out)
        *out = NULL;
    return no_gpu();
}

int splade_gpu_search_run(splade_gpu_search *g, int nq, const uint64_t *task_off, const splade_gpu_task *tasks, int k,
                          uint64_t *keys, int *counts)
{
    if (!cuda_loaded())
        return no_gpu();
    return api.splade_gpu_search_run(g, nq, task_off, tasks, k, keys, counts);
}

/* A GPU search exists only once the object is loaded: NULL never loads it. */
size_t splade_gpu_search_bytes(const splade_gpu_search *g)
{
    return g ? api.splade_gpu_search_bytes(g) : 0;
}

void splade_gpu_search_close(splade_gpu_search *g)
{
    if (g)
        api.splade_gpu_search_close(g);
}
