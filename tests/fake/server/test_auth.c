/*
 * tests/fake/server/test_auth.c: fake-e2b asks for a real API key (fake-e2b/README.md
 * "The server's defences"): without --api-key it makes a random one and writes it 0600 beside
 * the port file; any e2b_ key only with --any-api-key; the admin API needs the key;
 * a non-loopback --host is refused. GET /teams takes the access token --access-token(-file)
 * gives (E2B's AccessTokenAuth), and refuses anything else with E2B's words.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
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

#include "fkserver.h"

static const char *g_bin;

static long status_with_key(fks *s, const char *method, const char *path, const char *key)
{
	char h[256];
	snprintf(h, sizeof(h), "X-API-Key: %s", key);
	const char *hdr[] = {h, NULL};
	fkr *r = fks_req(s, method, path, key ? hdr : NULL, NULL, 0);
	assert_int_equal(r->curl_rc, 0);
	long st = r->status;
	if (st == 401)
		assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 401);
	fkr_free(r);
	return st;
}

static void test_auth__generated_key_file_is_0600_and_the_only_key(void **state)
{
	(void)state;
	fks s;
	const char *flags[] = {"--quiet", NULL};
	assert_int_equal(fks_start(&s, g_bin, flags), 0);
	char kf[160];
	snprintf(kf, sizeof(kf), "%s/port.api-key", s.dir);
	struct stat st;
	assert_int_equal(stat(kf, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(strncmp(s.key, "e2b_", 4), 0);
	assert_int_equal(strlen(s.key), 44);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", s.key), 200);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", "e2b_anything"), 401);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", NULL), 401);
	/* the admin API too */
	assert_int_equal(status_with_key(&s, "GET", "/_fake/sandboxes", NULL), 401);
	assert_int_equal(status_with_key(&s, "GET", "/_fake/requests", "e2b_anything"), 401);
	assert_int_equal(status_with_key(&s, "DELETE", "/_fake/faults", "e2b_anything"), 401);
	assert_int_equal(status_with_key(&s, "GET", "/_fake/sandboxes", s.key), 200);
	assert_int_equal(fks_stop(&s), 0);
	assert_int_equal(access(kf, F_OK), -1); /* removed at exit */
}

static void test_auth__given_key_and_any_key_flag(void **state)
{
	(void)state;
	fks s;
	const char *given[] = {"--quiet", "--api-key", "e2b_given_key_1", NULL};
	assert_int_equal(fks_start(&s, g_bin, given), 0);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", "e2b_given_key_1"), 200);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", "e2b_given_key_2"), 401);
	assert_int_equal(fks_stop(&s), 0);
	const char *any[] = {"--quiet", "--any-api-key", NULL};
	assert_int_equal(fks_start(&s, g_bin, any), 0);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", "e2b_whatever"), 200);
	assert_int_equal(status_with_key(&s, "GET", "/_fake/requests", "e2b_whatever"), 200);
	assert_int_equal(status_with_key(&s, "GET", "/v2/sandboxes", "nope_whatever"), 401);
	assert_int_equal(fks_stop(&s), 0);
}

/* The message of a refused X-API-Key (NULL: no header), as E2B words each case. */
static void assert_key_message(fks *s, const char *key, const char *message)
{
	char h[256];
	snprintf(h, sizeof(h), "X-API-Key: %s", key ? key : "");
	const char *hdr[] = {h, NULL};
	fkr *r = fks_req(s, "GET", "/v2/sandboxes", key ? hdr : NULL, NULL, 0);
	assert_int_equal(r->curl_rc, 0);
	assert_int_equal(r->status, 401);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 401);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), message);
	assert_int_equal(json_object_size(r->json), 2);
	fkr_free(r);
}

static void test_auth__refused_keys_get_e2b_messages(void **state)
{
	(void)state;
	fks s;
	const char *flags[] = {"--quiet", NULL};
	assert_int_equal(fks_start(&s, g_bin, flags), 0);
	assert_key_message(&s, NULL, "authorization header is missing");
	assert_key_message(&s, "sk_e2b_00ff", "authorization header is malformed");
	assert_key_message(&s, "E2B_00ff", "authorization header is malformed");
	const char *format = "Invalid API key, please visit https://e2b.dev/docs/api-key for more "
	                     "information.\nInvalid API key format";
	const char *team = "Invalid API key, please visit https://e2b.dev/docs/api-key for more "
	                   "information.\nCannot get the team for the given API key";
	assert_key_message(&s, "e2b_wrong", format); /* not hex */
	assert_key_message(&s, "e2b_abc", format);   /* odd length */
	assert_key_message(&s, "e2b_00ff00ff", team);
	assert_key_message(&s, "e2b_", team); /* hex of nothing: no team has it */
	/* the server's own key with one digit changed: well formed, another team's */
	char other[sizeof(s.key)];
	snprintf(other, sizeof(other), "%s", s.key);
	other[4] = other[4] == '0' ? '1' : '0';
	assert_key_message(&s, other, team);
	assert_int_equal(fks_stop(&s), 0);
}

static void test_auth__non_loopback_host_is_refused(void **state)
{
	(void)state;
	fks s;
	const char *flags[] = {"--any-api-key", "--host", "0.0.0.0", NULL};
	assert_int_equal(fks_start(&s, g_bin, flags), -1);
	assert_true(WIFEXITED(s.exit_status));
	assert_int_equal(WEXITSTATUS(s.exit_status), 2);
	assert_non_null(strstr(s.out, "not a loopback address"));
	fks_stop(&s);
	const char *remote[] = {"--any-api-key", "--host", "0.0.0.0", "--allow-remote", NULL};
	assert_int_equal(fks_start(&s, g_bin, remote), -1);
	assert_non_null(strstr(s.out, "TLS"));
	fks_stop(&s);
}

static void test_auth__short_or_conflicting_keys_are_refused(void **state)
{
	(void)state;
	fks s;
	const char *shortk[] = {"--api-key", "e2b_x", NULL};
	assert_int_equal(fks_start(&s, g_bin, shortk), -1);
	assert_int_equal(WEXITSTATUS(s.exit_status), 2);
	fks_stop(&s);
	const char *both[] = {"--api-key", "e2b_given_key_1", "--any-api-key", NULL};
	assert_int_equal(fks_start(&s, g_bin, both), -1);
	assert_int_equal(WEXITSTATUS(s.exit_status), 2);
	fks_stop(&s);
}

/* GET /teams with the headers given (NULL-terminated); the response (caller frees). */
static fkr *teams(fks *s, const char *const *headers)
{
	fkr *r = fks_req(s, "GET", "/teams", headers, NULL, 0);
	assert_int_equal(r->curl_rc, 0);
	return r;
}

static void assert_refused(fks *s, const char *const *headers, const char *message)
{
	fkr *r = teams(s, headers);
	assert_int_equal(r->status, 401);
	assert_int_equal(json_integer_value(json_object_get(r->json, "code")), 401);
	assert_string_equal(json_string_value(json_object_get(r->json, "message")), message);
	assert_int_equal(json_object_size(r->json), 2);
	fkr_free(r);
}

/* The one team, E2B's Team {teamID, name, apiKey, isDefault}, apiKey a key the server takes. */
static void assert_team(fks *s, const char *const *headers, const char *key)
{
	fkr *r = teams(s, headers);
	assert_int_equal(r->status, 200);
	assert_int_equal(json_array_size(r->json), 1);
	json_t *t = json_array_get(r->json, 0);
	assert_int_equal(json_object_size(t), 4);
	assert_string_equal(json_string_value(json_object_get(t, "teamID")),
	                    "6d9c3b4e-2a1f-4c8e-9b7a-e2b0fa4e0001");
	assert_string_equal(json_string_value(json_object_get(t, "name")), "fake-e2b");
	assert_true(json_is_true(json_object_get(t, "isDefault")));
	const char *api_key = json_string_value(json_object_get(t, "apiKey"));
	assert_non_null(api_key);
	if (key)
		assert_string_equal(api_key, key);
	assert_int_equal(status_with_key(s, "GET", "/v2/sandboxes", api_key), 200);
	fkr_free(r);
}

static void test_auth__teams_takes_the_access_token_not_the_api_key(void **state)
{
	(void)state;
	fks s;
	const char *tok = "sk_e2b_0123456789abcdef0123456789abcdef01234567";
	char dir[] = "/tmp/fake-auth-token-XXXXXX", tf[64], bearer[300];
	assert_non_null(mkdtemp(dir));
	snprintf(tf, sizeof(tf), "%s/token", dir);
	FILE *f = fopen(tf, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", tok);
	fclose(f);
	const char *flags[] = {"--quiet", "--api-key", "e2b_given_key_1", "--access-token-file",
	                       tf,        NULL};
	assert_int_equal(fks_start(&s, g_bin, flags), 0);
	snprintf(bearer, sizeof(bearer), "Authorization: Bearer %s", tok);
	const char *good[] = {bearer, NULL};
	assert_team(&s, good, "e2b_given_key_1");
	/* "Bearer " may be left out, as E2B only strips it */
	char bare[300];
	snprintf(bare, sizeof(bare), "Authorization: %s", tok);
	const char *no_bearer[] = {bare, NULL};
	assert_team(&s, no_bearer, "e2b_given_key_1");

	/* E2B's refusals (infra auth middleware): the API key is not this route's scheme */
	const char *key_only[] = {"X-API-Key: e2b_given_key_1", NULL};
	assert_refused(&s, key_only, "authorization header is missing");
	assert_refused(&s, NULL, "authorization header is missing");
	const char *not_token[] = {"Authorization: Bearer e2b_given_key_1", NULL};
	assert_refused(&s, not_token, "authorization header is malformed");
	const char *not_hex[] = {"Authorization: Bearer sk_e2b_xyz1", NULL};
	assert_refused(&s, not_hex,
	               "Invalid Access token, try to login again by running `e2b auth login`.\n"
	               "Invalid access token format");
	const char *odd[] = {"Authorization: Bearer sk_e2b_abc", NULL};
	assert_refused(&s, odd,
	               "Invalid Access token, try to login again by running `e2b auth login`.\n"
	               "Invalid access token format");
	const char *other[] = {"Authorization: Bearer sk_e2b_00112233445566778899aabbccddeeff0011",
	                       NULL};
	assert_refused(&s, other,
	               "Invalid Access token, try to login again by running `e2b auth login`.\n"
	               "Cannot get the user for the given access token");
	/* the token is not an API key either */
	char as_key[300];
	snprintf(as_key, sizeof(as_key), "X-API-Key: %s", tok);
	const char *tok_as_key[] = {as_key, NULL};
	fkr *r = fks_req(&s, "GET", "/v2/sandboxes", tok_as_key, NULL, 0);
	assert_int_equal(r->status, 401);
	fkr_free(r);
	assert_int_equal(fks_stop(&s), 0);
	unlink(tf);
	rmdir(dir);

	/* no token given: every token is one of no user */
	const char *none[] = {"--quiet", "--api-key", "e2b_given_key_1", NULL};
	assert_int_equal(fks_start(&s, g_bin, none), 0);
	assert_refused(&s, good,
	               "Invalid Access token, try to login again by running `e2b auth login`.\n"
	               "Cannot get the user for the given access token");
	assert_refused(&s, key_only, "authorization header is missing");
	assert_int_equal(fks_stop(&s), 0);

	/* --access-token gives it; --any-api-key alone takes any well-formed one and mints keys */
	const char *given[] = {"--quiet", "--any-api-key", "--access-token",
	                       "sk_e2b_0123456789abcdef0123", NULL};
	assert_int_equal(fks_start(&s, g_bin, given), 0);
	const char *given_ok[] = {"Authorization: Bearer sk_e2b_0123456789abcdef0123", NULL};
	assert_team(&s, given_ok, NULL);
	assert_refused(&s, other,
	               "Invalid Access token, try to login again by running `e2b auth login`.\n"
	               "Cannot get the user for the given access token");
	assert_int_equal(fks_stop(&s), 0);
	const char *any[] = {"--quiet", "--any-api-key", NULL};
	assert_int_equal(fks_start(&s, g_bin, any), 0);
	assert_team(&s, other, NULL);
	assert_refused(&s, key_only, "authorization header is missing");
	assert_int_equal(fks_stop(&s), 0);
	const char *bad[] = {"--quiet", "--access-token", "sk_e2b_short", NULL};
	assert_int_equal(fks_start(&s, g_bin, bad), -1);
	assert_int_equal(WEXITSTATUS(s.exit_status), 2);
	fks_stop(&s);
	const char *both[] = {"--quiet", "--access-token", tok, "--access-token-file", tf, NULL};
	assert_int_equal(fks_start(&s, g_bin, both), -1);
	assert_int_equal(WEXITSTATUS(s.exit_status), 2);
	fks_stop(&s);
}

static void read_text(const char *path, char *buf, size_t cap)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
}

/* The port file and the key file are often in a directory others may write (/tmp). Files a
 * local user plants at the names the server would have used for their temporary copies
 * (`<file>.tmp.<pid>`: a symlink to a file of root's, a file of the user's own) must not be
 * written through: before, root wrote the port over the symlink's target and the API key into
 * the user's file. The server's pid is known before it runs (it waits on a pipe), so the
 * names are planted first. */
static void test_auth__planted_temporary_files_are_not_written_through(void **state)
{
	(void)state;
	char dir[] = "/tmp/fk-auth-plant-XXXXXX", pf[96], kf[112], out[96], victim[96];
	char ptmp[128], ktmp[128], text[8192];
	assert_non_null(mkdtemp(dir));
	snprintf(pf, sizeof(pf), "%s/pf", dir);
	snprintf(kf, sizeof(kf), "%s/pf.api-key", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	int vfd = open(victim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(vfd >= 0);
	assert_int_equal(write(vfd, "precious\n", 9), 9);
	close(vfd);
	int gate[2];
	assert_int_equal(pipe(gate), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		close(gate[1]);
		if (read(gate[0], &c, 1) != 1)
			_exit(126);
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(g_bin, g_bin, "--port", "0", "--ephemeral", "--quiet", "--port-file", pf,
		      (char *)NULL);
		_exit(127);
	}
	close(gate[0]);
	snprintf(ptmp, sizeof(ptmp), "%s.tmp.%d", pf, (int)pid);
	snprintf(ktmp, sizeof(ktmp), "%s.tmp.%d", kf, (int)pid);
	assert_int_equal(symlink(victim, ptmp), 0);
	assert_int_equal(symlink(victim, pf), 0); /* and the port file's own name */
	int kfd = open(ktmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(kfd >= 0);
	assert_int_equal(fchown(kfd, 65534, 65534), 0); /* a file of nobody's */
	close(kfd);
	assert_int_equal(write(gate[1], "x", 1), 1);
	close(gate[1]);
	unsigned port = 0;
	for (int i = 0; i < 1500 && !port; i++) {
		read_text(out, text, sizeof(text));
		char *line = strstr(text, "fake-e2b listening on http://127.0.0.1:");
		if (line)
			port = (unsigned)strtoul(line + 39, NULL, 10);
		else
			usleep(20000);
	}
	kill(pid, SIGTERM);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	print_message("server output: %s\n", text);
	assert_true(port > 0);
	read_text(victim, text, sizeof(text));
	assert_string_equal(text, "precious\n"); /* before: the port number */
	/* the planted key file is untouched: still nobody's and empty (before: the key, 0600) */
	struct stat ks;
	assert_int_equal(lstat(ktmp, &ks), 0);
	assert_int_equal(ks.st_uid, 65534);
	assert_int_equal(ks.st_size, 0);
	assert_int_equal(lstat(ptmp, &ks), 0);
	assert_true(S_ISLNK(ks.st_mode));
	/* the port file is a file of its own (the symlink replaced), and was right */
	assert_int_equal(lstat(pf, &ks), 0);
	assert_true(S_ISREG(ks.st_mode));
	assert_int_equal(ks.st_uid, geteuid());
	read_text(pf, text, sizeof(text));
	assert_int_equal(strtoul(text, NULL, 10), port);
	assert_int_equal(access(kf, F_OK), -1); /* removed at exit, as always */
	unlink(ptmp);
	unlink(ktmp);
	unlink(pf);
	unlink(out);
	unlink(victim);
	assert_int_equal(rmdir(dir), 0);
}

int main(int argc, char **argv)
{
	if (!(g_bin = fks_bin_arg(argc, argv)))
		return 2;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_auth__generated_key_file_is_0600_and_the_only_key),
	    cmocka_unit_test(test_auth__given_key_and_any_key_flag),
	    cmocka_unit_test(test_auth__refused_keys_get_e2b_messages),
	    cmocka_unit_test(test_auth__non_loopback_host_is_refused),
	    cmocka_unit_test(test_auth__short_or_conflicting_keys_are_refused),
	    cmocka_unit_test(test_auth__teams_takes_the_access_token_not_the_api_key),
	    cmocka_unit_test(test_auth__planted_temporary_files_are_not_written_through),
	};
	return cmocka_run_group_tests_name("fake_auth", tests, NULL, NULL);
}
