/*
 * e2b/envelope.c: Connect envelope decoder and encoder (docs/protocol.md
 * "Connect protocol (JSON codec)").
 *
 * curl hands the stream over in chunks split anywhere ("may be one byte, it
 * may be thousands"), so the decoder is a resumable state machine over a
 * 5-byte header accumulator and a capped payload buffer, in the manner of
 * picohttpparser's phr_decode_chunked. It knows neither HTTP nor JSON.
 */
#include "e2b/envelope.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "util/err.h"

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

static uint32_t be32(const unsigned char *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
	       (uint32_t)p[3];
}

static int step_header(sbx_envelope *e, const unsigned char *in, size_t len, size_t *used,
                       sbx_error *err)
{
	size_t n = min_size(len, SBX_ENVELOPE_HEADER - e->hdr_len);
	uint32_t length;

	memcpy(e->hdr + e->hdr_len, in, n);
	e->hdr_len += n;
	*used = n;
	if (e->hdr_len < SBX_ENVELOPE_HEADER)
		return 0; /* split header: wait for more */
	e->flags = e->hdr[0];
	if (e->flags & ~SBX_ENVELOPE_FLAG_END_STREAM)
		return sbx__error_set(err, SBX_EPROTOCOL,
		                      "Connect envelope with unsupported flags 0x%02x "
		                      "(compression was not negotiated)",
		                      e->flags);
	length = be32(e->hdr + 1);
	if (length > e->payload.max) /* the cap is checked before allocating */
		return sbx__error_set(err, SBX_ETOOLARGE,
		                      "Connect envelope of %" PRIu32
		                      " bytes exceeds the %zu-byte limit",
		                      length, e->payload.max);
	sbx_buf_clear(&e->payload);
	e->need = length;
	e->state = length ? SBX_ENV_PAYLOAD : SBX_ENV_READY;
	return 0;
}

static int step_payload(sbx_envelope *e, const unsigned char *in, size_t len, size_t *used,
                        sbx_error *err)
{
	size_t n = min_size(len, e->need);
	int error;

	if ((error = sbx_buf_put(&e->payload, in, n)) < 0)
		return sbx__error_set(err, error, "out of memory reading a Connect envelope");
	e->need -= n;
	*used = n;
	if (e->need == 0)
		e->state = SBX_ENV_READY;
	return 0;
}

int sbx__envelope_feed(sbx_envelope *e, const unsigned char *in, size_t len, size_t *used,
                       sbx_error *err)
{
	size_t total = 0, n;
	int error = 0;

	while (total < len && e->state != SBX_ENV_READY) {
		n = 0;
		if (e->state == SBX_ENV_HEADER)
			error = step_header(e, in + total, len - total, &n, err);
		else
			error = step_payload(e, in + total, len - total, &n, err);
		total += n;
		if (error < 0)
			break;
	}
	*used = total;
	return error;
}

void sbx__envelope_next(sbx_envelope *e)
{
	e->state = SBX_ENV_HEADER;
	e->hdr_len = 0;
	e->flags = 0;
	e->need = 0;
	sbx_buf_clear(&e->payload);
}

bool sbx__envelope_partial(const sbx_envelope *e)
{
	return e->state == SBX_ENV_PAYLOAD || (e->state == SBX_ENV_HEADER && e->hdr_len > 0);
}

void sbx__envelope_dispose(sbx_envelope *e)
{
	sbx_buf_dispose(&e->payload);
	e->state = SBX_ENV_HEADER;
	e->hdr_len = 0;
	e->need = 0;
}

int sbx__envelope_encode(sbx_buf *out, unsigned int flags, const void *json, size_t len)
{
	unsigned char hdr[SBX_ENVELOPE_HEADER];
	unsigned char *tail;
	int error;

	if (len > UINT32_MAX)
		return SBX_ETOOLARGE;
	hdr[0] = (unsigned char)flags;
	hdr[1] = (unsigned char)(len >> 24);
	hdr[2] = (unsigned char)(len >> 16);
	hdr[3] = (unsigned char)(len >> 8);
	hdr[4] = (unsigned char)len;
	if ((error = sbx_buf_reserve(out, SBX_ENVELOPE_HEADER + len, &tail)) < 0)
		return error;
	memcpy(tail, hdr, SBX_ENVELOPE_HEADER);
	if (len)
		memcpy(tail + SBX_ENVELOPE_HEADER, json, len);
	sbx_buf_commit(out, SBX_ENVELOPE_HEADER + len);
	return 0;
}
