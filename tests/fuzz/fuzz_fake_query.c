/*
 * fuzz_fake_query: fake-e2b's URL and query decoding (fake-e2b/http/req.c) and
 * the Content-Disposition writer (http/reply.c) on any request target. The
 * input is the raw target ("/files?path=..."); every accessor runs on it.
 * Checks: fk_query_strict never returns a value holding a NUL byte, and the
 * Content-Disposition value never holds CR, LF or NUL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *uri = malloc(size + 1);
	if (!uri)
		return 0;
	memcpy(uri, data, size);
	uri[size] = '\0';
	fk_req r;
	memset(&r, 0, sizeof(r));
	r.uri = uri;
	static const char *const names[] = {"path", "username", "state", "metadata", "", "a+b"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int bad = 0;
		char *v = fk_query(&r, names[i]);
		free(v);
		v = fk_query_joined(&r, names[i]);
		free(v);
		v = fk_query_strict(&r, names[i], &bad);
		if (v && bad)
			abort();
		free(v);
	}
	json_decref(fk_query_json(&r));
	char *copy = strdup(uri);
	if (copy) {
		long n = fk_url_decode(copy, 1);
		if (n > (long)size)
			abort();
		free(copy);
	}
	char disp[4 * 4096];
	if (size < 4096 && fk_content_disposition(disp, sizeof(disp), "inline", uri) == 0 &&
	    strpbrk(disp, "\r\n"))
		abort();
	free(uri);
	return 0;
}
