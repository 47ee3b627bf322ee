/*
 * fake-e2b/runtime/template.c — the templates fake-e2b serves, as data (template.h).
 *
 * The table is generated at build time from templates/NAME/Dockerfile (cmake/templates.cmake
 * writes template_table.inc in the build directory; templates/README.md says what it reads):
 * `base`, E2B's base template as fake-e2b imitates it (user `user`, passwordless sudo), and
 * `capybara-sandbox`, the image docs/contract.md "The template" describes (user `sandbox`,
 * /workspace, /skills, /opt/capybara, the exec helper /opt/capybara-exec built from
 * templates/capybara-sandbox/capybara-exec.c). To change a template, change its Dockerfile.
 */
#include "template.h"

#include <string.h>

#include "template_table.inc"

const fk_template *fk_template_find(const char *id)
{
	for (size_t i = 0; id && i < sizeof(templates) / sizeof(templates[0]); i++)
		if (!strcmp(templates[i].id, id))
			return &templates[i];
	return NULL;
}

const fk_template *fk_templates(size_t *n_out)
{
	*n_out = sizeof(templates) / sizeof(templates[0]);
	return templates;
}
