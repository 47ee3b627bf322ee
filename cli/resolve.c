/*
 * cli/resolve.c: a sandbox's name where its id is expected (docs/cli.md
 * "IDs and names"). Names are unique in a deployment (create replaces a
 * same-name sandbox), so a name that one sandbox carries names it; a word
 * that no sandbox carries as a name is taken as the id it looks like.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_resolve_sandbox(cli *c)
{
	const char **slot = c->resolve;
	sbx_list_options lo = SBX_LIST_OPTIONS_INIT;
	sbx_info_list *l = NULL;
	sbx_error err = {0};
	int rc;

	c->resolve = NULL;
	if (!slot || !*slot || !c->prov)
		return 0;
	lo.name = *slot;
	if ((rc = sbx_sandbox_list(&l, c->prov, &lo, c->sig, &err)) == SBX_EINVALID)
		return 0; /* not a name's shape: an id */
	if (rc < 0)
		return cli_fail(c, rc, &err);
	if (l->count == 1 && strcmp(l->items[0].id, *slot) != 0) {
		if (!(c->resolved_id = strdup(l->items[0].id))) {
			sbx_info_list_free(l);
			return cli_oom(c);
		}
		*slot = c->resolved_id;
	} else if (l->count > 1) {
		char ids[256];
		size_t n = 0;
		for (size_t i = 0; i < l->count && i < 4 && n < sizeof(ids); i++)
			n += (size_t)snprintf(ids + n, sizeof(ids) - n, "%s%s", i ? ", " : "",
			                      l->items[i].id);
		rc = cli_usage_error(c,
		                     "%zu sandboxes are named '%s' (%s%s); give the id of the one "
		                     "you mean",
		                     l->count, *slot, ids, l->count > 4 ? ", ..." : "");
		sbx_info_list_free(l);
		return rc;
	}
	sbx_info_list_free(l);
	return 0;
}
