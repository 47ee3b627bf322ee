/*
 * fake-e2b/runtime/template.c — the templates fake-e2b serves, as data (template.h).
 *
 * `base` imitates E2B's base template: user `user` (uid 1000) with HOME and working directory
 * /home/user, passwordless sudo, python3 and python (from the host's /usr). `capybara-sandbox`
 * follows templates/capybara-sandbox/Dockerfile (the seed's image conventions): user `sandbox` (uid
 * 1000) with HOME and working directory /workspace, /skills root 0755, /opt/capybara root 0700,
 * and the exec helper /opt/capybara-exec (root 0755, the Dockerfile's build of
 * templates/capybara-sandbox/capybara-exec.c).
 */
#include "template.h"

#include <string.h>

static const fk_template_dir base_dirs[] = {
    {"/home/user", 0755, true},
};

static const fk_template_dir capybara_dirs[] = {
    {"/workspace", 0755, true},
    {"/skills", 0755, false},
    {"/opt/capybara", 0700, false},
};

static const fk_template templates[] = {
    {
        .id = "base",
        .user = "user",
        .uid = 1000,
        .gid = 1000,
        .home = "/home/user",
        .workdir = "/home/user",
        .sudo = true,
        .dirs = base_dirs,
        .n_dirs = sizeof(base_dirs) / sizeof(base_dirs[0]),
    },
    {
        .id = "capybara-sandbox",
        .user = "sandbox",
        .uid = 1000,
        .gid = 1000,
        .home = "/workspace",
        .workdir = "/workspace",
        .sudo = false,
        .dirs = capybara_dirs,
        .n_dirs = sizeof(capybara_dirs) / sizeof(capybara_dirs[0]),
        .exec_helper = true,
    },
};

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
