/* safetensors: 8-byte little-endian header length, a JSON header
 * {name: {dtype, shape, data_offsets: [begin, end]}}, then the data block. Every range is
 * checked here so that later code can trust pointers into the mapping. */
#include "common/fail.h"
#include "encoder/safetensors.h"
#include "encoder/model_files.h"
#include "splade.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ST_MAX_HEADER (100u << 20) /* real headers are KBs; a huge one is corruption */

static size_t dtype_size(const char *s, st_dtype *d)
{
    static const struct { const char *name; st_dtype d; size_t size; } table[] = {
        {"F32", ST_F32, 4}, {"F16", ST_F16, 2},  {"BF16", ST_BF16, 2}, {"F64", ST_OTHER, 8},
        {"I64", ST_OTHER, 8}, {"I32", ST_OTHER, 4}, {"I16", ST_OTHER, 2}, {"I8", ST_OTHER, 1},
        {"U8", ST_OTHER, 1}, {"BOOL", ST_OTHER, 1}, {"U16", ST_OTHER, 2}, {"U32", ST_OTHER, 4},
        {"U64", ST_OTHER, 8}, {"F8_E4M3", ST_OTHER, 1}, {"F8_E5M2", ST_OTHER, 1},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (!strcmp(s, table[i].name)) {
            *d = table[i].d;
            return table[i].size;
        }
    *d = ST_OTHER;
    return 0;
}

static int parse_shape(json_t *shape, st_tensor *t, const char *path)
{
    if (!json_is_array(shape) || json_array_size(shape) > 8)
        return splade_fail(SPLADE_ERR_FORMAT, "%s: tensor '%s': bad 'shape'", path, t->name);
    t->ndim = (int)json_array_size(shape);
    for (int i = 0; i < t->ndim; i++) {
        json_t *d = json_array_get(shape, (size_t)i);
        if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > (1LL << 40))
            return splade_fail(SPLADE_ERR_FORMAT, "%s: tensor '%s': bad 'shape'", path, t->name);
        t->shape[i] = json_integer_value(d);
    }
    return SPLADE_OK;
}

static int parse_entry(const char *key, json_t *v, const uint8_t *data, size_t data_size,
                       st_tensor *t, const char *path)
{
    if (!(t->name = strdup(key)))
        return splade_fail(SPLADE_ERR_NOMEM, "%s: tensor name", path);
    json_t *dt = json_object_get(v, "dtype"), *off = json_object_get(v, "data_offsets");
    if (!json_is_object(v) || !json_is_string(dt))
        return splade_fail(SPLADE_ERR_FORMAT, "%s: tensor '%s': missing 'dtype'", path, key);
    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", json_string_value(dt));
    size_t esize = dtype_size(t->dtype_name, &t->dtype);
    int rc = parse_shape(json_object_get(v, "shape"), t, path);
    if (rc)
        return rc;
    if (!json_is_array(off) || json_array_size(off) != 2 || !json_is_integer(json_array_get(off, 0)) ||
        !json_is_integer(json_array_get(off, 1)))
        return splade_fail(SPLADE_ERR_FORMAT, "%s: tensor '%s': bad 'data_offsets'", path, key);
    json_int_t b = json_integer_value(json_array_get(off, 0)), e = json_integer_value(json_array_get(off, 1));
    if (b < 0 || e < b || (uint64_t)e > data_size)
        return splade_fail(SPLADE_ERR_FORMAT,
                           "%s: tensor '%s': data_offsets [%lld, %lld] outside the %zu-byte data block "
                           "(truncated file?)", path, key, (long long)b, (long long)e, data_size);
    uint64_t numel = 1;
    for (int i = 0; i < t->ndim; i++)
        numel *= (uint64_t)t->shape[i];
    if (esize && numel * esize != (uint64_t)(e - b))
        return splade_fail(SPLADE_ERR_FORMAT,
                           "%s: tensor '%s': %lld bytes for %s x %llu elements (expected %llu)", path,
                           key, (long long)(e - b), t->dtype_name, (unsigned long long)numel,
                           (unsigned long long)(numel * esize));
    t->data = data + b;
    t->nbytes = (size_t)(e - b);
    return SPLADE_OK;
}

static int by_offsets(const void *pa, const void *pb)
{
    const st_tensor *a = *(const st_tensor *const *)pa, *b = *(const st_tensor *const *)pb;
    if (a->data != b->data)
        return a->data < b->data ? -1 : 1;
    return (a->nbytes > b->nbytes) - (a->nbytes < b->nbytes);
}

/* The reference implementation's rule: sorted by offsets, the tensors tile the data block
 * exactly, from 0 to its end. No two tensors share (alias) or overlap bytes, and there is no
 * gap or trailing data where something unvalidated could hide. */
static int check_tiling(const st_file *f, const uint8_t *data, size_t data_size)
{
    const st_tensor **order = malloc((size_t)(f->n ? f->n : 1) * sizeof *order);
    if (!order)
        return splade_fail(SPLADE_ERR_NOMEM, "%s: header", f->path);
    for (int i = 0; i < f->n; i++)
        order[i] = &f->t[i];
    qsort(order, (size_t)f->n, sizeof *order, by_offsets);
    size_t end = 0;
    int rc = SPLADE_OK;
    for (int i = 0; i < f->n && !rc; i++) {
        size_t begin = (size_t)(order[i]->data - data);
        if (begin != end)
            rc = splade_fail(SPLADE_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets begin at %zu, expected %zu: tensor data must "
                             "be contiguous, without overlap or gap", f->path, order[i]->name, begin, end);
        end = begin + order[i]->nbytes;
    }
    if (!rc && end != data_size)
        rc = splade_fail(SPLADE_ERR_FORMAT,
                         "%s: the tensors cover %zu of the %zu bytes after the header (truncated file or "
                         "trailing data)", f->path, end, data_size);
    free(order);
    return rc;
}

static int parse_header(st_file *f, const char *json, size_t len, size_t data_off)
{
    json_error_t err;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return splade_fail(SPLADE_ERR_FORMAT, "%s: malformed safetensors JSON header: %s", f->path,
                           root ? "not an object" : err.text);
    }
    f->t = calloc(json_object_size(root) + 1, sizeof *f->t);
    int rc = f->t ? SPLADE_OK : splade_fail(SPLADE_ERR_NOMEM, "%s: header", f->path);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (rc || !strcmp(key, "__metadata__"))
            continue;
        rc = parse_entry(key, v, f->map + data_off, f->size - data_off, &f->t[f->n], f->path);
        f->n++;
    }
    json_decref(root);
    return rc ? rc : check_tiling(f, f->map + data_off, f->size - data_off);
}

static int map_file(const char *path, st_file *f)
{
    int fd;
    size_t size;
    int rc = splade_open_regular(path, SIZE_MAX, &fd, &size);
    if (rc)
        return rc;
    if (size < 8) {
        close(fd);
        return splade_fail(SPLADE_ERR_FORMAT, "%s: truncated safetensors file (%zu bytes)", path, size);
    }
    f->size = size;
    void *m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return splade_fail(SPLADE_ERR_IO, "%s: mmap: %s", path, strerror(errno));
    f->map = m;
    return SPLADE_OK;
}

int st_open(const char *path, st_file *f)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    int rc = map_file(path, f);
    if (rc)
        return rc;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | f->map[i];
    if (hlen > ST_MAX_HEADER || hlen > f->size - 8)
        rc = splade_fail(SPLADE_ERR_FORMAT,
                         "%s: header length %llu runs past the end of the %zu-byte file (truncated?)",
                         path, (unsigned long long)hlen, f->size);
    else
        rc = parse_header(f, (const char *)f->map + 8, (size_t)hlen, 8 + (size_t)hlen);
    if (rc)
        st_close(f);
    return rc;
}

const st_tensor *st_find(const st_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name))
            return &f->t[i];
    return NULL;
}

static float half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | man << 13;
    } else if (exp) {
        bits = sign | (exp + 112) << 23 | man << 13;
    } else if (man) { /* subnormal: renormalise */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        bits = sign | (uint32_t)(112 - e) << 23 | (man & 0x3ff) << 13;
    } else {
        bits = sign;
    }
    float x;
    memcpy(&x, &bits, 4);
    return x;
}

void st_to_f32(const st_tensor *t, float *dst, size_t n)
{
    const uint8_t *p = t->data;
    for (size_t i = 0; i < n; i++) {
        if (t->dtype == ST_F32) {
            memcpy(&dst[i], p + 4 * i, 4); /* file is little-endian, as is every target */
        } else {
            uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
            if (t->dtype == ST_F16) {
                dst[i] = half_to_f32(h);
            } else {
                uint32_t bits = (uint32_t)h << 16;
                memcpy(&dst[i], &bits, 4);
            }
        }
    }
}

void st_close(st_file *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n; i++)
        free(f->t[i].name);
    free(f->t);
    if (f->map)
        munmap(f->map, f->size);
    memset(f, 0, sizeof *f);
}
