/*
 * tests/fake/isolation/test_etc.c — a box's /etc is made for it, and its mount table names no
 * host path.
 *
 * The box's mountinfo must show neither the state directory nor any host path of the box's files
 * (the /etc overlay's options used to name <state>/<id>/etc-upper and the template's path). Runs
 * the linked-in runtime, as root; skips without isolation.
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "test_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static fk_rt *rt;
static char state_dir[] = "/var/tmp/fk-etc-XXXXXX";

static char *sh(const char *box, const char *user, const char *script)
{
	box_result r;
	assert_int_equal(box_bash(rt, box, user, true, &r, "%s", script), 0);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		fprintf(stderr, "`%s` in %s: status %d: %s\n", script, box, r.status, r.out);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	return r.out;
}

static void box_create(const char *id, const char *tpl)
{
	fk_box_options o = {.template_id = tpl};
	fk_err err = {0};
	int rc = fk_box_create(rt, id, &o, &err);
	if (rc != 0)
		fprintf(stderr, "create %s: %s\n", id, err.message);
	assert_int_equal(rc, 0);
}

/* ------------------------------------------------------------ mount table */

static void assert_mountinfo_clean(const char *box)
{
	char *mi = sh(box, "root", "cat /proc/self/mountinfo");
	if (strstr(mi, state_dir) || strstr(mi, "etc-upper,") == NULL)
		fprintf(stderr, "mountinfo of %s:\n%s", box, mi);
	/* the overlay names its layers relative to the box's directory */
	assert_non_null(strstr(mi, " /etc "));
	assert_non_null(strstr(mi, "lowerdir=etc-lower,upperdir=etc-upper,workdir=etc-work"));
	assert_null(strstr(mi, state_dir));
	assert_null(strstr(mi, "/tmp/"));
	/* on a machine with per-box disks, the box's files are paths of its own disk only */
	char img[256];
	snprintf(img, sizeof(img), "%s/%s.disk", state_dir, box);
	if (access(img, F_OK) == 0) {
		for (char *line = mi; line && *line;) {
			char *nl = strchr(line, '\n');
			if (nl)
				*nl = 0;
			char root[4096], point[4096];
			assert_int_equal(sscanf(line, "%*s %*s %*s %4095s %4095s", root, point), 2);
			/* a mount's root is a path within its own file system: the host's /usr
			 * trees, the box's disk, its /dev and /proc; nothing of the host's /var,
			 * /tmp or /run */
			assert_false(!strncmp(root, "/var", 4) || !strncmp(root, "/tmp", 4) ||
			             !strncmp(root, "/run", 4));
			line = nl ? nl + 1 : NULL;
		}
	}
	free(mi);
}

static void test_etc__mountinfo_names_no_host_path(void **state)
{
	(void)state;
	NEED_ISOLATION(rt);
	box_create("mi", "base");
	assert_mountinfo_clean("mi");
	/* `mount` as the box's users see it */
	char *o = sh("mi", "user", "mount | grep -c ' on /etc '");
	assert_string_equal(o, "1\n");
	free(o);
	assert_int_equal(fk_box_destroy(rt, "mi", NULL), 0);
}

static int group_setup(void **state)
{
	(void)state;
	fk_err err = {0};
	assert_non_null(mkdtemp(state_dir));
	fk_rt_options o = {.state_dir = state_dir};
	if (fk_rt_new(&rt, &o, &err) != 0) {
		fprintf(stderr, "fk_rt_new: %s\n", err.message);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	fk_rt_free(rt);
	if (rmdir(state_dir) < 0)
		fprintf(stderr, "state dir %s left: %s\n", state_dir, strerror(errno));
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_etc__mountinfo_names_no_host_path),
	};
	return fkt_run_filtered(tests, sizeof(tests) / sizeof(tests[0]), group_setup,
	                        group_teardown);
}
