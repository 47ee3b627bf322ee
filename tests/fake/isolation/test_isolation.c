/*
 * tests/fake/isolation/test_isolation.c — fake-e2b's isolation suite (fake-e2b/README.md
 * "Isolation"): the attacks an agent could try as root (envd's Basic user `root`) or as `sandbox`
 * inside a box, each of which must fail to reach the host or another box; and the limits that keep
 * one box from starving the machine. Runs against the runtime library directly, as root; skips
 * without isolation.
 *
 * This file: host paths, kernel interfaces, system calls, PID 1, ports; the setup and main. The
 * others: test_isolation_limits.c (processes, memory, cgroup files, fds, the disk cap),
 * test_isolation_walks.c (ListDir and watches bounded), test_isolation_users.c (the user
 * namespace, other host users), test_isolation_files.c (the files API as the host's root),
 * isolation_support.c (the box helpers).
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
	    cmocka_unit_test(test_isolation__starts_are_made_in_the_boxs_cgroups),
	    cmocka_unit_test(test_isolation__refused_clone3_moves_to_the_same_cgroups),
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
	/* FK_TEST_FILTER picks a few (tests/vm/v2-checks.sh on a cgroup v2 kernel) */
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
