/*
 * tests/fake/isolation/test_disk_reserve.c — a sandbox's disk cap is a promise (fake-e2b
 * README, "Disk cap"): its space on the state directory's file system is reserved when the box
 * is made, so a box, a snapshot or any other writer filling that file system cannot take what
 * another box was promised. The state directory lives on a small ext4 file system of the test's
 * own (an image loop-mounted at setup, removed at teardown). Needs root, namespaces, loop
 * devices and mke2fs; skips with the reason without them.
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "fkserver.h"
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define FS_MB   128 /* the state directory's file system */
#define DISK_MB 48  /* two boxes fit, a third does not */
#define MIB     (1024ull * 1024)

/* The runtime's words (fk_box_create, fk_box_snapshot) */
#define CREATE_NOSPC                                                                               \
	"not enough disk space for the sandbox's disk: it needs %u MiB, the state directory's "    \
	"file system has %llu MiB free"
#define SNAPSHOT_NOSPC                                                                             \
	"not enough disk space for a copy of the sandbox's files: it needs %llu MiB, the state "   \
	"directory's file system"
#define KEY "e2b_disk_reserve"

static fk_rt *rt;
static const char *fake_bin; /* argv[1]: the server, for the API's answers */
static fks srv;
static bool srv_up;
static char top[] = "/var/tmp/fk-disk-reserve-XXXXXX";
static char image[128], mnt[128], state[160], filler[160];
static const char *skip_reason; /* why the file system of our own could not be made */
static bool mounted;

#define NEED_DISKS()                                                                               \
	do {                                                                                       \
		if (skip_reason) {                                                                 \
			fprintf(stderr, "SKIP: %s\n", skip_reason);                                \
			skip();                                                                    \
		}                                                                                  \
		NEED_ISOLATION(rt);                                                                \
	} while (0)

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The state file system's free space for an unprivileged writer (what the runtime counts), in
 * whole MiB, after everything written so far has reached it. */
static unsigned long long free_mib(void)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	syncfs(fd);
	struct statvfs sv;
	assert_int_equal(fstatvfs(fd, &sv), 0);
	close(fd);
	return (unsigned long long)sv.f_bavail * sv.f_frsize / MIB;
}

/* Another writer on the host takes every free block of the state file system. */
static void fill_state_fs(void)
{
	int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	off_t off = 0;
	for (off_t step = (off_t)MIB; step >= 4096; step /= 16)
		while (fallocate(fd, 0, off, step) == 0)
			off += step;
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(fsync(fd), 0);
	close(fd);
	assert_int_equal(free_mib(), 0);
}

static void unfill_state_fs(void)
{
	assert_int_equal(unlink(filler), 0);
}

/* box_bash() as root that must exit 0; its merged output (caller frees). */
static char *sh(const char *box, const char *script)
{
	box_result r;
	assert_int_equal(box_bash(rt, box, "root", true, &r, "%s", script), 0);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		fprintf(stderr, "`%s` in %s: status %d: %s\n", script, box, r.status, r.out);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	return r.out;
}

static void create(const char *id, unsigned disk_mb)
{
	fk_box_options o = {.disk_mb = disk_mb};
	fk_err err = {0};
	int rc = fk_box_create(rt, id, &o, &err);
	if (rc != 0)
		fprintf(stderr, "create %s: %s\n", id, err.message);
	assert_int_equal(rc, 0);
}

static void destroy(const char *id)
{
	assert_int_equal(fk_box_destroy(rt, id, NULL), 0);
}

/* The first line of file `path` into buf ("" when unreadable). */
static void read_line(const char *path, char *buf, size_t cap)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "re");
	if (f && fgets(buf, (int)cap, f))
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

/* The image behind box `id`: its whole size is allocated on the state file system, and its loop
 * device takes no discard (which would punch holes in it and hand the space back). */
static void assert_reserved(const char *id, unsigned disk_mb)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s.disk", state, id);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, (off_t)disk_mb * (off_t)MIB);
	assert_true((unsigned long long)st.st_blocks * 512 >= (unsigned long long)disk_mb * MIB);
	int found = 0;
	for (int n = 0; n < 4096; n++) {
		char sys[128], line[512];
		snprintf(sys, sizeof(sys), "/sys/block/loop%d/loop/backing_file", n);
		read_line(sys, line, sizeof(line));
		if (strcmp(line, p) != 0)
			continue;
		found++;
		snprintf(sys, sizeof(sys), "/sys/block/loop%d/queue/discard_max_bytes", n);
		read_line(sys, line, sizeof(line));
		assert_string_equal(line, "0");
	}
	assert_int_equal(found, 1);
}

/* A create that would overcommit the state file system is refused (FK_ENOSPC, E2B's 507 at the
 * API) naming what it needs and what is free, and leaves nothing behind; one that fits is made. */
static void test_disk_reserve__a_create_that_would_overcommit_is_refused(void **state_)
{
	NEED_DISKS();
	unsigned long long before = free_mib();
	create("oc-a", DISK_MB);
	create("oc-b", DISK_MB);
	unsigned long long free1 = free_mib();
	fk_box_options o = {.disk_mb = DISK_MB};
	fk_err err = {0};
	assert_int_equal(fk_box_create(rt, "oc-c", &o, &err), FK_ENOSPC);
	unsigned long long free2 = free_mib();
	assert_true(free1 < DISK_MB);
	assert_reserved("oc-a", DISK_MB);
	assert_reserved("oc-b", DISK_MB);
	char want1[256], want2[256];
	snprintf(want1, sizeof(want1), CREATE_NOSPC, DISK_MB, free1);
	snprintf(want2, sizeof(want2), CREATE_NOSPC, DISK_MB, free2);
	if (strcmp(err.message, want1) != 0)
		assert_string_equal(err.message, want2);
	/* nothing of it is left: no image, no directory, and the space is what it was */
	char p[256];
	snprintf(p, sizeof(p), "%s/oc-c.disk", state);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/oc-c", state);
	assert_int_equal(access(p, F_OK), -1);
	/* (a box's own writeback may take an extent block of the state file system meanwhile) */
	assert_true(free2 + 1 >= free1 && free2 <= free1);
	/* a smaller one fits; its disk is mounted without discard, read-only on an ext4 error */
	create("oc-d", 16);
	assert_reserved("oc-d", 16);
	char *ok = sh("oc-d", "findmnt -no FSTYPE /; findmnt -no OPTIONS / | tr ',' '\\n' | "
	                      "grep -xE 'discard|errors=.*'");
	assert_string_equal(ok, "ext4\nerrors=remount-ro\n");
	free(ok);
	destroy("oc-a");
	destroy("oc-b");
	destroy("oc-d");
	/* destroy gives the reservations back (the 48 MiB template image stays, ~1 MiB) */
	assert_true(free_mib() + 2 >= before);
}

/* Another writer fills the state file system, then box A fills its own disk: A gets ENOSPC at
 * its cap, and box B's files written before and after (through the box and the files API) are
 * on its disk and read back exactly. */
static void test_disk_reserve__a_full_file_system_spares_every_box(void **state_)
{
	NEED_DISKS();
	create("full-a", DISK_MB);
	create("full-b", DISK_MB);
	char *out = sh("full-b", "head -c 8M /dev/urandom > /workspace/before && "
	                         "sync /workspace/before && sha256sum < /workspace/before");
	char sum_before[80];
	snprintf(sum_before, sizeof(sum_before), "%s", out);
	free(out);

	fill_state_fs();
	/* A: everything up to its cap, then ENOSPC; what it wrote is on its disk */
	out = sh("full-a", "head -c 100M /dev/zero > /workspace/fill 2>/tmp/err; echo rc=$?; "
	                   "grep -c 'No space left on device' /tmp/err; "
	                   "sync /workspace/fill && echo synced; "
	                   "s=$(stat -c %s /workspace/fill); "
	                   "[ $s -gt $((40 << 20)) ] && [ $s -lt $((48 << 20)) ] && echo sized");
	assert_string_equal(out, "rc=1\n1\nsynced\nsized\n");
	free(out);
	/* B: new files reach its disk (fsync succeeds) and every file reads back exactly,
	 * through the loop device (O_DIRECT) */
	out = sh("full-b", "head -c 12M /dev/urandom > /tmp/src && cp /tmp/src /workspace/after "
	                   "&& sync /workspace/after && echo synced && "
	                   "dd if=/workspace/after iflag=direct bs=1M status=none | cmp - /tmp/src "
	                   "&& echo same && "
	                   "dd if=/workspace/before iflag=direct bs=1M status=none | sha256sum");
	char want[160];
	snprintf(want, sizeof(want), "synced\nsame\n%s", sum_before);
	assert_string_equal(out, want);
	free(out);
	/* the files API: an upload to B answers success and is on B's disk */
	static char chunk[1 << 20];
	memset(chunk, 'u', sizeof(chunk));
	fk_writer *w;
	fk_err err = {0};
	assert_int_equal(fk_file_write_open(rt, "full-b", "/workspace/api", "root", &w, NULL, &err),
	                 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(fk_writer_write(w, chunk, sizeof(chunk), &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
	out = sh("full-b", "sync /workspace/api && echo synced && "
	                   "head -c 4M /dev/zero | tr '\\0' u | "
	                   "cmp - <(dd if=/workspace/api iflag=direct bs=1M status=none) && "
	                   "echo same");
	assert_string_equal(out, "synced\nsame\n");
	free(out);
	/* and both boxes still work */
	out = sh("full-a", "rm /workspace/fill && echo x > /workspace/x && cat /workspace/x");
	assert_string_equal(out, "x\n");
	free(out);
	unfill_state_fs();
	destroy("full-a");
	destroy("full-b");
}

/* A snapshot whose copy cannot fit the state file system is refused up front (FK_ENOSPC naming
 * what it needs and what is free) and leaves no layer; the box runs on with its files. */
static void test_disk_reserve__a_snapshot_that_cannot_fit_is_refused(void **state_)
{
	NEED_DISKS();
	create("snap", 32);
	char *out = sh("snap", "head -c 8M /dev/urandom > /workspace/f && sync /workspace/f && "
	                       "sha256sum < /workspace/f");
	char sum[80];
	snprintf(sum, sizeof(sum), "%s", out);
	free(out);
	fk_box_usage u;
	fk_err err = {0};
	assert_int_equal(fk_box_usage_read(rt, "snap", &u, &err), 0);
	unsigned long long need = (u.disk_used + MIB - 1) / MIB;
	assert_true(need >= 8);

	char layer[256];
	snprintf(layer, sizeof(layer), "%s/.layer-snap", state);
	fill_state_fs();
	assert_int_equal(fk_box_snapshot(rt, "snap", layer, &err), FK_ENOSPC);
	char want[256];
	snprintf(want, sizeof(want), SNAPSHOT_NOSPC " has 0 MiB free", need);
	assert_string_equal(err.message, want);
	assert_int_equal(access(layer, F_OK), -1);
	out = sh("snap", "sha256sum < /workspace/f");
	assert_string_equal(out, sum);
	free(out);

	/* with room again the same snapshot is taken */
	unfill_state_fs();
	assert_int_equal(fk_box_snapshot(rt, "snap", layer, &err), 0);
	char f[300];
	snprintf(f, sizeof(f), "%s/root/workspace/f", layer);
	struct stat st;
	assert_int_equal(stat(f, &st), 0);
	assert_int_equal(st.st_size, 8 * 1024 * 1024);
	assert_int_equal(run("rm -rf '%s'", layer), 0);
	destroy("snap");
}

/* Through the server (fake-e2b --sandbox-disk-mb 48 on the small file system): the create that
 * would overcommit answers 507 in E2B's error shape with the runtime's words, and so does a
 * snapshot that cannot fit. */
static void test_disk_reserve__the_api_answers_507(void **state_)
{
	NEED_DISKS();
	if (!fake_bin) {
		fprintf(stderr, "SKIP: give the fake-e2b binary as the first argument\n");
		skip();
	}
	char sdir[200], mb[16];
	snprintf(sdir, sizeof(sdir), "%s/srv", mnt);
	snprintf(mb, sizeof(mb), "%d", DISK_MB);
	const char *flags[] = {"--api-key",   KEY,  "--sandbox-disk-mb", mb,
	                       "--state-dir", sdir, "--quiet",           NULL};
	assert_int_equal(fks_up(&srv, fake_bin, flags), 0);
	srv_up = true;
	fks_box a, b;
	fks_box_create(&srv, KEY, NULL, &a);
	fks_box_create(&srv, KEY, NULL, &b);
	const char *hk[] = {"X-API-Key: " KEY, "Content-Type: application/json", NULL};
	const char *body = "{\"templateID\":\"base\"}";
	unsigned long long free1 = free_mib();
	fkr *r = fks_req(&srv, "POST", "/v2/sandboxes", hk, body, strlen(body));
	unsigned long long free2 = free_mib();
	assert_int_equal(r->status, 507);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 507);
	char want1[300], want2[300];
	snprintf(want1, sizeof(want1), "cannot start sandbox: " CREATE_NOSPC, DISK_MB, free1);
	snprintf(want2, sizeof(want2), "cannot start sandbox: " CREATE_NOSPC, DISK_MB, free2);
	const char *msg = json_string_value(json_object_get(r->json, "message"));
	assert_non_null(msg);
	if (strcmp(msg, want1) != 0)
		assert_string_equal(msg, want2);
	fkr_free(r);
	/* only the two are listed */
	r = fks_req(&srv, "GET", "/sandboxes", hk, NULL, 0);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 2);
	fkr_free(r);

	/* a snapshot of b that cannot fit: 507, nothing made; what b's disk holds is what the
	 * copy needs (df inside, written to its RAM /dev/shm so its disk stays as it is) */
	fks_box_sh(&srv, &b,
	           "head -c 4M /dev/urandom > /home/user/f && sync && "
	           "df -B1 --output=used / | tail -1 > /dev/shm/used");
	const char *hb[] = {b.hid, b.htok, NULL};
	r = fks_req(&srv, "GET", "/files?path=/dev/shm/used&username=root", hb, NULL, 0);
	assert_int_equal(r->status, 200);
	unsigned long long need = (strtoull(r->body, NULL, 10) + MIB - 1) / MIB;
	fkr_free(r);
	fill_state_fs();
	char path[128];
	snprintf(path, sizeof(path), "/sandboxes/%s/snapshots", b.id);
	r = fks_req(&srv, "POST", path, hk, "{}", 2);
	assert_int_equal(r->status, 507);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 507);
	char want[300];
	snprintf(want, sizeof(want),
	         "Error creating snapshot template: " SNAPSHOT_NOSPC " has 0 MiB free", need);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), want);
	fkr_free(r);
	r = fks_req(&srv, "GET", "/snapshots", hk, NULL, 0);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 0);
	fkr_free(r);
	/* b works on */
	fks_box_sh(&srv, &b, "echo x > /home/user/x && sync /home/user/x");
	unfill_state_fs();
	fks_box_delete(&srv, KEY, &a);
	fks_box_delete(&srv, KEY, &b);
	srv_up = false;
	assert_int_equal(fks_stop(&srv), 0);
}

/* Whatever a failed test left: the filler, its boxes, a layer. */
static int cleanup(void **state_)
{
	unlink(filler);
	static const char *const ids[] = {"oc-a",   "oc-b",   "oc-c", "oc-d",
	                                  "full-a", "full-b", "snap"};
	for (size_t i = 0; rt && i < sizeof(ids) / sizeof(ids[0]); i++)
		fk_box_destroy(rt, ids[i], NULL);
	run("rm -rf '%s/.layer-snap'", state);
	if (srv_up)
		fks_stop(&srv);
	srv_up = false;
	return 0;
}

static int group_setup(void **state_)
{
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(top))
		return -1;
	snprintf(image, sizeof(image), "%s/fs.img", top);
	snprintf(mnt, sizeof(mnt), "%s/fs", top);
	snprintf(state, sizeof(state), "%s/state", mnt);
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	if (geteuid() != 0) {
		skip_reason = "needs root (a loop-mounted file system of its own)";
		return 0;
	}
	if (access("/dev/loop-control", F_OK) < 0) {
		skip_reason = "needs loop devices (/dev/loop-control)";
		return 0;
	}
	/* no journal, no reserved blocks, inodes for a copy of /etc and the boxes' mount points */
	if (mkdir(mnt, 0700) < 0 ||
	    run("truncate -s %dM '%s' && mke2fs -q -t ext4 -O ^has_journal -m 0 -N 16384 '%s' "
	        ">/dev/null 2>&1",
	        FS_MB, image, image) != 0) {
		skip_reason = "needs mke2fs (e2fsprogs)";
		return 0;
	}
	if (run("mount -o loop '%s' '%s'", image, mnt) != 0) {
		skip_reason = "could not loop-mount a file system image";
		return 0;
	}
	mounted = true;
	fk_rt_options o = {.state_dir = state, .default_disk_mb = 16};
	fk_err err = {0};
	if (fk_rt_new(&rt, &o, &err) != 0) {
		fprintf(stderr, "fk_rt_new: %s\n", err.message);
		return -1;
	}
	/* the runtime's probe made the default size's template when boxes get disks */
	char tpl[256];
	snprintf(tpl, sizeof(tpl), "%s/.disk-template-16", state);
	if (fk_rt_isolated(rt) && access(tpl, F_OK) < 0)
		skip_reason = "no per-sandbox disks on this machine (fake-e2b said why at start)";
	return 0;
}

static int group_teardown(void **state_)
{
	fk_rt_free(rt);
	/* The boxes' disks are loop devices of files in mnt that detach when the last mount of
	 * each goes, with its box's mount namespace, which the kernel may free a moment after the
	 * box's last process was reaped: until then mnt is busy. Wait for that (at most 30 s). */
	int rc = -1;
	for (int i = 0; mounted && i < 600 && (rc = umount2(mnt, 0)) < 0 && errno == EBUSY; i++)
		usleep(50 * 1000);
	if (mounted && rc < 0)
		fprintf(stderr, "could not unmount %s: %s\n", mnt, strerror(errno));
	unlink(image);
	rmdir(mnt);
	if (rmdir(top) < 0)
		fprintf(stderr, "%s left: %s\n", top, strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	fake_bin = argc > 1 ? argv[1] : NULL;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_disk_reserve__a_create_that_would_overcommit_is_refused,
	                              cleanup),
	    cmocka_unit_test_teardown(test_disk_reserve__a_full_file_system_spares_every_box,
	                              cleanup),
	    cmocka_unit_test_teardown(test_disk_reserve__a_snapshot_that_cannot_fit_is_refused,
	                              cleanup),
	    cmocka_unit_test_teardown(test_disk_reserve__the_api_answers_507, cleanup),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
