/*
 * util/base64.c: base64 decoding in one pass (util/base64.h).
 *
 * A command's output reaches the client as base64 in envd's JSON data events,
 * so every byte a command prints is decoded here. Where the CPU has AVX2
 * (checked at run time) 32 characters at a time: each one classified by range
 * compares (upper, lower, digit, '+' or '-', '/' or '_'), its six bits made by
 * one add, the 32 sixes packed into 24 bytes by two multiply-adds and two
 * shuffles; the lanes' "valid" masks AND-ed into one check for the whole text.
 * The rest (and every text without AVX2) four table lookups per group of four
 * characters, each table holding its character's six bits already shifted
 * into place, and bit 24 for anything that is not base64, OR-ed into one
 * check. (OpenSSL's EVP_DecodeBlock, used before the tables, needed a scan for
 * the URL-safe alphabet and a normalised copy first: 0.4 of the client's CPU
 * for a 100 MiB stream; the tables took 4.5 instructions a character, the
 * AVX2 loop 0.8: docs/internals/exec-cost.md "Streamed output".)
 */
#include "util/base64.h"

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define B64_AVX2 1
#endif

#define B64_BAD 0x01000000u
/* the six bits of character c, or B64_BAD */
#define B64V(c)                                                                                    \
	((c) >= 'A' && (c) <= 'Z'   ? (uint32_t)((c) - 'A')                                        \
	 : (c) >= 'a' && (c) <= 'z' ? (uint32_t)((c) - 'a' + 26)                                   \
	 : (c) >= '0' && (c) <= '9' ? (uint32_t)((c) - '0' + 52)                                   \
	 : (c) == '+' || (c) == '-' ? 62u                                                          \
	 : (c) == '/' || (c) == '_' ? 63u                                                          \
	                            : B64_BAD)
#define B64S(c, sh)   (B64V(c) == B64_BAD ? B64_BAD : B64V(c) << (sh))
#define B64_4(c, sh)  B64S(c, sh), B64S((c) + 1, sh), B64S((c) + 2, sh), B64S((c) + 3, sh)
#define B64_16(c, sh) B64_4(c, sh), B64_4((c) + 4, sh), B64_4((c) + 8, sh), B64_4((c) + 12, sh)
#define B64_64(c, sh)                                                                              \
	B64_16(c, sh), B64_16((c) + 16, sh), B64_16((c) + 32, sh), B64_16((c) + 48, sh)
#define B64_TABLE(sh)                                                                              \
	{                                                                                          \
		B64_64(0, sh), B64_64(64, sh), B64_64(128, sh), B64_64(192, sh)                    \
	}

/* the character's bits for each of the four places in a group */
static const uint32_t d0[256] = B64_TABLE(18);
static const uint32_t d1[256] = B64_TABLE(12);
static const uint32_t d2[256] = B64_TABLE(6);
static const uint32_t d3[256] = B64_TABLE(0);

#ifdef B64_AVX2
#define B64_AVX2_BLOCK 32 /* characters a step: 24 bytes out, 32 written */

/*
 * The six bits of each of the 32 characters at s, OR-ing into *bad a non-zero byte where one is
 * not base64. Validity by nibbles: lut_lo[low nibble] & lut_hi[high nibble] is non-zero for
 * every byte outside the alphabets (lut_hi gives the high nibbles 2 to 7 a bit each, every
 * other one bit 7, which each lut_lo entry holds; lut_lo holds the bits of the high nibbles
 * under which its low nibble is no base64). The six bits are the byte plus an offset by its
 * high nibble, corrected for '+', '-', '/' (high nibble 2, by their low nibble) and '_'.
 */
static inline __attribute__((always_inline, target("avx2"))) __m256i
avx2_sixes(const unsigned char *s, __m256i *bad)
{
#define B64_LANES(...) _mm256_setr_epi8(__VA_ARGS__, __VA_ARGS__)
	const __m256i lut_lo =
	    B64_LANES((char)0x95, (char)0x81, (char)0x81, (char)0x81, (char)0x81, (char)0x81,
	              (char)0x81, (char)0x81, (char)0x81, (char)0x81, (char)0x83, (char)0xAA,
	              (char)0xAB, (char)0xAA, (char)0xAB, (char)0xA2);
	const __m256i lut_hi = B64_LANES((char)0x80, (char)0x80, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20,
	                                 (char)0x80, (char)0x80, (char)0x80, (char)0x80, (char)0x80,
	                                 (char)0x80, (char)0x80, (char)0x80);
	const __m256i off_hi = B64_LANES(0, 0, 0, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
	const __m256i off_sym = B64_LANES(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 19, 0, 17, 0, 16);
#undef B64_LANES
	const __m256i nib = _mm256_set1_epi8(0x0f);
	const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)s);
	const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), nib);
	const __m256i lo = _mm256_and_si256(x, nib);
	const __m256i sym = _mm256_cmpeq_epi8(hi, _mm256_set1_epi8(2)); /* '+' '-' '/' */
	const __m256i under = _mm256_cmpeq_epi8(x, _mm256_set1_epi8('_'));
	__m256i off = _mm256_shuffle_epi8(off_hi, hi);

	*bad = _mm256_or_si256(*bad, _mm256_and_si256(_mm256_shuffle_epi8(lut_lo, lo),
	                                              _mm256_shuffle_epi8(lut_hi, hi)));
	off = _mm256_add_epi8(off, _mm256_and_si256(sym, _mm256_shuffle_epi8(off_sym, lo)));
	off = _mm256_add_epi8(off, _mm256_and_si256(under, _mm256_set1_epi8(63 - '_' + 'A')));
	return _mm256_add_epi8(x, off);
}

/*
 * `blocks` steps of 32 characters from s into 24 bytes each at o, which has room for 8 bytes
 * more (each step writes 32). False when a character was not base64.
 */
__attribute__((target("avx2"))) static bool avx2_decode(const unsigned char *s, unsigned char *o,
                                                        size_t blocks)
{
	const __m256i pack =
	    _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1, 2, 1, 0, 6, 5,
	                     4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
	const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
	__m256i bad = _mm256_setzero_si256(), v;

	for (size_t i = 0; i < blocks; i++, s += B64_AVX2_BLOCK, o += 24) {
		v = avx2_sixes(s, &bad);
		/* pairs of sixes into 12 bits, pairs of those into 24: c0 c1 c2 c3 per dword */
		v = _mm256_maddubs_epi16(v, _mm256_set1_epi32(0x01400140));
		v = _mm256_madd_epi16(v, _mm256_set1_epi32(0x00011000));
		v = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, pack), lanes);
		_mm256_storeu_si256((__m256i *)(void *)o, v);
	}
	return _mm256_testz_si256(bad, bad);
}

/* `blocks` steps of 32 characters from s: false when a character was not base64. */
__attribute__((target("avx2"))) static bool avx2_check(const unsigned char *s, size_t blocks)
{
	__m256i bad = _mm256_setzero_si256();

	for (size_t i = 0; i < blocks; i++, s += B64_AVX2_BLOCK)
		(void)avx2_sixes(s, &bad);
	return _mm256_testz_si256(bad, bad);
}

static bool have_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}
#endif

/* The characters before the padding (at most two '=' at the end), or SIZE_MAX when refused. */
static size_t text_len(const char *in, size_t len)
{
	size_t n = len;

	while (n > 0 && n + 2 > len && in[n - 1] == '=') /* at most two of padding */
		n--;
	if (n % 4 == 1 || (n > 0 && in[n - 1] == '='))
		return SIZE_MAX;
	return n;
}

/* Groups [from, groups) and the rest of n characters at s into o; the bits of B64_BAD. */
static uint32_t scalar_decode(const unsigned char *s, unsigned char *o, size_t from, size_t n)
{
	size_t groups = n / 4, rest = n % 4;
	uint32_t bad = 0, x;

	s += from * 4;
	o += from * 3;
	for (size_t i = from; i < groups; i++, s += 4, o += 3) {
		x = d0[s[0]] | d1[s[1]] | d2[s[2]] | d3[s[3]];
		bad |= x;
		o[0] = (unsigned char)(x >> 16);
		o[1] = (unsigned char)(x >> 8);
		o[2] = (unsigned char)x;
	}
	if (rest) {
		x = d0[s[0]] | d1[s[1]] | (rest == 3 ? d2[s[2]] : 0);
		bad |= x;
		o[0] = (unsigned char)(x >> 16);
		if (rest == 3)
			o[1] = (unsigned char)(x >> 8);
	}
	return bad;
}

int sbx__base64_decode(sbx_buf *out, const char *in, size_t len)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = text_len(in, len), want, from = 0;
	unsigned char *tail;
	uint32_t bad = 0;
	int error;

	if (n == SIZE_MAX)
		return SBX_EPROTOCOL;
	if (n == 0)
		return 0;
	want = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
	if (want > INT32_MAX)
		return SBX_ETOOLARGE;
	if ((error = sbx_buf_reserve(out, want, &tail)) < 0)
		return error;
#ifdef B64_AVX2
	/* steps whose 8 bytes written past their 24 stay inside the `want` bytes */
	size_t blocks = want >= 32 ? (want - 8) / 24 : 0;
	if (blocks > 0 && have_avx2()) {
		if (!avx2_decode(s, tail, blocks)) {
			tail[0] = '\0'; /* the buffer's NUL after its bytes */
			return SBX_EPROTOCOL;
		}
		from = blocks * (B64_AVX2_BLOCK / 4);
	}
#endif
	bad = scalar_decode(s, tail, from, n);
	if (bad & B64_BAD) { /* '=' inside, or a character outside both alphabets */
		tail[0] = '\0';
		return SBX_EPROTOCOL;
	}
	sbx_buf_commit(out, want);
	return 0;
}

bool sbx__base64_valid(const char *in, size_t len)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = text_len(in, len), i = 0;
	uint32_t bad = 0;

	if (n == SIZE_MAX)
		return false;
#ifdef B64_AVX2
	if (n >= B64_AVX2_BLOCK && have_avx2()) {
		if (!avx2_check(s, n / B64_AVX2_BLOCK))
			return false;
		i = n / B64_AVX2_BLOCK * B64_AVX2_BLOCK;
	}
#endif
	for (; i < n; i++)
		bad |= d0[s[i]];
	return !(bad & B64_BAD);
}

size_t sbx__base64_len(const char *in, size_t len)
{
	while (len > 0 && in[len - 1] == '=')
		len--;
	return len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
}
