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
		DIR *sub = opendir(path);
		struct dirent *se;
		while (sub && (se = readdir(sub)) != NULL) {
			char box[8192];
			if (se->d_type != DT_DIR || se->d_name[0] == '.')
				continue;
			snprintf(box, sizeof(box), "%s/%s", path, se->d_name);
			rmdir(box);
		}
		if (sub)
			closedir(sub);
		rmdir(path);
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
