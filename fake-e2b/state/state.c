/*
 * fake-e2b/state/state.c: the state directory's lock and its records. See state.h.
 */
#define _GNU_SOURCE
#include "state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD_MAX (16u << 20) /* a record larger than this is refused as damaged */
#define MAGIC      "fake-e2b-state"

struct fk_state {
	char *dir;
	int lock_fd;
};

static atomic_uint tmp_seq;

/* errno's text (GNU strerror_r: thread-safe, returns its own or buf's string) */
static const char *err_text(int e, char *buf, size_t cap)
{
	return strerror_r(e, buf, cap);
}

static int id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	return n >= 1 && n <= 64 &&
	       strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

/* <dir>/.state/<kind> (made 0700 when missing, with its parent), in buf. */
static int kind_dir(const char *dir, const char *kind, char *buf, size_t cap, int make)
{
	int n = snprintf(buf, cap, "%s/.state", dir);
	if (n < 0 || (size_t)n >= cap)
		return errno = ENAMETOOLONG, -1;
	if (make && mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -1;
	n = snprintf(buf, cap, "%s/.state/%s", dir, kind);
	if (n < 0 || (size_t)n >= cap)
		return errno = ENAMETOOLONG, -1;
	if (make && mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* ---- the lock ------------------------------------------------------------------------------ */

int fk_state_open(const char *dir, fk_state **out, char *msg, size_t cap)
{
	*out = NULL;
	char path[4096];
	snprintf(path, sizeof(path), "%s/.lock", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		char eb[64];
		snprintf(msg, cap, "cannot open %s: %s", path, err_text(errno, eb, sizeof(eb)));
		return -1;
	}
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	if (fcntl(fd, F_SETLK, &fl) < 0) {
		int e = errno;
		struct flock who = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if ((e == EACCES || e == EAGAIN) && fcntl(fd, F_GETLK, &who) == 0 &&
		    who.l_type != F_UNLCK)
			snprintf(msg, cap,
			         "state directory %s is in use by another fake-e2b (pid %d); stop "
			         "it or give another --state-dir",
			         dir, (int)who.l_pid);
		else {
			char eb[64];
			snprintf(msg, cap, "cannot lock %s: %s", path, err_text(e, eb, sizeof(eb)));
		}
		close(fd);
		return -1;
	}
	/* the pid, for a person looking (the kernel's lock is what counts) */
	char line[32];
	int n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, line, (size_t)n, 0) != n) {
		char eb[64];
		snprintf(msg, cap, "cannot write %s: %s", path, err_text(errno, eb, sizeof(eb)));
		close(fd);
		return -1;
	}
	fk_state *st = calloc(1, sizeof(*st));
	if (!st || !(st->dir = strdup(dir))) {
		free(st);
		close(fd);
		snprintf(msg, cap, "out of memory");
		return -1;
	}
	st->lock_fd = fd;
	*out = st;
	return 0;
}

void fk_state_close(fk_state *st)
{
	if (!st)
		return;
	close(st->lock_fd);
	free(st->dir);
	free(st);
}

const char *fk_state_dir(const fk_state *st)
{
	return st->dir;
}

int fk_state_has_records(const char *dir, const char *kind)
{
	char path[4096];
	if (kind_dir(dir, kind, path, sizeof(path), 0) < 0)
		return 0;
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int any = 0;
	for (struct dirent *e; !any && (e = readdir(d));)
		any = id_ok(e->d_name);
	closedir(d);
	return any;
}

/* ---- the format ---------------------------------------------------------------------------- */

/* hex SHA-256 of kind "\n" id "\n" body */
static int digest(const char *kind, const char *id, const char *body, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) &&
	         EVP_DigestUpdate(c, kind, strlen(kind)) && EVP_DigestUpdate(c, "\n", 1) &&
	         EVP_DigestUpdate(c, id, strlen(id)) && EVP_DigestUpdate(c, "\n", 1) &&
	         EVP_DigestUpdate(c, body, len) && EVP_DigestFinal_ex(c, md, &mdlen);
	EVP_MD_CTX_free(c);
	if (!ok || mdlen != 32)
		return -1;
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

char *fk_state_encode(const char *kind, const char *id, json_t *obj, size_t *len)
{
	char *body = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
	char hex[65], *out = NULL;
	if (!body)
		return NULL;
	size_t blen = strlen(body);
	int n = -1;
	if (digest(kind, id, body, blen, hex) == 0)
		n = asprintf(&out, MAGIC " %d %s %s %zu %s\n%s", FK_STATE_VERSION, kind, id, blen,
		             hex, body);
	free(body);
	if (n < 0)
		return NULL;
	*len = (size_t)n;
	return out;
}

int fk_state_decode(const char *kind, const char *id, const char *buf, size_t len, json_t **obj,
                    char *msg, size_t cap)
{
	*obj = NULL;
	const char *nl = memchr(buf, '\n', len < 512 ? len : 512);
	if (!nl) {
		snprintf(msg, cap, "no header line (cut short or not a record)");
		return -1;
	}
	char head[512], rkind[64], rid[80], hex[80];
	memcpy(head, buf, (size_t)(nl - buf));
	head[nl - buf] = '\0';
	int version = 0;
	unsigned long long blen = 0;
	char magic[32];
	if (memchr(buf, '\0', (size_t)(nl - buf)) ||
	    sscanf(head, "%31s %d %63s %79s %llu %79s", magic, &version, rkind, rid, &blen, hex) !=
	        6 ||
	    strcmp(magic, MAGIC)) {
		snprintf(msg, cap, "header is not a fake-e2b record's");
		return -1;
	}
	if (version != FK_STATE_VERSION) {
		snprintf(msg, cap, "format version %d (this fake-e2b reads %d)", version,
		         FK_STATE_VERSION);
		return -1;
	}
	if (strcmp(rkind, kind) || strcmp(rid, id)) {
		snprintf(msg, cap, "the record is of %s/%s, not of its file's name", rkind, rid);
		return -1;
	}
	const char *body = nl + 1;
	size_t have = len - (size_t)(body - buf);
	if (blen != have) {
		snprintf(msg, cap, "body is %zu bytes, its header says %llu (cut short?)", have,
		         blen);
		return -1;
	}
	char want[65];
	if (digest(kind, id, body, have, want) < 0 || strcmp(want, hex)) {
		snprintf(msg, cap, "checksum mismatch (a damaged byte)");
		return -1;
	}
	json_error_t je;
	json_t *o = json_loadb(body, have, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(o)) {
		json_decref(o);
		snprintf(msg, cap, "body is not a JSON object");
		return -1;
	}
	*obj = o;
	return 0;
}

/* ---- reads and writes ---------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int fk_state_put(fk_state *st, const char *kind, const char *id, json_t *obj)
{
	if (!id_ok(id) || !id_ok(kind))
		return errno = EINVAL, -1;
	char dir[4096], tmp[4200], path[4200];
	if (kind_dir(st->dir, kind, dir, sizeof(dir), 1) < 0)
		return -1;
	size_t len = 0;
	char *rec = fk_state_encode(kind, id, obj, &len);
	if (!rec)
		return errno = ENOMEM, -1;
	snprintf(path, sizeof(path), "%s/%s", dir, id);
	snprintf(tmp, sizeof(tmp), "%s/.%s.%d.%u.tmp", dir, id, (int)getpid(),
	         atomic_fetch_add(&tmp_seq, 1));
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	int rc = fd < 0 ? -1 : 0;
	if (rc == 0)
		rc = write_all(fd, rec, len) < 0 || fsync(fd) < 0 ? -1 : 0;
	int e = errno;
	if (fd >= 0 && close(fd) < 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	free(rec);
	if (rc == 0 && rename(tmp, path) < 0) {
		rc = -1;
		e = errno;
	}
	if (rc < 0) {
		unlink(tmp);
		errno = e;
		return -1;
	}
	return fsync_dir(dir);
}

int fk_state_del(fk_state *st, const char *kind, const char *id)
{
	if (!id_ok(id) || !id_ok(kind))
		return errno = EINVAL, -1;
	char dir[4096], path[4200];
	if (kind_dir(st->dir, kind, dir, sizeof(dir), 0) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, id);
	if (unlink(path) < 0)
		return errno == ENOENT ? 0 : -1;
	return fsync_dir(dir);
}

/* The file's bytes (a regular file of at most RECORD_MAX), caller frees; NULL with errno. */
static char *read_file(int dfd, const char *name, size_t *len)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	struct stat sb;
	char *buf = NULL;
	int e = 0;
	if (fstat(fd, &sb) < 0)
		e = errno;
	else if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > RECORD_MAX)
		e = EFBIG;
	else if (!(buf = malloc((size_t)sb.st_size + 1)))
		e = ENOMEM;
	size_t got = 0;
	for (ssize_t r; buf && got < (size_t)sb.st_size; got += (size_t)r)
		if ((r = read(fd, buf + got, (size_t)sb.st_size - got)) <= 0)
			break;
	close(fd);
	*len = got;
	errno = e;
	return buf;
}

int fk_state_load(fk_state *st, const char *kind, void (*fn)(const char *id, json_t *obj, void *ud),
                  void *ud)
{
	char dir[4096];
	if (kind_dir(st->dir, kind, dir, sizeof(dir), 0) < 0)
		return 0;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dup(dfd));
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	int loaded = 0;
	for (struct dirent *e; (e = readdir(d));) {
		const char *name = e->d_name;
		size_t n = strlen(name);
		if (name[0] == '.' && n > 4 && !strcmp(name + n - 4, ".tmp")) {
			/* a write a crash cut before its rename: the record it replaced stands */
			fprintf(stderr, "fake-e2b: state: removed %s/%s, a write cut short\n", kind,
			        name);
			unlinkat(dfd, name, 0);
			continue;
		}
		if (n > 4 && !strcmp(name + n - 4, ".bad")) {
			char id[80];
			snprintf(id, sizeof(id), "%.*s", (int)(n - 4), name);
			if (id_ok(id))
				fn(id, NULL, ud); /* set aside earlier: still its sandbox's files */
			continue;
		}
		if (!id_ok(name))
			continue; /* ".", ".." */
		size_t len = 0;
		char why[160] = "";
		json_t *obj = NULL;
		char *buf = read_file(dfd, name, &len);
		if (!buf) {
			char eb[64];
			snprintf(why, sizeof(why), "unreadable: %s",
			         err_text(errno, eb, sizeof(eb)));
		} else
			fk_state_decode(kind, name, buf, len, &obj, why, sizeof(why));
		free(buf);
		if (!obj) {
			char bad[NAME_MAX + sizeof(".bad")];
			snprintf(bad, sizeof(bad), "%s.bad", name);
			renameat(dfd, name, dfd, bad);
			fprintf(stderr,
			        "fake-e2b: state: %s/%s refused: %s; not loaded, kept as %s/%s\n",
			        kind, name, why, dir, bad);
			fn(name, NULL, ud);
			continue;
		}
		fn(name, obj, ud);
		json_decref(obj);
		loaded++;
	}
	closedir(d);
	fsync(dfd);
	close(dfd);
	return loaded;
}
