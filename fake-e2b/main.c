/*
 * fake-e2b/main.c: command line, start-up and clean shutdown of fake-e2b.
 *
 *   fake-e2b [options]: the options are opt_table below (`fake-e2b --help` prints them).
 *
 * Flags are described in README.md "Command line".
 *
 * Prints exactly one line "fake-e2b listening on http://HOST:PORT" when ready.
 * SIGINT/SIGTERM: with a kept --state-dir every sandbox is kept (paused with its files, found
 * again by the next start on that directory); ephemeral (--ephemeral, or no --state-dir) every
 * sandbox destroyed. Then exit 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "clock.h"
#include "router.h"
#include "state.h"
#include "tls.h"

typedef struct cli_opts {
	const char *host;
	long port;
	const char *api_key, *api_key_file, *state_dir, *port_file, *domain;
	/* --access-token, --access-token-file: GET /teams's (E2B's AccessTokenAuth) */
	const char *access_token, *access_token_file;
	int any_api_key, allow_remote, quiet, legacy_routes, tls;
	int stream_end_on_exit; /* --stream-end exit */
	int ephemeral;          /* --ephemeral: keep nothing, even with --state-dir */
	int unsafe_shared_network;
	long max_upload_mb, idle_timeout_s, sandbox_disk_mb, request_log_mb, body_budget_mb;
	const char *egress_hosts[64]; /* --egress-host NAME=IP[,IP] */
	size_t n_egress_hosts;
	const char *images[16]; /* --image IMAGE=TEMPLATE: stand-ins for fromImage */
	size_t n_images;
} cli_opts;

/* What an option does with its argument. */
enum opt_kind {
	OPT_STRING, /* the argument, kept as given */
	OPT_FLAG,   /* no argument: the int field becomes 1 */
	OPT_NUMBER, /* a decimal number in [lo, hi] */
	OPT_EXIT,   /* "pipes" or "exit": the int field becomes 1 for "exit" */
	OPT_LIST,   /* repeatable: appended to an array of at most `cap`, counted in `count` */
	OPT_HELP,   /* the usage on stdout, exit 0 */
};

/* One option: the command line is this table (parse_args reads it, usage prints it). */
typedef struct opt_spec {
	const char *name; /* without "--" */
	const char *arg;  /* the argument's name in the usage, NULL: none */
	enum opt_kind kind;
	size_t field; /* offsetof(cli_opts, ...) */
	long lo, hi;  /* OPT_NUMBER */
	size_t count; /* OPT_LIST: offsetof its count (size_t) */
	size_t cap;   /* OPT_LIST */
	int group;    /* options of one group share a usage bracket: "[--a | --b]" */
} opt_spec;

#define F(f) offsetof(cli_opts, f)
static const opt_spec opt_table[] = {
    {"host", "127.0.0.1", OPT_STRING, F(host), 0, 0, 0, 0, 0},
    {"port", "N", OPT_NUMBER, F(port), 0, 65535, 0, 0, 0},
    {"state-dir", "DIR", OPT_STRING, F(state_dir), 0, 0, 0, 0, 0},
    {"port-file", "FILE", OPT_STRING, F(port_file), 0, 0, 0, 0, 0},
    {"api-key", "KEY", OPT_STRING, F(api_key), 0, 0, 0, 0, 1},
    {"api-key-file", "FILE", OPT_STRING, F(api_key_file), 0, 0, 0, 0, 1},
    {"any-api-key", NULL, OPT_FLAG, F(any_api_key), 0, 0, 0, 0, 1},
    {"allow-remote", NULL, OPT_FLAG, F(allow_remote), 0, 0, 0, 0, 0},
    {"access-token", "sk_e2b_HEX", OPT_STRING, F(access_token), 0, 0, 0, 0, 2},
    {"access-token-file", "FILE", OPT_STRING, F(access_token_file), 0, 0, 0, 0, 2},
    {"tls", NULL, OPT_FLAG, F(tls), 0, 0, 0, 0, 0},
    {"domain", "e2b.localhost", OPT_STRING, F(domain), 0, 0, 0, 0, 0},
    {"max-upload-mb", "N", OPT_NUMBER, F(max_upload_mb), 1, 1 << 20, 0, 0, 0},
    {"idle-timeout-s", "N", OPT_NUMBER, F(idle_timeout_s), 1, 3600, 0, 0, 0},
    {"request-log-mb", "N", OPT_NUMBER, F(request_log_mb), 1, 4096, 0, 0, 0},
    {"body-budget-mb", "N", OPT_NUMBER, F(body_budget_mb), 64, 1 << 20, 0, 0, 0},
    {"sandbox-disk-mb", "N", OPT_NUMBER, F(sandbox_disk_mb), 16, 1 << 20, 0, 0, 0},
    {"legacy-routes", NULL, OPT_FLAG, F(legacy_routes), 0, 0, 0, 0, 0},
    {"stream-end", "pipes|exit", OPT_EXIT, F(stream_end_on_exit), 0, 0, 0, 0, 0},
    {"egress-host", "NAME=IP[,IP]", OPT_LIST, F(egress_hosts), 0, 0, F(n_egress_hosts), 64, 0},
    {"image", "IMAGE=TEMPLATE", OPT_LIST, F(images), 0, 0, F(n_images), 16, 0},
    {"unsafe-shared-network", NULL, OPT_FLAG, F(unsafe_shared_network), 0, 0, 0, 0, 0},
    {"ephemeral", NULL, OPT_FLAG, F(ephemeral), 0, 0, 0, 0, 0},
    {"quiet", NULL, OPT_FLAG, F(quiet), 0, 0, 0, 0, 0},
    {"help", NULL, OPT_HELP, 0, 0, 0, 0, 0, 0},
};
#undef F
#define N_OPTS (sizeof(opt_table) / sizeof(opt_table[0]))

/* The usage, from the table: "[--name ARG]" each (a group's options in one bracket, "..." for
 * a repeatable one), wrapped under "usage: fake-e2b". */
static void usage(FILE *f)
{
	const char *lead = "usage: fake-e2b ";
	size_t col = (size_t)fprintf(f, "%s", lead);
	for (size_t i = 0; i < N_OPTS; i++) {
		const opt_spec *o = &opt_table[i];
		if (o->kind == OPT_HELP)
			continue;
		char item[200];
		size_t n = 0;
		int opens = !o->group || i == 0 || opt_table[i - 1].group != o->group;
		int closes = !o->group || i + 1 == N_OPTS || opt_table[i + 1].group != o->group;
		n +=
		    (size_t)snprintf(item + n, sizeof(item) - n, "%s--%s%s%s%s%s", opens ? "[" : "",
		                     o->name, o->arg ? " " : "", o->arg ? o->arg : "",
		                     closes ? "]" : " |", o->kind == OPT_LIST ? "..." : "");
		if (col + n + 1 > 96) {
			fprintf(f, "\n%*s", (int)strlen(lead), "");
			col = strlen(lead);
		} else if (col > strlen(lead)) {
			fputc(' ', f);
			col++;
		}
		col += (size_t)fprintf(f, "%s", item);
	}
	fputc('\n', f);
}

static int parse_number(const char *name, const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > hi) {
		fprintf(stderr, "fake-e2b: bad %s '%s' (%ld..%ld)\n", name, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* sk_e2b_ and 16..128 hex digits, an even number of them (E2B's keys.VerifyKey decodes hex). */
static int access_token_ok(const char *t)
{
	if (strncmp(t, "sk_e2b_", 7) != 0)
		return 0;
	size_t n = strlen(t + 7);
	return n >= 16 && n <= 128 && n % 2 == 0 && strspn(t + 7, "0123456789abcdef") == n;
}

/* Option `o` with argument `arg` into the options: 0, or -1 with the message on stderr. */
static int apply_opt(cli_opts *c, const opt_spec *o, const char *arg)
{
	char *base = (char *)c;
	char flag[64];
	snprintf(flag, sizeof(flag), "--%s", o->name);
	switch (o->kind) {
	case OPT_STRING:
		*(const char **)(base + o->field) = arg;
		return 0;
	case OPT_FLAG:
		*(int *)(base + o->field) = 1;
		return 0;
	case OPT_NUMBER:
		return parse_number(flag, arg, o->lo, o->hi, (long *)(base + o->field));
	case OPT_EXIT:
		if (strcmp(arg, "pipes") && strcmp(arg, "exit")) {
			fprintf(stderr, "fake-e2b: %s must be 'pipes' or 'exit'\n", flag);
			return -1;
		}
		*(int *)(base + o->field) = !strcmp(arg, "exit");
		return 0;
	case OPT_LIST: {
		size_t *n = (size_t *)(base + o->count);
		if (*n == o->cap) {
			fprintf(stderr, "fake-e2b: at most %zu %s\n", o->cap, flag);
			return -1;
		}
		const char *eq = strchr(arg, '=');
		if (!strcmp(o->name, "image") && (!eq || eq == arg || !eq[1])) {
			fprintf(stderr, "fake-e2b: --image wants IMAGE=TEMPLATE, got '%s'\n", arg);
			return -1;
		}
		((const char **)(base + o->field))[(*n)++] = arg;
		return 0;
	}
	case OPT_HELP:
	default:
		usage(stdout);
		exit(0);
	}
}

/* What no single option can check: the options together. */
static int check_opts(const cli_opts *o)
{
	if (!!o->api_key + !!o->api_key_file + o->any_api_key > 1) {
		fprintf(stderr,
		        "fake-e2b: give only one of --api-key, --api-key-file, --any-api-key\n");
		return -1;
	}
	if (o->tls && !o->state_dir) {
		fprintf(stderr, "fake-e2b: --tls keeps its CA in --state-dir: give one\n");
		return -1;
	}
	if (!*o->domain ||
	    strspn(o->domain, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(o->domain)) {
		fprintf(stderr, "fake-e2b: --domain must be a lower-case DNS name\n");
		return -1;
	}
	if (o->api_key && (strlen(o->api_key) < 8 || strpbrk(o->api_key, "\r\n"))) {
		fprintf(stderr, "fake-e2b: --api-key must be at least 8 characters on one line\n");
		return -1;
	}
	if (o->access_token && o->access_token_file) {
		fprintf(stderr, "fake-e2b: give only one of --access-token, --access-token-file\n");
		return -1;
	}
	if (o->access_token && !access_token_ok(o->access_token)) {
		/* E2B's access tokens: sk_e2b_ and the hex of random bytes (shared/pkg/keys) */
		fprintf(stderr,
		        "fake-e2b: --access-token must be sk_e2b_ and 16 to 128 hex digits (an "
		        "even number)\n");
		return -1;
	}
	return 0;
}

static int parse_args(cli_opts *o, int argc, char **argv)
{
	struct option longs[N_OPTS + 1];
	for (size_t i = 0; i < N_OPTS; i++)
		longs[i] = (struct option){opt_table[i].name,
		                           opt_table[i].arg ? required_argument : no_argument, NULL,
		                           256 + (int)i};
	longs[N_OPTS] = (struct option){NULL, 0, NULL, 0};
	int c;
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c < 256 || c >= 256 + (int)N_OPTS) {
			usage(stderr);
			return -1;
		}
		if (apply_opt(o, &opt_table[c - 256], optarg) < 0)
			return -1;
	}
	if (optind < argc) {
		usage(stderr);
		return -1;
	}
	return check_opts(o);
}

/* Is host a loopback IPv4 address (127.0.0.0/8)? */
static int host_is_loopback(const char *host)
{
	struct in_addr a;
	return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* `len` bytes of `data` to `path` (mode `mode`), atomically: a reader never sees half of it.
 * The temporary file beside it has a random name and is made with O_EXCL (mkostemp), so
 * nothing already there is written through: the port file and the key file often live in a
 * directory others may write (/tmp), where a name the server could be predicted to use
 * (`<path>.tmp.<pid>`) let a local user plant a symlink (root then wrote the port over its
 * target) or a file of their own (which then held the API key, readable by them). rename()
 * replaces a symlink at `path` itself, never its target. */
static int write_file_atomic(const char *path, const char *data, size_t len, mode_t mode)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -1;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -1;
	int ok = fchmod(fd, mode) == 0 && write(fd, data, len) == (ssize_t)len;
	if (close(fd) != 0 || !ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int write_port_file(const char *path, unsigned port)
{
	char line[16];
	int n = snprintf(line, sizeof(line), "%u\n", port);
	return write_file_atomic(path, line, (size_t)n, 0644);
}

/* A fresh random key, `prefix` + 40 hex digits (E2B's keys: 20 random bytes in hex). */
static int make_key(const char *prefix, char *out, size_t cap)
{
	unsigned char rnd[20];
	size_t n = strlen(prefix);
	if (cap < n + 41 || RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -1;
	memcpy(out, prefix, n);
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(out + n + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

/* Write the key to path (mode 0600, atomically: a reader never sees half a key). */
static int write_key_file(const char *path, const char *key)
{
	char line[300];
	int n = snprintf(line, sizeof(line), "%s\n", key);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -1;
	return write_file_atomic(path, line, (size_t)n, 0600);
}

/* Read a key from a file (first line) given by option `opt`. 0 or -1 (message on stderr). */
static int read_key_file(const char *opt, const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (!f || !fgets(out, (int)cap, f)) {
		if (f)
			fclose(f);
		fprintf(stderr, "fake-e2b: cannot read %s %s\n", opt, path);
		return -1;
	}
	fclose(f);
	out[strcspn(out, "\r\n")] = '\0';
	if (strlen(out) < 8) {
		fprintf(stderr, "fake-e2b: the key in %s is shorter than 8 characters\n", path);
		return -1;
	}
	return 0;
}

/* The state directory `dir` made (0711, as the runtime keeps it) when missing, and locked for
 * this server: NULL with the reason on stderr. */
static fk_state *lock_state_dir(const char *dir)
{
	char why[512];
	fk_state *st = NULL;
	if (mkdir(dir, 0711) < 0 && errno != EEXIST) {
		fprintf(stderr, "fake-e2b: cannot create the state directory %s: %s\n", dir,
		        strerror_r(errno, why, sizeof(why)));
		return NULL;
	}
	/* The server makes, renames, mounts and removes files in it as root: a directory another
	 * user owns or may write (one made in /tmp before the server, as anyone can) would let
	 * them swap its entries under it (a sandbox's disk image for a symlink to a block device,
	 * the /etc templates, the records). */
	struct stat ds;
	if (lstat(dir, &ds) == 0 && S_ISLNK(ds.st_mode)) { /* the path is used as given, later */
		fprintf(stderr,
		        "fake-e2b: state directory %s is a symbolic link: refused (it could be "
		        "pointed elsewhere under this server); give the directory itself\n",
		        dir);
		return NULL;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &ds) < 0) {
		fprintf(stderr, "fake-e2b: cannot open the state directory %s: %s\n", dir,
		        strerror_r(errno, why, sizeof(why)));
		if (dfd >= 0)
			close(dfd);
		return NULL;
	}
	close(dfd);
	if (ds.st_uid != geteuid() || (ds.st_mode & 022)) {
		fprintf(
		    stderr,
		    "fake-e2b: state directory %s is %s: refused (its owner and group could "
		    "swap the sandboxes' files under this server); give a directory of uid %d's "
		    "that only it may write\n",
		    dir,
		    ds.st_uid != geteuid() ? "owned by another user"
		                           : "writable by its group or others",
		    (int)geteuid());
		return NULL;
	}
	if (fk_state_open(dir, &st, why, sizeof(why)) < 0) {
		fprintf(stderr, "fake-e2b: %s\n", why);
		return NULL;
	}
	return st;
}

/* Thousands of connections need thousands of descriptors: soft limit up to the hard one. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* What main starts and stop_all ends, with the secrets the app points at. */
typedef struct server {
	fk_app app;
	fk_http *http;
	fk_reaper *reaper;
	fk_state *state;
	fk_tls_pem pem;
	int keep; /* a kept --state-dir: sandboxes survive a restart */
	char key[256], key_path[4096], atok[160];
} server;

/* --host: "localhost" is 127.0.0.1; anything but loopback is refused. 0, or -1 (said). */
static int check_host(cli_opts *o)
{
	if (strcmp(o->host, "localhost") == 0)
		o->host = "127.0.0.1";
	if (!host_is_loopback(o->host)) {
		/* everything here (sandboxes, envd tokens, the admin API) is for this machine */
		fprintf(stderr, "fake-e2b: --host %s is not a loopback address; %s\n", o->host,
		        o->allow_remote
		            ? "--allow-remote also needs TLS, which this build does not serve"
		            : "refused without --allow-remote (and TLS)");
		return -1;
	}
	return 0;
}

/* The API key and access token from their options and files, and the app's settings. 0, or -1
 * (said). */
static int configure_app(const cli_opts *o, server *s)
{
	if (o->api_key_file &&
	    read_key_file("--api-key-file", o->api_key_file, s->key, sizeof(s->key)) < 0)
		return -1;
	if (o->access_token_file) {
		if (read_key_file("--access-token-file", o->access_token_file, s->atok,
		                  sizeof(s->atok)) < 0)
			return -1;
		if (!access_token_ok(s->atok)) {
			fprintf(stderr,
			        "fake-e2b: the token in %s is not sk_e2b_ and 16 to 128 hex digits "
			        "(an even number)\n",
			        o->access_token_file);
			return -1;
		}
	}
	if (o->api_key)
		snprintf(s->key, sizeof(s->key), "%s", o->api_key);
	s->app.api_key = o->any_api_key ? NULL : s->key;
	if (o->access_token)
		snprintf(s->atok, sizeof(s->atok), "%s", o->access_token);
	/* no token given: none is a user's (every one is refused), unless --any-api-key */
	s->app.access_token = o->any_api_key && !s->atok[0] ? NULL : s->atok;
	s->app.quiet = o->quiet;
	s->app.legacy_routes = o->legacy_routes;
	s->app.max_upload = (uint64_t)o->max_upload_mb << 20;
	s->app.domain = o->domain;
	s->app.tls = o->tls;
	return 0;
}

/* Lock --state-dir, refuse an ephemeral start over kept sandboxes, make the TLS pair. 0, or -1
 * (said, the lock released). */
static int open_state(const cli_opts *o, server *s)
{
	char why[256];

	/* before anything touches the directory: two servers never share one */
	if (o->state_dir && !(s->state = lock_state_dir(o->state_dir)))
		return -1;
	s->keep = o->state_dir && !o->ephemeral;
	if (o->state_dir && o->ephemeral && fk_state_has_records(o->state_dir, "sandboxes")) {
		/* an ephemeral start would delete them */
		fprintf(stderr,
		        "fake-e2b: --ephemeral: %s holds kept sandboxes; start without --ephemeral "
		        "to use them, or give another --state-dir\n",
		        o->state_dir);
		fk_state_close(s->state);
		return -1;
	}
	if (o->tls && fk_tls_setup(o->state_dir, o->domain, &s->pem, why, sizeof(why)) < 0) {
		fprintf(stderr, "fake-e2b: --tls: %s\n", why);
		fk_state_close(s->state);
		return -1;
	}
	return 0;
}

/* SIGINT/SIGTERM are taken by sigwait in main; every thread inherits the mask. */
static void block_signals(sigset_t *stop)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};

	sigemptyset(stop);
	sigaddset(stop, SIGINT);
	sigaddset(stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, stop, NULL);
	sigaction(SIGPIPE, &ign, NULL);
}

/* No key given: a random one, written 0600 beside the port file (or in $TMPDIR). 0, or -1
 * (said). */
static int ensure_api_key(const cli_opts *o, server *s)
{
	if (o->any_api_key || s->key[0])
		return 0;
	const char *tmp = getenv("TMPDIR");
	if (o->port_file)
		snprintf(s->key_path, sizeof(s->key_path), "%s.api-key", o->port_file);
	else
		snprintf(s->key_path, sizeof(s->key_path), "%s/fake-e2b-%d.api-key",
		         tmp && *tmp ? tmp : "/tmp", (int)getpid());
	if (make_key("e2b_", s->key, sizeof(s->key)) < 0 ||
	    write_key_file(s->key_path, s->key) < 0) {
		fprintf(stderr, "fake-e2b: cannot write the API key file %s\n", s->key_path);
		return -1;
	}
	if (!o->quiet)
		fprintf(stderr, "fake-e2b: API key written to %s\n", s->key_path);
	return 0;
}

/* The runtime, the registry with what its records keep, the template store, the reaper. 0, or
 * -1 (said). */
static int start_sandboxes(const cli_opts *o, server *s, const unsigned char seed[32])
{
	/* FAKE_E2B_TEST_NO_SK_LOOKUP=1 (tests only): act as if the kernel had no BPF sk_lookup */
	const char *no_skl = getenv("FAKE_E2B_TEST_NO_SK_LOOKUP");
	fk_rt_options ro = {.state_dir = o->state_dir,
	                    .end_on_exit = o->stream_end_on_exit,
	                    .default_disk_mb = (unsigned)o->sandbox_disk_mb,
	                    .egress_hosts = o->egress_hosts,
	                    .n_egress_hosts = o->n_egress_hosts,
	                    .unsafe_shared_network = o->unsafe_shared_network,
	                    .no_sk_lookup = no_skl && !strcmp(no_skl, "1"),
	                    /* kept: the boxes outlive this process (README "What survives what") */
	                    .live_restore = s->keep};
	fk_err err = {0};
	if (fk_rt_new(&s->app.rt, &ro, &err) < 0) {
		fprintf(stderr, "fake-e2b: runtime: %s\n", err.message);
		return -1;
	}
	fprintf(stderr, "fake-e2b: state directory %s (%s)\n", fk_rt_state_dir(s->app.rt),
	        s->keep        ? "kept: sandboxes survive a restart"
	        : o->state_dir ? "ephemeral: sandboxes deleted at exit"
	                       : "ephemeral: removed at exit");
	if (fk_registry_new(&s->app.reg, s->app.rt, seed) < 0) {
		fprintf(stderr, "fake-e2b: out of memory\n");
		return -1;
	}
	if (s->keep)
		fk_registry_keep(s->app.reg, s->state);
	/* what the records keep comes back, what dead servers left goes (logged) */
	fk_registry_load(s->app.reg);
	if (!(s->app.faults = fk_faults_new()) ||
	    !(s->app.log = fk_reqlog_new((size_t)o->request_log_mb << 20)) ||
	    fk_tstore_new(&s->app.templates, s->app.rt, seed, s->keep ? s->state : NULL) < 0 ||
	    fk_tstore_add_images(s->app.templates, o->images, o->n_images) < 0 ||
	    !(s->reaper = fk_reaper_start(s->app.reg))) {
		fprintf(stderr, "fake-e2b: out of memory\n");
		return -1;
	}
	return 0;
}

/* The HTTP server on --host:--port, the port file, the "listening" line. 0, or -1. */
static int start_http(const cli_opts *o, server *s)
{
	unsigned port = 0;
	fk_http_hooks hooks = fk_router_hooks(&s->app);
	fk_http_options ho = {.host = o->host,
	                      .port = (unsigned)o->port,
	                      .idle_ms = (unsigned)o->idle_timeout_s * 1000,
	                      .body_budget = (size_t)o->body_budget_mb << 20,
	                      .tls_cert = s->pem.cert,
	                      .tls_key = s->pem.key};
	if (fk_http_start(&s->http, &ho, &hooks, &port) < 0)
		return -1;
	if (o->port_file && write_port_file(o->port_file, port) < 0) {
		fprintf(stderr, "fake-e2b: cannot write %s\n", o->port_file);
		return -1;
	}
	printf("fake-e2b listening on %s://%s:%u\n", o->tls ? "https" : "http", o->host, port);
	fflush(stdout);
	return 0;
}

/* Everything main started, in the order that lets each part finish (any part may be absent). */
static void stop_all(server *s)
{
	fk_stop_begin(); /* fault delays end now */
	fk_http_quiesce(s->http);
	fk_reaper_stop(s->reaper);
	fk_registry_shutdown(s->app.reg); /* destroys every sandbox: streams end */
	fk_http_stop(s->http);
	fk_tstore_free(s->app.templates); /* stops and joins the builds */
	fk_registry_free(s->app.reg);
	fk_reqlog_free(s->app.log);
	fk_faults_free(s->app.faults);
	if (s->app.rt)
		fk_rt_free(s->app.rt);
	fk_state_close(s->state); /* the lock last: the directory is no longer ours */
	if (s->key_path[0])
		unlink(s->key_path);
	fk_tls_pem_free(&s->pem);
	curl_global_cleanup();
}

int main(int argc, char **argv)
{
	cli_opts o = {.host = "127.0.0.1",
	              .max_upload_mb = 2048, /* a 1 GiB file and its multipart envelope fit */
	              .idle_timeout_s = 30,
	              .body_budget_mb = 256,
	              .domain = "e2b.localhost"};
	server s = {0};
	unsigned char seed[32];
	sigset_t stop;
	int sig = 0, status = 1;

	if (parse_args(&o, argc, argv) < 0 || check_host(&o) < 0 || configure_app(&o, &s) < 0)
		return 2;
	if (open_state(&o, &s) < 0)
		return 1;
	raise_fd_limit();
	curl_global_init(CURL_GLOBAL_DEFAULT); /* the port proxy's libcurl, before any thread */
	block_signals(&stop);
	if (RAND_bytes(seed, sizeof(seed)) != 1) {
		fprintf(stderr, "fake-e2b: no randomness for the token seed\n");
		return 1;
	}
	if (ensure_api_key(&o, &s) < 0)
		return 1;
	if (start_sandboxes(&o, &s, seed) == 0 && start_http(&o, &s) == 0) {
		while (sigwait(&stop, &sig) != 0)
			;
		if (!o.quiet)
			fprintf(stderr, "fake-e2b: signal %d, shutting down\n", sig);
		status = 0;
	}
	stop_all(&s);
	return status;
}
