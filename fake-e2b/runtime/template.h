/*
 * fake-e2b/runtime/template.h — the templates fake-e2b serves (template.c holds them as data).
 *
 * A template describes a box's root filesystem on top of what every box gets (the host's /usr,
 * /bin, /lib... read-only, its own /dev, /proc, /tmp, and a writable layer of its own for
 * everything else): its user, that user's home, the default working directory, the directories
 * it must have and whether the user has passwordless sudo. `templates/README.md` says how to add
 * one. Read-only data: thread-safe.
 */
#ifndef FAKE_E2B_TEMPLATE_H
#define FAKE_E2B_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct fk_template_dir {
	const char *path; /* absolute inside the box */
	unsigned mode;    /* permission bits */
	bool user_owned;  /* owned by the template's user, else by root */
} fk_template_dir;

typedef struct fk_template {
	const char *id;              /* templateID, and the alias it is found by */
	const char *user;            /* the user processes and file calls run as by default */
	unsigned uid, gid;           /* of `user` (its group has the same name) */
	const char *home;            /* the user's HOME */
	const char *workdir;         /* default working directory of every process */
	bool sudo;                   /* `user` may run anything through sudo without a password */
	const fk_template_dir *dirs; /* created when the box is made and again at every boot */
	size_t n_dirs;
	bool exec_helper; /* has /opt/capybara-exec (root 0755), fk_capybara_exec's bytes */
} fk_template;

/* templates/capybara-sandbox/capybara-exec.c, built static (generated from the build). */
extern const unsigned char fk_capybara_exec[];
extern const size_t fk_capybara_exec_len;
#define FK_EXEC_HELPER_PATH "/opt/capybara-exec"

/* The template named `id` (templateID or alias); NULL when there is none. */
const fk_template *fk_template_find(const char *id);

/* Every template, `*n_out` of them (in the order template.c lists them). */
const fk_template *fk_templates(size_t *n_out);

#endif /* FAKE_E2B_TEMPLATE_H */
