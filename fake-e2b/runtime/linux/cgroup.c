/*
 * fake-e2b/runtime/linux/cgroup.c — cgroup v1 primitives: write a control file, freeze/thaw and
 * wait, sweep a dead process's cgroups. Knows no box.
 */
#define _GNU_SOURCE
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int fk_lx_write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* rmdir of an empty cgroup tree, children first, at most `depth` levels below `path`. */
static void rmdir_tree(const char *path, int depth)
{
	DIR *d = depth > 0 ? opendir(path) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		char sub[4096];
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		rmdir_tree(sub, depth - 1);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

void fk_lx_cg_sweep(const char *top)
{
	DIR *d = opendir(top);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		int pid = 0;
		if (sscanf(de->d_name, "rt-%d-", &pid) != 1 || pid <= 0 ||
		    (kill(pid, 0) == 0 || errno != ESRCH))
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", top, de->d_name);
		rmdir_tree(path, 3);
	}
	if (d)
		closedir(d);
}

int fk_lx_cg_freezer_set(const char *dir, const char *state)
{
	char path[512], cur[32];
	snprintf(path, sizeof(path), "%s/freezer.state", dir);
	if (fk_lx_write_str(path, state) < 0)
		return -1;
	/* FREEZING is transient: wait until every task is frozen (or thawed) */
	for (int i = 0; i < 10000; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		ssize_t n = read(fd, cur, sizeof(cur) - 1);
		close(fd);
		if (n > 0 && !strncmp(cur, state, strlen(state)))
			return 0;
		if (i % 100 == 99)
			fk_lx_write_str(path, state);
		usleep(1000);
	}
	errno = ETIMEDOUT;
	return -1;
}
