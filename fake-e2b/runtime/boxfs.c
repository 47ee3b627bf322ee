/*
 * fake-e2b/runtime/boxfs.c — a box seen from the host: the fd of its "/", path resolution inside
 * it and user lookup in its /etc. Shared by the files API and process starts.
 *
 * Everything resolves with openat2(RESOLVE_IN_ROOT) against an fd of the box's "/" taken from
 * /proc/<init>/root: the walk crosses the box's own mounts (/usr...), absolute symlinks resolve
 * inside the box and ".." cannot climb out, so a symlink planted in the box can never reach the
 * host's files.
 */
#define _GNU_SOURCE
#include "boxfs.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

int fk__open_in(int rootfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .mode = (flags & O_CREAT) ? mode : 0,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	const char *p = path;
	while (*p == '/')
		p++;
	if (!*p)
		p = ".";
	int fd;
	do
		fd = (int)syscall(SYS_openat2, rootfd, p, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	return fd;
}

int fk__box_rootfd(fk_box *b, fk_err *err)
{
	int fd = b->init_pid > 0 ? fk__box_init_open(b, "root", O_PATH | O_DIRECTORY)
	                         : open(b->hroot, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fk__fail(err, FK_EIO, errno, "sandbox root unavailable: %s",
		                fk_strerror(errno));
	return fd;
}

/* Lexically normalised absolute path: `~` and relative paths against `home`. */
char *fk__path_resolve(const char *path, const char *home)
{
	char *joined;
	if (!path || !*path)
		path = "~";
	if (path[0] == '~' && (path[1] == 0 || path[1] == '/')) {
		if (asprintf(&joined, "%s/%s", home, path + 1) < 0)
			return NULL;
	} else if (path[0] != '/') {
		if (asprintf(&joined, "%s/%s", home, path) < 0)
			return NULL;
	} else if (!(joined = strdup(path))) {
		return NULL;
	}
	char *out = malloc(strlen(joined) + 2);
	if (!out) {
		free(joined);
		return NULL;
	}
	size_t len = 0;
	char *save = NULL;
	for (char *seg = strtok_r(joined, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
		if (!strcmp(seg, "."))
			continue;
		if (!strcmp(seg, "..")) {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			continue;
		}
		out[len++] = '/';
		size_t n = strlen(seg);
		memcpy(out + len, seg, n);
		len += n;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = 0;
	free(joined);
	return out;
}

/* The box's /proc answers the server as the host's root: /proc/1 is a copy of the server (its
 * environment, its memory map), /proc/kallsyms holds real kernel addresses, /proc/irq and
 * /proc/mtrr set the host kernel's behaviour. The box's own users can do none of that; the
 * files API must not do it for them. */
const char *fk__fd_refused(int fd)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return "cannot be checked, which the files API does not open";
	if (sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC)
		return "leads into /proc, which the files API does not open";
	return NULL;
}

int fk__open_file_in(int rootfd, const char *path, int flags, mode_t mode, const char **why)
{
	*why = NULL;
	int fd = fk__open_in(rootfd, path, flags | O_NONBLOCK | O_NOCTTY, mode);
	if (fd < 0) {
		if (errno == ENXIO) { /* a FIFO open for writing that no one reads */
			*why = "is not a regular file";
			errno = EINVAL;
		}
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*why = fk__fd_refused(fd);
	if (!*why && S_ISDIR(st.st_mode)) {
		close(fd);
		errno = EISDIR;
		return -1;
	}
	if (!*why && !S_ISREG(st.st_mode))
		*why = "is not a regular file";
	if (*why) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

FILE *fk__fopen_in(int rootfd, const char *path)
{
	const char *why;
	int fd = fk__open_file_in(rootfd, path, O_RDONLY, 0, &why);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size > FK_ETC_FILE_MAX) {
		int e = st.st_size > FK_ETC_FILE_MAX ? EFBIG : errno;
		close(fd);
		errno = e;
		return NULL;
	}
	FILE *f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

/* Too big to be read: the lookup fails (but root, which the box's root needs to repair it). */
static int etc_too_big(const char *name, const char *file, fk_user *out, fk_err *err)
{
	if (!strcmp(name, "root")) {
		memset(out, 0, sizeof(*out));
		snprintf(out->name, sizeof(out->name), "root");
		snprintf(out->home, sizeof(out->home), "/root");
		snprintf(out->shell, sizeof(out->shell), "/bin/sh");
		out->groups[out->n_groups++] = 0;
		return 0;
	}
	return fk__fail(err, FK_ENOUSER, EFBIG,
	                "invalid username: '%s' (the sandbox's %s is larger than %d bytes, which "
	                "is not read)",
	                name, file, FK_ETC_FILE_MAX);
}

int fk__user_lookup(fk_box *b, int rootfd, const char *name, fk_user *out, fk_err *err)
{
	if (!name)
		name = b->default_user ? b->default_user : "root";
	memset(out, 0, sizeof(*out));
	FILE *f = fk__fopen_in(rootfd, "/etc/passwd");
	if (!f && errno == EFBIG)
		return etc_too_big(name, "/etc/passwd", out, err);
	bool found = false;
	if (f) {
		struct passwd pw, *res;
		char buf[2048];
		while (fgetpwent_r(f, &pw, buf, sizeof(buf), &res) == 0) {
			if (strcmp(pw.pw_name, name) != 0)
				continue;
			out->uid = pw.pw_uid;
			out->gid = pw.pw_gid;
			snprintf(out->name, sizeof(out->name), "%s", pw.pw_name);
			snprintf(out->home, sizeof(out->home), "%s", pw.pw_dir);
			snprintf(out->shell, sizeof(out->shell), "%s", pw.pw_shell);
			found = true;
			break;
		}
		fclose(f);
	}
	if (!found && !strcmp(name, "root")) { /* a box whose /etc/passwd was broken */
		snprintf(out->name, sizeof(out->name), "root");
		snprintf(out->home, sizeof(out->home), "/root");
		snprintf(out->shell, sizeof(out->shell), "/bin/sh");
		found = true;
	}
	if (!found)
		return fk__fail(err, FK_ENOUSER, 0, "invalid username: '%s'", name);
	out->groups[out->n_groups++] = out->gid;
	f = fk__fopen_in(rootfd, "/etc/group");
	if (!f && errno == EFBIG)
		return etc_too_big(name, "/etc/group", out, err);
	if (f) {
		struct group gr, *res;
		char buf[4096];
		while (fgetgrent_r(f, &gr, buf, sizeof(buf), &res) == 0 && out->n_groups < 64) {
			if (gr.gr_gid == out->gid)
				continue;
			for (char **m = gr.gr_mem; m && *m; m++) {
				if (!strcmp(*m, name)) {
					out->groups[out->n_groups++] = gr.gr_gid;
					break;
				}
			}
		}
		fclose(f);
	}
	return 0;
}
