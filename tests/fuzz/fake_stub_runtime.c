/*
 * tests/fuzz/fake_stub_runtime.c: runtime.h without sandboxes, for fuzzing
 * fake-e2b's HTTP side in-process (fuzz_fake_http). Boxes are names in a list;
 * files resolve to a normalised absolute path; uploads are counted and dropped;
 * downloads read /dev/null; processes never start (invalid_argument); no
 * directory is watched and no box is committed. The state directory (template
 * builds keep their files there) is a fresh /var/tmp/fuzz-fake-<pid>-XXXXXX, removed by
 * fk_rt_free() or at exit; a fuzzer killed before either (libFuzzer's SIGINT/SIGTERM handler
 * _Exit()s, a crash, SIGKILL) leaves its directory, which the next fk_rt_new() removes once no
 * process has that pid.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirwatch.h"
#include "runtime.h"

struct fk_rt {
	pthread_mutex_t lock;
	char state_dir[64];
	char ids[64][64];
	int frozen[64];
	size_t n;
};

struct fk_writer {
	size_t bytes;
};

static int fail(fk_err *err, int code, const char *msg)
{
	if (err) {
		err->code = code;
		snprintf(err->message, sizeof(err->message), "%s", msg);
	}
	return code;
}

const char *fk_code_name(int code)
{
	return code == FK_ENOTFOUND ? "not found" : "error";
}

#define STATE_PARENT   "/var/tmp"
#define STATE_PREFIX   "fuzz-fake-"
#define MAX_STATE_DIRS 16

/* The state directories of this process's runtimes not freed yet, removed at exit. */
static pthread_mutex_t g_dirs_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_state_dirs[MAX_STATE_DIRS][64];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0; /* keep going */
}

static void remove_tree(const char *dir)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void remove_state_dirs(void);
static void register_exit(void)
{
	atexit(remove_state_dirs);
}

static void remove_state_dirs(void)
{
	pthread_mutex_lock(&g_dirs_lock);
	for (int i = 0; i < MAX_STATE_DIRS; i++) {
		if (g_state_dirs[i][0])
			remove_tree(g_state_dirs[i]);
		g_state_dirs[i][0] = '\0';
	}
	pthread_mutex_unlock(&g_dirs_lock);
}

/* The pid in a name STATE_PREFIX "<pid>-XXXXXX", or 0 when the name is not one of ours. */
static pid_t owner_of(const char *name)
{
	char *end;
	if (strncmp(name, STATE_PREFIX, sizeof(STATE_PREFIX) - 1) != 0)
		return 0;
	name += sizeof(STATE_PREFIX) - 1;
	if (*name < '1' || *name > '9')
		return 0;
	errno = 0;
	long pid = strtol(name, &end, 10);
	if (errno || pid <= 0 || pid > INT32_MAX || *end != '-' || strlen(end + 1) != 6)
		return 0;
	return (pid_t)pid;
}

/* Removes the state directories (ours: our uid, our name) of processes that no longer exist. */
static void sweep_stale_state_dirs(void)
{
	DIR *d = opendir(STATE_PARENT);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		pid_t pid = owner_of(e->d_name);
		char path[sizeof(STATE_PARENT) + 256];
		struct stat st;
		if (pid == 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH)
			continue; /* not ours, or its process (or one with its pid) lives */
		snprintf(path, sizeof(path), STATE_PARENT "/%s", e->d_name);
		if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		remove_tree(path);
	}
	closedir(d);
}

int fk_rt_new(fk_rt **out, const fk_rt_options *opts, fk_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int slot = -1;
	(void)opts;
	pthread_once(&once, sweep_stale_state_dirs);
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return fail(err, FK_ENOMEM, "oom");
	snprintf((*out)->state_dir, sizeof((*out)->state_dir),
	         STATE_PARENT "/" STATE_PREFIX "%d-XXXXXX", (int)getpid());
	pthread_mutex_lock(&g_dirs_lock);
	for (int i = 0; i < MAX_STATE_DIRS && slot < 0; i++)
		if (!g_state_dirs[i][0])
			slot = i;
	if (slot >= 0 && mkdtemp((*out)->state_dir))
		memcpy(g_state_dirs[slot], (*out)->state_dir, sizeof(g_state_dirs[slot]));
	else
		slot = -1;
	pthread_mutex_unlock(&g_dirs_lock);
	if (slot < 0) {
		free(*out);
		*out = NULL;
		return fail(err, FK_EIO, "mkdtemp (or more than 16 runtimes)");
	}
	static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
	pthread_once(&exit_once, register_exit);
	pthread_mutex_init(&(*out)->lock, NULL);
	return 0;
}

void fk_rt_free(fk_rt *rt)
{
	if (!rt)
		return;
	pthread_mutex_lock(&g_dirs_lock);
	for (int i = 0; i < MAX_STATE_DIRS; i++)
		if (!strcmp(g_state_dirs[i], rt->state_dir))
			g_state_dirs[i][0] = '\0';
	pthread_mutex_unlock(&g_dirs_lock);
	remove_tree(rt->state_dir);
	pthread_mutex_destroy(&rt->lock);
	free(rt);
}

const char *fk_rt_state_dir(const fk_rt *rt)
{
	return rt->state_dir;
}

/* no process of the stub ever ends: the hook is never called */
void fk_rt_set_proc_end_hook(fk_rt *rt,
                             void (*fn)(void *ctx, const char *box_id, const fk_proc_end *end),
                             void *ctx)
{
	(void)rt;
	(void)fn;
	(void)ctx;
}

unsigned fk_rt_default_disk_mb(const fk_rt *rt)
{
	(void)rt;
	return 1024;
}

bool fk_rt_isolated(const fk_rt *rt)
{
	(void)rt;
	return false;
}

bool fk_rt_egress_allowed(const fk_rt *rt)
{
	(void)rt;
	return true;
}

static long find(fk_rt *rt, const char *id)
{
	for (size_t i = 0; i < rt->n; i++)
		if (!strcmp(rt->ids[i], id))
			return (long)i;
	return -1;
}

int fk_box_create(fk_rt *rt, const char *id, const fk_box_options *opts, fk_err *err)
{
	(void)opts;
	pthread_mutex_lock(&rt->lock);
	int rc = rt->n < 64 && find(rt, id) < 0 ? 0 : fail(err, FK_EEXIST, "no room");
	if (!rc)
		snprintf(rt->ids[rt->n++], 64, "%s", id);
	pthread_mutex_unlock(&rt->lock);
	return rc;
}

static int set_frozen(fk_rt *rt, const char *id, int frozen, fk_err *err)
{
	pthread_mutex_lock(&rt->lock);
	long i = find(rt, id);
	if (i >= 0)
		rt->frozen[i] = frozen;
	pthread_mutex_unlock(&rt->lock);
	return i >= 0 ? 0 : fail(err, FK_ENOTFOUND, "no such box");
}

int fk_box_freeze(fk_rt *rt, const char *id, fk_err *err)
{
	return set_frozen(rt, id, 1, err);
}

int fk_box_thaw(fk_rt *rt, const char *id, fk_err *err)
{
	return set_frozen(rt, id, 0, err);
}

int fk_box_reboot(fk_rt *rt, const char *id, fk_err *err)
{
	return set_frozen(rt, id, 0, err);
}

int fk_box_destroy(fk_rt *rt, const char *id, fk_err *err)
{
	pthread_mutex_lock(&rt->lock);
	long i = find(rt, id);
	if (i >= 0) {
		memmove(rt->ids[i], rt->ids[i + 1], (rt->n - (size_t)i - 1) * 64);
		memmove(&rt->frozen[i], &rt->frozen[i + 1], (rt->n - (size_t)i - 1) * sizeof(int));
		rt->n--;
	}
	pthread_mutex_unlock(&rt->lock);
	return i >= 0 ? 0 : fail(err, FK_ENOTFOUND, "no such box");
}

/* The stub keeps nothing across runs: a close is a destroy, nothing is there to restore. */
int fk_box_close(fk_rt *rt, const char *id, fk_err *err)
{
	return fk_box_destroy(rt, id, err);
}

int fk_box_restore(fk_rt *rt, const char *id, const fk_box_options *opts, fk_err *err)
{
	(void)rt;
	(void)id;
	(void)opts;
	return fail(err, FK_ENOTFOUND, "no such box");
}

void fk_rt_sweep(fk_rt *rt, const char *const *keep, size_t n_keep)
{
	(void)rt;
	(void)keep;
	(void)n_keep;
}

void fk_rt_sweep_unadopted(fk_rt *rt)
{
	(void)rt;
}

bool fk_rt_live(const fk_rt *rt)
{
	(void)rt;
	return false;
}

bool fk_box_live(fk_rt *rt, const char *id, bool *frozen_out)
{
	(void)rt;
	(void)id;
	(void)frozen_out;
	return false;
}

int fk_box_set_egress(fk_rt *rt, const char *id, const char *const *allow_out, size_t n_allow_out,
                      const char *const *deny_out, size_t n_deny_out, fk_err *err)
{
	(void)allow_out;
	(void)n_allow_out;
	(void)deny_out;
	(void)n_deny_out;
	pthread_mutex_lock(&rt->lock);
	long i = find(rt, id);
	pthread_mutex_unlock(&rt->lock);
	return i >= 0 ? 0 : fail(err, FK_ENOTFOUND, "no such box");
}

bool fk_box_exists(fk_rt *rt, const char *id, bool *frozen_out)
{
	pthread_mutex_lock(&rt->lock);
	long i = find(rt, id);
	if (i >= 0 && frozen_out)
		*frozen_out = rt->frozen[i];
	pthread_mutex_unlock(&rt->lock);
	return i >= 0;
}

int fk_box_usage_read(fk_rt *rt, const char *id, fk_box_usage *out, fk_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!fk_box_exists(rt, id, NULL))
		return fail(err, FK_ENOTFOUND, "no such box");
	out->cpu_count = 2;
	out->mem_total = 512ull << 20;
	out->disk_total = 1ull << 30;
	return 0;
}

bool fk_box_init_gone(fk_rt *rt, const char *id)
{
	(void)rt;
	(void)id;
	return false;
}

pid_t fk_box_init_pid(fk_rt *rt, const char *id)
{
	(void)rt;
	(void)id;
	return -1;
}

int fk_box_connect(fk_rt *rt, const char *id, uint16_t port, int timeout_ms, int *fd_out,
                   fk_err *err)
{
	(void)rt;
	(void)id;
	(void)port;
	(void)timeout_ms;
	*fd_out = -1;
	return fail(err, FK_ENOTFOUND, "nothing listens in the fuzz runtime");
}

int fk_proc_start(fk_rt *rt, const char *box_id, const fk_proc_spec *spec, fk_proc **proc_out,
                  fk_sub **sub_out, fk_err *err)
{
	(void)rt;
	(void)box_id;
	(void)spec;
	*proc_out = NULL;
	*sub_out = NULL;
	return fail(err, FK_EINVAL, "no processes in the fuzz runtime");
}

int fk_proc_find(fk_rt *rt, const char *box_id, uint32_t pid, fk_proc **out, fk_err *err)
{
	(void)rt;
	(void)box_id;
	(void)pid;
	*out = NULL;
	return fail(err, FK_ENOTFOUND, "no such process");
}

int fk_proc_find_tag(fk_rt *rt, const char *box_id, const char *tag, fk_proc **out, fk_err *err)
{
	(void)tag;
	return fk_proc_find(rt, box_id, 0, out, err);
}

void fk_proc_ref(fk_proc *p)
{
	(void)p;
}

void fk_proc_unref(fk_proc *p)
{
	(void)p;
}

uint32_t fk_proc_pid(const fk_proc *p)
{
	(void)p;
	return 0;
}

bool fk_proc_ended(fk_proc *p, int *wait_status_out)
{
	(void)p;
	if (wait_status_out)
		*wait_status_out = 0;
	return true;
}

int fk_sub_new(fk_proc *p, fk_sub **out, fk_err *err)
{
	(void)p;
	*out = NULL;
	return fail(err, FK_ECLOSED, "no processes");
}

int fk_sub_next(fk_sub *s, fk_event *ev, int timeout_ms)
{
	(void)s;
	(void)ev;
	(void)timeout_ms;
	return FK_ECLOSED;
}

void fk_sub_wake(fk_sub *s)
{
	(void)s;
}

void fk_sub_free(fk_sub *s)
{
	(void)s;
}

void fk_event_clear(fk_event *ev)
{
	free(ev->data);
	ev->data = NULL;
}

int fk_proc_signal(fk_rt *rt, const char *box_id, uint32_t pid, int sig, fk_err *err)
{
	(void)rt;
	(void)box_id;
	(void)pid;
	(void)sig;
	return fail(err, FK_ENOTFOUND, "no such process");
}

int fk_proc_write_stdin(fk_rt *rt, const char *box_id, uint32_t pid, const void *data, size_t len,
                        fk_err *err)
{
	(void)data;
	(void)len;
	return fk_proc_signal(rt, box_id, pid, 0, err);
}

int fk_proc_write_stdin_until(fk_rt *rt, const char *box_id, uint32_t pid, const void *data,
                              size_t len, int (*cancel)(void *), void *cls, fk_err *err)
{
	(void)cancel;
	(void)cls;
	return fk_proc_write_stdin(rt, box_id, pid, data, len, err);
}

int fk_proc_close_stdin(fk_rt *rt, const char *box_id, uint32_t pid, fk_err *err)
{
	return fk_proc_signal(rt, box_id, pid, 0, err);
}

int fk_proc_resize(fk_rt *rt, const char *box_id, uint32_t pid, uint16_t cols, uint16_t rows,
                   fk_err *err)
{
	(void)cols;
	(void)rows;
	return fk_proc_signal(rt, box_id, pid, 0, err);
}

int fk_box_commit(fk_rt *rt, const char *id, const char *layer_dir, fk_err *err)
{
	(void)rt;
	(void)id;
	(void)layer_dir;
	return fail(err, FK_EIO, "no layers in the fuzz runtime");
}

int fk_box_snapshot(fk_rt *rt, const char *id, const char *layer_dir, fk_err *err)
{
	return fk_box_commit(rt, id, layer_dir, err);
}

int fk_proc_list(fk_rt *rt, const char *box_id, fk_proc_info **out, size_t *n_out, fk_err *err)
{
	(void)rt;
	(void)box_id;
	(void)err;
	*out = NULL;
	*n_out = 0;
	return 0;
}

void fk_proc_info_free(fk_proc_info *infos, size_t n)
{
	(void)n;
	free(infos);
}

/* "/" + path (relative to /home/user), "." and ".." folded; NULL when it leaves the root. */
static char *normalise(const char *path)
{
	char *out = malloc(strlen(path) + 16);
	size_t o = 0;
	if (!out)
		return NULL;
	if (path[0] != '/') {
		strcpy(out, "/home/user");
		o = strlen(out);
	}
	out[o] = '\0';
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n == 2 && !strncmp(p, "..", 2)) {
			char *s = strrchr(out, '/');
			o = s ? (size_t)(s - out) : 0;
		} else if (!(n == 1 && *p == '.')) {
			out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		out[o] = '\0';
		p += n;
	}
	if (!o)
		strcpy(out, "/");
	return out;
}

static int box_ok(fk_rt *rt, const char *box_id, const char *user, fk_err *err)
{
	if (!fk_box_exists(rt, box_id, NULL))
		return fail(err, FK_ENOTFOUND, "no such box");
	if (user && strcmp(user, "root") && strcmp(user, "user") && strcmp(user, "sandbox"))
		return fail(err, FK_ENOUSER, "no such user");
	return 0;
}

int fk_file_resolve(fk_rt *rt, const char *box_id, const char *path, const char *user,
                    char **abs_path_out, fk_err *err)
{
	int rc = box_ok(rt, box_id, user, err);
	if (rc)
		return rc;
	*abs_path_out = normalise(path);
	return *abs_path_out ? 0 : fail(err, FK_ENOMEM, "oom");
}

int fk_file_write_open(fk_rt *rt, const char *box_id, const char *path, const char *user,
                       fk_writer **out, char **abs_path_out, fk_err *err)
{
	int rc = box_ok(rt, box_id, user, err);
	if (rc)
		return rc;
	if (!*path)
		return fail(err, FK_EINVAL, "empty path");
	*out = calloc(1, sizeof(**out));
	if (abs_path_out)
		*abs_path_out = normalise(path);
	return 0;
}

int fk_writer_write(fk_writer *w, const void *data, size_t len, fk_err *err)
{
	(void)data;
	(void)err;
	w->bytes += len;
	return 0;
}

int fk_writer_set_meta(fk_writer *w, const char *key, const char *value, fk_err *err)
{
	(void)w;
	(void)key;
	(void)value;
	(void)err;
	return 0;
}

int fk_writer_close(fk_writer *w, fk_err *err)
{
	(void)err;
	free(w);
	return 0;
}

int fk_file_read_open(fk_rt *rt, const char *box_id, const char *path, const char *user,
                      int *fd_out, uint64_t *size_out, fk_err *err)
{
	int rc = box_ok(rt, box_id, user, err);
	if (rc)
		return rc;
	(void)path;
	*fd_out = open("/dev/null", O_RDONLY | O_CLOEXEC);
	*size_out = 0;
	return *fd_out >= 0 ? 0 : fail(err, FK_EIO, "open");
}

static int entry(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_entry *out,
                 fk_err *err)
{
	int rc = box_ok(rt, box_id, user, err);
	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	out->path = normalise(path);
	const char *base = out->path ? strrchr(out->path, '/') : NULL;
	out->name = strdup(base && base[1] ? base + 1 : "/");
	out->type = FK_FT_DIR;
	out->mode = 040755;
	memcpy(out->permissions, "drwxr-xr-x", 11);
	out->owner = strdup("root");
	out->group = strdup("root");
	return 0;
}

int fk_file_stat(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_entry *out,
                 fk_err *err)
{
	return entry(rt, box_id, path, user, out, err);
}

int fk_file_list(fk_rt *rt, const char *box_id, const char *path, const char *user, unsigned depth,
                 fk_entry **out, size_t *n_out, fk_err *err)
{
	(void)depth;
	*out = calloc(1, sizeof(fk_entry));
	*n_out = 1;
	return entry(rt, box_id, path, user, *out, err);
}

int fk_file_mkdir(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_entry *out,
                  fk_err *err)
{
	return entry(rt, box_id, path, user, out, err);
}

int fk_file_remove(fk_rt *rt, const char *box_id, const char *path, const char *user, fk_err *err)
{
	(void)path;
	return box_ok(rt, box_id, user, err);
}

int fk_file_move(fk_rt *rt, const char *box_id, const char *src, const char *dst, const char *user,
                 fk_entry *out, fk_err *err)
{
	(void)src;
	return entry(rt, box_id, dst, user, out, err);
}

void fk_entry_clear(fk_entry *e)
{
	if (!e)
		return;
	free(e->name);
	free(e->path);
	free(e->owner);
	free(e->group);
	free(e->symlink_target);
	memset(e, 0, sizeof(*e));
}

void fk_entries_free(fk_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fk_entry_clear(&e[i]);
	free(e);
}

int fk_dirwatch_new(fk_rt *rt, const char *box_id, const char *path, const char *user,
                    bool recursive, fk_dirwatch **out, char **abs_out, fk_err *err)
{
	(void)path;
	(void)recursive;
	*out = NULL;
	if (abs_out)
		*abs_out = NULL;
	int rc = box_ok(rt, box_id, user, err);
	return rc ? rc : fail(err, FK_ENOTFOUND, "no directory is watched in the fuzz runtime");
}

int fk_dirwatch_next(fk_dirwatch *w, fk_dirwatch_event *ev, int timeout_ms)
{
	(void)w;
	(void)ev;
	(void)timeout_ms;
	return FK_ECLOSED;
}

void fk_dirwatch_wake(fk_dirwatch *w)
{
	(void)w;
}

void fk_dirwatch_event_clear(fk_dirwatch_event *ev)
{
	if (!ev)
		return;
	free(ev->name);
	free(ev->path);
	ev->name = ev->path = NULL;
}

void fk_dirwatch_free(fk_dirwatch *w)
{
	(void)w;
}
