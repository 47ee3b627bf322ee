/*
 * contract/utf8.c: UTF-8-safe trimming of truncated exec output, exactly as the
 * seed trims it (docs/exec.md "Output: one budget, truncation at a character
 * boundary"): only a truncated buffer is trimmed;
 * looking back at most 4 bytes, the last non-continuation byte is taken as a
 * lead byte, and dropped with its continuation bytes when its sequence
 * (2, 3 or 4 bytes by its value) was cut. Nothing else is repaired.
 */
#include "contract/utf8.h"

size_t sbx__utf8_keep_len(const unsigned char *p, size_t len, bool truncated)
{
	if (!truncated || !p)
		return len;
	for (size_t back = 1; back <= 4 && back <= len; back++) {
		size_t i = len - back;
		unsigned char b = p[i];
		size_t need;
		if ((b & 0xc0) == 0x80)
			continue; /* continuation byte: keep looking for the lead */
		need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
		return back < need ? i : len;
	}
	return len;
}
