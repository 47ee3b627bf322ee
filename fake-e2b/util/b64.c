/*
 * fake-e2b/util/b64.c: see b64.h.
 */
#include "b64.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

char *fk_b64_encode(const unsigned char *data, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);
	if (out)
		EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

long fk_b64_decode(const char *in, unsigned char **out)
{
	size_t n = strlen(in), i;
	char *tmp = malloc(n + 4);
	*out = NULL;
	if (!tmp)
		return -1;
	for (i = 0; i < n; i++)
		tmp[i] = in[i] == '-' ? '+' : in[i] == '_' ? '/' : in[i];
	while (i % 4)
		tmp[i++] = '=';
	tmp[i] = '\0';
	size_t pad = 0;
	while (pad < i && pad < 2 && tmp[i - 1 - pad] == '=')
		pad++;
	unsigned char *buf = malloc(i / 4 * 3 + 1);
	int m = buf ? EVP_DecodeBlock(buf, (unsigned char *)tmp, (int)i) : -1;
	free(tmp);
	if (m < 0 || (size_t)m < pad) {
		free(buf);
		return -1;
	}
	*out = buf;
	return m - (long)pad;
}
