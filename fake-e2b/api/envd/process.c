/*
 * fake-e2b/api/envd/process.c: what the process.Process RPCs share (as envd's
 * services/process/service.go): the pid-or-tag selector.
 */
#include "envd.h"

#include <stdlib.h>
#include <string.h>

/* A JSON number's text in protobuf JSON's integer rule: digits, an optional fraction and
 * exponent, whose value is a whole number; its value (at most 2^32 - 1) in *out. */
static int pb_uint32_text(const char *s, uint32_t *out)
{
	const char *p = s;
	if (*p == '-')
		p++;
	if (!(*p >= '0' && *p <= '9') || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return -1;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.' && !(p[1] >= '0' && p[1] <= '9'))
		return -1;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return -1;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p)
		return -1;
	/* the value is a whole number when strtod's is (the text is short: terminal sizes) */
	double d = strtod(s, NULL);
	if (!(d >= 0 && d <= 4294967295.0) || d != (double)(uint32_t)d)
		return -1;
	*out = (uint32_t)d;
	return 0;
}

int fk_envd_pb_uint32(json_t *v, uint32_t *out)
{
	*out = 0;
	if (!v || json_is_null(v)) /* absent or null: the default */
		return 0;
	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);
		if (n < 0 || n > 4294967295LL)
			return -1;
		*out = (uint32_t)n;
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (!(d >= 0 && d <= 4294967295.0) || d != (double)(uint32_t)d)
			return -1;
		*out = (uint32_t)d;
		return 0;
	}
	if (json_is_string(v)) { /* a number in a string, no space around it */
		const char *s = json_string_value(v);
		return strlen(s) < 64 && strlen(s) == json_string_length(v) ? pb_uint32_text(s, out)
		                                                            : -1;
	}
	return -1;
}

int fk_envd_pty_size(json_t *size, uint16_t *cols, uint16_t *rows)
{
	uint32_t c = 0, r = 0;
	if (fk_envd_pb_uint32(json_object_get(size, "cols"), &c) < 0 ||
	    fk_envd_pb_uint32(json_object_get(size, "rows"), &r) < 0 || c > 65535 || r > 65535)
		return -1;
	*cols = (uint16_t)c;
	*rows = (uint16_t)r;
	return 0;
}

const char *fk_json_str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

int fk_envd_selector_pid(fk_call *c, json_t *sel, uint32_t *pid, fk_proc **proc_out)
{
	json_t *jp = json_object_get(sel, "pid");
	const char *tag = fk_json_str(sel, "tag");
	fk_proc *proc = NULL;
	int rc;
	if (json_is_integer(jp)) {
		*pid = (uint32_t)json_integer_value(jp);
		rc = proc_out ? fk_proc_find(c->app->rt, c->sb->id, *pid, &proc, NULL) : 0;
	} else if (tag) {
		*pid = 0;
		rc = fk_proc_find_tag(c->app->rt, c->sb->id, tag, &proc, NULL);
		if (rc == 0)
			*pid = fk_proc_pid(proc);
	} else {
		return FK_EINVAL;
	}
	if (proc_out)
		*proc_out = proc;
	else
		fk_proc_unref(proc);
	return rc;
}
