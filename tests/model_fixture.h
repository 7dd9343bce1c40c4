/* Writes tiny BERT checkpoints (config.json, vocab.txt, model.safetensors) for loader and
 * encoder tests, with knobs that break one thing at a time. Header-only, test code. */
#ifndef SPLADE_TEST_MODEL_FIXTURE_H
#define SPLADE_TEST_MODEL_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmp_dir.h"

enum { FX_V = 40, FX_H = 8, FX_L = 2, FX_HEADS = 2, FX_I = 12, FX_P = 16, FX_T = 2 };

typedef struct {
    const char *dtype;         /* "F32" (default), "F16", "BF16" */
    const char *skip;          /* tensor name to leave out */
    const char *bad_shape;     /* tensor written with one extra row */
    const char *bad_dtype;     /* tensor written as I32 */
    const char *hidden_act;    /* default "gelu" */
    int untied;                /* write cls.predictions.decoder.weight */
    int no_prefix;             /* names without "bert." */
    int old_ln_names;          /* LayerNorm gamma/beta */
    long truncate;             /* > 0: cut model.safetensors to this many bytes */
    uint64_t header_len;       /* != 0: write this header length instead */
    const char *config_text;   /* != NULL: config.json content verbatim */
    int lowercase;             /* tokenizer_config.json do_lower_case: 1, 0; -1: no file */
    const char *extra;         /* an additional [FX_H] tensor of this name */
    const char *nan_tensor;    /* tensor whose element 1 is written as NaN */
    int config_layers;         /* != 0: num_hidden_layers written to config.json (tensors keep FX_L) */
    int config_heads;          /* != 0: num_attention_heads written to config.json */
    double config_eps;         /* != 0: layer_norm_eps written to config.json */
} fx_opts;

typedef struct {
    char name[128];
    int ndim;
    int64_t shape[2];
} fx_tensor;

static int fx_list(const fx_opts *o, fx_tensor *t)
{
    int n = 0;
    const char *pre = o->no_prefix ? "" : "bert.";
    const char *g = o->old_ln_names ? "gamma" : "weight", *b = o->old_ln_names ? "beta" : "bias";
#define T2(r, c, ...) (snprintf(t[n].name, 128, __VA_ARGS__), t[n].ndim = 2, t[n].shape[0] = r, t[n].shape[1] = c, n++)
#define T1(r, ...) (snprintf(t[n].name, 128, __VA_ARGS__), t[n].ndim = 1, t[n].shape[0] = r, n++)
    T2(FX_V, FX_H, "%sembeddings.word_embeddings.weight", pre);
    T2(FX_P, FX_H, "%sembeddings.position_embeddings.weight", pre);
    T2(FX_T, FX_H, "%sembeddings.token_type_embeddings.weight", pre);
    T1(FX_H, "%sembeddings.LayerNorm.%s", pre, g);
    T1(FX_H, "%sembeddings.LayerNorm.%s", pre, b);
    for (int l = 0; l < FX_L; l++) {
        const char *qkv[3] = {"query", "key", "value"};
        for (int i = 0; i < 3; i++) {
            T2(FX_H, FX_H, "%sencoder.layer.%d.attention.self.%s.weight", pre, l, qkv[i]);
            T1(FX_H, "%sencoder.layer.%d.attention.self.%s.bias", pre, l, qkv[i]);
        }
        T2(FX_H, FX_H, "%sencoder.layer.%d.attention.output.dense.weight", pre, l);
        T1(FX_H, "%sencoder.layer.%d.attention.output.dense.bias", pre, l);
        T1(FX_H, "%sencoder.layer.%d.attention.output.LayerNorm.%s", pre, l, g);
        T1(FX_H, "%sencoder.layer.%d.attention.output.LayerNorm.%s", pre, l, b);
        T2(FX_I, FX_H, "%sencoder.layer.%d.intermediate.dense.weight", pre, l);
        T1(FX_I, "%sencoder.layer.%d.intermediate.dense.bias", pre, l);
        T2(FX_H, FX_I, "%sencoder.layer.%d.output.dense.weight", pre, l);
        T1(FX_H, "%sencoder.layer.%d.output.dense.bias", pre, l);
        T1(FX_H, "%sencoder.layer.%d.output.LayerNorm.%s", pre, l, g);
        T1(FX_H, "%sencoder.layer.%d.output.LayerNorm.%s", pre, l, b);
    }
    T2(FX_H, FX_H, "cls.predictions.transform.dense.weight");
    T1(FX_H, "cls.predictions.transform.dense.bias");
    T1(FX_H, "cls.predictions.transform.LayerNorm.%s", g);
    T1(FX_H, "cls.predictions.transform.LayerNorm.%s", b);
    if (o->untied)
        T2(FX_V, FX_H, "cls.predictions.decoder.weight");
    T1(FX_V, "cls.predictions.bias");
    if (o->extra)
        T1(FX_H, "%s", o->extra);
#undef T1
#undef T2
    return n;
}

/* Deterministic values k/64, |k| <= 127: exact in F32, F16 and BF16, so all three dtypes must
 * give bit-identical models. LayerNorm gains sit near 1. */
static float fx_value(const char *name, int64_t i)
{
    uint32_t h = 2166136261u;
    for (const char *p = name; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    h = (h ^ (uint32_t)i) * 2654435761u;
    int k = (int)((h >> 8) % 255) - 127;
    int gain = strstr(name, "LayerNorm.weight") || strstr(name, "LayerNorm.gamma");
    return gain ? 1.0f + (float)(k / 8) / 128.0f : (float)k / 64.0f; /* 7-bit mantissas: BF16 */
}

static uint16_t fx_f16(float x)
{
    _Float16 h = (_Float16)x;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}

static uint16_t fx_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)(u >> 16); /* exact for fx_value's values */
}

static void fx_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void fx_config(const char *dir, const fx_opts *o)
{
    char path[512], buf[1024];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (o->config_text) {
        fx_write_file(path, o->config_text);
        return;
    }
    snprintf(buf, sizeof buf,
             "{\"architectures\": [\"BertForMaskedLM\"], \"hidden_act\": \"%s\", \"hidden_size\": %d,\n"
             " \"num_hidden_layers\": %d, \"num_attention_heads\": %d, \"intermediate_size\": %d,\n"
             " \"max_position_embeddings\": %d, \"type_vocab_size\": %d, \"vocab_size\": %d,\n"
             " \"pad_token_id\": 0, \"layer_norm_eps\": %g, \"tie_word_embeddings\": %s}\n",
             o->hidden_act ? o->hidden_act : "gelu", FX_H, o->config_layers ? o->config_layers : FX_L,
             o->config_heads ? o->config_heads : FX_HEADS, FX_I, FX_P, FX_T, FX_V,
             o->config_eps ? o->config_eps : 1e-12, o->untied ? "false" : "true");
    fx_write_file(path, buf);
}

static void fx_vocab(const char *dir, const fx_opts *o)
{
    char path[512];
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "wb");
    const char *special[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (int i = 0; i < FX_V; i++) {
        if (i < 5)
            fprintf(f, "%s\n", special[i]);
        else if (i < 31)
            fprintf(f, "%c\n", 'a' + i - 5);
        else
            fprintf(f, "##%c\n", 'a' + i - 31);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    if (o->lowercase >= 0)
        fx_write_file(path, o->lowercase ? "{\"do_lower_case\": true}" : "{\"do_lower_case\": false}");
    else
        unlink(path);
}

/* The name values are drawn under: the same tensor gets the same values whatever its naming. */
static void fx_canonical(const char *name, char out[128])
{
    snprintf(out, 128, "bert.%.120s", strncmp(name, "bert.", 5) ? name : name + 5);
    if (!strncmp(out, "bert.cls.", 9))
        memmove(out, out + 5, strlen(out + 5) + 1);
    char *p = strstr(out, "LayerNorm.gamma");
    if (p)
        strcpy(p, "LayerNorm.weight");
    p = strstr(out, "LayerNorm.beta");
    if (p)
        strcpy(p, "LayerNorm.bias");
}

/* Appends the data of tensor t in the chosen dtype; returns its byte count. */
static size_t fx_data(const fx_opts *o, const fx_tensor *t, int64_t rows, const char *dtype, FILE *f)
{
    int64_t n = rows * (t->ndim == 2 ? t->shape[1] : 1);
    char name[128];
    fx_canonical(t->name, name);
    size_t es = !strcmp(dtype, "F32") || !strcmp(dtype, "I32") ? 4 : 2;
    for (int64_t i = 0; i < n && f; i++) {
        float x = o->nan_tensor && strstr(t->name, o->nan_tensor) && i == 1 ? NAN : fx_value(name, i);
        uint16_t h = !strcmp(dtype, "F16") ? fx_f16(x) : fx_bf16(x);
        int32_t k = (int32_t)i;
        fwrite(es == 2 ? (void *)&h : !strcmp(dtype, "I32") ? (void *)&k : (void *)&x, es, 1, f);
    }
    return (size_t)n * es;
}

static void fx_safetensors(const char *dir, const fx_opts *o)
{
    fx_tensor t[128];
    int n = fx_list(o, t);
    char path[512], *hdr = malloc(1 << 16);
    size_t len = 0, off = 0;
    len += (size_t)sprintf(hdr + len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int pass = 0; pass < 2; pass++) {
        FILE *f = NULL;
        if (pass == 1) {
            while ((len + 1) % 8)
                hdr[len++] = ' ';
            hdr[len++] = '}';
            snprintf(path, sizeof path, "%s/model.safetensors", dir);
            f = fopen(path, "wb");
            uint64_t hl = o->header_len ? o->header_len : len;
            fwrite(&hl, 8, 1, f);
            fwrite(hdr, 1, len, f);
        }
        for (int i = 0; i < n; i++) {
            if (o->skip && strstr(t[i].name, o->skip))
                continue;
            int64_t rows = t[i].shape[0] + (o->bad_shape && strstr(t[i].name, o->bad_shape) ? 1 : 0);
            const char *dt = o->bad_dtype && strstr(t[i].name, o->bad_dtype) ? "I32" : o->dtype ? o->dtype : "F32";
            size_t nb = fx_data(o, &t[i], rows, dt, f);
            if (pass == 0) {
                char shape[64];
                if (t[i].ndim == 2)
                    snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)rows, (long long)t[i].shape[1]);
                else
                    snprintf(shape, sizeof shape, "[%lld]", (long long)rows);
                len += (size_t)sprintf(hdr + len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}",
                                       t[i].name, dt, shape, off, off + nb);
                off += nb;
            }
        }
        if (f)
            fclose(f);
    }
    free(hdr);
    if (o->truncate > 0 && truncate(path, o->truncate) != 0)
        perror("truncate");
}

/* Writes a complete fixture model into a fresh temporary folder; returns it (free()). */
static char *fx_make(const fx_opts *o)
{
    char *dir = strdup("/tmp/splade_fx_XXXXXX");
    if (!mkdtemp(dir))
        return NULL;
    fx_config(dir, o);
    fx_vocab(dir, o);
    fx_safetensors(dir, o);
    return dir;
}

static void fx_remove(char *dir)
{
    if (dir)
        td_remove(dir);
    free(dir);
}

#endif
