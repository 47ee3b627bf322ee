/*
 * fake-e2b/runtime/linux/cgroup.c — cgroup primitives (see cgroup.h): read and write control
 * files, enable v2 controllers, freeze/thaw and wait (v1 freezer.state, v2 cgroup.freeze), kill
 * (v2), read use, claim a runtime's directory and sweep a dead runtime's cgroups. Knows no
 * box.
 */
#define _GNU_SOURCE
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* what fk_lx_cg_read_u64 and fk_lx_cg_has_word read of a control file */
#define CG_FILE_MAX (64 * 1024)

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

uint64_t fk_lx_pidns(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

int fk_lx_cg_rt_claim(const char *dir)
{
	int e = EWOULDBLOCK;
	for (int i = 0; i < 400; i++) {
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -1;
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno != ENOENT)
			return -1;
		if (fd < 0)
			continue; /* a sweeper removed it before it was opened: made again */
		int locked = flock(fd, LOCK_EX | LOCK_NB);
		e = errno;
		struct stat held, named;
		bool same = fstat(fd, &held) == 0 && stat(dir, &named) == 0 &&
		            held.st_ino == named.st_ino && held.st_dev == named.st_dev;
		if (same && locked == 0)
			return fd;
		close(fd);
		if (same && e != EWOULDBLOCK)
			return errno = e, -1; /* no flock here */
		if (same)
			usleep(5000); /* a sweeper's lock, held while it judges the directory */
		/* else a sweeper removed it before it was locked: made again */
	}
	return errno = e, -1;
}

int fk_lx_cg_rt_dead(const char *top, const char *name, int *pid_out)
{
	int pid = 0, n = 0, end = 0;
	unsigned long long ns = 0;
	bool named_ns = sscanf(name, "rt-%d-%d-%llx%n", &pid, &n, &ns, &end) == 3 && !name[end];
	if ((!named_ns && sscanf(name, "rt-%d-", &pid) != 1) || pid <= 0)
		return -1;
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/%s", top, name) >= (int)sizeof(path))
		return -1;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd); /* a live runtime's, or a process that outlived its runtime holds it */
		return -1;
	}
	/* its pid means something only in the namespace it names (or, named by an older
	 * fake-e2b, in none known): there it must be gone too */
	uint64_t own = fk_lx_pidns();
	if ((!named_ns || !own || ns == own) && (kill(pid, 0) == 0 || errno != ESRCH)) {
		close(fd);
		return -1;
	}
	*pid_out = pid;
	return fd;
}

void fk_lx_cg_sweep(const char *top)
{
	DIR *d = opendir(top);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		int pid, lock = fk_lx_cg_rt_dead(top, de->d_name, &pid);
		if (lock < 0)
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", top, de->d_name);
		rmdir_tree(path, 3);
		close(lock);
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

int fk_lx_cg_write_u64(const char *dir, const char *file, uint64_t v)
{
	char p[4096], s[32];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	snprintf(s, sizeof(s), "%" PRIu64, v);
	return fk_lx_write_str(p, s);
}

/* <dir>/<file> whole (NUL-terminated, malloc'd; at most CG_FILE_MAX bytes), or NULL with
 * errno. */
static char *read_file(const char *dir, const char *file)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = malloc(CG_FILE_MAX + 1);
	size_t len = 0;
	while (buf && len < CG_FILE_MAX) {
		ssize_t n = read(fd, buf + len, CG_FILE_MAX - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			buf = NULL;
			errno = e;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	int e = errno;
	close(fd);
	if (buf)
		buf[len] = 0;
	else
		errno = e ? e : ENOMEM;
	return buf;
}

/* The value at s: a decimal number, or "max". */
static int parse_u64(const char *s, uint64_t *out)
{
	while (*s == ' ' || *s == '\t')
		s++;
	if (!strncmp(s, "max", 3) && (s[3] == 0 || s[3] == '\n' || s[3] == ' ')) {
		*out = UINT64_MAX;
		return 0;
	}
	if (*s < '0' || *s > '9') {
		errno = ENODATA;
		return -1;
	}
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}

int fk_lx_cg_read_u64(const char *dir, const char *file, const char *key, uint64_t *out)
{
	char *buf = read_file(dir, file);
	if (!buf)
		return -1;
	int rc = -1;
	errno = ENODATA;
	if (!key) {
		rc = parse_u64(buf, out);
	} else {
		size_t kn = strlen(key);
		for (char *line = buf; line && *line;) {
			char *next = strchr(line, '\n');
			if (next)
				*next++ = 0;
			if (!strncmp(line, key, kn) && line[kn] == ' ') {
				rc = parse_u64(line + kn, out);
				break;
			}
			line = next;
		}
	}
	int e = errno;
	free(buf);
	errno = e;
	return rc;
}

bool fk_lx_cg_has_word(const char *dir, const char *file, const char *name)
{
	char *buf = read_file(dir, file);
	if (!buf)
		return false;
	bool found = false;
	size_t n = strlen(name);
	char *save = NULL;
	for (char *w = strtok_r(buf, " \t\n", &save); w && !found;
	     w = strtok_r(NULL, " \t\n", &save))
		found = strlen(w) == n && !memcmp(w, name, n);
	free(buf);
	return found;
}

bool fk_lx_cg_pids_nearly_full(const char *dir, unsigned headroom)
{
	uint64_t cur, max;
	if (fk_lx_cg_read_u64(dir, "pids.current", NULL, &cur) < 0 ||
	    fk_lx_cg_read_u64(dir, "pids.max", NULL, &max) < 0 || max == UINT64_MAX)
		return false;
	return cur + headroom >= max;
}

unsigned fk_lx_cg2_enable(const char *dir, const char *const *names, size_t n)
{
	unsigned have = 0, want = 0;
	char line[256] = "", path[4096];
	size_t len = 0;
	for (size_t i = 0; i < n && i < 32; i++) {
		if (fk_lx_cg_has_word(dir, "cgroup.subtree_control", names[i])) {
			have |= 1u << i;
		} else if (fk_lx_cg_has_word(dir, "cgroup.controllers", names[i]) &&
		           len + strlen(names[i]) + 3 < sizeof(line)) {
			want |= 1u << i;
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%s+%s",
			                        len ? " " : "", names[i]);
		}
	}
	if (!want)
		return have;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
	if (fk_lx_write_str(path, line) == 0)
		return have | want;
	for (size_t i = 0; i < n && i < 32; i++) {
		char one[64];
		snprintf(one, sizeof(one), "+%s", names[i]);
		if ((want & (1u << i)) && fk_lx_write_str(path, one) == 0)
			have |= 1u << i;
	}
	return have;
}

int fk_lx_cg2_set_limits(const char *dir, uint64_t memory_bytes, unsigned cpu_count,
                         uint64_t pids_max, const char **what)
{
	char p[4096], v[64];
	const char *w = NULL;
	int rc = 0;
	if (memory_bytes) {
		w = "memory";
		rc = fk_lx_cg_write_u64(dir, "memory.max", memory_bytes);
		/* no swap: the limit is the box's RAM, as a VM's (the file exists with swap on) */
		snprintf(p, sizeof(p), "%s/memory.swap.max", dir);
		if (rc == 0 && access(p, F_OK) == 0)
			rc = fk_lx_write_str(p, "0");
	}
	if (rc == 0 && cpu_count) {
		w = "cpu";
		snprintf(p, sizeof(p), "%s/cpu.max", dir);
		snprintf(v, sizeof(v), "%" PRIu64 " 100000", (uint64_t)cpu_count * 100000u);
		rc = fk_lx_write_str(p, v);
	}
	if (rc == 0 && pids_max) {
		w = "pids";
		rc = fk_lx_cg_write_u64(dir, "pids.max", pids_max);
	}
	if (what)
		*what = rc < 0 ? w : NULL;
	return rc;
}

int fk_lx_cg2_freeze(const char *dir, bool freeze, int timeout_ms)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/cgroup.freeze", dir);
	if (fk_lx_write_str(path, freeze ? "1" : "0") < 0)
		return -1;
	/* freezing takes until every task has stopped at a safe point: cgroup.events says when */
	for (int waited = 0;; waited++) {
		uint64_t frozen;
		if (fk_lx_cg_read_u64(dir, "cgroup.events", "frozen", &frozen) < 0)
			return -1;
		if ((frozen == 1) == freeze)
			return 0;
		if (waited >= timeout_ms)
			break;
		usleep(1000);
	}
	errno = ETIMEDOUT;
	return -1;
}

int fk_lx_cg2_kill(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/cgroup.kill", dir);
	return fk_lx_write_str(path, "1");
}

/* The memory of a cgroup in either hierarchy: its use (file total) less its page cache (key
 * cache_key of memory.stat) and its limit (file limit); an unreadable figure is 0. */
static void read_memory(const char *dir, const char *total, const char *cache_key,
                        const char *limit, fk_lx_cg_usage *u)
{
	uint64_t use = 0;
	if (fk_lx_cg_read_u64(dir, total, NULL, &use) < 0)
		use = 0;
	if (fk_lx_cg_read_u64(dir, "memory.stat", cache_key, &u->mem_cache) < 0)
		u->mem_cache = 0;
	u->mem_used = use > u->mem_cache ? use - u->mem_cache : 0;
	if (fk_lx_cg_read_u64(dir, limit, NULL, &u->mem_limit) < 0)
		u->mem_limit = 0;
}

void fk_lx_cg1_usage(const char *cpuacct_dir, const char *memory_dir, fk_lx_cg_usage *u)
{
	memset(u, 0, sizeof(*u));
	if (cpuacct_dir && fk_lx_cg_read_u64(cpuacct_dir, "cpuacct.usage", NULL, &u->cpu_ns) < 0)
		u->cpu_ns = 0;
	if (memory_dir)
		read_memory(memory_dir, "memory.usage_in_bytes", "total_cache",
		            "memory.limit_in_bytes", u);
	if (memory_dir &&
	    fk_lx_cg_read_u64(memory_dir, "memory.oom_control", "oom_kill", &u->oom_kills) < 0)
		u->oom_kills = 0;
}

void fk_lx_cg2_usage(const char *dir, fk_lx_cg_usage *u)
{
	memset(u, 0, sizeof(*u));
	uint64_t usec = 0;
	if (fk_lx_cg_read_u64(dir, "cpu.stat", "usage_usec", &usec) == 0)
		u->cpu_ns = usec * 1000;
	read_memory(dir, "memory.current", "file", "memory.max", u);
	if (fk_lx_cg_read_u64(dir, "memory.events", "oom_kill", &u->oom_kills) < 0)
		u->oom_kills = 0;
}
