/*
 * cli/rpc/wire.c: JSON-RPC framing of `serve`: one JSON value per line.
 *
 * The reader keeps at most max_line bytes of one line: a longer line is
 * reported once (WIRE_TOO_LONG) and its bytes are dropped as they arrive,
 * until its '\n'. It polls the input and the stop signal's fd together, so a
 * SIGTERM wakes it. The writer sends each message as one whole line under one
 * lock, so concurrent workers never interleave bytes.
 */
#include "rpc.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WIRE_READ_CHUNK ((size_t)64 * 1024)

void wire_reader_init(serve_reader *r, int fd, int stop_fd, size_t max_line)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->stop_fd = stop_fd;
	r->max_line = max_line;
}

void wire_reader_free(serve_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* Make room for WIRE_READ_CHUNK more bytes after the unread ones (never past max_line + chunk). */
static int reserve(serve_reader *r)
{
	size_t want;
	char *nb;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->len);
		r->start = 0;
	}
	if (r->cap - r->len >= WIRE_READ_CHUNK)
		return 0;
	want = r->cap ? r->cap * 2 : 2 * WIRE_READ_CHUNK;
	if (want < r->len + WIRE_READ_CHUNK)
		want = r->len + WIRE_READ_CHUNK;
	if (!(nb = realloc(r->buf, want)))
		return -1;
	r->buf = nb;
	r->cap = want;
	return 0;
}

/* Read what is available: >0 bytes, 0 EOF or stop, -1 error. */
static ssize_t fill(serve_reader *r)
{
	struct pollfd p[2] = {{r->fd, POLLIN, 0}, {r->stop_fd, POLLIN, 0}};
	ssize_t n;

	for (;;) {
		if (poll(p, r->stop_fd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r->stop_fd >= 0 && (p[1].revents & POLLIN))
			return 0;
		if (!p[0].revents)
			continue;
		n = read(r->fd, r->buf + r->start + r->len, r->cap - r->start - r->len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		return n;
	}
}

int wire_read_line(serve_reader *r, const char **line, size_t *len)
{
	for (;;) {
		char *nl = r->len ? memchr(r->buf + r->start, '\n', r->len) : NULL;
		ssize_t n;

		if (nl) {
			size_t n_line = (size_t)(nl - (r->buf + r->start));
			const char *at = r->buf + r->start;
			r->start += n_line + 1;
			r->len -= n_line + 1;
			if (r->discarding) {
				r->discarding = false;
				continue;
			}
			if (n_line > r->max_line)
				return WIRE_TOO_LONG;
			*line = at;
			*len = n_line;
			return WIRE_LINE;
		}
		if (r->discarding) {
			r->start = r->len = 0; /* drop what was read of the long line */
		} else if (r->len > r->max_line) {
			r->discarding = true;
			r->start = r->len = 0;
			return WIRE_TOO_LONG;
		}
		if (r->eof) {
			if (r->len == 0 || r->discarding)
				return WIRE_EOF;
			/* A last line without '\n' still counts. */
			*line = r->buf + r->start;
			*len = r->len;
			r->start += r->len;
			r->len = 0;
			return WIRE_LINE;
		}
		if (reserve(r) < 0)
			return WIRE_ERROR;
		if ((n = fill(r)) < 0)
			return WIRE_ERROR;
		if (n == 0)
			r->eof = true;
		r->len += (size_t)n;
	}
}

void wire_writer_init(serve_writer *w, int fd)
{
	w->fd = fd;
	w->broken = false;
	pthread_mutex_init(&w->mu, NULL);
}

void wire_writer_free(serve_writer *w)
{
	pthread_mutex_destroy(&w->mu);
}

int wire_send(serve_writer *w, json_t *msg)
{
	char *text;
	size_t len, off = 0;
	int rc = 0;

	if (!msg)
		return -1;
	/* JSON_COMPACT escapes control characters, so the line holds no raw '\n'. */
	text = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(msg);
	if (!text)
		return -1;
	len = strlen(text);
	text[len] = '\n'; /* the NUL becomes the line end; len + 1 bytes are sent */
	pthread_mutex_lock(&w->mu);
	while (!w->broken && off < len + 1) {
		ssize_t n = write(w->fd, text + off, len + 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			w->broken = true;
			rc = -1;
			break;
		}
		off += (size_t)n;
	}
	pthread_mutex_unlock(&w->mu);
	free(text);
	return rc;
}
