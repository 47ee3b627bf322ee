/*
 * e2b/envelope.h: the Connect protocol's envelope framing (docs/protocol.md
 * "Connect protocol (JSON codec)").
 *
 * An envelope is 1 flag byte, a big-endian uint32 length, then `length` bytes
 * of JSON. Flag 0x02 marks the end-stream message; 0x01 (compression) was
 * never negotiated, so it and every other bit are a protocol error. Knows no
 * HTTP and no envd message: bytes come in, whole payloads come out.
 */
#ifndef SBX_E2B_ENVELOPE_H
#define SBX_E2B_ENVELOPE_H

#include <sandbox/error.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

#define SBX_ENVELOPE_HEADER          5           /* flags + BE32 length */
#define SBX_MAX_ENVELOPE             (16u << 20) /* 16 MiB: larger frames fail before allocating */
#define SBX_ENVELOPE_FLAG_COMPRESSED 0x01u
#define SBX_ENVELOPE_FLAG_END_STREAM 0x02u

typedef enum sbx_envelope_state {
	SBX_ENV_HEADER = 0, /* collecting the 5 header bytes */
	SBX_ENV_PAYLOAD,    /* collecting `need` payload bytes */
	SBX_ENV_READY       /* one whole message in `payload`; call sbx__envelope_next() */
} sbx_envelope_state;

/*
 * Incremental decoder, an explicit state machine. Zero
 * state plus a capped payload buffer: initialise with SBX_ENVELOPE_INIT(max).
 */
typedef struct sbx_envelope {
	sbx_envelope_state state;
	unsigned char hdr[SBX_ENVELOPE_HEADER];
	size_t hdr_len;
	unsigned int flags; /* of the current message */
	size_t need;        /* payload bytes still missing */
	sbx_buf payload;    /* the current message's bytes (reused between messages) */
} sbx_envelope;

#define SBX_ENVELOPE_INIT(max)                                                                     \
	{                                                                                          \
		SBX_ENV_HEADER, {0}, 0, 0, 0, SBX_BUF_INIT(max)                                    \
	}

/*
 * Consume bytes from `in` (any split: one byte, several frames) until one
 * message is whole or the input is used up; `*used` says how many bytes were
 * taken. Call again with the rest. When e->state is SBX_ENV_READY the message
 * is in e->payload with e->flags; call sbx__envelope_next() before feeding on.
 * Returns 0, SBX_EPROTOCOL (unknown flag bits), SBX_ETOOLARGE (length over the
 * payload cap, detected from the header before any allocation), SBX_ENOMEM.
 */
int sbx__envelope_feed(sbx_envelope *e, const unsigned char *in, size_t len, size_t *used,
                       sbx_error *err);

/* Forget the ready message and wait for the next header (payload memory kept). */
void sbx__envelope_next(sbx_envelope *e);

/* True when a message has started but is not yet whole (a stream cut mid-frame). */
bool sbx__envelope_partial(const sbx_envelope *e);

/* Free the payload buffer. */
void sbx__envelope_dispose(sbx_envelope *e);

/* Append one envelope (flags, length, json) to `out`. 0, SBX_ETOOLARGE, SBX_ENOMEM. */
int sbx__envelope_encode(sbx_buf *out, unsigned int flags, const void *json, size_t len);

#endif
