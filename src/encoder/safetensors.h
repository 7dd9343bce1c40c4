/* Minimal read-only safetensors reader (mmap). Private to src/encoder/. */
#ifndef SPLADE_SAFETENSORS_H
#define SPLADE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { ST_F32, ST_F16, ST_BF16, ST_OTHER } st_dtype;

typedef struct {
    char *name;
    char dtype_name[16];  /* as written in the header, for error messages */
    st_dtype dtype;
    int ndim;
    int64_t shape[8];
    const uint8_t *data;  /* inside the mapping */
    size_t nbytes;
} st_tensor;

typedef struct {
    const char *path;     /* borrowed */
    uint8_t *map;
    size_t size;
    st_tensor *t;
    int n;
} st_file;

/* Maps `path` (a regular file) and validates the header like the reference implementation:
 * JSON without duplicate keys, every data_offsets range equal to dtype size x shape, and the
 * ranges, sorted, tiling the data block exactly (contiguous from 0 to the end of the file: no
 * overlap, aliasing, gap or trailing bytes). Errors (SPLADE_ERR_FORMAT / _NOT_FOUND / _IO) name
 * the file and tensor. */
int st_open(const char *path, st_file *f);
const st_tensor *st_find(const st_file *f, const char *name);
/* Converts n elements of t (F32/F16/BF16) to fp32. */
void st_to_f32(const st_tensor *t, float *dst, size_t n);
void st_close(st_file *f);

#endif
