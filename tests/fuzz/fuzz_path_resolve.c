/*
 * fuzz_path_resolve: fake-e2b's path resolution (fake-e2b/runtime/boxfs.c, fk__path_resolve),
 * which turns every path of envd's files and process APIs ("~", "~/x", relative, absolute,
 * with "." and "..") into the absolute path looked up inside the box. Input: HOME, a NUL, the
 * path. The result must be absolute and normal: it starts with "/", has no empty, "." or ".."
 * segment, no trailing "/" (except "/" itself), and is never longer than HOME + "/" + path.
 */
#define _GNU_SOURCE
#include "boxfs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 2);
	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = 0;
	in[size + 1] = 0;
	const char *home = in, *path = in + strlen(in) + (strlen(in) < size ? 1 : 0);
	if (home[0] != '/') /* homes come from the box's /etc/passwd: absolute */
		home = "/workspace";
	char *out = fk__path_resolve(path, home);
	if (!out)
		abort(); /* only fails on out of memory */
	size_t n = strlen(out);
	if (out[0] != '/' || n > strlen(home) + strlen(path) + 2)
		abort();
	if (n > 1 && out[n - 1] == '/')
		abort();
	for (const char *s = out; *s; s++) {
		if (*s != '/')
			continue;
		const char *seg = s + 1, *end = strchr(seg, '/');
		size_t len = end ? (size_t)(end - seg) : strlen(seg);
		if (n > 1 && len == 0)
			abort();
		if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
			abort();
	}
	free(out);
	free(in);
	return 0;
}
