/* Stream VByte delta decoding (see svb.h). Format: ceil(count / 4) control bytes, 2 bits per value
 * (byte length - 1, value i in bits 2i..2i+1 of byte i / 4), then the values' little-endian bytes.
 * The SSSE3 path turns one control byte into a pshufb mask that spreads 4 values' bytes into 4
 * lanes, then prefix-sums the lanes: about 8 instructions per 4 values, no branches. */
#include "index/svb.h"

#include <string.h>

static uint32_t decode_tail(const uint8_t *ctrl, const uint8_t **data, uint32_t from, uint32_t count,
                            uint32_t prev, uint32_t *out)
{
    const uint8_t *p = *data;
    for (uint32_t i = from; i < count; i++) {
        uint32_t len = ((ctrl[i >> 2] >> ((i & 3) * 2)) & 3) + 1, v = 0;
        memcpy(&v, p, len); /* little-endian hosts only, like libstreamvbyte */
        p += len;
        out[i] = prev += v;
    }
    *data = p;
    return prev;
}

#if defined(__x86_64__) && !defined(SPLADE_SVB_SCALAR)
#include <immintrin.h>

static uint8_t shuf[256][16], lens[256];

/* The 256 masks, built once (about 4 KB; cheaper to compute than to ship as a table). */
__attribute__((constructor)) static void build_tables(void)
{
    for (int c = 0; c < 256; c++) {
        int pos = 0;
        for (int j = 0; j < 4; j++) {
            int len = ((c >> (2 * j)) & 3) + 1;
            for (int b = 0; b < 4; b++)
                shuf[c][4 * j + b] = b < len ? (uint8_t)(pos + b) : 0x80;
            pos += len;
        }
        lens[c] = (uint8_t)pos;
    }
}

__attribute__((target("ssse3"))) static uint64_t decode_ssse3(const uint8_t *in, uint32_t count, uint32_t prev,
                                                               uint32_t *out)
{
    const uint8_t *ctrl = in, *data = in + (count + 3) / 4;
    __m128i run = _mm_set1_epi32((int)prev);
    uint32_t groups = count / 4;
    for (uint32_t g = 0; g < groups; g++) {
        uint8_t c = ctrl[g];
        __m128i v = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)data), _mm_loadu_si128((const __m128i *)shuf[c]));
        data += lens[c];
        v = _mm_add_epi32(v, _mm_slli_si128(v, 4));
        v = _mm_add_epi32(v, _mm_slli_si128(v, 8));
        v = _mm_add_epi32(v, run);
        _mm_storeu_si128((__m128i *)(out + 4 * g), v);
        run = _mm_shuffle_epi32(v, 0xFF);
    }
    prev = (uint32_t)_mm_cvtsi128_si32(run);
    decode_tail(ctrl, &data, groups * 4, count, prev, out);
    return (uint64_t)(data - in);
}
#endif

uint64_t splade_svb_delta_decode(const uint8_t *in, uint32_t count, uint32_t prev, uint32_t *out)
{
#if defined(__x86_64__) && !defined(SPLADE_SVB_SCALAR)
    if (__builtin_cpu_supports("ssse3"))
        return decode_ssse3(in, count, prev, out);
#endif
    const uint8_t *data = in + (count + 3) / 4;
    decode_tail(in, &data, 0, count, prev, out);
    return (uint64_t)(data - in);
}
