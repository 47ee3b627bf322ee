/*
 * tests/fake/isolation/isolation_support.c — the box helpers the isolation suite's files share
 * (isolation_test.h): commands that must succeed, boxes made, files written.
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"
#include "dirwatch.h"
#include "isolation_test.h"
#include "runtime.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

fk_rt *rt;

/* box_bash() that must exit 0; returns the output (caller frees). */
char *sh(const char *box, const char *user, const char *script)
{
	box_result r;
	assert_int_equal(box_bash(rt, box, user, true, &r, "%s", script), 0);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		fprintf(stderr, "`%s` in %s: status %d: %s\n", script, box, r.status, r.out);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	return r.out;
}

void box_create_opts(const char *id, const fk_box_options *o)
{
	fk_err err = {0};
	int rc = fk_box_create(rt, id, o, &err);
	if (rc != 0)
		fprintf(stderr, "create %s: %s\n", id, err.message);
	assert_int_equal(rc, 0);
}

void box_create(const char *id)
{
	box_create_opts(id, NULL);
}

void box_write(const char *box, const char *path, const char *data)
{
	fk_writer *w;
	fk_err err = {0};
	assert_int_equal(fk_file_write_open(rt, box, path, "root", &w, NULL, &err), 0);
	assert_int_equal(fk_writer_write(w, data, strlen(data), &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
}
