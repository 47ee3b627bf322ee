/*
 * e2b/scripts.c: the exec wrapper's argv (docs/exec.md "How a command runs"), the exec and
 * file-operation control paths and UUIDs, so that the protocol code knows nothing of shell.
 * The in-sandbox scripts themselves are src/e2b/scripts/NAME.sh, embedded at build time
 * (cmake/embed.cmake) as the strings sbx__e2b_NAME that scripts.h declares.
 */
#include "e2b/scripts.h"

#include <errno.h>
#include <inttypes.h>
#include <sandbox/error.h>
#include <stdio.h>
#include <sys/random.h>
#include <uuid/uuid.h>

uint64_t sbx__e2b_exec_seconds(uint64_t timeout_ms)
{
	/* ceil(ms / 1000) + 5 without the overflow of (ms + 999) / 1000:
	 * UINT64_MAX / 1000 + 1 + 5 is far below UINT64_MAX. */
	return timeout_ms / 1000 + (timeout_ms % 1000 != 0) + SBX_E2B_IN_SANDBOX_GRACE_SECONDS;
}

void sbx__e2b_exec_args(const char *args[SBX_E2B_EXEC_ARGC], char *seconds_buf, size_t buflen,
                        const char *ctl, const char *command, uint64_t timeout_ms)
{
	snprintf(seconds_buf, buflen, "%" PRIu64, sbx__e2b_exec_seconds(timeout_ms));
	args[0] = "-c";
	args[1] = sbx__e2b_exec_wrapper;
	args[2] = "capybara-exec";
	args[3] = ctl;
	args[4] = command;
	args[5] = seconds_buf;
	args[6] = sbx__e2b_exec_seed_wrapper;
}

void sbx__e2b_exec_direct_args(const char *args[SBX_E2B_EXEC_DIRECT_ARGC], const char *ctl,
                               const char *command, const char *seconds)
{
	args[0] = ctl;
	args[1] = command;
	args[2] = seconds;
	args[3] = "--session";
	args[4] = "--mark";
}

void sbx__e2b_fileop_args(const char *args[SBX_E2B_FILEOP_ARGC], char *seconds_buf, size_t buflen,
                          const char *ctl, uint64_t timeout_ms)
{
	snprintf(seconds_buf, buflen, "%" PRIu64, sbx__e2b_exec_seconds(timeout_ms));
	args[0] = "-w";
	args[1] = "/bin/sh";
	args[2] = "-c";
	args[3] = sbx__e2b_fileop_wrapper;
	args[4] = "capybara-exec";
	args[5] = ctl;
	args[6] = seconds_buf;
	args[7] = "/bin/sh";
}

int sbx__e2b_fileop_control_path(char *out, size_t outlen)
{
	char uuid[37];
	int n;

	sbx__uuid(uuid);
	n = snprintf(out, outlen, "/tmp/.capybara-fileop-%s", uuid);
	return n < 0 || (size_t)n >= outlen ? SBX_EINTERNAL : 0;
}

int sbx__e2b_exec_control_path(char *out, size_t outlen, const char *tag)
{
	char uuid[37];
	int n;

	sbx__uuid(uuid);
	if (tag)
		n = snprintf(out, outlen, "/tmp/.capybara-exec-%s-%s", tag, uuid);
	else
		n = snprintf(out, outlen, "/tmp/.capybara-exec-%s", uuid);
	if (n < 0 || (size_t)n >= outlen)
		return SBX_EINTERNAL;
	return 0;
}

/* A random (version 4) UUID: 16 bytes of getrandom(2), one system call, where libuuid's
 * uuid_generate_random also asks for the pid, the parent's, the uid and the thread id to seed
 * its fallback generator (docs/internals/exec-cost.md); libuuid only when getrandom fails. */
void sbx__uuid(char out[37])
{
	uuid_t u;
	ssize_t n;

	do
		n = getrandom(u, sizeof(u), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(u)) {
		uuid_generate_random(u);
	} else {
		u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* version 4 */
		u[8] = (unsigned char)((u[8] & 0x3f) | 0x80); /* variant RFC 4122 */
	}
	uuid_unparse_lower(u, out);
}
