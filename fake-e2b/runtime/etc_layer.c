/*
 * fake-e2b/runtime/etc_layer.c — the /etc a box gets (etc_layer.h).
 *
 * A box's userland is the host's /usr (read-only), so a few host files in /etc are what that
 * userland needs to run: the dynamic linker's cache, the alternatives /usr/bin links through,
 * PAM for su/runuser/sudo, the public CA certificates... Those are taken from the host by an
 * explicit allowlist (below, each with why), and of them only what every user of the host may
 * read anyway: a regular file or directory not readable by others (shadow-like 0600/0640 files,
 * /etc/ssl/private's 0700) is never copied, whatever its directory. Everything naming this
 * machine or its users (passwd, group, shadow, hostname, hosts, machine-id, sudoers, the
 * resolver, the time zone) is written for the box. Nothing else of the host's /etc is there:
 * not its secrets (shadow, gshadow, SSH host keys, TLS private keys, keytabs, VPN and package
 * manager credentials), not its service configuration.
 */
#define _GNU_SOURCE
#include "etc_layer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Host /etc entries a box gets (fnmatch patterns of paths relative to /etc; a directory is copied
 * whole, minus what others may not read). */
static const char *const host_allow[] = {
    /* the dynamic linker: libraries outside /lib and /usr/lib (multiarch, /usr/local/lib) */
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    /* /usr/bin/python3, cc, java, editor... are symlinks through /etc/alternatives */
    "alternatives",
    /* su, runuser and sudo go through PAM (security/: limits, pam_env; its 0600 opasswd is
     * not copied); login.defs for them and for useradd in a template build */
    "pam.conf",
    "pam.d",
    "security",
    "login.defs",
    "sudo.conf",
    "adduser.conf",
    "deluser.conf",
    "default/useradd",
    /* TLS clients verify servers with the public CA certificates (never ssl/private) */
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    /* shells: start files, the skeleton of new homes, readline, the list of login shells */
    "profile",
    "profile.d",
    "bash.bashrc",
    "bash_completion",
    "bash_completion.d",
    "skel",
    "inputrc",
    "shells",
    "terminfo",
    /* the C library's tables (protocol, service and network names; address sorting) and
     * locale aliases */
    "protocols",
    "services",
    "rpc",
    "networks",
    "ethertypes",
    "gai.conf",
    "host.conf",
    "locale.alias",
    /* file types, for file(1), Python's mimetypes, mail and web tools */
    "mime.types",
    "magic",
    "magic.mime",
    /* which system this is (os-release links into /usr/lib) */
    "os-release",
    "lsb-release",
    "debian_version",
    "issue",
    "issue.net",
    /* languages' and tools' system configuration, which their files in /usr refer to
     * (Debian's Python reads its sitecustomize here, Java its security policy) */
    "python3",
    "python3.*",
    "perl",
    "java-*",
    "fonts",
    "vim",
    "gdb",
    "groff",
    "manpath.config",
    "xattr.conf",
    "mke2fs.conf",
    "dpkg",
    "debconf.conf",
    "ucf.conf",
    "xml",
    "sgml",
    "gprofng.rc",
    "fpc.cfg",
    "fpc-*.cfg",
    "gnucobol",
    "maven",
    /* the SSH client's configuration (never the host keys beside it) */
    "ssh/ssh_config",
    "ssh/ssh_config.d",
};
/* Left out on purpose: apt (auth.conf.d holds credentials; /usr is read-only anyway), pip.conf,
 * npmrc, gitconfig and wgetrc (index tokens, credential helpers, proxy passwords), environment
 * (proxy credentials; the box gets an empty one), the host's hostname, hosts, fstab, machine-id,
 * subuid/subgid, cron, systemd, init scripts and every service's configuration. */

#define TREE_DEPTH_MAX 16

/* Debian's base-passwd: the system users and groups every Debian system has. */
static const char base_passwd[] = "root:x:0:0:root:/root:/bin/bash\n"
                                  "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
                                  "bin:x:2:2:bin:/bin:/usr/sbin/nologin\n"
                                  "sys:x:3:3:sys:/dev:/usr/sbin/nologin\n"
                                  "sync:x:4:65534:sync:/bin:/bin/sync\n"
                                  "games:x:5:60:games:/usr/games:/usr/sbin/nologin\n"
                                  "man:x:6:12:man:/var/cache/man:/usr/sbin/nologin\n"
                                  "lp:x:7:7:lp:/var/spool/lpd:/usr/sbin/nologin\n"
                                  "mail:x:8:8:mail:/var/mail:/usr/sbin/nologin\n"
                                  "news:x:9:9:news:/var/spool/news:/usr/sbin/nologin\n"
                                  "uucp:x:10:10:uucp:/var/spool/uucp:/usr/sbin/nologin\n"
                                  "proxy:x:13:13:proxy:/bin:/usr/sbin/nologin\n"
                                  "www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n"
                                  "backup:x:34:34:backup:/var/backups:/usr/sbin/nologin\n"
                                  "list:x:38:38:Mailing List Manager:/var/list:/usr/sbin/nologin\n"
                                  "irc:x:39:39:ircd:/run/ircd:/usr/sbin/nologin\n"
                                  "_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\n"
                                  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";

static const char *const base_groups[] = {
    "root:0",    "daemon:1",      "bin:2",      "sys:3",      "adm:4",    "tty:5",
    "disk:6",    "lp:7",          "mail:8",     "news:9",     "uucp:10",  "man:12",
    "proxy:13",  "kmem:15",       "dialout:20", "fax:21",     "voice:22", "cdrom:24",
    "floppy:25", "tape:26",       "sudo:27",    "audio:29",   "dip:30",   "www-data:33",
    "backup:34", "operator:37",   "list:38",    "irc:39",     "src:40",   "shadow:42",
    "utmp:43",   "video:44",      "sasl:45",    "plugdev:46", "staff:50", "games:60",
    "users:100", "nogroup:65534",
};
#define N_BASE_GROUPS (sizeof(base_groups) / sizeof(base_groups[0]))

/* E2B's /etc/hosts (its template builder's), naming the box's hostname */
static const char hosts_text[] = "127.0.0.1\tlocalhost\n"
                                 "::1\tlocalhost ip6-localhost ip6-loopback\n"
                                 "fe00::\tip6-localnet\n"
                                 "ff00::\tip6-mcastprefix\n"
                                 "ff02::1\tip6-allnodes\n"
                                 "ff02::2\tip6-allrouters\n"
                                 "127.0.1.1\t" FK_BOX_HOSTNAME "\n";

/* Only files: the box's names are in its own files, whatever module the host uses. */
static const char nsswitch_text[] = "passwd:         files\n"
                                    "group:          files\n"
                                    "shadow:         files\n"
                                    "gshadow:        files\n"
                                    "hosts:          files dns\n"
                                    "networks:       files\n"
                                    "protocols:      files\n"
                                    "services:       files\n"
                                    "ethers:         files\n"
                                    "rpc:            files\n";

/* Debian's default sudoers: root and the sudo group, and the drop-in directory. */
static const char sudoers_text[] =
    "Defaults\tenv_reset\n"
    "Defaults\tmail_badpass\n"
    "Defaults\tsecure_path=\"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"\n"
    "root\tALL=(ALL:ALL) ALL\n"
    "%sudo\tALL=(ALL:ALL) ALL\n"
    "@includedir /etc/sudoers.d\n";

/* ------------------------------------------------------------ copying from the host */

static void own_root(int dirfd, const char *name)
{
	/* host root's, which an idmapped template shows as the box's root */
	if (fchownat(dirfd, name, 0, 0, AT_SYMLINK_NOFOLLOW) < 0 && geteuid() == 0)
		fprintf(stderr, "fake-e2b: chown /etc/%s: %s\n", name, strerrordesc_np(errno));
}

static int copy_file(int sdir, int ddir, const char *name, mode_t mode)
{
	int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (in < 0)
		return errno == EACCES ? 0 : -1; /* not root (degraded mode): not readable */
	int out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		int e = errno;
		close(in);
		errno = e;
		return e == EEXIST ? 0 : -1;
	}
	char buf[65536];
	ssize_t n;
	int rc = 0;
	while (rc == 0 && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, (size_t)n) != n)
			rc = -1;
	}
	if (rc == 0 && fchown(out, 0, 0) < 0 && geteuid() == 0)
		rc = -1;
	if (rc == 0 && fchmod(out, mode & 0777) < 0)
		rc = -1;
	int e = errno;
	close(in);
	if (close(out) < 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	errno = e;
	return rc;
}

static int copy_entry(int sdir, int ddir, const char *name, int depth);

static int copy_dir(int sdir, int ddir, const char *name, mode_t mode, int depth)
{
	if (depth >= TREE_DEPTH_MAX)
		return 0;
	if (mkdirat(ddir, name, 0700) < 0 && errno != EEXIST)
		return -1;
	int s = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0)
		return errno == EACCES ? 0 : -1;
	int d = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *dir = d >= 0 ? fdopendir(s) : NULL;
	if (!dir) {
		int e = errno;
		close(s);
		if (d >= 0)
			close(d);
		errno = e;
		return -1;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(dir)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = copy_entry(dirfd(dir), d, de->d_name, depth + 1);
	int e = errno;
	closedir(dir);
	if (rc == 0 && fchmod(d, mode & 0777) < 0) {
		rc = -1;
		e = errno;
	}
	close(d);
	if (rc == 0)
		own_root(ddir, name);
	errno = e;
	return rc;
}

/* Copies host entry `name` of `sdir` into `ddir`: a symlink as it is (it resolves inside the
 * box), a regular file or directory only when others may read it (and enter it), nothing else. */
static int copy_entry(int sdir, int ddir, const char *name, int depth)
{
	struct stat st;
	if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = readlinkat(sdir, name, target, sizeof(target) - 1);
		if (n < 0)
			return -1;
		target[n] = 0;
		if (symlinkat(target, ddir, name) < 0)
			return errno == EEXIST ? 0 : -1;
		own_root(ddir, name);
		return 0;
	}
	if (S_ISREG(st.st_mode) && (st.st_mode & S_IROTH))
		return copy_file(sdir, ddir, name, st.st_mode);
	if (S_ISDIR(st.st_mode) && (st.st_mode & S_IROTH) && (st.st_mode & S_IXOTH))
		return copy_dir(sdir, ddir, name, st.st_mode, depth);
	return 0; /* private, or a device, FIFO or socket */
}

/* Copies allowlisted path `rel` (no pattern) from the host's /etc, its parent directories made
 * 0755 when the host has it. */
static int copy_path(int host_etc, int dst, const char *rel)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", rel);
	char *slash = strrchr(buf, '/');
	if (!slash)
		return copy_entry(host_etc, dst, buf, 0);
	*slash = 0;
	struct stat st;
	if (fstatat(host_etc, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	int sp = openat(host_etc, buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sp < 0)
		return 0;
	int rc = 0, dp = dup(dst);
	for (char *c = buf, *next; dp >= 0 && c; c = next) {
		next = strchr(c, '/');
		if (next)
			*next++ = 0;
		bool made = mkdirat(dp, c, 0755) == 0;
		if (!made && errno != EEXIST)
			rc = -1;
		else if (made)
			own_root(dp, c);
		int n = openat(dp, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dp);
		dp = n;
	}
	if (dp < 0)
		rc = -1;
	if (rc == 0)
		rc = copy_entry(sp, dp, slash + 1, 1);
	int e = errno;
	close(sp);
	if (dp >= 0)
		close(dp);
	errno = e;
	return rc;
}

static int copy_allowed(int dst)
{
	int host = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (host < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof(host_allow) / sizeof(host_allow[0]); i++) {
		const char *pat = host_allow[i];
		if (!strpbrk(pat, "*?[")) {
			rc = copy_path(host, dst, pat);
			continue;
		}
		/* a pattern: top-level entries only */
		int fd = dup(host);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			if (fd >= 0)
				close(fd);
			rc = -1;
			break;
		}
		rewinddir(d);
		struct dirent *de;
		while (rc == 0 && (de = readdir(d)) != NULL)
			if (de->d_name[0] != '.' && fnmatch(pat, de->d_name, 0) == 0)
				rc = copy_entry(host, dst, de->d_name, 0);
		closedir(d);
	}
	int e = errno;
	close(host);
	errno = e;
	return rc;
}

/* ------------------------------------------------------------ the box's own files */

static int write_text(int dir, const char *name, const char *text, mode_t mode)
{
	unlinkat(dir, name, 0);
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t len = strlen(text);
	int rc = write(fd, text, len) == (ssize_t)len ? 0 : -1;
	if (rc == 0 && fchmod(fd, mode) < 0)
		rc = -1;
	if (rc == 0 && fchown(fd, 0, 0) < 0 && geteuid() == 0)
		rc = -1;
	int e = errno;
	if (close(fd) < 0 && rc == 0)
		return -1;
	errno = e;
	return rc;
}

/* The host's nameservers, for a box on the host's network (no egress proxy of its own). */
static int host_resolv(char *buf, size_t size)
{
	int fd = open("/etc/resolv.conf", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	buf[n] = 0;
	return 0;
}

static int write_users(int dir, const fk_template *t)
{
	size_t cap = sizeof(base_passwd) + 4096;
	char *pw = malloc(cap), *sh = malloc(cap), *gr = malloc(cap), *gs = malloc(cap);
	int rc = -1;
	if (!pw || !sh || !gr || !gs) {
		errno = ENOMEM;
		goto out;
	}
	int n = snprintf(pw, cap, "%s%s:x:%u:%u:%s:%s:/bin/bash\n", base_passwd, t->user, t->uid,
	                 t->gid, t->user, t->home);
	/* shadow: every account locked; the template's user too (no password: its sudo, when it
	 * has one, is passwordless) */
	size_t sl = 0, gl = 0, gsl = 0;
	for (const char *line = base_passwd; *line; line = strchr(line, '\n') + 1)
		sl += (size_t)snprintf(sh + sl, cap - sl, "%.*s:*:19000:0:99999:7:::\n",
		                       (int)strcspn(line, ":"), line);
	sl += (size_t)snprintf(sh + sl, cap - sl, "%s:!:19000:0:99999:7:::\n", t->user);
	for (size_t i = 0; i < N_BASE_GROUPS; i++) {
		const char *colon = strchr(base_groups[i], ':');
		gl += (size_t)snprintf(gr + gl, cap - gl, "%.*s:x:%s:\n",
		                       (int)(colon - base_groups[i]), base_groups[i], colon + 1);
		gsl += (size_t)snprintf(gs + gsl, cap - gsl, "%.*s:*::\n",
		                        (int)(colon - base_groups[i]), base_groups[i]);
	}
	gl += (size_t)snprintf(gr + gl, cap - gl, "%s:x:%u:\n", t->user, t->gid);
	gsl += (size_t)snprintf(gs + gsl, cap - gsl, "%s:!::\n", t->user);
	if (n < 0 || (size_t)n >= cap || sl >= cap || gl >= cap || gsl >= cap) {
		errno = ENAMETOOLONG;
		goto out;
	}
	rc = write_text(dir, "passwd", pw, 0644) | write_text(dir, "group", gr, 0644) |
	     write_text(dir, "shadow", sh, 0640) | write_text(dir, "gshadow", gs, 0640);
	/* shadow and gshadow are group shadow's, as Debian has them (unix_chkpwd) */
	if (rc == 0 &&
	    (fchownat(dir, "shadow", 0, 42, 0) < 0 || fchownat(dir, "gshadow", 0, 42, 0) < 0) &&
	    geteuid() == 0)
		rc = -1;
out:
	free(pw);
	free(sh);
	free(gr);
	free(gs);
	return rc;
}

static int write_sudoers(int dir, const fk_template *t)
{
	if (write_text(dir, "sudoers", sudoers_text, 0440) < 0)
		return -1;
	if (mkdirat(dir, "sudoers.d", 0755) < 0 && errno != EEXIST)
		return -1;
	if (!t->sudo)
		return 0;
	int d = openat(dir, "sudoers.d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		return -1;
	char name[128], line[256];
	snprintf(name, sizeof(name), "fake-e2b-%s", t->user);
	snprintf(line, sizeof(line), "%s ALL=(ALL:ALL) NOPASSWD: ALL\n", t->user);
	int rc = write_text(d, name, line, 0440);
	int e = errno;
	close(d);
	errno = e;
	return rc;
}

int fk__etc_make(const char *dst, const fk_template *t, bool own_dns)
{
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return -1;
	int dir = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return -1;
	int rc = copy_allowed(dir);
	char resolv[4096];
	if (own_dns)
		/* E2B's resolver (8.8.8.8); in a box's own network namespace every address on port
		 * 53/udp is its egress proxy's DNS, so nothing leaves the machine unchecked */
		snprintf(
		    resolv, sizeof(resolv), "%s",
		    "# fake-e2b: answered by the sandbox's egress proxy\nnameserver 8.8.8.8\n");
	else
		host_resolv(resolv, sizeof(resolv));
	char hostname[64];
	snprintf(hostname, sizeof(hostname), "%s\n", FK_BOX_HOSTNAME);
	if (rc == 0)
		rc = write_users(dir, t);
	if (rc == 0)
		rc = write_text(dir, "hostname", hostname, 0644) |
		     write_text(dir, "hosts", hosts_text, 0644) |
		     write_text(dir, "resolv.conf", resolv, 0644) |
		     write_text(dir, "nsswitch.conf", nsswitch_text, 0644) |
		     write_text(dir, "environment", "", 0644) |
		     write_text(dir, "timezone", "Etc/UTC\n", 0644) | write_sudoers(dir, t);
	/* E2B's sandboxes run in UTC; mtab as systemd makes it */
	static const char *const links[][2] = {{"localtime", "/usr/share/zoneinfo/Etc/UTC"},
	                                       {"mtab", "../proc/self/mounts"}};
	for (size_t i = 0; rc == 0 && i < 2; i++) {
		unlinkat(dir, links[i][0], 0);
		rc = symlinkat(links[i][1], dir, links[i][0]);
		if (rc == 0)
			own_root(dir, links[i][0]);
	}
	int e = errno;
	close(dir);
	errno = e;
	return rc < 0 ? -1 : 0;
}

int fk__etc_machine_id(const char *path, uid_t owner)
{
	unsigned char r[16];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -1;
	/* systemd's format: 32 lower-case hex digits (a version 4 UUID's bits), a newline */
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	char text[34];
	for (int i = 0; i < 16; i++)
		snprintf(text + 2 * i, 3, "%02x", r[i]);
	text[32] = '\n';
	text[33] = 0;
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return -1;
	int rc = write(fd, text, 33) == 33 ? 0 : -1;
	if (rc == 0 && fchown(fd, owner, owner) < 0 && geteuid() == 0)
		rc = -1;
	int e = errno;
	if (close(fd) < 0 && rc == 0)
		return -1;
	errno = e;
	return rc;
}
