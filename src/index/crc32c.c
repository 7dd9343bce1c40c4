/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the section checksums of docs/FORMAT.md.
 * Uses the SSE4.2 crc32 instruction when the CPU has it (several GB/s, so verifying a whole index at
 * open costs little), else a byte-wise table. Both give the same value. */
#include "index/format.h"

#include <pthread.h>

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        table[i] = c;
    }
}

static uint32_t crc_table(uint32_t crc, const uint8_t *p, size_t n)
{
    pthread_once(&table_once, make_table);
    while (n--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <string.h>
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c = crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
    }
    uint32_t c32 = (uint32_t)c;
    for (; n; n--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
#define HAVE_HW 1
#endif

uint32_t splade_crc32c(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    crc = ~crc;
#ifdef HAVE_HW
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_hw(crc, p, n);
#endif
    return ~crc_table(crc, p, n);
}

/* Combination (zlib 1.2.12's crc32_combine, reflected Castagnoli polynomial): CRC(A B) =
 * CRC(A) × x^(8 len_b) mod P xor CRC(B), with polynomials as reflected 32-bit words. */
#define POLY 0x82F63B78u

static uint32_t mult_mod_p(uint32_t a, uint32_t b) /* a × b mod P */
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
    }
    return p;
}

static uint32_t x2n[32]; /* x^(2^k) mod P */
static pthread_once_t x2n_once = PTHREAD_ONCE_INIT;

static void make_x2n(void)
{
    uint32_t p = 1u << 30; /* x^1 */
    x2n[0] = p;
    for (int k = 1; k < 32; k++)
        x2n[k] = p = mult_mod_p(p, p);
}

uint32_t splade_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    pthread_once(&x2n_once, make_x2n);
    uint32_t p = 1u << 31; /* x^0 */
    for (uint64_t n = len_b * 8, k = 0; n; n >>= 1, k++)
        if (n & 1)
            p = mult_mod_p(x2n[k & 31], p);
    return mult_mod_p(p, crc_a) ^ crc_b;
}
