/*
 * util/base64.c: base64 decoding in one pass (util/base64.h).
 *
 * A command's output reaches the client as base64 in envd's JSON data events,
 * so every byte a command prints is decoded here: four table lookups per
 * group of four characters, each table holding its character's six bits
 * already shifted into place, and bit 24 for anything that is not base64,
 * OR-ed into one check for the whole text. (OpenSSL's EVP_DecodeBlock, used
 * before, needed a scan for the URL-safe alphabet and a normalised copy
 * first: 0.4 of the client's CPU for a 100 MiB stream.)
 */
#include "util/base64.h"

#include <stdint.h>

#include "util/err.h"

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

int sbx__base64_decode(sbx_buf *out, const char *in, size_t len)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = len, groups, rest, want;
	unsigned char *o, *tail;
	uint32_t bad = 0, x;
	int error;

	while (n > 0 && n + 2 > len && in[n - 1] == '=') /* at most two of padding */
		n--;
	if (n % 4 == 1 || (n > 0 && in[n - 1] == '='))
		return SBX_EPROTOCOL;
	if (n == 0)
		return 0;
	groups = n / 4;
	rest = n % 4;
	want = groups * 3 + (rest ? rest - 1 : 0);
	if (want > INT32_MAX)
		return SBX_ETOOLARGE;
	if ((error = sbx_buf_reserve(out, want, &tail)) < 0)
		return error;
	o = tail;
	for (size_t i = 0; i < groups; i++, s += 4, o += 3) {
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
	if (bad & B64_BAD) /* '=' inside, or a character outside both alphabets */
		return SBX_EPROTOCOL;
	sbx_buf_commit(out, want);
	return 0;
}

size_t sbx__base64_len(const char *in, size_t len)
{
	while (len > 0 && in[len - 1] == '=')
		len--;
	return len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
}
