/*
 * cli/demo/local.c: the local fake-e2b the demo runs against without E2B credentials (demo.h):
 * found (--fake-e2b, $FAKE_E2B, next to this program, PATH), started on port 0 in its own
 * process group with a fresh random API key handed over in a private file, its output read
 * until it says where it listens, then drained; stopped at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "demo.h"

extern char **environ;

static bool executable(const char *path)
{
	return access(path, X_OK) == 0;
}

/* out = dir + suffix when it fits and names an executable. */
static bool try_path(char *out, size_t outlen, const char *dir, int dirlen, const char *suffix)
{
	int n = snprintf(out, outlen, "%.*s%s", dirlen, dir, suffix);
	return n > 0 && (size_t)n < outlen && executable(out);
}

/* Where fake-e2b is (see --help); `out` gets the path. */
static bool find_fake(demo *d, char *out, size_t outlen)
{
	char self[PATH_MAX], *slash;
	ssize_t n;
	const char *path;

	if (d->fake_path || (getenv("FAKE_E2B") && *getenv("FAKE_E2B"))) {
		snprintf(out, outlen, "%s", d->fake_path ? d->fake_path : getenv("FAKE_E2B"));
		return executable(out);
	}
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/'))) {
			*slash = '\0';
			if (try_path(out, outlen, self, (int)strlen(self),
			             "/../fake-e2b/fake-e2b") ||
			    try_path(out, outlen, self, (int)strlen(self), "/fake-e2b"))
				return true;
		}
	}
	path = getenv("PATH");
	while (path && *path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		if (try_path(out, outlen, len ? path : ".", len ? (int)len : 1, "/fake-e2b"))
			return true;
		path = end ? end + 1 : NULL;
	}
	return false;
}

/* Read fake-e2b's stdout until EOF so it never blocks on a full pipe. */
static void *drain_main(void *arg)
{
	demo *d = arg;
	char buf[4096];
	ssize_t n;

	while ((n = read(d->fake_fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && d->c->verbose)
			(void)!write(STDERR_FILENO, buf, (size_t)n);
	}
	return NULL;
}

/* Wait for "fake-e2b listening on http://127.0.0.1:PORT"; fills d->url. */
static int wait_listening(demo *d, char *why, size_t whylen)
{
	char line[512];
	size_t len = 0;
	uint64_t deadline = demo_now_ms() + DEMO_FAKE_START_MS;
	const char *marker = "listening on ";

	for (;;) {
		struct pollfd pfd = {d->fake_fd, POLLIN, 0};
		uint64_t now = demo_now_ms();
		char *nl, *url;
		ssize_t n;
		int rc;

		if (sbx_signal_aborted(d->c->sig)) {
			snprintf(why, whylen, "interrupted");
			return -1;
		}
		if (now >= deadline) {
			snprintf(why, whylen, "fake-e2b did not say it was listening within %d ms",
			         DEMO_FAKE_START_MS);
			return -1;
		}
		rc = poll(&pfd, 1, (int)(deadline - now > 200 ? 200 : deadline - now));
		if (rc <= 0)
			continue;
		n = read(d->fake_fd, line + len, sizeof(line) - 1 - len);
		if (n <= 0) {
			snprintf(why, whylen,
			         "fake-e2b exited before listening (run it by hand, "
			         "'fake-e2b --port 0', to see why)");
			return -1;
		}
		len += (size_t)n;
		line[len] = '\0';
		if (!(nl = strchr(line, '\n'))) {
			if (len == sizeof(line) - 1)
				len = 0;
			continue;
		}
		*nl = '\0';
		if ((url = strstr(line, marker)) &&
		    strncmp(url + strlen(marker), "http://", 7) == 0) {
			snprintf(d->url, sizeof(d->url), "%s", url + strlen(marker));
			return 0;
		}
		memmove(line, nl + 1, len - (size_t)(nl + 1 - line));
		len -= (size_t)(nl + 1 - line);
	}
}

/* Removes the API key's file and its directory (once fake-e2b has read it, or on failure). */
static void key_file_remove(demo *d)
{
	if (d->key_file[0])
		unlink(d->key_file);
	if (d->key_dir[0])
		rmdir(d->key_dir);
	d->key_file[0] = d->key_dir[0] = '\0';
}

/* A fresh random API key in d->key, written to a file of a private directory: fake-e2b accepts
 * only the key it is given, and reads it from there at start. */
static int key_file_write(demo *d, char *why, size_t whylen)
{
	/* fake-e2b accepts only the key it is given: a fresh random one per run */
	unsigned char rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		snprintf(why, whylen, "no randomness for the API key");
		return -1;
	}
	memcpy(d->key, "e2b_demo", 8);
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(d->key + 8 + 2 * i, 3, "%02x", rnd[i]);
	/* the key goes in a file of a private directory (0700; the file 0600), never on the
	 * command line, which every local user sees in ps; fake-e2b reads it at start, and the
	 * file is removed once it listens (key_file_remove) */
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (snprintf(d->key_dir, sizeof(d->key_dir), "%s/sandbox-e2b-demo-XXXXXX", tmp) >=
	        (int)sizeof(d->key_dir) ||
	    !mkdtemp(d->key_dir)) {
		char ebuf[128];
		d->key_dir[0] = '\0';
		snprintf(why, whylen, "cannot make a directory for the API key: %s",
		         cli_strerror(errno, ebuf, sizeof(ebuf)));
		return -1;
	}
	snprintf(d->key_file, sizeof(d->key_file), "%s/api-key", d->key_dir);
	int kfd = open(d->key_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t klen = strlen(d->key);
	bool written =
	    kfd >= 0 && write(kfd, d->key, klen) == (ssize_t)klen && write(kfd, "\n", 1) == 1;
	if (kfd < 0 || close(kfd) != 0 || !written) {
		char ebuf[128];
		int e = errno;
		key_file_remove(d);
		snprintf(why, whylen, "cannot write the API key file: %s",
		         cli_strerror(e, ebuf, sizeof(ebuf)));
		return -1;
	}
	return 0;
}

static int spawn_fake(demo *d, const char *path, char *why, size_t whylen)
{
	if (key_file_write(d, why, whylen) < 0)
		return -1;
	char *argv[] = {(char *)path, "--port",
	                "0",          "--api-key-file",
	                d->key_file,  d->c->verbose ? NULL : "--quiet",
	                NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t defaults, none;
	int fds[2], rc;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		char ebuf[128];
		snprintf(why, whylen, "pipe: %s", cli_strerror(errno, ebuf, sizeof(ebuf)));
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawnattr_init(&attr);
	/* Its own process group: Ctrl-C reaches us, and we stop it after cleaning up. */
	sigemptyset(&none);
	sigemptyset(&defaults);
	sigaddset(&defaults, SIGPIPE);
	sigaddset(&defaults, SIGINT);
	sigaddset(&defaults, SIGTERM);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigdefault(&attr, &defaults);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
	                                    POSIX_SPAWN_SETSIGMASK);
	rc = posix_spawn(&d->fake_pid, path, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(fds[1]);
	if (rc != 0) {
		char ebuf[128];
		close(fds[0]);
		d->fake_pid = 0;
		if (snprintf(why, whylen, "cannot start %s: %s", path,
		             cli_strerror(rc, ebuf, sizeof(ebuf))) < 0)
			why[0] = '\0';
		return -1;
	}
	d->fake_fd = fds[0];
	return 0;
}

void demo_stop_fake(demo *d)
{
	uint64_t deadline = demo_now_ms() + DEMO_FAKE_STOP_MS;
	int status;

	if (d->fake_pid <= 0)
		return;
	kill(d->fake_pid, SIGTERM);
	while (waitpid(d->fake_pid, &status, WNOHANG) == 0) {
		if (demo_now_ms() >= deadline) {
			fprintf(stderr, "%s demo: fake-e2b did not stop within %d ms; killing it\n",
			        d->c->prog, DEMO_FAKE_STOP_MS);
			kill(d->fake_pid, SIGKILL);
			waitpid(d->fake_pid, &status, 0);
			break;
		}
		usleep(20000);
	}
	d->fake_pid = 0;
	if (d->drain_started)
		pthread_join(d->drain, NULL);
	d->drain_started = false;
	close(d->fake_fd);
}

int demo_start_local(demo *d)
{
	sbx_e2b_options opts = SBX_E2B_OPTIONS_INIT;
	sbx_error err = {0};
	char path[PATH_MAX], why[512], json[256];
	int rc;

	demo_step_begin(d);
	/* Without root fake-e2b cannot isolate a sandbox (README "fake-e2b, the local E2B"): it
	 * would start, then the first file step fail on a host path. Said before, not after. */
	if (geteuid() != 0)
		return demo_step_fail(
		    d, "start fake-e2b", 0, NULL,
		    "the local fake-e2b needs root: it runs each sandbox in Linux "
		    "namespaces and cgroups; run the demo as root, or set "
		    "E2B_API_KEY and E2B_TEMPLATE to use E2B");
	if (!find_fake(d, path, sizeof(path)))
		return demo_step_fail(
		    d, "start fake-e2b", 0, NULL,
		    "cannot find fake-e2b: install its package (README \"Install\") or build it "
		    "(cmake --build BUILD --target fake-e2b), pass --fake-e2b PATH or set "
		    "FAKE_E2B, or set E2B_API_KEY and E2B_TEMPLATE to use E2B");
	int started =
	    spawn_fake(d, path, why, sizeof(why)) < 0 ? -1 : wait_listening(d, why, sizeof(why));
	key_file_remove(d);
	if (started < 0)
		return demo_step_fail(d, "start fake-e2b",
		                      sbx_signal_aborted(d->c->sig) ? SBX_EABORTED : 0, NULL, "%s",
		                      why);
	if (pthread_create(&d->drain, NULL, drain_main, d) == 0)
		d->drain_started = true;
	demo_step_ok(d, "start fake-e2b", "%s (pid %d)", d->url, (int)d->fake_pid);

	/* The key fake-e2b was started with; the template of docs/contract.md "The template"
	 * (fake-e2b serves it from the host's own tools). */
	snprintf(json, sizeof(json),
	         "{\"apiKey\":\"%s\",\"template\":\"capybara-sandbox\",\"apiUrl\":\"%s\"}", d->key,
	         d->url);
	if ((rc = sbx_e2b_config_parse(&d->c->cfg, json, strlen(json), &err)) < 0)
		return demo_step_fail(d, "configure", rc, &err, "local config rejected");
	opts.envd_url = d->url;
	cli_set_logger(d->c, &opts); /* -v: the requests too, as for E2B (docs/cli.md) */
	if ((rc = sbx_e2b_provider_new(&d->c->prov, d->c->cfg, &opts, &err)) < 0)
		return demo_step_fail(d, "configure", rc, &err, "cannot make the provider");
	return 0;
}
