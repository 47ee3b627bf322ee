/*
 * fuzz_envelope: the Connect envelope decoder (src/e2b/envelope.c) on any
 * bytes, fed whole and then in chunks whose sizes come from the input. Both
 * runs must agree message by message; nothing may crash, leak or read past
 * the input. The payload cap is small (64 KiB) so that the "too large" path
 * is reachable.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/envelope.h"

#define CAP (64u * 1024)

typedef struct digest {
	size_t messages, bytes;
	uint32_t sum;
	int error;
} digest;

static void decode(digest *d, const uint8_t *in, size_t len, size_t chunk)
{
	sbx_envelope e = SBX_ENVELOPE_INIT(CAP);
	size_t off = 0, used, n;

	memset(d, 0, sizeof(*d));
	while (off < len) {
		n = len - off < chunk ? len - off : chunk;
		while (n > 0) {
			d->error = sbx__envelope_feed(&e, in + off, n, &used, NULL);
			if (used > n)
				abort();
			off += used;
			n -= used;
			if (d->error < 0)
				goto done;
			if (e.state == SBX_ENV_READY) {
				if (e.payload.len > CAP)
					abort();
				d->messages++;
				d->bytes += e.payload.len;
				for (size_t i = 0; i < e.payload.len; i++)
					d->sum = d->sum * 31 + e.payload.ptr[i];
				d->sum += e.flags;
				sbx__envelope_next(&e);
			} else if (used == 0) {
				abort(); /* no progress without a message: a hang */
			}
		}
	}
done:
	(void)sbx__envelope_partial(&e);
	sbx__envelope_dispose(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	digest whole, split;
	size_t chunk;

	if (size < 1)
		return 0;
	chunk = (size_t)data[0] % 7 + 1;
	decode(&whole, data + 1, size - 1, size);
	decode(&split, data + 1, size - 1, chunk);
	if (whole.messages != split.messages || whole.bytes != split.bytes ||
	    whole.sum != split.sum || whole.error != split.error)
		abort();
	return 0;
}
