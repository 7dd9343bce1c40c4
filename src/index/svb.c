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

/* Byte length - 1 of v (0..3), branch-free. */
static inline uint32_t code_of(uint32_t v)
{
    return (uint32_t)(v > 0xFF) + (uint32_t)(v > 0xFFFF) + (uint32_t)(v > 0xFFFFFF);
}

uint64_t splade_svb_delta_encode(const uint32_t *in, uint32_t count, uint32_t prev, uint8_t *out)
{
    uint8_t *ctrl = out, *data = out + (count + 3) / 4;
    for (uint32_t g = 0; g < count; g += 4) {
        uint32_t key = 0;
        for (uint32_t j = 0; j < 4 && g + j < count; j++) {
            uint32_t v = in[g + j] - prev, c = code_of(v);
            prev = in[g + j];
            memcpy(data, &v, 4); /* little-endian; the extra bytes are overwritten or padding */
            data += c + 1;
            key |= c << (2 * j);
        }
        ctrl[g / 4] = (uint8_t)key;
    }
    return (uint64_t)(data - out);
}

/* Bytes of data that count values with these control bytes occupy. */
static uint64_t data_bytes(const uint8_t *ctrl, uint32_t count)
{
    uint64_t n = 0;
    uint32_t full = count / 4;
    for (uint32_t g = 0; g < full; g++) {
        uint32_t c = ctrl[g];
        n += (c & 3) + (c >> 2 & 3) + (c >> 4 & 3) + (c >> 6) + 4;
    }
    for (uint32_t i = full * 4; i < count; i++) /* unused codes of the last byte do not count */
        n += ((ctrl[i >> 2] >> ((i & 3) * 2)) & 3) + 1;
    return n;
}

int splade_svb_delta_check(const uint8_t *in, uint64_t avail, uint32_t count, uint32_t prev, int first_zero_ok,
                           uint64_t limit, uint32_t *last, uint32_t *scratch)
{
    uint64_t ctrl = (count + 3u) / 4;
    if (ctrl > avail || data_bytes(in, count) > avail - ctrl)
        return 0;
    if (!count) {
        *last = prev;
        return 1;
    }
    splade_svb_delta_decode(in, count, prev, scratch);
    /* Wrapped 32-bit sums: every delta >= 1 and no wrap-around <=> strictly ascending values. */
    uint32_t bad = first_zero_ok ? scratch[0] < prev : scratch[0] <= prev;
    for (uint32_t i = 1; i < count; i++)
        bad |= scratch[i] <= scratch[i - 1];
    if (bad || scratch[count - 1] >= limit)
        return 0;
    *last = scratch[count - 1];
    return 1;
}
