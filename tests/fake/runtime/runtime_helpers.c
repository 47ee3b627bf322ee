/*
 * tests/fake/runtime/runtime_helpers.c — helpers the runtime test program's files share
 * (runtime_test.h): commands and files in a box, and the /proc probes that count a box's tasks.
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"
#include "runtime.h"
#include "runtime_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

fk_rt *rt;

/* bash -c <script> as `user`; returns stdout (caller frees), asserts exit 0. */
char *sh(const char *box, const char *user, const char *fmt, ...)
{
	char *script;
	va_list ap;
	va_start(ap, fmt);
	assert_true(vasprintf(&script, fmt, ap) >= 0);
	va_end(ap);
	box_result r;
	assert_int_equal(box_bash(rt, box, user, false, &r, "%s", script), 0);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		fprintf(stderr, "script `%s` failed (status %d): %s%s\n", script, r.status, r.out,
		        r.err);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	free(script);
	free(r.err);
	return r.out;
}

fk_proc *start_bg(const char *box, const char *user, const char *script)
{
	const char *args[] = {"-c", script};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = user};
	fk_proc *p = NULL;
	fk_err err = {0};
	int rc = fk_proc_start(rt, box, &spec, &p, NULL, &err);
	if (rc != 0)
		fprintf(stderr, "start failed: %s\n", err.message);
	assert_int_equal(rc, 0);
	return p;
}

void box_create(const char *id, bool net_none)
{
	char mark[96];
	snprintf(mark, sizeof(mark), "FK_TEST_MARK=%d-%s", (int)getpid(), id);
	const char *envs[] = {"E2B_SANDBOX=true", "FK_BOX_ENV=box", "FK_OVERRIDE=box", mark};
	fk_box_options o = {.net_none = net_none, .envs = envs, .n_envs = 4};
	fk_err err = {0};
	int rc = fk_box_create(rt, id, &o, &err);
	if (rc != 0)
		fprintf(stderr, "create %s: %s\n", id, err.message);
	assert_int_equal(rc, 0);
}

void box_destroy(const char *id)
{
	assert_int_equal(fk_box_destroy(rt, id, NULL), 0);
}

void wait_end(fk_proc *p, int *status)
{
	int64_t deadline = fk_mono_ms() + 30000;
	while (!fk_proc_ended(p, status)) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(10);
	}
}

/* Whole content of a file in the box, through the files API. */
char *box_read(const char *box, const char *path)
{
	int fd;
	uint64_t size;
	fk_err err = {0};
	int rc = fk_file_read_open(rt, box, path, "root", &fd, &size, &err);
	if (rc != 0)
		return NULL;
	char *buf = calloc(1, size + 1);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, size), (ssize_t)size);
	close(fd);
	return buf;
}

void box_write(const char *box, const char *path, const char *user, const char *data)
{
	fk_writer *w;
	fk_err err = {0};
	int rc = fk_file_write_open(rt, box, path, user, &w, NULL, &err);
	if (rc != 0)
		fprintf(stderr, "write_open %s: %s\n", path, err.message);
	assert_int_equal(rc, 0);
	assert_int_equal(fk_writer_write(w, data, strlen(data), &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
}

unsigned long ns_inode(pid_t pid, const char *ns)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)pid, ns);
	return stat(p, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

static unsigned long long start_time(pid_t pid)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(p, "r");
	unsigned long long t = 0;
	if (f && fgets(buf, sizeof(buf), f)) {
		char *s = strrchr(buf, ')'); /* field 22, counted after the comm field */
		for (int field = 2; s && field < 22; field++)
			s = strchr(s + 1, ' ');
		if (s)
			t = strtoull(s + 1, NULL, 10);
	}
	if (f)
		fclose(f);
	return t;
}

static bool has_env(pid_t pid, const char *kv)
{
	char p[64], buf[65536];
	snprintf(p, sizeof(p), "/proc/%d/environ", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
		buf[n] = 0;
		if (!strcmp(buf + i, kv))
			return true;
	}
	return false;
}

box_id box_ident(pid_t owner, const char *box, pid_t init)
{
	box_id b = {.pidns = ns_inode(init, "pid"), .init = init, .init_start = start_time(init)};
	snprintf(b.mark, sizeof(b.mark), "FK_TEST_MARK=%d-%s", (int)owner, box);
	return b;
}

int count_box(const box_id *b)
{
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || ns_inode((pid_t)pid, "pid") != b->pidns)
			continue;
		if ((pid == b->init && start_time((pid_t)pid) == b->init_start) ||
		    has_env((pid_t)pid, b->mark))
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

bool mounts_mention(const char *needle)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	bool found = false;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			found = true;
	if (f)
		fclose(f);
	return found;
}
