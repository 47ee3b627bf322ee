/*
 * tests/fuzz/fake_stub_link_check.c: links fake-e2b's router (and through it the whole HTTP
 * side) against fake_stub_runtime.c in every build; a runtime call without a stub there is a
 * link error here (tests/fuzz/CMakeLists.txt). Run with --state-dirs (ctest
 * fuzz_stub.state_dirs) it checks the stub's state directories: a stale one of a dead process
 * is removed at the next start, a live process's is kept, a runtime's own is removed by
 * fk_rt_free() and at exit.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app.h"
#include "router.h"
#include "runtime.h"

static int failures;

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "FAIL: %s\n", what);
		failures++;
	}
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A directory as a fuzzer leaves it, with a file inside. */
static void make_state_dir(char *out, size_t outlen, pid_t pid, const char *suffix)
{
	char file[256];
	snprintf(out, outlen, "/var/tmp/fuzz-fake-%d-%s", (int)pid, suffix);
	snprintf(file, sizeof(file), "%s/left", out);
	check(mkdir(out, 0700) == 0, "mkdir a state dir");
	FILE *f = fopen(file, "w");
	check(f != NULL, "a file in it");
	if (f)
		fclose(f);
}

static int state_dirs(void)
{
	char stale[128], live[128], own[64];
	fk_err err = {0};
	fk_rt *rt = NULL;

	/* a pid no process has: a child that has exited and been reaped */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	make_state_dir(stale, sizeof(stale), dead, "Stale1");
	make_state_dir(live, sizeof(live), getppid(), "Live01");

	check(fk_rt_new(&rt, NULL, &err) == 0, "fk_rt_new");
	check(!is_dir(stale), "the dead process's dir is removed at start");
	check(is_dir(live), "a live process's dir is kept");
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "/var/tmp/fuzz-fake-%d-", (int)getpid());
	snprintf(own, sizeof(own), "%s", rt ? fk_rt_state_dir(rt) : "");
	check(strncmp(own, prefix, strlen(prefix)) == 0 && strlen(own) == strlen(prefix) + 6,
	      "the state dir is named by its pid");
	check(is_dir(own), "the state dir exists");
	fk_rt_free(rt);
	check(!is_dir(own), "fk_rt_free removes it");

	/* a runtime never freed: its dir goes at exit */
	int fds[2];
	check(pipe(fds) == 0, "pipe");
	pid_t child = fork();
	if (child == 0) {
		fk_rt *r = NULL;
		if (fk_rt_new(&r, NULL, &err) < 0)
			_exit(1);
		char path[64];
		snprintf(path, sizeof(path), "%s", fk_rt_state_dir(r));
		if (write(fds[1], path, sizeof(path)) != (ssize_t)sizeof(path))
			_exit(1);
		exit(0);
	}
	char path[64] = "";
	close(fds[1]);
	check(read(fds[0], path, sizeof(path)) == (ssize_t)sizeof(path), "the child's dir");
	close(fds[0]);
	int st = -1;
	waitpid(child, &st, 0);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child exits 0");
	check(path[0] && !is_dir(path), "exit removes a dir never freed");

	char file[160];
	snprintf(file, sizeof(file), "%s/left", live);
	unlink(file);
	rmdir(live);
	if (!failures)
		printf("state dirs: ok\n");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--state-dirs") == 0)
		return state_dirs();
	fk_app app = {0};
	fk_http_hooks h = fk_router_hooks(&app);
	return h.route ? 0 : 1;
}
