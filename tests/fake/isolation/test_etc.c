/*
 * tests/fake/isolation/test_etc.c — a box's /etc is made for it, and its mount table names no
 * host path.
 *
 * The host's /etc used to be copied whole into every box (its shadow, SSH host keys, TLS private
 * keys; its hostname). main() puts markers in the host's /etc before the runtime makes its
 * templates (removed at the end): a public file outside the allowlist, a 0600 file inside an
 * allowed directory, and a public file inside one (which must come through). The box's mountinfo
 * must show neither the state directory nor any host path of the box's files (the /etc overlay's
 * options used to name <state>/<id>/etc-upper). Runs the linked-in runtime, as root; skips
 * without isolation.
 */
#define _GNU_SOURCE
#include "box_run.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static fk_rt *rt;
static char state_dir[] = "/var/tmp/fk-etc-XXXXXX";
/* the host's markers: outside the allowlist, private in an allowed directory, public in one */
static char secret[128], private_in_allowed[128], public_in_allowed[128];

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

static void box_create(const char *id, const char *tpl)
{
	fk_box_options o = {.template_id = tpl};
	fk_err err = {0};
	int rc = fk_box_create(rt, id, &o, &err);
	if (rc != 0)
		fprintf(stderr, "create %s: %s\n", id, err.message);
	assert_int_equal(rc, 0);
}

/* ------------------------------------------------------------ mount table */

static void assert_mountinfo_clean(const char *box)
{
	char *mi = sh(box, "root", "cat /proc/self/mountinfo");
	char *etc = strstr(mi, " /etc ");
	if (!etc || strstr(mi, state_dir))
		fprintf(stderr, "mountinfo of %s:\n%s", box, mi);
	/* the overlay names its layers relative to the box's directory */
	assert_non_null(etc);
	char *end = strchr(etc, '\n');
	assert_non_null(end);
	*end = 0;
	assert_non_null(strstr(etc, "lowerdir=etc-lower,upperdir=etc-upper,workdir=etc-work"));
	assert_null(strstr(etc, state_dir));
	assert_null(strstr(etc, "/tmp/"));
	*end = '\n';
	/* on a machine with per-box disks, the box's files are paths of its own disk only (without
	 * them the root field of its "/" is its path under the state dir: README, "Files") */
	char img[256];
	snprintf(img, sizeof(img), "%s/%s.disk", state_dir, box);
	if (access(img, F_OK) == 0) {
		assert_null(strstr(mi, state_dir));
		assert_null(strstr(mi, "/tmp/"));
		for (char *line = mi; line && *line;) {
			char *nl = strchr(line, '\n');
			if (nl)
				*nl = 0;
			char root[4096], point[4096];
			assert_int_equal(sscanf(line, "%*s %*s %*s %4095s %4095s", root, point), 2);
			/* a mount's root is a path within its own file system: the host's /usr
			 * trees, the box's disk, its /dev and /proc; nothing of the host's /var,
			 * /tmp or /run */
			assert_false(!strncmp(root, "/var", 4) || !strncmp(root, "/tmp", 4) ||
			             !strncmp(root, "/run", 4));
			line = nl ? nl + 1 : NULL;
		}
	}
	free(mi);
}

static void test_etc__mountinfo_names_no_host_path(void **state)
{
	(void)state;
	NEED_ISOLATION(rt);
	box_create("mi", "base");
	assert_mountinfo_clean("mi");
	/* `mount` as the box's users see it */
	char *o = sh("mi", "user", "mount | grep -c ' on /etc '");
	assert_string_equal(o, "1\n");
	free(o);
	assert_int_equal(fk_box_destroy(rt, "mi", NULL), 0);
}

/* ------------------------------------------------------------ what comes from the host */

/* What the box shows of `path`: its contents or "<absent>". */
static char *box_cat(const char *box, const char *user, const char *path)
{
	box_result r;
	assert_int_equal(
	    box_bash(rt, box, user, false, &r, "cat %s 2>/dev/null || echo '<absent>'", path), 0);
	free(r.err);
	return r.out;
}

static char *host_read(const char *path)
{
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	char *buf = calloc(1, 1 << 20);
	assert_non_null(buf);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

static void test_etc__nothing_of_the_host_etc_but_the_allowlist(void **state)
{
	(void)state;
	NEED_ISOLATION(rt);
	box_create("sec", "base");
	char *o = box_cat("sec", "root", secret);
	assert_string_equal(o, "<absent>\n");
	free(o);
	o = box_cat("sec", "root", private_in_allowed);
	assert_string_equal(o, "<absent>\n");
	free(o);
	o = box_cat("sec", "root", public_in_allowed);
	assert_string_equal(o, "# fk-test public\n");
	free(o);
	/* secrets of an ordinary host: none, whatever this one has */
	o = sh("sec", "root",
	       "ls -d /etc/ssl/private /etc/ssh/ssh_host_* /etc/krb5.keytab /etc/apt /etc/pip.conf "
	       "/etc/npmrc /etc/gitconfig /etc/subuid /etc/fstab /etc/shadow- /etc/passwd- "
	       "2>/dev/null; ls /etc/ssh 2>/dev/null | tr '\\n' ' '; echo; "
	       /* no file in the box's /etc is a host file others may not read */
	       "find /etc -xdev -type f ! -perm -o=r ! -name shadow ! -name gshadow "
	       "! -name sudoers ! -path '/etc/sudoers.d/*'; echo done");
	char want[256];
	snprintf(want, sizeof(want), "%s%s\ndone\n",
	         access("/etc/ssh/ssh_config", F_OK) == 0 ? "ssh_config " : "",
	         access("/etc/ssh/ssh_config.d", F_OK) == 0 ? "ssh_config.d " : "");
	assert_string_equal(o, want);
	free(o);
	/* /etc/shadow is the box's: every account locked, the template's user without a password;
	 * the same through base's passwordless sudo */
	static const char shadow[] = "root:*\ndaemon:*\nbin:*\nsys:*\nsync:*\ngames:*\nman:*\n"
	                             "lp:*\nmail:*\nnews:*\nuucp:*\nproxy:*\nwww-data:*\n"
	                             "backup:*\nlist:*\nirc:*\n_apt:*\nnobody:*\nuser:!\n";
	o = sh("sec", "root", "cut -d: -f1,2 /etc/shadow");
	assert_string_equal(o, shadow);
	free(o);
	o = sh("sec", "user", "sudo -n cut -d: -f1,2 /etc/shadow");
	assert_string_equal(o, shadow);
	free(o);
	char *host_shadow = host_read("/etc/shadow");
	o = sh("sec", "root", "cat /etc/shadow");
	assert_true(strcmp(o, host_shadow) != 0);
	/* not one line of the host's, but for the system accounts' locked entries */
	for (char *line = host_shadow; *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		char *pw = strchr(line, ':');
		if (pw && pw[1] != '*' && pw[1] != '!' && pw[1] != ':')
			assert_null(strstr(o, line)); /* an account with a password hash */
		line = nl ? nl + 1 : line + strlen(line);
	}
	free(o);
	free(host_shadow);
	assert_int_equal(fk_box_destroy(rt, "sec", NULL), 0);
}

/* ------------------------------------------------------------ what is made for the box */

static void test_etc__hostname_hosts_users_are_the_boxs(void **state)
{
	(void)state;
	NEED_ISOLATION(rt);
	box_create("hn", "capybara-sandbox");
	/* E2B's: e2b.local for the host name, /etc/hostname and /etc/hosts */
	char *o =
	    sh("hn", "sandbox", "hostname; uname -n; cat /etc/hostname; getent hosts e2b.local");
	assert_string_equal(o, "e2b.local\ne2b.local\ne2b.local\n127.0.1.1       e2b.local\n");
	free(o);
	o = sh("hn", "sandbox", "cat /etc/hosts");
	assert_string_equal(o, "127.0.0.1\tlocalhost\n"
	                       "::1\tlocalhost ip6-localhost ip6-loopback\n"
	                       "fe00::\tip6-localnet\n"
	                       "ff00::\tip6-mcastprefix\n"
	                       "ff02::1\tip6-allnodes\n"
	                       "ff02::2\tip6-allrouters\n"
	                       "127.0.1.1\te2b.local\n");
	free(o);
	/* the users of a Debian base system and the template's */
	o = sh("hn", "sandbox",
	       "cut -d: -f1,3,4,6 /etc/passwd | tr '\\n' ' '; echo; "
	       "getent passwd sandbox; getent group sandbox; id");
	assert_string_equal(
	    o, "root:0:0:/root daemon:1:1:/usr/sbin bin:2:2:/bin sys:3:3:/dev sync:4:65534:/bin "
	       "games:5:60:/usr/games man:6:12:/var/cache/man lp:7:7:/var/spool/lpd "
	       "mail:8:8:/var/mail news:9:9:/var/spool/news uucp:10:10:/var/spool/uucp "
	       "proxy:13:13:/bin www-data:33:33:/var/www backup:34:34:/var/backups "
	       "list:38:38:/var/list irc:39:39:/run/ircd _apt:42:65534:/nonexistent "
	       "nobody:65534:65534:/nonexistent sandbox:1000:1000:/workspace \n"
	       "sandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n"
	       "sandbox:x:1000:\n"
	       "uid=1000(sandbox) gid=1000(sandbox) groups=1000(sandbox)\n");
	free(o);
	/* UTC, E2B's; nsswitch of files; a resolver of the box's network; no sudo for sandbox */
	o = sh("hn", "sandbox",
	       "date +%Z; readlink /etc/localtime; grep -c files "
	       "/etc/nsswitch.conf; grep -v '^#' /etc/resolv.conf; "
	       "sudo -n true 2>/dev/null || echo no-sudo");
	assert_string_equal(o, "UTC\n/usr/share/zoneinfo/Etc/UTC\n10\nnameserver 8.8.8.8\n"
	                       "no-sudo\n");
	free(o);
	/* a machine id of its own: not the host's, not another box's */
	box_create("hn2", "capybara-sandbox");
	char *a = sh("hn", "sandbox", "cat /etc/machine-id"),
	     *b = sh("hn2", "root", "cat /etc/machine-id");
	assert_int_equal(strlen(a), 33);
	assert_int_equal(strspn(a, "0123456789abcdef"), 32);
	assert_true(strcmp(a, b) != 0);
	if (access("/etc/machine-id", R_OK) == 0) {
		char *h = host_read("/etc/machine-id");
		assert_true(strcmp(a, h) != 0 && strcmp(b, h) != 0);
		free(h);
	}
	free(a);
	free(b);
	assert_int_equal(fk_box_destroy(rt, "hn", NULL), 0);
	assert_int_equal(fk_box_destroy(rt, "hn2", NULL), 0);
}

/* The host's /usr still works with the box's /etc: the compiler and make, Python with TLS
 * certificates, alternatives, sudo and runuser through PAM, the dynamic linker's cache. */
static void test_etc__the_userland_works(void **state)
{
	(void)state;
	NEED_ISOLATION(rt);
	box_create("ul", "base");
	fk_writer *w;
	fk_err err = {0};
	static const char src[] =
	    "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n";
	assert_int_equal(fk_file_write_open(rt, "ul", "/home/user/m/hi.c", "user", &w, NULL, &err),
	                 0);
	assert_int_equal(fk_writer_write(w, src, strlen(src), &err), 0);
	assert_int_equal(fk_writer_close(w, &err), 0);
	char *o =
	    sh("ul", "user",
	       "cd ~/m && printf 'hi: hi.c\\n\\tcc -o hi hi.c\\n' > Makefile && make -s && ./hi && "
	       "python3 -c 'import ssl; c = ssl.create_default_context(); "
	       "print(len(c.get_ca_certs()) > 0 or c.cert_store_stats()[\"x509_ca\"] > 0)' && "
	       "test -L /etc/alternatives/cc -o -L /etc/alternatives/python3 -o "
	       "-d /etc/alternatives && ldconfig -p | grep -q 'libc.so.6' && echo ld-ok && "
	       "sudo -n id -un && sudo -n runuser -u user -- id -un");
	assert_string_equal(o, "hi\nTrue\nld-ok\nroot\nuser\n");
	free(o);
	assert_int_equal(fk_box_destroy(rt, "ul", NULL), 0);
}

/* ------------------------------------------------------------ the host's /usr */

static char usr_user_file[128], usr_root_file[128], usr_group_file[128];

static void usr_files_remove(void)
{
	unlink(usr_user_file);
	unlink(usr_root_file);
	unlink(usr_group_file);
}

/* A host file of `uid`:`gid`, `mode`, with `text`; false (printed) if it cannot be made. */
static bool usr_put(const char *path, uid_t uid, gid_t gid, mode_t mode, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return false;
	}
	bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text) &&
	          fchown(fd, uid, gid) == 0 && fchmod(fd, mode) == 0;
	close(fd);
	return ok;
}

/* The host's /usr is seen through a map of host root (and setgid programs' groups) only: a
 * private file of host uid 1000 is no box user's (capybara-sandbox's `sandbox` is uid 1000 in
 * the box) and box root's DAC override does not open it; a file of root and group 1000, 0640,
 * is not the box's group 1000's. Host root's own files stay their owner's, box root's (README,
 * "Isolation"). The setgid programs keep their groups and work: chage reads the box's
 * /etc/shadow as `sandbox` through set-group-id shadow. */
static void test_etc__host_usr_files_are_no_box_users(void **state)
{
	(void)state;
	NEED_ISOLATION(rt);
	int pid = (int)getpid();
	snprintf(usr_user_file, sizeof(usr_user_file), "/usr/local/share/fk-test-u1000-%d", pid);
	snprintf(usr_root_file, sizeof(usr_root_file), "/usr/local/share/fk-test-root-%d", pid);
	snprintf(usr_group_file, sizeof(usr_group_file), "/usr/local/share/fk-test-g1000-%d", pid);
	bool ok = usr_put(usr_user_file, 1000, 1000, 0600, "fk-test u1000\n") &&
	          usr_put(usr_root_file, 0, 0, 0600, "fk-test root\n") &&
	          usr_put(usr_group_file, 0, 1000, 0640, "fk-test g1000\n");
	if (!ok) {
		usr_files_remove();
		fail_msg("cannot plant files under /usr/local/share");
	}
	box_create("usr", "capybara-sandbox");
	char script[1024];
	snprintf(script, sizeof(script),
	         "for f in %s %s %s; do stat -c '%%u:%%g %%a' $f; cat $f 2>&1; done", usr_user_file,
	         usr_group_file, usr_root_file);
	box_result r;
	assert_int_equal(box_bash(rt, "usr", "sandbox", true, &r, "%s", script), 0);
	char want[2048];
	snprintf(want, sizeof(want),
	         "65534:65534 600\ncat: %s: Permission denied\n"
	         "0:65534 640\ncat: %s: Permission denied\n"
	         "0:0 600\ncat: %s: Permission denied\n",
	         usr_user_file, usr_group_file, usr_root_file);
	char *as_sandbox = r.out;
	assert_int_equal(box_bash(rt, "usr", "root", true, &r, "%s", script), 0);
	char *as_root = r.out;
	char want_root[2048];
	snprintf(want_root, sizeof(want_root),
	         "65534:65534 600\ncat: %s: Permission denied\n"
	         "0:65534 640\nfk-test g1000\n"
	         "0:0 600\nfk-test root\n",
	         usr_user_file);
	usr_files_remove();
	assert_string_equal(as_sandbox, want);
	assert_string_equal(as_root, want_root);
	free(as_sandbox);
	free(as_root);
	/* the set-group-id programs keep their groups: chage, set-group-id shadow, reads the
	 * box's /etc/shadow for `sandbox`, who may not read it itself */
	char *o = sh("usr", "sandbox",
	             "stat -c '%G %A' /usr/bin/chage; cat /etc/shadow 2>/dev/null || "
	             "echo no-shadow; chage -l sandbox | grep -c 'Password expires'");
	assert_string_equal(o, "shadow -rwxr-sr-x\nno-shadow\n1\n");
	free(o);
	assert_int_equal(fk_box_destroy(rt, "usr", NULL), 0);
}

static int group_setup(void **state)
{
	(void)state;
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
	(void)state;
	fk_rt_free(rt);
	if (rmdir(state_dir) < 0)
		fprintf(stderr, "state dir %s left: %s\n", state_dir, strerror(errno));
	return 0;
}

static bool put(const char *path, mode_t mode, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return false;
	}
	bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text) && fchmod(fd, mode) == 0;
	close(fd);
	return ok;
}

static void markers_remove(void)
{
	unlink(secret);
	unlink(private_in_allowed);
	unlink(public_in_allowed);
}

/* The host's markers, before the runtime makes its templates from the host's /etc. */
static bool markers_put(void)
{
	int pid = (int)getpid();
	snprintf(secret, sizeof(secret), "/etc/fk-test-secret-%d", pid);
	snprintf(private_in_allowed, sizeof(private_in_allowed),
	         "/etc/profile.d/fk-test-private-%d", pid);
	snprintf(public_in_allowed, sizeof(public_in_allowed),
	         "/etc/profile.d/fk-test-public-%d.sh", pid);
	bool ok = put(secret, 0644, "fk-test secret\n") &&
	          put(private_in_allowed, 0600, "fk-test private\n") &&
	          put(public_in_allowed, 0644, "# fk-test public\n");
	if (!ok)
		markers_remove();
	return ok;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_etc__mountinfo_names_no_host_path),
	    cmocka_unit_test(test_etc__nothing_of_the_host_etc_but_the_allowlist),
	    cmocka_unit_test(test_etc__hostname_hosts_users_are_the_boxs),
	    cmocka_unit_test(test_etc__the_userland_works),
	    cmocka_unit_test(test_etc__host_usr_files_are_no_box_users),
	};
	bool markers = geteuid() == 0 && markers_put();
	int rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
	if (markers)
		markers_remove();
	if (usr_user_file[0])
		usr_files_remove();
	return rc;
}
