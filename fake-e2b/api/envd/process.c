/*
 * fake-e2b/api/envd/process.c: what the process.Process RPCs share (as envd's
 * services/process/service.go): the pid-or-tag selector.
 */
#include "envd.h"

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
