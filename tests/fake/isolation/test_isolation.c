/*
 * tests/fake/isolation/test_isolation.c — fake-e2b's isolation suite (fake-e2b/README.md
 * "Isolation"): the attacks an agent could try as root (envd's Basic user `root`) or as `sandbox`
 * inside a box, each of which must fail to reach the host or another box; and the limits that keep
 * one box from starving the machine. Runs against the runtime library directly, as root; skips
 * without isolation.
 */
#define _GNU_SOURCE
#include "box_run.h"
#include "clock.h"
#include "dirwatch.h"
#include "runtime.h"
#include "test_filter.h"

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

static fk_rt *rt;

/* box_bash() that must exit 0; returns the output (caller frees). */
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

static void box_create_opts(const char *id, const fk_box_options *o)
{
	fk_err err = {0};
	int rc = fk_box_create(rt, id, o, &err);
	if (rc != 0)
		fprintf(stderr, "create %s: %s\n", id, err.message);
	assert_int_equal(rc, 0);
}

static void box_create(const char *id)
{
	box_create_opts(id, NULL);
}

static void box_write(const char *box, const char *path, const char *data)
{
	fk_writer *w;
	fk_err err = {0};
	assert_int_equal(fk_file_write_open(rt, box, path, "root", &w, NULL, &err), 0);
	assert_int_equal(fk_writer_write(w, data, strlen(data), &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
}

/* ------------------------------------------------------------ host paths */

/* An attack: remount /usr read-write and write into the host's /usr. */
static void test_isolation__root_cannot_remount_or_write_host_paths(void **state)
{
	NEED_ISOLATION(rt);
	box_create("hp");
	char marker[128];
	snprintf(marker, sizeof(marker), "/usr/local/share/fk-iso-%d", (int)getpid());
	box_result r;
	assert_int_equal(
	    box_bash(rt, "hp", "root", true, &r,
	             "mount -o remount,rw,bind /usr 2>/dev/null && echo REMOUNTED; "
	             "mount -o remount,rw /usr 2>/dev/null && echo REMOUNTED2; "
	             "umount -l /usr 2>/dev/null && echo UNMOUNTED; "
	             "(echo x > %s) 2>/dev/null && echo WROTE; "
	             "for d in $(find /usr /proc/sys -maxdepth 2 -type d 2>/dev/null) /bin "
	             "/sbin /lib /lib64; do "
	             "  (echo x > $d/.fk-iso) 2>/dev/null && echo \"WROTE $d\"; "
	             "  mkdir $d/.fk-iso-dir 2>/dev/null && echo \"MKDIR $d\"; "
	             "done; (echo x > /proc/sysrq-trigger) 2>/dev/null && echo SYSRQ; "
	             "echo done",
	             marker),
	    0);
	assert_string_equal(r.out, "done\n");
	free(r.out);
	assert_int_equal(access(marker, F_OK), -1);
	assert_int_equal(access("/usr/.fk-iso", F_OK), -1);
	assert_int_equal(fk_box_destroy(rt, "hp", NULL), 0);
}

/* ------------------------------------------------------------ kernel interfaces */

static void test_isolation__no_kernel_log_and_masked_proc(void **state)
{
	NEED_ISOLATION(rt);
	box_create("klog");
	box_result r;
	assert_int_equal(
	    box_bash(rt, "klog", "root", true, &r,
	             "dmesg >/dev/null 2>&1 && echo DMESG; "
	             "echo kmsg=$(timeout 5 head -c 1 /proc/kmsg 2>/dev/null | wc -c); "
	             "echo kcore=$(head -c 1 /proc/kcore 2>/dev/null | wc -c); "
	             "echo keys=$(wc -c < /proc/keys); "
	             "ls /sys | wc -l; ls /dev | sort | tr '\\n' ' '"),
	    0);
	assert_string_equal(r.out,
	                    "kmsg=0\nkcore=0\nkeys=0\n0\n"
	                    "fd full null ptmx pts random shm stderr stdin stdout tty urandom "
	                    "zero ");
	free(r.out);
	assert_int_equal(fk_box_destroy(rt, "klog", NULL), 0);
}

/* Once, root in box A mounted the freezer hierarchy and froze box B. */
static void test_isolation__no_view_of_host_cgroups(void **state)
{
	NEED_ISOLATION(rt);
	box_create("cga");
	box_create("cgb");
	box_result r;
	assert_int_equal(
	    box_bash(rt, "cga", "root", true, &r,
	             "mkdir -p /mnt/cg; "
	             "mount -t cgroup -o freezer none /mnt/cg 2>/dev/null && echo MOUNTED; "
	             "mount -t cgroup2 none /mnt/cg 2>/dev/null && echo MOUNTED2; "
	             "mount -t sysfs none /mnt/cg 2>/dev/null && echo SYSFS; "
	             "grep -v ':/$' /proc/self/cgroup; "
	             "(echo max > /sys/fs/cgroup/memory.max) 2>/dev/null && echo RAISED; "
	             "find / -xdev \\( -name freezer.state -o -name memory.max -o -name pids.max "
	             "-o -name cgroup.procs -o -name cgroup.freeze \\) 2>/dev/null; echo done"),
	    0);
	assert_string_equal(r.out, "done\n");
	free(r.out);
	char *alive = sh("cgb", "sandbox", "echo alive");
	assert_string_equal(alive, "alive\n");
	free(alive);
	assert_int_equal(fk_box_destroy(rt, "cga", NULL), 0);
	assert_int_equal(fk_box_destroy(rt, "cgb", NULL), 0);
}

/* ------------------------------------------------------------ system calls */

/* Compiled inside the box: each line is an attempt and the errno name it failed with. */
static const char probe_src[] =
    "#define _GNU_SOURCE\n"
    "#include <errno.h>\n#include <fcntl.h>\n#include <sched.h>\n#include <stdio.h>\n"
    "#include <stdlib.h>\n#include <string.h>\n#include <sys/mount.h>\n"
    "#include <signal.h>\n#include <sys/ptrace.h>\n#include <sys/socket.h>\n"
    "#include <sys/stat.h>\n#include <sys/syscall.h>\n#include <sys/sysmacros.h>\n"
    "#include <netinet/in.h>\n#include <linux/if_ether.h>\n#include <linux/vm_sockets.h>\n"
    "#include <linux/netlink.h>\n#include <unistd.h>\n"
    "static void say(const char *what, long rc) {\n"
    "  printf(\"%s=%s\\n\", what, rc >= 0 ? \"OK\" : strerrorname_np(errno)); }\n"
    "int main(int argc, char **argv) {\n"
    "  long other = argc > 1 ? atol(argv[1]) : 0;\n"
    "  say(\"mount\", mount(\"none\", \"/mnt\", \"tmpfs\", 0, NULL));\n"
    "  say(\"remount\", mount(NULL, \"/usr\", NULL, MS_REMOUNT | MS_BIND, NULL));\n"
    "  say(\"umount\", umount2(\"/usr\", MNT_DETACH));\n"
    "  say(\"unshare_mnt\", unshare(CLONE_NEWNS));\n"
    "  say(\"unshare_user\", unshare(CLONE_NEWUSER));\n"
    "  say(\"clone_newuser\", syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));\n"
    "  int ns = open(\"/proc/self/ns/mnt\", O_RDONLY);\n"
    "  say(\"setns\", ns < 0 ? ns : setns(ns, 0));\n"
    "  say(\"chroot_escape_root\", open(\"/proc/1/root/../../../proc/1/environ\", O_RDONLY));\n"
    "  say(\"init_environ\", open(\"/proc/1/environ\", O_RDONLY));\n"
    "  say(\"init_mem\", open(\"/proc/1/mem\", O_RDONLY));\n"
    "  say(\"ptrace_init\", ptrace(PTRACE_ATTACH, 1, 0, 0));\n"
    "  say(\"ptrace_other_box\", ptrace(PTRACE_ATTACH, other, 0, 0));\n"
    "  say(\"kill_other_box\", kill(other, 0));\n"
    "  say(\"raw_packet\", socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)));\n"
    "  say(\"raw_inet\", socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));\n"
    /* address families: only unix, inet, inet6 and netlink */
    "  say(\"vsock\", socket(AF_VSOCK, SOCK_STREAM, 0));\n"
    "  say(\"vsock_dgram\", socket(AF_VSOCK, SOCK_DGRAM, 0));\n"
    "  say(\"vsock_high_bits\", syscall(SYS_socket, AF_VSOCK | (1L << 32), SOCK_STREAM, 0));\n"
    "  say(\"inet_high_bits\", syscall(SYS_socket, AF_INET | (1L << 32), SOCK_STREAM, 0));\n"
    "  say(\"alg\", socket(AF_ALG, SOCK_SEQPACKET, 0));\n"
    "  say(\"tipc\", socket(AF_TIPC, SOCK_RDM, 0));\n"
    "  say(\"family_64\", socket(64, SOCK_STREAM, 0));\n"
    "  say(\"unix\", socket(AF_UNIX, SOCK_STREAM, 0));\n"
    "  say(\"inet\", socket(AF_INET, SOCK_DGRAM, 0));\n"
    "  say(\"inet6\", socket(AF_INET6, SOCK_STREAM, 0));\n"
    "  say(\"netlink\", socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));\n"
    "  say(\"syslog\", syscall(SYS_syslog, 10, 0, 0));\n"
    "  say(\"bpf\", syscall(SYS_bpf, 0, 0, 0));\n"
    "  say(\"keyctl\", syscall(SYS_keyctl, 0, 0, 0, 0, 0));\n"
    "  say(\"open_by_handle_at\", syscall(SYS_open_by_handle_at, AT_FDCWD, 0, 0));\n"
    "  say(\"mknod\", mknod(\"/tmp/sda\", S_IFBLK | 0600, makedev(8, 0)));\n"
    "  say(\"sethostname\", sethostname(\"x\", 1));\n"
    "  say(\"io_uring\", syscall(SYS_io_uring_setup, 1, 0));\n"
    "  return 0; }\n";

static void test_isolation__namespace_mount_ptrace_raw_socket_calls_refused(void **state)
{
	NEED_ISOLATION(rt);
	box_create("sys");
	box_create("sysb");
	box_write("sys", "/root/probe.c", probe_src);
	char *built = sh("sys", "root", "cd /root && gcc -o probe probe.c 2>&1 && echo built");
	assert_string_equal(built, "built\n");
	free(built);
	box_result r;
	pid_t other = fk_box_init_pid(rt, "sysb");
	assert_true(other > 1);
	assert_int_equal(
	    box_bash(rt, "sys", "root", true, &r,
	             "cd /root && ./probe %d; unshare -m true 2>/dev/null && echo UNSHARE; "
	             "nsenter -t 1 -m true 2>/dev/null && echo NSENTER; "
	             "ls /proc/1/root/ >/dev/null 2>&1 || echo no-init-root; "
	             "grep -E '^Cap(Eff|Bnd)' /proc/self/status",
	             (int)other),
	    0);
	assert_string_equal(r.out, "mount=EPERM\nremount=EPERM\numount=EPERM\n"
	                           "unshare_mnt=EPERM\nunshare_user=EPERM\nclone_newuser=EPERM\n"
	                           "setns=EPERM\n"
	                           "chroot_escape_root=EACCES\ninit_environ=EACCES\n"
	                           "init_mem=EACCES\nptrace_init=EPERM\n"
	                           "ptrace_other_box=ESRCH\nkill_other_box=ESRCH\n"
	                           "raw_packet=EAFNOSUPPORT\nraw_inet=EPERM\n"
	                           "vsock=EAFNOSUPPORT\nvsock_dgram=EAFNOSUPPORT\n"
	                           "vsock_high_bits=EAFNOSUPPORT\ninet_high_bits=EAFNOSUPPORT\n"
	                           "alg=EAFNOSUPPORT\ntipc=EAFNOSUPPORT\nfamily_64=EAFNOSUPPORT\n"
	                           "unix=OK\ninet=OK\ninet6=OK\nnetlink=OK\n"
	                           "syslog=EPERM\nbpf=EPERM\n"
	                           "keyctl=EPERM\nopen_by_handle_at=EPERM\nmknod=EPERM\n"
	                           "sethostname=EPERM\nio_uring=EPERM\n"
	                           "no-init-root\n"
	                           "CapEff:\t00000000a00405fb\nCapBnd:\t00000000a00405fb\n");
	free(r.out);
	/* the unprivileged user has no capabilities at all */
	char *caps = sh("sys", "sandbox", "grep -E '^CapEff' /proc/self/status");
	assert_string_equal(caps, "CapEff:\t0000000000000000\n");
	free(caps);
	assert_int_equal(fk_box_destroy(rt, "sys", NULL), 0);
	assert_int_equal(fk_box_destroy(rt, "sysb", NULL), 0);
}

/* The mount calls newer than libseccomp 2.5.4's names (statmount 457, listmount 458: Linux 6.8;
 * open_tree_attr 467: 6.15) are denied by number. Unfiltered, open_tree_attr with no flags
 * returned an fd and the two others EFAULT for their NULL request. */
static const char newest_mount_probe_src[] =
    "#define _GNU_SOURCE\n"
    "#include <errno.h>\n#include <fcntl.h>\n#include <stdio.h>\n#include <string.h>\n"
    "#include <sys/syscall.h>\n#include <unistd.h>\n"
    "static void say(const char *what, long rc) {\n"
    "  printf(\"%s=%s\\n\", what, rc >= 0 ? \"OK\" : strerrorname_np(errno)); }\n"
    "int main(void) {\n"
    "  say(\"open_tree_attr\", syscall(467, AT_FDCWD, \"/\", 0, NULL, 0));\n"
    "  say(\"open_tree_attr_clone\", syscall(467, AT_FDCWD, \"/\", 1, NULL, 0));\n"
    "  say(\"listmount\", syscall(458, NULL, NULL, 0, 0));\n"
    "  say(\"statmount\", syscall(457, NULL, NULL, 0, 0));\n"
    "  return 0; }\n";

static void test_isolation__newest_mount_calls_are_refused(void **state)
{
	NEED_ISOLATION(rt);
#if !defined(__x86_64__)
	skip(); /* the numbers are x86_64's */
#endif
	box_create("nmc");
	box_write("nmc", "/root/nmc.c", newest_mount_probe_src);
	char *out = sh("nmc", "root", "cd /root && gcc -o nmc nmc.c 2>&1 && ./nmc");
	assert_string_equal(out, "open_tree_attr=EPERM\nopen_tree_attr_clone=EPERM\n"
	                         "listmount=EPERM\nstatmount=EPERM\n");
	free(out);
	assert_int_equal(fk_box_destroy(rt, "nmc", NULL), 0);
}

/* ------------------------------------------------------------ limits */

/* Processes in the box, or -1 when the count itself could not fork (the bomb won a race for
 * a slot while it was still growing). */
static int count_procs(const char *box)
{
	box_result r;
	/* builtins only: the count forks nothing, so it adds exactly one process (its shell); a
	 * pipeline (`ls /proc | grep -c`) counted itself as 3 or 4 depending on how far its own
	 * forks had got when ls read /proc */
	assert_int_equal(box_bash(rt, box, "root", true, &r,
	                          "n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo $n"),
	                 0);
	int v = WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 ? atoi(r.out) : -1;
	free(r.out);
	return v;
}

static void test_isolation__fork_bomb_is_held_and_box_recovers(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.pids_max = 64, .cpu_count = 1};
	box_create_opts("bomb", &o);
	const char *args[] = {"-c", "b(){ b | b & }; b"};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = "sandbox"};
	fk_proc *p;
	fk_err err = {0};
	assert_int_equal(fk_proc_start(rt, "bomb", &spec, &p, NULL, &err), 0);
	/* the bomb fills its 64 slots; starts through envd still work (the reserve) */
	int64_t deadline = fk_mono_ms() + 60000;
	int n;
	while ((n = count_procs("bomb")) < 60) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(100);
	}
	for (int i = 0; i < 5; i++) {
		n = count_procs("bomb");
		assert_true(n > 0);       /* near the cap, starts run in the reserve */
		assert_true(n <= 64 + 8); /* + the counting shell in the reserve */
	}
	/* kill everything (the library's kill_all runs through a start like this one) */
	deadline = fk_mono_ms() + 60000;
	for (;;) {
		n = count_procs("bomb");
		if (n > 0 && n <= 4)
			break;
		assert_true(fk_mono_ms() < deadline);
		box_result k;
		assert_int_equal(
		    box_bash(rt, "bomb", "root", true, &k, "kill -9 -1 2>/dev/null; true"), 0);
		free(k.out);
	}
	int st;
	while (!fk_proc_ended(p, &st)) {
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(10);
	}
	fk_proc_unref(p);
	char *ok = sh("bomb", "sandbox", "for i in $(seq 20); do sleep 0 & done; wait; echo ok");
	assert_string_equal(ok, "ok\n");
	free(ok);
	assert_int_equal(fk_box_destroy(rt, "bomb", NULL), 0);
}

static void test_isolation__memory_hog_is_killed_inside(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.memory_mb = 64};
	box_create_opts("hog", &o);
	box_result r;
	assert_int_equal(box_bash(rt, "hog", "sandbox", true, &r,
	                          "exec perl -e '$x = \"a\" x (400 << 20); print length $x'"),
	                 0);
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), SIGKILL);
	assert_string_equal(r.out, "");
	free(r.out);
	char *ok =
	    sh("hog", "sandbox", "perl -e '$x = \"a\" x (8 << 20); print length($x), qq(\\n)'");
	assert_string_equal(ok, "8388608\n");
	free(ok);
	assert_int_equal(fk_box_destroy(rt, "hog", NULL), 0);
}

/* What a host file holds (at most cap - 1 bytes), "<missing>" when it cannot be opened. */
static const char *host_file(const char *dir, const char *file, char *buf, size_t cap)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(buf, cap, "%s", "<missing>");
		return buf;
	}
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

/* The host's path of `pid`'s cgroup in hierarchy `ctl` ("" for the unified one: "0::"), from
 * /proc/<pid>/cgroup (the test runs in the host's cgroup namespace). */
static void cgroup_of(pid_t pid, const char *ctl, char *out, size_t cap)
{
	char p[64], line[1024];
	snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(p, "re");
	assert_non_null(f);
	out[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = 0;
		if (!strcmp(c1 + 1, ctl)) {
			snprintf(out, cap, "%s", c2 + 1);
			break;
		}
	}
	fclose(f);
	assert_true(out[0] == '/');
}

/* The limits reach the kernel as configured, on whichever cgroup layout the machine has: read
 * back from the box's cgroup files on the host (cgroup v2: its directory and its procs leaf,
 * where PID 1 lives; v1: each controller's directory). */
static void test_isolation__limits_are_the_boxs_cgroup_files(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.memory_mb = 512, .cpu_count = 2, .pids_max = 1024};
	box_create_opts("lim", &o);
	pid_t init = fk_box_init_pid(rt, "lim");
	assert_true(init > 0);
	char rel[1024], dir[1200], buf[256];
	struct statfs sf;
	assert_int_equal(statfs("/sys/fs/cgroup", &sf), 0);
	if (sf.f_type == CGROUP2_SUPER_MAGIC) {
		cgroup_of(init, "", rel, sizeof(rel));
		/* PID 1 is in the leaf <box>/procs, never in the box's own cgroup */
		size_t n = strlen(rel);
		assert_true(n > 10 && !strcmp(rel + n - 10, "/lim/procs"));
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", rel);
		assert_string_equal(host_file(dir, "pids.max", buf, sizeof(buf)), "1024\n");
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup%.*s", (int)(n - 6), rel);
		assert_string_equal(host_file(dir, "memory.max", buf, sizeof(buf)), "536870912\n");
		if (strcmp(host_file(dir, "memory.swap.max", buf, sizeof(buf)), "<missing>"))
			assert_string_equal(buf, "0\n");
		assert_string_equal(host_file(dir, "cpu.max", buf, sizeof(buf)), "200000 100000\n");
		assert_string_equal(host_file(dir, "pids.max", buf, sizeof(buf)), "1088\n");
		assert_string_equal(host_file(dir, "cgroup.procs", buf, sizeof(buf)), "");
		assert_string_equal(host_file(dir, "cgroup.subtree_control", buf, sizeof(buf)),
		                    "pids\n");
	} else {
		cgroup_of(init, "memory", rel, sizeof(rel));
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/memory%s", rel);
		assert_string_equal(host_file(dir, "memory.limit_in_bytes", buf, sizeof(buf)),
		                    "536870912\n");
		cgroup_of(init, "cpu", rel, sizeof(rel));
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/cpu%s", rel);
		assert_string_equal(host_file(dir, "cpu.cfs_quota_us", buf, sizeof(buf)),
		                    "200000\n");
		assert_string_equal(host_file(dir, "cpu.cfs_period_us", buf, sizeof(buf)),
		                    "100000\n");
		cgroup_of(init, "pids", rel, sizeof(rel));
		size_t n = strlen(rel);
		assert_true(n > 10 && !strcmp(rel + n - 10, "/lim/procs"));
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/pids%s", rel);
		assert_string_equal(host_file(dir, "pids.max", buf, sizeof(buf)), "1024\n");
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/pids%.*s", (int)(n - 6), rel);
		assert_string_equal(host_file(dir, "pids.max", buf, sizeof(buf)), "1088\n");
	}
	assert_int_equal(fk_box_destroy(rt, "lim", NULL), 0);
}

/* E2B's default sandbox (512 MiB): a process that fills 600 MiB is OOM-killed inside, the box's
 * PID 1, the box and the runtime live on. */
static void test_isolation__600_mib_in_a_512_mib_box_is_oom_killed(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.memory_mb = 512};
	box_create_opts("oom600", &o);
	pid_t init = fk_box_init_pid(rt, "oom600");
	box_result r;
	assert_int_equal(box_bash(rt, "oom600", "sandbox", true, &r,
	                          "exec perl -e '$x = \"a\" x (600 << 20); print length $x'"),
	                 0);
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), SIGKILL);
	assert_string_equal(r.out, "");
	free(r.out);
	assert_false(fk_box_init_gone(rt, "oom600"));
	assert_int_equal(fk_box_init_pid(rt, "oom600"), init);
	char *ok = sh("oom600", "sandbox", "echo alive");
	assert_string_equal(ok, "alive\n");
	free(ok);
	assert_int_equal(fk_box_destroy(rt, "oom600", NULL), 0);
}

/* The metrics read the box's cgroup: 100 MiB a process holds show in its memory used, the
 * configured limit as its total, and its CPU time counts. */
static void test_isolation__usage_counts_the_boxs_memory(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.memory_mb = 512};
	box_create_opts("use", &o);
	const char *args[] = {"-c", "exec perl -e '$x = \"a\" x (100 << 20); "
	                            "open(F, \">/tmp/held\"); close F; sleep 600'"};
	fk_proc_spec spec = {.cmd = "/bin/bash", .args = args, .n_args = 2, .user = "sandbox"};
	fk_proc *p;
	fk_err err = {0};
	assert_int_equal(fk_proc_start(rt, "use", &spec, &p, NULL, &err), 0);
	/* the file appears once the 100 MiB are written (perl briefly holds two copies) */
	int64_t deadline = fk_mono_ms() + 120000;
	for (;;) {
		box_result t;
		assert_int_equal(box_bash(rt, "use", "root", true, &t, "test -e /tmp/held"), 0);
		int st = t.status;
		free(t.out);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			break;
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(100);
	}
	fk_box_usage u;
	assert_int_equal(fk_box_usage_read(rt, "use", &u, &err), 0);
	fprintf(stderr, "usage: mem_used %llu, mem_cache %llu, mem_total %llu, cpu_ns %llu\n",
	        (unsigned long long)u.mem_used, (unsigned long long)u.mem_cache,
	        (unsigned long long)u.mem_total, (unsigned long long)u.cpu_ns);
	assert_true(u.mem_used >= 100ull << 20);
	assert_true(u.mem_used < 512ull << 20);
	assert_true(u.mem_total == 512ull << 20);
	assert_true(u.cpu_ns > 0);
	fk_proc_unref(p);
	assert_int_equal(fk_box_destroy(rt, "use", NULL), 0);
}

/* Once, each exec kept a pidfd and an eventfd for 30 s after it ended. */
static void test_isolation__1000_execs_under_1024_fds(void **state)
{
	NEED_ISOLATION(rt);
	box_create("fds");
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	lim.rlim_cur = 1024;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
	int failed = 0;
	for (int i = 0; i < 1000; i++) {
		fk_proc_spec spec = {.cmd = "/bin/true"};
		fk_proc *p;
		fk_err err = {0};
		if (fk_proc_start(rt, "fds", &spec, &p, NULL, &err) != 0) {
			if (failed++ == 0)
				fprintf(stderr, "exec %d: %s\n", i, err.message);
			continue;
		}
		int64_t deadline = fk_mono_ms() + 30000;
		while (!fk_proc_ended(p, NULL)) {
			assert_true(fk_mono_ms() < deadline);
			fk_sleep_ms(1);
		}
		fk_proc_unref(p);
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(failed, 0);
	/* the exits are still there for Connect */
	assert_int_equal(fk_box_destroy(rt, "fds", NULL), 0);
}

/* Once, ListDir with depth 100000 on a 6,000-level tree overflowed a thread's stack. */
static void test_isolation__listdir_deep_tree_is_answered(void **state)
{
	NEED_ISOLATION(rt);
	box_create("deep");
	char *made = sh("deep", "sandbox",
	                "perl -e 'mkdir \"deep\" or die; chdir \"deep\" or die; for (1..6000) "
	                "{ mkdir \"d\" or die; chdir \"d\" or die } print qq(made\\n)'");
	assert_string_equal(made, "made\n");
	free(made);
	fk_entry *e = NULL;
	size_t n = 0;
	fk_err err = {0};
	int rc = fk_file_list(rt, "deep", "/workspace/deep", "sandbox", 1000000, &e, &n, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(n, 256); /* the walk stops at 256 levels */
	assert_string_equal(e[0].path, "/workspace/deep/d");
	fk_entries_free(e, n);
	/* Remove walks all 6,000 levels without recursion */
	assert_int_equal(fk_file_remove(rt, "deep", "/workspace/deep", "sandbox", &err), 0);
	fk_entry st;
	assert_int_equal(fk_file_stat(rt, "deep", "/workspace/deep", "sandbox", &st, &err),
	                 FK_ENOTFOUND);
	assert_int_equal(fk_box_destroy(rt, "deep", NULL), 0);
}

/* Each watch is an inotify instance of the host's root (max_user_instances, 128 here, shared by
 * every root process) and each directory one of its watches: open watches are capped per box
 * (16) and per server (64), and the directories of all watches (50,000); past a cap a watch is
 * refused at start, and what a freed watch held is given back. */
static void test_isolation__watches_are_capped_across_watches(void **state)
{
	NEED_ISOLATION(rt);
	const char *const boxes[] = {"wca", "wcb", "wcc", "wcd", "wce"};
	for (size_t i = 0; i < 5; i++)
		box_create(boxes[i]);
	unsigned nw = 99;
	size_t nd = 99;
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 0);
	assert_int_equal(nd, 0);
	fk_dirwatch *w[4][16] = {{0}}, *x = NULL;
	fk_err err = {0};
	for (size_t b = 0; b < 4; b++) {
		for (size_t i = 0; i < 16; i++)
			assert_int_equal(fk_dirwatch_new(rt, boxes[b], "/tmp", "root", false,
			                                 &w[b][i], NULL, &err),
			                 0);
		if (b == 0) { /* the box's 17th */
			assert_int_equal(
			    fk_dirwatch_new(rt, boxes[0], "/tmp", "root", false, &x, NULL, &err),
			    FK_ENOSPC);
			assert_null(x);
			assert_string_equal(
			    err.message, "error creating watcher: the sandbox has 16 watches open, "
			                 "as many as it may: end one first");
		}
	}
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 64);
	assert_int_equal(nd, 64);
	/* the server's 65th, in a box that has none */
	assert_int_equal(fk_dirwatch_new(rt, boxes[4], "/tmp", "root", false, &x, NULL, &err),
	                 FK_ENOSPC);
	assert_null(x);
	assert_string_equal(err.message, "error creating watcher: the server has 64 watches open, "
	                                 "as many as it keeps: end one first");
	/* a watch freed (its stream ended) gives its place back */
	fk_dirwatch_free(w[0][0]);
	assert_int_equal(fk_dirwatch_new(rt, boxes[4], "/tmp", "root", false, &x, NULL, &err), 0);
	fk_dirwatch_free(x);
	for (size_t b = 0; b < 4; b++)
		for (size_t i = b == 0 ? 1 : 0; i < 16; i++)
			fk_dirwatch_free(w[b][i]);
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 0);
	assert_int_equal(nd, 0);
	/* directories: 5 recursive watches of 10,000 take the server's 50,000 */
	char *made =
	    sh("wca", "root",
	       "mkdir /tmp/t && cd /tmp/t && perl -e 'for (1..9999) { mkdir \"d$_\" or die "
	       "} print qq(made\\n)'");
	assert_string_equal(made, "made\n");
	free(made);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(
		    fk_dirwatch_new(rt, boxes[i], "/tmp", "root", false, &w[0][i], NULL, &err), 0);
	for (size_t i = 0; i < 5; i++)
		fk_dirwatch_free(w[0][i]);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(
		    fk_dirwatch_new(rt, "wca", "/tmp/t", "root", true, &w[0][i], NULL, &err), 0);
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 5);
	assert_int_equal(nd, 50000);
	assert_int_equal(fk_dirwatch_new(rt, "wcb", "/tmp", "root", false, &x, NULL, &err),
	                 FK_ENOSPC);
	assert_null(x);
	assert_string_equal(err.message,
	                    "watching '/tmp' takes more directories than are left of the 50000 the "
	                    "server's watches take at most: end other watches or watch a "
	                    "subdirectory");
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 5);
	assert_int_equal(nd, 50000);
	fk_dirwatch_free(w[0][4]);
	assert_int_equal(fk_dirwatch_new(rt, "wcb", "/tmp", "root", false, &x, NULL, &err), 0);
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 5);
	assert_int_equal(nd, 40001);
	fk_dirwatch_free(x);
	for (size_t i = 0; i < 4; i++)
		fk_dirwatch_free(w[0][i]);
	fk_dirwatch_counts(&nw, &nd);
	assert_int_equal(nw, 0);
	assert_int_equal(nd, 0);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(fk_box_destroy(rt, boxes[i], NULL), 0);
}

/* A box decides how many files a directory holds, and ListDir's reply is built whole in the
 * server (300,000 files took it from 77 to 885 MB): at most 100,000 entries are answered, beyond
 * that the call is refused and the server's memory stays its own. */
static void test_isolation__listdir_of_a_huge_directory_is_refused(void **state)
{
	NEED_ISOLATION(rt);
	box_create("wide");
	char *made = sh("wide", "sandbox",
	                "mkdir w && cd w && perl -e 'for (1..100000) { open(my $f, \">\", \"f$_\") "
	                "or die; close $f } print qq(made\n)'");
	assert_string_equal(made, "made\n");
	free(made);
	fk_entry *e = NULL;
	size_t n = 0;
	fk_err err = {0};
	assert_int_equal(fk_file_list(rt, "wide", "/workspace/w", "sandbox", 1, &e, &n, &err), 0);
	assert_int_equal(n, 100000);
	fk_entries_free(e, n);
	/* one more (at depth 2: the limit counts every level) */
	made = sh("wide", "sandbox", "mkdir -p w2/sub && touch w2/sub/x && mv w w2/ && echo ok");
	assert_string_equal(made, "ok\n");
	free(made);
	e = NULL;
	n = 0;
	assert_int_equal(fk_file_list(rt, "wide", "/workspace/w2", "sandbox", 1, &e, &n, &err), 0);
	assert_int_equal(n, 2);
	fk_entries_free(e, n);
	e = NULL;
	n = 0;
	assert_int_equal(fk_file_list(rt, "wide", "/workspace/w2", "sandbox", 2, &e, &n, &err),
	                 FK_EINVAL);
	assert_null(e);
	assert_int_equal(n, 0);
	assert_string_equal(err.message,
	                    "listing '/workspace/w2' holds more than 100000 entries, more than "
	                    "ListDir answers: list a subdirectory or a smaller depth");
	assert_int_equal(fk_box_destroy(rt, "wide", NULL), 0);
}

/* The entry cap alone let 100,000 entries of 160-byte names cost 334 MB while the reply was
 * built: a listing is also refused past 16 MiB of its entries' strings (name, path, owner,
 * group, link, metadata). Here each entry takes 200 + 213 + 7 + 7 = 427 bytes: 39,290 of them
 * (16,776,830 bytes) are answered, one more is refused. */
static void test_isolation__listdir_of_long_names_is_bounded_by_bytes(void **state)
{
	NEED_ISOLATION(rt);
	box_create("longn");
	char *made = sh("longn", "sandbox",
	                "mkdir l && cd l && perl -e 'for (1..39290) { open(my $f, \">\", "
	                "sprintf(q(%0200d), $_)) or die; close $f } print qq(made\n)'");
	assert_string_equal(made, "made\n");
	free(made);
	fk_entry *e = NULL;
	size_t n = 0;
	fk_err err = {0};
	assert_int_equal(fk_file_list(rt, "longn", "/workspace/l", "sandbox", 1, &e, &n, &err), 0);
	assert_int_equal(n, 39290);
	assert_int_equal(strlen(e[0].name), 200);
	assert_string_equal(e[0].owner, "sandbox");
	assert_string_equal(e[0].group, "sandbox");
	fk_entries_free(e, n);
	made = sh("longn", "sandbox", "touch l/$(printf %0200d 0) && echo ok");
	assert_string_equal(made, "ok\n");
	free(made);
	e = NULL;
	n = 0;
	assert_int_equal(fk_file_list(rt, "longn", "/workspace/l", "sandbox", 1, &e, &n, &err),
	                 FK_EINVAL);
	assert_null(e);
	assert_int_equal(n, 0);
	assert_string_equal(
	    err.message, "listing '/workspace/l' holds more than 16777216 bytes of names, paths, "
	                 "owners, links and metadata, more than ListDir answers: list a "
	                 "subdirectory or a smaller depth");
	assert_int_equal(fk_box_destroy(rt, "longn", NULL), 0);
}

/* A recursive WatchDir kept an open fd for every directory waiting in its walk: 25,000
 * subdirectories the box made took the server to its 20,000-fd limit (every other open in the
 * server failed meanwhile) and 19,979 inotify watches of the host's root (whose budget, 192,530
 * here, every root process on the machine shares). Now the walk holds one fd at a time, and a
 * watch takes at most 10,000 directories. */
static void test_isolation__recursive_watch_of_a_wide_tree(void **state)
{
	NEED_ISOLATION(rt);
	box_create("wd");
	char *made = sh("wd", "sandbox",
	                "mkdir w && cd w && perl -e 'for (1..9000) { mkdir \"d$_\" or die } "
	                "print qq(made\\n)'");
	assert_string_equal(made, "made\n");
	free(made);
	/* 9,000 directories under a 1,024-fd limit: every one is watched */
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 1024;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	fk_dirwatch *w = NULL;
	fk_err err = {0};
	int rc = fk_dirwatch_new(rt, "wd", "/workspace/w", "sandbox", true, &w, NULL, &err);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(rc, 0);
	made =
	    sh("wd", "sandbox",
	       "cd w && perl -e 'for (1..9000) { open(my $f, \">\", \"d$_/x\") or die; close $f } "
	       "print qq(ok\\n)'");
	assert_string_equal(made, "ok\n");
	free(made);
	fk_dirwatch_event ev = {0};
	int64_t deadline = fk_mono_ms() + 60000;
	int created = 0;
	while (created < 9000 && fk_mono_ms() < deadline) {
		rc = fk_dirwatch_next(w, &ev, 1000);
		if (rc == FK_ETIMEOUT)
			continue;
		assert_int_equal(rc, 0);
		size_t n = strlen(ev.name);
		if (ev.op == FK_DIRWATCH_CREATE && n > 2 && !strcmp(ev.name + n - 2, "/x"))
			created++;
		fk_dirwatch_event_clear(&ev);
	}
	assert_int_equal(created, 9000);
	fk_dirwatch_free(w);
	/* past 10,000 directories a recursive watch is refused (a plain one still works) */
	made = sh("wd", "sandbox",
	          "cd w && perl -e 'for (9001..10001) { mkdir \"d$_\" or die } print qq(ok\\n)'");
	assert_string_equal(made, "ok\n");
	free(made);
	w = NULL;
	assert_int_equal(fk_dirwatch_new(rt, "wd", "/workspace/w", "sandbox", true, &w, NULL, &err),
	                 FK_EINVAL);
	assert_null(w);
	assert_string_equal(
	    err.message, "watching '/workspace/w' recursively takes more than 10000 directories, "
	                 "more than WatchDir watches: watch a subdirectory");
	assert_int_equal(
	    fk_dirwatch_new(rt, "wd", "/workspace/w", "sandbox", false, &w, NULL, &err), 0);
	fk_dirwatch_free(w);
	assert_int_equal(fk_box_destroy(rt, "wd", NULL), 0);
}

/* ------------------------------------------------------------ PID 1 */

static bool has_cap_sys_resource(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long eff = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	if (f)
		fclose(f);
	return (eff >> 24) & 1; /* CAP_SYS_RESOURCE */
}

static void write_self_oom(const char *v)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, v, strlen(v)), (ssize_t)strlen(v));
	close(fd);
}

/* A box whose /dev/shm (half its memory, host RAM the OOM killer cannot free) is full and
 * whose processes allocate past the rest: the memory cgroup's OOM killer ends them, never its
 * PID 1 (-1000, set by the server: from inside its user namespace it cannot lower its own
 * score), and the box goes on. Its processes do not inherit PID 1's exemption nor the server's
 * own score: theirs is 0. */
static void test_isolation__oom_spares_pid1(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.memory_mb = 128};
	box_create_opts("oom", &o);
	pid_t init = fk_box_init_pid(rt, "oom");
	assert_true(init > 0);
	int init_fd = (int)syscall(SYS_pidfd_open, init, 0);
	assert_true(init_fd >= 0);
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/oom_score_adj", (int)init);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	int adj = 0;
	assert_int_equal(fscanf(f, "%d", &adj), 1);
	fclose(f);
	/* lowering a score needs CAP_SYS_RESOURCE (a container may withhold it: then the server
	 * warns once, and a box whose PID 1 the OOM killer picks is seen dead and forgotten) */
	if (has_cap_sys_resource())
		assert_int_equal(adj, -1000);
	else
		fprintf(stderr, "NOTE: no CAP_SYS_RESOURCE: PID 1 keeps score %d\n", adj);
	/* the server's own score (a service manager's OOMScoreAdjust=) is not the box's */
	write_self_oom("300");
	char *own = sh("oom", "root", "cat /proc/self/oom_score_adj");
	write_self_oom("0");
	assert_string_equal(own, "0\n");
	free(own);
	/* two allocators beside a full /dev/shm: each ends killed (SIGKILL: 137) */
	/* the script's own shell is a candidate too (small, but the killer may take it once the
	 * allocators are gone and /dev/shm still holds half the memory): either way, SIGKILL */
	box_result r;
	assert_int_equal(box_bash(rt, "oom", "root", true, &r, "%s",
	                          "exec 2>/dev/null; head -c 64M /dev/zero > /dev/shm/fill; "
	                          "tail /dev/zero & tail /dev/zero; a=$?; wait $!; echo $a $?"),
	                 0);
	bool hog_killed = !WIFEXITED(r.status);
	if (WIFEXITED(r.status)) {
		assert_int_equal(WEXITSTATUS(r.status), 0);
		assert_string_equal(r.out, "137 137\n");
	} else {
		assert_true(WIFSIGNALED(r.status));
		assert_int_equal(WTERMSIG(r.status), SIGKILL);
	}
	box_result_clear(&r);
	/* without CAP_SYS_RESOURCE PID 1 keeps score 0 and may be the last pick (seen here, about
	 * one run in five): then its death must be seen, so that the registry forgets the box */
	struct pollfd pp = {.fd = init_fd, .events = POLLIN};
	bool died = poll(&pp, 1, hog_killed ? 5000 : 0) == 1; /* its exit ends the script first */
	close(init_fd);
	if (!has_cap_sys_resource() && died) {
		assert_true(fk_box_init_gone(rt, "oom"));
		fprintf(stderr, "NOTE: PID 1 was OOM-killed (no CAP_SYS_RESOURCE); seen dead\n");
		assert_int_equal(fk_box_destroy(rt, "oom", NULL), 0);
		return;
	}
	assert_false(fk_box_init_gone(rt, "oom"));
	assert_int_equal(fk_box_init_pid(rt, "oom"), init);
	char *ok =
	    sh("oom", "sandbox", "echo ok; df -k --output=used /dev/shm | tail -1 | tr -d ' '");
	assert_string_equal(ok, "ok\n65536\n");
	free(ok);
	assert_int_equal(fk_box_destroy(rt, "oom", NULL), 0);
}

/* PID 1 killed from the host: the box knows it is dead (the registry then forgets the sandbox,
 * as E2B does when its VM is gone), and it is destroyed like any other. */
static void test_isolation__pid1_death_is_seen(void **state)
{
	NEED_ISOLATION(rt);
	box_create("p1");
	pid_t init = fk_box_init_pid(rt, "p1");
	assert_true(init > 0);
	assert_false(fk_box_init_gone(rt, "p1"));
	int pfd = (int)syscall(SYS_pidfd_open, init, 0);
	assert_true(pfd >= 0);
	assert_int_equal(kill(init, SIGKILL), 0);
	struct pollfd pp = {.fd = pfd, .events = POLLIN};
	assert_int_equal(poll(&pp, 1, 30000), 1); /* it has exited */
	close(pfd);
	assert_true(fk_box_init_gone(rt, "p1"));
	assert_false(fk_box_init_gone(rt, "no-such-box"));
	box_result r;
	fk_err err = {0};
	fk_proc_spec spec = {.cmd = "/bin/true"};
	int rc = box_run_spec(rt, "p1", &spec, true, &r, &err);
	box_result_clear(&r);
	assert_int_not_equal(rc, 0);
	assert_int_equal(fk_box_destroy(rt, "p1", NULL), 0);
	assert_false(fk_box_exists(rt, "p1", NULL));
}

/* ------------------------------------------------------------ user namespace */

static char state_dir[] = "/tmp/fk-isolation-XXXXXX";

/* A box's root can leave a setuid file of its own host ids in its tree (`chmod 4755` of a copy
 * of bash is owned by the box's root, host id 524288 + k * 65536); a local user who finds the
 * tree can run it and act as that box's root on its files. The state directory does not list
 * its sandboxes to other users (mode 0711: a path they know, such as ca.pem, still opens). */
static void test_isolation__other_users_cannot_list_the_sandboxes(void **state)
{
	NEED_ISOLATION(rt);
	box_create("lst");
	struct stat st;
	assert_int_equal(stat(state_dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		/* listing needs read permission: open() for reading is what opendir() does */
		int fd = open(state_dir, O_RDONLY | O_DIRECTORY);
		_exit(fd < 0 && errno == EACCES ? 0 : 1);
	}
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 0);
	assert_int_equal(fk_box_destroy(rt, "lst", NULL), 0);
}

/* Nor reach a sandbox's tree by its id: <state>/<id> is the host root's, 0700 (and its disk
 * image 0600), so what the box's root leaves there (a setuid copy of bash) cannot be run by
 * another local user; the box itself still works. */
static void test_isolation__other_users_cannot_reach_a_sandbox_tree(void **state)
{
	NEED_ISOLATION(rt);
	box_create("tree");
	char *ok = sh("tree", "root", "cp /bin/bash /root/sh && chmod 4755 /root/sh && echo ok");
	assert_string_equal(ok, "ok\n");
	free(ok);
	char dir[256], root[300], img[300];
	snprintf(dir, sizeof(dir), "%s/tree", state_dir);
	snprintf(root, sizeof(root), "%s/root/root/sh", dir);
	snprintf(img, sizeof(img), "%s/tree.disk", state_dir);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, 0);
	bool has_disk = stat(img, &st) == 0;
	if (has_disk)
		assert_int_equal(st.st_mode & 07777, 0600);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		struct stat s2;
		if (stat(root, &s2) == 0 || errno != EACCES)
			_exit(3);
		if (open(dir, O_RDONLY | O_DIRECTORY) >= 0 || errno != EACCES)
			_exit(4);
		if (has_disk && (open(img, O_RDONLY) >= 0 || errno != EACCES))
			_exit(5);
		_exit(0);
	}
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 0);
	/* the box reaches all it needs: its /etc overlay, its files, a new process */
	ok = sh("tree", "sandbox", "id -un; echo x > /workspace/f; cat /workspace/f");
	assert_string_equal(ok, "sandbox\nx\n");
	free(ok);
	assert_int_equal(fk_box_reboot(rt, "tree", NULL), 0);
	ok = sh("tree", "root", "stat -c %a /root/sh; cat /workspace/f");
	assert_string_equal(ok, "4755\nx\n");
	free(ok);
	assert_int_equal(fk_box_destroy(rt, "tree", NULL), 0);
}

/* The owner of <rel> in the box's "/" as the host sees it (through its PID 1's root: the box's
 * files live in its own disk image, mounted only in its namespace). */
static unsigned long host_uid_of(const char *box, const char *rel)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/root/%s", (int)fk_box_init_pid(rt, box), rel);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_uid, st.st_gid);
	return (unsigned long)st.st_uid;
}

/* Once, root in a box was the host's root. Each box has its own user namespace whose ids
 * 0..65535 are a range of unprivileged host ids of its own; what its users make on disk is
 * owned by those ids, and the host's files are seen as they are owned (root's) but stay the
 * host's. */
static void test_isolation__root_inside_is_an_unprivileged_host_id(void **state)
{
	NEED_ISOLATION(rt);
	box_create("ua");
	box_create("ub");
	char *map = sh("ua", "sandbox",
	               "awk '{print $1, $3}' /proc/self/uid_map /proc/self/gid_map; id -u; id -g");
	assert_string_equal(map, "0 65536\n0 65536\n1000\n1000\n");
	free(map);
	char *ba = sh("ua", "root", "awk '{print $2}' /proc/self/uid_map; id -u");
	char *bb = sh("ub", "root", "awk '{print $2}' /proc/self/uid_map");
	unsigned long base_a = strtoul(ba, NULL, 10), base_b = strtoul(bb, NULL, 10);
	assert_string_equal(strchr(ba, '\n'), "\n0\n");
	free(ba);
	free(bb);
	/* systemd's container range, one 65,536 block per box */
	assert_true(base_a >= 0x80000 && base_a < 0x70000000 && (base_a - 0x80000) % 65536 == 0);
	assert_true(base_b >= 0x80000 && base_b < 0x70000000 && (base_b - 0x80000) % 65536 == 0);
	assert_true(base_a != base_b);

	/* made inside by root and by sandbox: the range's ids on the host */
	char *made = sh("ua", "root",
	                "touch /root/r && mkdir /tmp/rd && su -s /bin/sh sandbox -c "
	                "'touch /workspace/s' && echo made");
	assert_string_equal(made, "made\n");
	free(made);
	assert_int_equal(host_uid_of("ua", "root/r"), base_a);
	assert_int_equal(host_uid_of("ua", "tmp/rd"), base_a);
	assert_int_equal(host_uid_of("ua", "workspace/s"), base_a + 1000);
	assert_int_equal(host_uid_of("ua", "workspace"), base_a + 1000);
	assert_int_equal(host_uid_of("ua", "."), base_a);

	/* the files API writes as the box's ids, so ownership inside is right */
	box_write("ua", "/root/api-root", "x");
	fk_writer *w;
	fk_err err = {0};
	assert_int_equal(
	    fk_file_write_open(rt, "ua", "/workspace/api-sb", "sandbox", &w, NULL, &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
	assert_int_equal(host_uid_of("ua", "root/api-root"), base_a);
	assert_int_equal(host_uid_of("ua", "workspace/api-sb"), base_a + 1000);
	fk_entry e;
	assert_int_equal(fk_file_stat(rt, "ua", "/workspace/api-sb", "sandbox", &e, &err), 0);
	assert_string_equal(e.owner, "sandbox");
	assert_string_equal(e.group, "sandbox");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "ua", "/usr/bin", "sandbox", &e, &err), 0);
	assert_string_equal(e.owner, "root");
	fk_entry_clear(&e);
	/* the box's own node (mknod), its root's */
	assert_int_equal(fk_file_stat(rt, "ua", "/dev/null", "sandbox", &e, &err), 0);
	assert_string_equal(e.owner, "root");
	fk_entry_clear(&e);

	/* inside: host files look root's (idmapped, read-only: root inside has no power over them),
	 * setuid still works; /dev's nodes are the box's own, its root's */
	char *view = sh("ua", "root",
	                "stat -c '%u:%g %A %n' / /usr/bin/su /etc/passwd /workspace/s "
	                "/root/api-root /workspace/api-sb /dev/null; "
	                "chown 1000 /usr/bin/su 2>/dev/null || echo chown-refused; "
	                "chmod 755 /usr/bin/su 2>/dev/null || echo chmod-refused; "
	                "su -s /bin/sh sandbox -c 'su -c true root </dev/null 2>&1 | head -c 200 | "
	                "grep -c -i -E \"authentication|password|terminal\"'");
	assert_string_equal(view, "0:0 drwxr-xr-x /\n"
	                          "0:0 -rwsr-xr-x /usr/bin/su\n"
	                          "0:0 -rw-r--r-- /etc/passwd\n"
	                          "1000:1000 -rw-r--r-- /workspace/s\n"
	                          "0:0 -rw-r--r-- /root/api-root\n"
	                          "1000:1000 -rw-r--r-- /workspace/api-sb\n"
	                          "0:0 crw-rw-rw- /dev/null\n"
	                          "chown-refused\nchmod-refused\n1\n");
	free(view);

	/* the box's network namespace is its own: its root may bind a port below 1024, its users
	 * may not (as on E2B; tests/fake/net has the errno) */
	char *bind = sh("ua", "root",
	                "b='use IO::Socket::INET; IO::Socket::INET->new(LocalAddr => "
	                "\"127.0.0.1:80\", Listen => 1, ReuseAddr => 1) or exit 1'; "
	                "perl -e \"$b\" && echo root-bound; "
	                "su -s /bin/sh sandbox -c \"perl -e '$b'\" && echo sandbox-bound || "
	                "echo sandbox-refused");
	assert_string_equal(bind, "root-bound\nsandbox-refused\n");
	free(bind);

	/* System V IPC is per box (its own IPC namespace): a segment made in one box is not seen
	 * in the other */
	char *ipc_a = sh("ua", "sandbox", "ipcmk -M 4096 >/dev/null && ipcs -m | grep -c '^0x'");
	char *ipc_b = sh("ub", "sandbox", "ipcs -m | grep -c '^0x'; true");
	assert_string_equal(ipc_a, "1\n");
	assert_string_equal(ipc_b, "0\n");
	free(ipc_a);
	free(ipc_b);
	assert_int_equal(fk_box_destroy(rt, "ua", NULL), 0);
	assert_int_equal(fk_box_destroy(rt, "ub", NULL), 0);

	/* E2B's base template: its user's passwordless sudo works (setuid through the idmapped
	 * /usr, sudoers root's inside), and gives the box's root, not the host's */
	fk_box_options base = {.template_id = "base"};
	box_create_opts("usudo", &base);
	char *sudo = sh("usudo", "user",
	                "sudo -n id -u && sudo -n touch /root/by-sudo && "
	                "awk '{print $2}' /proc/self/uid_map");
	assert_memory_equal(sudo, "0\n", 2); /* sudo's id -u */
	unsigned long base_s = strtoul(sudo + 2, NULL, 10);
	free(sudo);
	assert_true(base_s >= 0x80000 && (base_s - 0x80000) % 65536 == 0);
	assert_int_equal(host_uid_of("usudo", "root/by-sudo"), base_s);
	assert_int_equal(fk_box_destroy(rt, "usudo", NULL), 0);
}

/* ------------------------------------------------------------ disk */

/* Once, a 300 MiB file in a 100 MB-disk sandbox was written (into the host's file
 * system). Each box's files live in an ext4 image of its disk size: writes beyond it fail
 * inside with ENOSPC, the files API answers FK_ENOSPC, and the box and the server go on. */
static void test_isolation__disk_is_capped_per_box(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.disk_mb = 100};
	box_create_opts("disk", &o);
	box_create("disk2");
	/* its image: exactly its size, all of it reserved on the state dir's file system (the
	 * blocks are allocated; a few more hold the file's extent tree) */
	char img[256];
	snprintf(img, sizeof(img), "%s/disk.disk", state_dir);
	struct stat st;
	assert_int_equal(stat(img, &st), 0);
	assert_int_equal(st.st_size, 100 * 1024 * 1024);
	assert_true(st.st_blocks * 512 >= 100 * 1024 * 1024);
	assert_true(st.st_blocks * 512 < 101 * 1024 * 1024);
	/* /dev/shm is host RAM: half the box's memory (512 MiB by default), as a VM's kernel
	 * sizes it */
	char *shm = sh("disk", "sandbox", "df -k --output=size /dev/shm | tail -1 | tr -d ' '");
	assert_string_equal(shm, "262144\n");
	free(shm);
	char *df = sh("disk", "sandbox",
	              "df -m --output=size / | tail -1 | tr -d ' '; "
	              "head -c 300M /dev/zero > /workspace/big 2>/tmp/err; echo rc=$?; "
	              "grep -c 'No space left on device' /tmp/err; "
	              "s=$(stat -c %s /workspace/big); [ $s -lt 104857600 ] && echo short; "
	              "rm /workspace/big && echo x > /workspace/after && cat /workspace/after");
	/* a 100 MiB ext4 file system without reserved blocks: a little less for its metadata */
	long size_mb = strtol(df, NULL, 10);
	assert_true(size_mb >= 90 && size_mb <= 100);
	assert_string_equal(strchr(df, '\n') + 1, "rc=1\n1\nshort\nx\n");
	free(df);

	/* through the files API: the write that crosses the cap fails with FK_ENOSPC */
	fk_writer *w;
	fk_err err = {0};
	assert_int_equal(
	    fk_file_write_open(rt, "disk", "/workspace/api-big", "sandbox", &w, NULL, &err), 0);
	static char chunk[1 << 20];
	memset(chunk, 'a', sizeof(chunk));
	int rc = 0, i;
	for (i = 0; i < 300 && rc == 0; i++)
		rc = fk_writer_write(w, chunk, sizeof(chunk), &err);
	assert_int_equal(rc, FK_ENOSPC);
	assert_true(i > 50 && i <= 100);
	fk_writer_close(w, NULL);
	assert_int_equal(fk_file_remove(rt, "disk", "/workspace/api-big", "sandbox", &err), 0);

	/* the metrics read its disk: its total is the size df shows inside, to the byte */
	char *dfb = sh("disk", "sandbox", "df -B1 --output=size / | tail -1 | tr -d ' '");
	fk_box_usage u;
	assert_int_equal(fk_box_usage_read(rt, "disk", &u, &err), 0);
	assert_int_equal(u.disk_total, strtoull(dfb, NULL, 10));
	assert_true(u.disk_used > 0 && u.disk_used < u.disk_total);
	free(dfb);

	/* the other box (default 1 GiB) did not lose a byte of its own */
	char *df2 = sh("disk2", "sandbox", "df -m --output=size / | tail -1 | tr -d ' '");
	assert_true(strtol(df2, NULL, 10) > 900);
	free(df2);
	/* the disk survives a reboot */
	char *kept = sh("disk", "sandbox", "cat /workspace/after");
	assert_int_equal(fk_box_reboot(rt, "disk", &err), 0);
	char *again = sh("disk", "sandbox", "cat /workspace/after");
	assert_string_equal(kept, again);
	free(kept);
	free(again);
	assert_int_equal(fk_box_destroy(rt, "disk", NULL), 0);
	assert_int_equal(fk_box_destroy(rt, "disk2", NULL), 0);
	/* nothing of the boxes is left in the state dir (their images are gone) */
	assert_int_equal(access(img, F_OK), -1);
}

/* ------------------------------------------------------------ ports */

/* fk_box_connect reaches a port inside the box's own network namespace, which the host's
 * loopback does not. */
static void test_isolation__connect_to_a_port_inside_the_box(void **state)
{
	NEED_ISOLATION(rt);
	fk_box_options o = {.net_none = true};
	box_create_opts("port", &o);
	const char *args[] = {
	    "-e", "use IO::Socket::INET; my $s = IO::Socket::INET->new(LocalAddr => "
	          "'127.0.0.1:18123', Listen => 5, ReuseAddr => 1) or die $!; "
	          "while (my $c = $s->accept) { print $c qq(hello from box\n); close $c }"};
	fk_proc_spec spec = {.cmd = "perl", .args = args, .n_args = 2, .user = "sandbox"};
	fk_proc *p;
	fk_err err = {0};
	assert_int_equal(fk_proc_start(rt, "port", &spec, &p, NULL, &err), 0);
	int fd = -1, rc;
	int64_t deadline = fk_mono_ms() + 30000;
	while ((rc = fk_box_connect(rt, "port", 18123, 5000, &fd, &err)) == FK_ENOTFOUND) {
		assert_int_equal(err.errnum, ECONNREFUSED);
		assert_true(fk_mono_ms() < deadline);
		fk_sleep_ms(20);
	}
	assert_int_equal(rc, 0);
	char buf[64] = {0};
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	assert_string_equal(buf, "hello from box\n");
	/* the host's loopback has no such listener: the socket lived in the box's namespace */
	int hs = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(18123)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(hs, (struct sockaddr *)&a, sizeof(a)), -1);
	assert_int_equal(errno, ECONNREFUSED);
	close(hs);
	assert_int_equal(fk_box_connect(rt, "port", 18124, 5000, &fd, &err), FK_ENOTFOUND);
	assert_int_equal(fk_box_connect(rt, "port", 0, 5000, &fd, &err), FK_EINVAL);
	assert_int_equal(fk_box_connect(rt, "nobox", 18123, 5000, &fd, &err), FK_ENOTFOUND);
	fk_proc_unref(p);
	assert_int_equal(fk_box_destroy(rt, "port", NULL), 0);
}

/* ------------------------------------------------------------ the files API, the host's root */

/* The files API opens a box's files as the host's root. A path the box prepared must not make it
 * open a FIFO (the open waited forever, holding the box's lock: the sandbox could no longer be
 * deleted), a device, or anything in the box's /proc, which shows what the box's own users may
 * not read or write: PID 1 is a copy of the server (its environment), /proc/kallsyms gives the
 * host's root real kernel addresses, /proc/irq and /proc/mtrr are host kernel settings. */
static void test_isolation__files_api_opens_only_regular_files_outside_proc(void **state)
{
	NEED_ISOLATION(rt);
	box_create("fapi");
	char *o = sh("fapi", "root",
	             "mkfifo /tmp/fifo && ln -s /proc/1/environ /tmp/env && "
	             "ln -s /proc/irq/default_smp_affinity /tmp/irq && ln -s /dev/tty /tmp/tty && "
	             "ln -s /proc/1/mem /tmp/mem && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	alarm(120); /* an open that waits forever fails the test instead of hanging it */
	fk_writer *w = NULL;
	fk_err err = {0};
	assert_int_equal(fk_file_write_open(rt, "fapi", "/tmp/fifo", "root", &w, NULL, &err),
	                 FK_EINVAL);
	assert_string_equal(err.message, "path '/tmp/fifo' is not a regular file");
	assert_null(w);
	assert_int_equal(fk_file_write_open(rt, "fapi", "/tmp/tty", "root", &w, NULL, &err),
	                 FK_EINVAL);
	assert_string_equal(err.message, "path '/tmp/tty' is not a regular file");
	assert_int_equal(fk_file_write_open(rt, "fapi", "/tmp/irq", "root", &w, NULL, &err),
	                 FK_EINVAL);
	assert_string_equal(err.message,
	                    "path '/tmp/irq' leads into /proc, which the files API does not open");
	assert_int_equal(
	    fk_file_write_open(rt, "fapi", "/proc/1/oom_score_adj", "root", &w, NULL, &err),
	    FK_EINVAL);
	assert_string_equal(err.message, "path '/proc/1/oom_score_adj' leads into /proc, which "
	                                 "the files API does not open");
	int fd = -1;
	uint64_t size = 0;
	const char *const in_proc[] = {"/tmp/env", "/tmp/mem", "/proc/kallsyms", "/proc/1/maps"};
	for (size_t i = 0; i < sizeof(in_proc) / sizeof(in_proc[0]); i++) {
		assert_int_equal(
		    fk_file_read_open(rt, "fapi", in_proc[i], "root", &fd, &size, &err), FK_EINVAL);
		char want[200];
		snprintf(want, sizeof(want),
		         "path '%s' leads into /proc, which the files API does not open",
		         in_proc[i]);
		assert_string_equal(err.message, want);
		assert_int_equal(fd, -1);
	}
	assert_int_equal(fk_file_read_open(rt, "fapi", "/tmp/fifo", "root", &fd, &size, &err),
	                 FK_EINVAL);
	assert_string_equal(err.message, "path '/tmp/fifo' is not a regular file");
	/* the box's boot id is a file of its own bound over /proc's: still read (the SDK's tests)
	 */
	assert_int_equal(fk_file_read_open(rt, "fapi", "/proc/sys/kernel/random/boot_id", "root",
	                                   &fd, &size, &err),
	                 0);
	assert_int_equal(size, 37);
	close(fd);
	/* an ordinary file still is written and read */
	assert_int_equal(fk_file_write_open(rt, "fapi", "/tmp/plain", "root", &w, NULL, &err), 0);
	assert_int_equal(fk_writer_write(w, "abc", 3, &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
	assert_int_equal(fk_file_read_open(rt, "fapi", "/tmp/plain", "root", &fd, &size, &err), 0);
	assert_int_equal(size, 3);
	close(fd);
	/* the box's root makes /etc/passwd a FIFO: user lookups (every files call, every start)
	 * waited forever on it; now the file is not read (root still resolves) */
	o = sh("fapi", "root", "rm /etc/passwd && mkfifo /etc/passwd && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	fk_entry e;
	assert_int_equal(fk_file_stat(rt, "fapi", "/tmp", "sandbox", &e, &err), FK_ENOUSER);
	assert_string_equal(err.message, "invalid username: 'sandbox'");
	assert_int_equal(fk_file_stat(rt, "fapi", "/tmp/plain", "root", &e, &err), 0);
	assert_string_equal(e.path, "/tmp/plain");
	fk_entry_clear(&e);
	alarm(0);
	assert_int_equal(fk_box_destroy(rt, "fapi", NULL), 0);
}

/* The files API's Remove runs in the host's mount namespace, where the box's mount points are
 * plain directories: removing "/usr" detached the box's /usr (and answered success). A mount
 * point of the box is refused; what is under it is the box's own to remove. */
static void test_isolation__files_remove_refuses_the_box_mount_points(void **state)
{
	NEED_ISOLATION(rt);
	box_create("rmmnt");
	fk_err err = {0};
	const char *const mounts[] = {"/usr", "/etc", "/dev", "/dev/pts", "/proc", "/dev/shm"};
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		assert_int_equal(fk_file_remove(rt, "rmmnt", mounts[i], "root", &err), FK_EINVAL);
		char want[200];
		snprintf(want, sizeof(want), "remove '%s': a mount point of the sandbox",
		         mounts[i]);
		assert_string_equal(err.message, want);
	}
	char *o = sh("rmmnt", "root", "mkdir -p /tmp/d/e && touch /tmp/d/e/f /etc/fk-x && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_remove(rt, "rmmnt", "/tmp/d", "root", &err), 0);
	assert_int_equal(fk_file_remove(rt, "rmmnt", "/etc/fk-x", "root", &err), 0);
	o = sh("rmmnt", "sandbox",
	       "test -x /usr/bin/true && test -s /etc/passwd && test -c /dev/null && "
	       "test ! -e /tmp/d && test ! -e /etc/fk-x && echo intact");
	assert_string_equal(o, "intact\n");
	free(o);
	assert_int_equal(fk_box_destroy(rt, "rmmnt", NULL), 0);
}

/* Move, like Remove, runs in the host's mount namespace, where renaming a box's mount point is
 * not refused (EBUSY is only for the caller's own namespace's mounts): moving "/usr" carried the
 * box's /usr elsewhere, and moving a directory onto "/usr" detached it. Both ends are checked. */
static void test_isolation__files_move_refuses_the_box_mount_points(void **state)
{
	NEED_ISOLATION(rt);
	box_create("mvmnt");
	fk_err err = {0};
	fk_entry e;
	const char *const mounts[] = {"/usr", "/etc", "/dev", "/dev/pts", "/proc", "/dev/shm"};
	char *o = sh("mvmnt", "root", "mkdir -p /tmp/d /tmp/e && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		char want[200];
		assert_int_equal(
		    fk_file_move(rt, "mvmnt", mounts[i], "/tmp/moved", "root", &e, &err),
		    FK_EINVAL);
		snprintf(want, sizeof(want),
		         "move '%s' to '/tmp/moved': a mount point of the sandbox", mounts[i]);
		assert_string_equal(err.message, want);
		assert_int_equal(fk_file_move(rt, "mvmnt", "/tmp/d", mounts[i], "root", &e, &err),
		                 FK_EINVAL);
		snprintf(want, sizeof(want),
		         "move '/tmp/d' to '%s': '%s' is a mount point of the sandbox", mounts[i],
		         mounts[i]);
		assert_string_equal(err.message, want);
	}
	assert_int_equal(fk_file_move(rt, "mvmnt", "/", "/tmp/moved", "root", &e, &err), FK_EINVAL);
	assert_string_equal(err.message, "move '/' to '/tmp/moved': a mount point of the sandbox");
	assert_int_equal(fk_file_move(rt, "mvmnt", "/tmp/d", "/", "root", &e, &err), FK_EINVAL);
	assert_string_equal(err.message,
	                    "move '/tmp/d' to '/': '/' is a mount point of the sandbox");
	/* what is under a mount point is the box's own to move */
	o = sh("mvmnt", "root", "touch /etc/fk-x && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_move(rt, "mvmnt", "/etc/fk-x", "/etc/fk-y", "root", &e, &err), 0);
	assert_string_equal(e.path, "/etc/fk-y");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_move(rt, "mvmnt", "/tmp/d", "/tmp/e/d", "root", &e, &err), 0);
	assert_string_equal(e.path, "/tmp/e/d");
	fk_entry_clear(&e);
	o = sh("mvmnt", "sandbox",
	       "test -x /usr/bin/true && test -s /etc/passwd && test -c /dev/null && "
	       "test -d /dev/shm && test -r /proc/self/status && test ! -e /tmp/moved && "
	       "test -e /etc/fk-y && test -d /tmp/e/d && "
	       "test \"$(stat -c %m /usr)\" = /usr && test \"$(stat -c %m /etc)\" = /etc && "
	       "echo intact");
	assert_string_equal(o, "intact\n");
	free(o);
	assert_int_equal(fk_box_destroy(rt, "mvmnt", NULL), 0);
}

/* Every files call and every start looks the user up in the box's /etc/passwd and /etc/group,
 * whose size the box's root decides: past 1 MiB they are not read (the user is refused, clearly;
 * root still resolves, so the box's root can repair them). */
static void test_isolation__huge_etc_passwd_is_not_read(void **state)
{
	NEED_ISOLATION(rt);
	box_create("bigpw");
	fk_err err = {0};
	fk_entry e;
	char *o = sh("bigpw", "root",
	             "stat -c %s /etc/passwd > /tmp/pw.size && stat -c %s /etc/group > "
	             "/tmp/gr.size && truncate -s 1048576 /etc/passwd && "
	             "echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	/* 1 MiB exactly: read */
	assert_int_equal(fk_file_stat(rt, "bigpw", "~", "sandbox", &e, &err), 0);
	assert_string_equal(e.path, "/workspace");
	fk_entry_clear(&e);
	o = sh("bigpw", "root", "truncate -s 1048577 /etc/passwd && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_stat(rt, "bigpw", "~", "sandbox", &e, &err), FK_ENOUSER);
	assert_string_equal(err.message,
	                    "invalid username: 'sandbox' (the sandbox's /etc/passwd is "
	                    "larger than 1048576 bytes, which is not read)");
	assert_int_equal(fk_file_stat(rt, "bigpw", "~", "root", &e, &err), 0);
	assert_string_equal(e.path, "/root");
	fk_entry_clear(&e);
	/* /etc/group too */
	o = sh("bigpw", "root",
	       "truncate -s $(cat /tmp/pw.size) /etc/passwd && truncate -s 2000000 /etc/group && "
	       "echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_stat(rt, "bigpw", "~", "sandbox", &e, &err), FK_ENOUSER);
	assert_string_equal(err.message, "invalid username: 'sandbox' (the sandbox's /etc/group is "
	                                 "larger than 1048576 bytes, which is not read)");
	/* the box's root repairs it: the user is back */
	o = sh("bigpw", "root", "truncate -s 1048576 /etc/group && echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_stat(rt, "bigpw", "~", "sandbox", &e, &err), 0);
	assert_string_equal(e.path, "/workspace");
	fk_entry_clear(&e);
	o = sh("bigpw", "sandbox", "id -un");
	assert_string_equal(o, "sandbox\n");
	free(o);
	/* owners are found by id among the names (sorted once), the first line of an id winning */
	o = sh(
	    "bigpw", "root",
	    "truncate -s $(cat /tmp/gr.size) /etc/group && "
	    "echo 'zz60:x:60000:60000::/:/bin/false' >> /etc/passwd && "
	    "echo 'root2:x:0:0::/:/bin/sh' >> /etc/passwd && echo 'zz60g:x:60000:' >> /etc/group "
	    "&& "
	    "touch /tmp/o && chown 60000:60000 /tmp/o && touch /tmp/p && chown 60001:60001 /tmp/p "
	    "&& echo ok");
	assert_string_equal(o, "ok\n");
	free(o);
	assert_int_equal(fk_file_stat(rt, "bigpw", "/tmp/o", "root", &e, &err), 0);
	assert_string_equal(e.owner, "zz60");
	assert_string_equal(e.group, "zz60g");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "bigpw", "/tmp/p", "root", &e, &err), 0);
	assert_string_equal(e.owner, "60001");
	assert_string_equal(e.group, "60001");
	fk_entry_clear(&e);
	assert_int_equal(fk_file_stat(rt, "bigpw", "/tmp", "root", &e, &err), 0);
	assert_string_equal(e.owner, "root");
	assert_string_equal(e.group, "root");
	fk_entry_clear(&e);
	assert_int_equal(fk_box_destroy(rt, "bigpw", NULL), 0);
}

static int group_setup(void **state)
{
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
	fk_rt_free(rt);
	if (rmdir(state_dir) < 0)
		fprintf(stderr, "state dir %s left: %s\n", state_dir, strerror(errno));
	return 0;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_isolation__root_cannot_remount_or_write_host_paths),
	    cmocka_unit_test(test_isolation__no_kernel_log_and_masked_proc),
	    cmocka_unit_test(test_isolation__no_view_of_host_cgroups),
	    cmocka_unit_test(test_isolation__namespace_mount_ptrace_raw_socket_calls_refused),
	    cmocka_unit_test(test_isolation__newest_mount_calls_are_refused),
	    cmocka_unit_test(test_isolation__fork_bomb_is_held_and_box_recovers),
	    cmocka_unit_test(test_isolation__memory_hog_is_killed_inside),
	    cmocka_unit_test(test_isolation__limits_are_the_boxs_cgroup_files),
	    cmocka_unit_test(test_isolation__600_mib_in_a_512_mib_box_is_oom_killed),
	    cmocka_unit_test(test_isolation__usage_counts_the_boxs_memory),
	    cmocka_unit_test(test_isolation__1000_execs_under_1024_fds),
	    cmocka_unit_test(test_isolation__listdir_deep_tree_is_answered),
	    cmocka_unit_test(test_isolation__listdir_of_a_huge_directory_is_refused),
	    cmocka_unit_test(test_isolation__listdir_of_long_names_is_bounded_by_bytes),
	    cmocka_unit_test(test_isolation__recursive_watch_of_a_wide_tree),
	    cmocka_unit_test(test_isolation__watches_are_capped_across_watches),
	    cmocka_unit_test(test_isolation__connect_to_a_port_inside_the_box),
	    cmocka_unit_test(test_isolation__root_inside_is_an_unprivileged_host_id),
	    cmocka_unit_test(test_isolation__other_users_cannot_list_the_sandboxes),
	    cmocka_unit_test(test_isolation__other_users_cannot_reach_a_sandbox_tree),
	    cmocka_unit_test(test_isolation__files_api_opens_only_regular_files_outside_proc),
	    cmocka_unit_test(test_isolation__files_remove_refuses_the_box_mount_points),
	    cmocka_unit_test(test_isolation__files_move_refuses_the_box_mount_points),
	    cmocka_unit_test(test_isolation__huge_etc_passwd_is_not_read),
	    cmocka_unit_test(test_isolation__disk_is_capped_per_box),
	    cmocka_unit_test(test_isolation__oom_spares_pid1),
	    cmocka_unit_test(test_isolation__pid1_death_is_seen),
	};
	/* FK_TEST_FILTER: a few of them (tests/vm/v2-checks.sh on a cgroup v2 kernel) */
	return fkt_run_filtered(tests, sizeof(tests) / sizeof(tests[0]), group_setup,
	                        group_teardown);
}
