/*
 * fake-e2b/api/envd/encoding.c: gzip on /files, as envd's encoding.go: Content-Encoding of an
 * upload (identity or gzip; the body is inflated as it arrives, several gzip members in a row
 * included) and Accept-Encoding of a download (RFC 7231 quality values; gzip is the only
 * coding besides identity), with the response deflated as it streams out of the file.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "envd.h"

/* ---- uploads ------------------------------------------------------------------------------- */

struct fk_gunzip {
	z_stream z;
	int in_member; /* inside a gzip member (its header seen, its end not yet) */
	int started;   /* any byte seen */
};

/* The value's coding, lower case, without parameters: "gzip" from " GZip ; q=1". */
static void coding_name(const char *v, size_t n, char *out, size_t cap)
{
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	size_t k = 0;
	for (; k < n && v[k] != ';' && v[k] != ' ' && v[k] != '\t' && k + 1 < cap; k++)
		out[k] = (char)(v[k] >= 'A' && v[k] <= 'Z' ? v[k] + 32 : v[k]);
	out[k] = '\0';
}

int fk_envd_content_encoding(const char *header, int *gzip)
{
	char name[32];
	*gzip = 0;
	if (!header || !*header)
		return 0;
	coding_name(header, strlen(header), name, sizeof(name));
	if (!strcmp(name, "identity"))
		return 0;
	if (!strcmp(name, "gzip")) {
		*gzip = 1;
		return 0;
	}
	return -1;
}

fk_gunzip *fk_gunzip_new(void)
{
	fk_gunzip *g = calloc(1, sizeof(*g));
	if (g && inflateInit2(&g->z, 16 + MAX_WBITS) != Z_OK) {
		free(g);
		return NULL;
	}
	return g;
}

void fk_gunzip_free(fk_gunzip *g)
{
	if (!g)
		return;
	inflateEnd(&g->z);
	free(g);
}

int fk_gunzip_feed(fk_gunzip *g, const void *data, size_t len,
                   int (*out)(void *ud, const char *data, size_t len), void *ud)
{
	unsigned char buf[64 * 1024];
	g->z.next_in = (unsigned char *)data;
	g->z.avail_in = (uInt)len;
	while (g->z.avail_in > 0) {
		if (!g->in_member) { /* a new member: a fresh header */
			if (g->started && inflateReset(&g->z) != Z_OK)
				return -1;
			g->in_member = g->started = 1;
		}
		g->z.next_out = buf;
		g->z.avail_out = sizeof(buf);
		int rc = inflate(&g->z, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
			return -1;
		size_t n = sizeof(buf) - g->z.avail_out;
		if (n && out(ud, (const char *)buf, n) < 0)
			return -2;
		if (rc == Z_STREAM_END)
			g->in_member = 0;
		else if (rc == Z_BUF_ERROR && n == 0)
			break; /* needs more input */
	}
	return 0;
}

int fk_gunzip_finish(fk_gunzip *g)
{
	return g->started && !g->in_member ? 0 : -1;
}

/* ---- downloads ----------------------------------------------------------------------------- */

int fk_envd_accept_gzip(const char *header, int *gzip)
{
	*gzip = 0;
	if (!header || !*header)
		return 0;
	/* envd: identity is rejected by identity;q=0, or by *;q=0 unless identity is named with
	 * q > 0; the best coding by quality wins (ties: the first listed) */
	int identity_rejected = 0, identity_named = 0, wildcard_rejected = 0;
	double best_q = 0;
	char best[32] = "";
	for (const char *p = header; *p;) {
		size_t n = strcspn(p, ",");
		char name[32];
		double q = 1.0;
		coding_name(p, n, name, sizeof(name));
		const char *semi = memchr(p, ';', n);
		for (const char *s = semi; s && s < p + n;
		     s = memchr(s + 1, ';', (size_t)(p + n - s - 1))) {
			const char *t = s + 1;
			while (*t == ' ' || *t == '\t')
				t++;
			if ((t[0] == 'q' || t[0] == 'Q') && t[1] == '=') {
				char *end;
				double v = strtod(t + 2, &end);
				if (end != t + 2)
					q = v;
			}
		}
		if (!strcmp(name, "identity")) {
			identity_rejected |= q == 0;
			identity_named |= q != 0;
		} else if (!strcmp(name, "*") && q == 0) {
			wildcard_rejected = 1;
		}
		if (q > best_q &&
		    (!strcmp(name, "identity") || !strcmp(name, "gzip") || !strcmp(name, "*"))) {
			best_q = q;
			snprintf(best, sizeof(best), "%s", name);
		}
		p += n;
		if (*p == ',')
			p++;
	}
	if (wildcard_rejected && !identity_named)
		identity_rejected = 1;
	if (!strcmp(best, "gzip") || (!strcmp(best, "*") && identity_rejected)) {
		*gzip = 1;
		return 0;
	}
	if (best[0] || !identity_rejected)
		return 0; /* identity */
	return -1;
}

typedef struct gz_out {
	z_stream z;
	int fd;
	int eof, done;
	unsigned char in[64 * 1024];
} gz_out;

static ssize_t gz_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	gz_out *g = cls;
	(void)pos;
	size_t cap = max > (1u << 30) ? 1u << 30 : max;
	g->z.next_out = (unsigned char *)buf;
	g->z.avail_out = (uInt)cap;
	while (!g->done && g->z.avail_out == cap) { /* until some output or the end */
		if (g->z.avail_in == 0 && !g->eof) {
			ssize_t n = read(g->fd, g->in, sizeof(g->in));
			if (n < 0)
				return MHD_CONTENT_READER_END_WITH_ERROR;
			g->z.next_in = g->in;
			g->z.avail_in = (uInt)n;
			g->eof = n == 0;
		}
		int rc = deflate(&g->z, g->eof ? Z_FINISH : Z_NO_FLUSH);
		if (rc == Z_STREAM_END)
			g->done = 1;
		else if (rc != Z_OK && rc != Z_BUF_ERROR)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	size_t n = cap - g->z.avail_out;
	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return (ssize_t)n;
}

static void gz_free(void *cls)
{
	gz_out *g = cls;
	deflateEnd(&g->z);
	close(g->fd);
	free(g);
}

struct MHD_Response *fk_envd_gzip_response(int fd)
{
	gz_out *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	if (deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
	                 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return NULL;
	}
	g->fd = fd;
	struct MHD_Response *resp =
	    MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, gz_read, g, gz_free);
	if (!resp) {
		deflateEnd(&g->z);
		free(g);
	}
	return resp;
}

/* Go's built-in table (mime.TypeByExtension without the system's mime.types). */
const char *fk_envd_mime_type(const char *path)
{
	static const char *const table[][2] = {
	    {".avif", "image/avif"},
	    {".css", "text/css; charset=utf-8"},
	    {".gif", "image/gif"},
	    {".htm", "text/html; charset=utf-8"},
	    {".html", "text/html; charset=utf-8"},
	    {".jpeg", "image/jpeg"},
	    {".jpg", "image/jpeg"},
	    {".js", "text/javascript; charset=utf-8"},
	    {".json", "application/json"},
	    {".mjs", "text/javascript; charset=utf-8"},
	    {".pdf", "application/pdf"},
	    {".png", "image/png"},
	    {".svg", "image/svg+xml"},
	    {".wasm", "application/wasm"},
	    {".webp", "image/webp"},
	    {".xml", "text/xml; charset=utf-8"},
	};
	const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
	if (dot && (!slash || dot > slash))
		for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
			if (!strcasecmp(dot, table[i][0]))
				return table[i][1];
	return "application/octet-stream";
}
