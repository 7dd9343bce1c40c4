/* The kernels' tuning knobs from the environment (src/common/settings.h): the one file of the
 * library that calls getenv. Each field is parsed exactly as the code that used it did before. */
#include "common/settings.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t settings_once = PTHREAD_ONCE_INIT;
static splade_settings settings;

static int is(const char *name, const char *value)
{
    const char *e = getenv(name);
    return e && !strcmp(e, value);
}

/* atoi of a set, non-empty variable; dflt otherwise. */
static int int_or(const char *name, int dflt)
{
    const char *e = getenv(name);
    return e && *e ? atoi(e) : dflt;
}

/* "qkv,ffn_out" -> bits 1 << index in the list below (the Q8 bits of forward_cpu_int8.h). */
static int int8_fp32_set(const char *e)
{
    static const char *const names[] = {"qkv", "attn_out", "ffn_in", "ffn_out"};
    int bits = 0;
    for (const char *p = e; p && *p;) {
        size_t n = strcspn(p, ",");
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            if (strlen(names[i]) == n && !strncmp(p, names[i], n))
                bits |= 1 << i;
        p += n + (p[n] == ',');
    }
    return bits;
}

/* "SLOT:N[:CODE]" (SPLADE_TEST_ENCODER_FAIL) into s; unset or anything else leaves it off (slot -1).
 * CODE not given: 0, which the encoder reads as its default (a CUDA error). */
static void encoder_fail(const char *e, splade_settings *s)
{
    s->encoder_fail_slot = -1;
    if (!e)
        return;
    char *end;
    const long slot = strtol(e, &end, 10);
    if (end == e || *end != ':')
        return;
    const char *p = end + 1;
    const long batch = strtol(p, &end, 10);
    long code = 0;
    if (end == p)
        return;
    if (*end == ':') {
        p = end + 1;
        code = strtol(p, &end, 10);
        if (end == p || code >= 0)
            return;
    }
    if (*end || slot < 0 || slot > 1023 || batch < 1 || batch > INT_MAX || code < INT_MIN)
        return;
    s->encoder_fail_slot = (int)slot;
    s->encoder_fail_batch = (int)batch;
    s->encoder_fail_code = (int)code;
}

static void read_env(void)
{
    splade_settings s = {0};
    s.gemm_cpu_blas = is("SPLADE_GEMM_CPU", "blas");
    s.gemm_cpu_inplace = is("SPLADE_GEMM_CPU", "inplace");
    s.gemm_cpu_avx2 = is("SPLADE_GEMM_CPU", "avx2");
    s.lmhead_cpu_blas = is("SPLADE_LMHEAD_CPU", "blas");
    s.lmhead_cpu_full = s.lmhead_cpu_blas || is("SPLADE_LMHEAD_CPU", "full");
    s.gpu_poison = int_or("SPLADE_GPU_POISON", 0) != 0;
    s.gpu_gelu_erf = is("SPLADE_GPU_GELU", "erf");
    s.gpu_attn_mma = is("SPLADE_GPU_ATTN", "mma");
    s.gpu_gemm_tune = getenv("SPLADE_GPU_GEMM_TUNE") ? int_or("SPLADE_GPU_GEMM_TUNE", 0) != 0 : -1;
    const int chunk = int_or("SPLADE_GPU_FFN_CHUNK", 0);
    s.gpu_ffn_chunk = chunk > 0 ? (chunk + 127) / 128 * 128 : 0;
    s.gpu_small_gemm = int_or("SPLADE_GPU_SMALL_GEMM", 64);
    s.gpu_fp32_compute_default = is("SPLADE_GPU_FP32_COMPUTE", "default");
    s.lmhead_tma = int_or("SPLADE_LMHEAD_TMA", 1) != 0;
    const char *tile = getenv("SPLADE_LMHEAD_WGMMA_TILE");
    snprintf(s.lmhead_wgmma_tile, sizeof s.lmhead_wgmma_tile, "%s", tile ? tile : "");
    const int group = int_or("SPLADE_LMHEAD_GROUP", 0);
    s.lmhead_group = group > 0 ? group : 0;
    s.timings = int_or("SPLADE_TIMINGS", 0) != 0;
    s.gpu_warm = int_or("SPLADE_GPU_WARM", 1) != 0;
    s.gpu_search_chunk = int_or("SPLADE_GPU_SEARCH_CHUNK", 0);
    s.parse_threads = int_or("SPLADE_PARSE_THREADS", 0);
    s.gpu_search_window = is("SPLADE_GPU_SEARCH_KERNEL", "window");
    s.gpu_search_window_docs = int_or("SPLADE_GPU_SEARCH_WINDOW", 0);
    s.cpu_int8_fp32 = int8_fp32_set(getenv("SPLADE_CPU_INT8_FP32"));
    s.cpu_int8_per_tensor = is("SPLADE_CPU_INT8_ACT", "tensor");
    s.cpu_int8_head = is("SPLADE_CPU_INT8_HEAD", "int8") ? 1 : is("SPLADE_CPU_INT8_HEAD", "bf16") ? 2
                    : is("SPLADE_CPU_INT8_HEAD", "fp32") ? 3 : 0;
    encoder_fail(getenv("SPLADE_TEST_ENCODER_FAIL"), &s);
    settings = s;
}

const splade_settings *splade_settings_get(void)
{
    pthread_once(&settings_once, read_env);
    return &settings;
}

void splade_settings_reload(void)
{
    pthread_once(&settings_once, read_env);
    read_env();
}
