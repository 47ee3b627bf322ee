/*
 * e2b/scripts.c: the in-sandbox shell scripts, byte for byte as the seed
 * defines them (docs/exec.md "How a command runs"), with its template literals expanded, except
 * those marked "ours" (EXEC_WRAPPER among them: the seed's line behind a
 * switch to the exec helper). They are data: the provider passes them to `/bin/sh -c
 * SCRIPT NAME ARGS...` (the kill_all and kill_tagged scripts to /bin/bash,
 * SBX_E2B_KILL_SHELL), so "$1", "$2", ... are the arguments after the script
 * name. Every value from a caller travels as an argument, never pasted into a
 * script. Unit tests pin each seed script's SHA-256 to the seed's string.
 *
 * Also here: the exec wrapper's argv (docs/exec.md "How a command runs"), the exec control
 * path and UUIDs, so that the protocol code knows nothing of shell.
 */
#include "e2b/scripts.h"

#include <inttypes.h>
#include <sandbox/error.h>
#include <stdio.h>
#include <uuid/uuid.h>

/*
 * KILL_TREE: defines k PID, which SIGKILLs the process groups of PID's
 * children, PID's own process group, and every process in PID's session
 * (pkill -s), so a command that started its own groups or daemons under the
 * exec session still dies. Errors are silenced: the targets may be gone.
 */
#define KILL_TREE                                                                                  \
	"k() { for t in $(pgrep -P \"$1\"); do kill -9 -\"$t\" 2>/dev/null; done; kill -9 "        \
	"-\"$1\" "                                                                                 \
	"2>/dev/null; pkill -9 -s \"$1\" 2>/dev/null; }; "

/*
 * EXEC_WRAPPER (ours since the exec helper; run as `setsid -w /bin/sh -c WRAPPER capybara-exec
 * CTL CMD SECONDS`): records its pid (the session leader) in CTL.pid so a killer can find the
 * session; exits 137 without running CMD when CTL.kill already exists (the kill raced ahead of
 * the start); then, when the template has the exec helper SBX_E2B_EXEC_HELPER
 * (templates/capybara-sandbox/capybara-exec.c), becomes it (`exec`: same pid, same session):
 * it runs CMD with /bin/bash in a process group of its own under an in-sandbox SECONDS
 * backstop that SIGKILLs that group even if the client vanished, removes CTL.pid and exits
 * with CMD's status (128 + N for a death by signal N, 137 at the backstop), in one process
 * where the rest of the line takes three. Without the helper (the seed's line, for any other
 * template): the same with `timeout -s KILL SECONDS /bin/bash -c CMD`, `rm -f CTL.pid`.
 * "capybara-exec CTL" in its argv (the helper's path ends in capybara-exec) is what
 * KILL_SCRIPT, KILL_ALL_SCRIPT and KILL_TAGGED_SCRIPT match. docs/internals/exec-cost.md
 * says what each step costs.
 */
const char sbx__e2b_exec_wrapper[] =
    "c=$1; echo $$ > \"$c.pid\" 2>/dev/null; if [ -e \"$c.kill\" ]; then exit 137; fi; if [ "
    "-x " SBX_E2B_EXEC_HELPER " ]; then exec " SBX_E2B_EXEC_HELPER " \"$@\"; fi; timeout -s KILL "
    "\"$3\" /bin/bash -c \"$2\"; s=$?; rm -f \"$c.pid\"; exit $s";

/*
 * FILEOP_WRAPPER (ours; run as `setsid -w /bin/sh -c WRAPPER capybara-exec
 * CTL SECONDS /bin/sh -c SCRIPT NAME ARGS...`, as the file operation's
 * user): EXEC_WRAPPER for a file operation's script, so the exec kill path
 * (KILL_SCRIPT CTL) stops it: records the session leader's pid in CTL.pid,
 * exits 137 without running anything when CTL.kill exists, runs the script
 * with its arguments untouched under `timeout -s KILL SECONDS`, removes
 * CTL.pid and exits with the script's status. CTL is
 * /tmp/.capybara-fileop-<uuid>, which KILL_ALL_SCRIPT does not match: a
 * killAll stops commands, not a concurrent file operation.
 */
const char sbx__e2b_fileop_wrapper[] =
    "c=$1; t=$2; shift 2; echo $$ > \"$c.pid\" 2>/dev/null; if [ -e \"$c.kill\" ]; then exit 137; "
    "fi; timeout -s KILL \"$t\" \"$@\"; s=$?; rm -f \"$c.pid\"; exit $s";

/*
 * KILL_SCRIPT CTL (as the sandbox user): creates CTL.kill first so a wrapper
 * that has not started yet never runs its command; waits up to 1 s (20 x 50
 * ms) for CTL.pid, kills that session's tree; then kills every wrapper still
 * matching "capybara-exec CTL" and its tree; removes CTL.pid. Always exits 0:
 * success means the kill ran, not that there was something to kill.
 */
const char sbx__e2b_kill_script[] =
    KILL_TREE "c=$1; : > \"$c.kill\" 2>/dev/null; i=0; while [ ! -s \"$c.pid\" ] && [ $i -lt 20 ]; "
              "do sleep 0.05; i=$((i+1)); done; p=$(cat \"$c.pid\" 2>/dev/null); if [ -n \"$p\" ]; "
              "then k \"$p\"; rm -f \"$c.kill\"; fi; for q in $(pgrep -f -- \"capybara-exec $c\"); "
              "do k \"$q\"; kill -9 \"$q\" 2>/dev/null; done; rm -f \"$c.pid\"; exit 0";

/*
 * KILL_SCAN (ours; bash, run as `/bin/bash -c SCRIPT NAME ARGS...`): the
 * seed's KILL_ALL_SCRIPT and KILL_TAGGED_SCRIPT find the exec wrappers with
 * pgrep and kill their trees with KILL_TREE (pgrep -P, kill, pkill -s): a
 * fork and an exec per step. While a fork bomb holds the sandbox at its
 * process cap and most of its memory, such a fork is refused or its process
 * OOM-killed, and the kill fails (or, when the pgrep was the victim, finds
 * nothing and "succeeds"). These scripts do the same with bash builtins only
 * (no fork, no subshell, no pipe, no external command), so once the shell
 * runs it needs no further process slot:
 *   wrappers RE...  sets w to " PID PID ...": every process but this one whose
 *                   command line, arguments joined by spaces as pgrep -f sees
 *                   it (read NUL by NUL from /proc/PID/cmdline), matches one
 *                   of the extended regular expressions (bash's =~ is the same
 *                   regcomp ERE as pgrep's);
 *   kill_by N [-]   SIGKILLs PID (or, with -, the process group PID) of every
 *                   process PID whose Nth field of /proc/PID/stat after the
 *                   command name (1 state, 2 parent pid, 4 session) is in w;
 *   kill_trees      for the wrappers in w, in KILL_TREE's order: the process
 *                   groups of their children (pgrep -P; the command's
 *                   `timeout`, or the exec helper's bash, leads its own group,
 *                   which holds the command and a fork bomb: one kill(2) ends
 *                   them all), their own groups,
 *                   every process of their sessions (pkill -s), the wrappers
 *                   themselves; then every process of the sessions in s; then
 *                   exits 0;
 *   orphans RE...   sets s to " SID SID ...": the sessions of wrappers that died
 *                   before their commands (the box's OOM killer may pick one
 *                   under a fork bomb), so no command line names them any more:
 *                   the pid in each /tmp/.capybara-exec-*.pid whose
 *                   "capybara-exec CTL" matches one of the REs and that is no
 *                   live process (none, or a zombie). The wrapper leads its
 *                   session (setsid), and Linux gives no new process a pid that
 *                   is still a live session's id, so what is in such a session
 *                   is that command's.
 * Errors are silenced: the targets may be gone.
 */
#define KILL_SCAN                                                                                  \
	"wrappers() { w=; local d p l a r; for d in /proc/[0-9]*; do p=${d#/proc/}; [ \"$p\" = "   \
	"$$ ] "                                                                                    \
	"&& continue; l=; a=; while IFS= read -r -d '' a; do l+=\" $a\"; done 2>/dev/null < "      \
	"\"$d/cmdline\"; [ -n \"$a\" ] && l+=\" $a\"; for r; do if [[ ${l# } =~ $r ]]; then "      \
	"w+=\" "                                                                                   \
	"$p\"; break; fi; done; done; }; kill_by() { local f=$1 g=$2 d x; for d in /proc/[0-9]*; " \
	"do "                                                                                      \
	"read -r x 2>/dev/null < \"$d/stat\" || continue; set -- ${x##*) }; [[ \"$w \" == *\" "    \
	"${!f} \"* ]] && kill -9 $g${d#/proc/} 2>/dev/null; done; }; kill_trees() { local q; [ "   \
	"-n "                                                                                      \
	"\"$w$s\" ] || exit 0; kill_by 2 -; for q in $w; do kill -9 -$q 2>/dev/null; done; "       \
	"kill_by 4; for q in $w; do kill -9 $q 2>/dev/null; done; w=$s; [ -n \"$w\" ] && kill_by " \
	"4; exit 0; }; orphans() { s=; local f p l r x; for f in /tmp/.capybara-exec-*.pid; do "   \
	"l=\"capybara-exec ${f%.pid}\"; for r; do [[ $l =~ $r ]] || continue; p=; read -r p "      \
	"2>/dev/null < \"$f\"; if [[ $p =~ ^[0-9]+$ ]]; then x=; read -r x 2>/dev/null < "         \
	"\"/proc/$p/stat\"; x=${x##*) }; [ -z \"$x\" ] || [ \"${x%% *}\" = Z ] && s+=\" $p\"; "    \
	"fi; "                                                                                     \
	"break; done; done; }; "

/*
 * KILL_ALL_SCRIPT (as the sandbox user; bash, KILL_SCAN): the seed's: kills
 * every exec wrapper (any "capybara-exec /tmp/.capybara-exec-..." process,
 * tagged or not) with its whole tree, and the sessions of wrappers that died
 * before their commands (orphans). Commands not started through exec are
 * left alone. Exits 0.
 */
const char sbx__e2b_kill_all_script[] =
    KILL_SCAN "wrappers \"capybara-exec /tmp/[.]capybara-exec-\"; orphans \"capybara-exec "
              "/tmp/[.]capybara-exec-\"; kill_trees";

/*
 * KILL_TAGGED_SCRIPT TAG... (as the sandbox user; bash, KILL_SCAN): the
 * seed's: for each tag, kills the wrappers whose control path is exactly
 * /tmp/.capybara-exec-TAG-<uuid> (the UUID pattern and the "( |$)" end keep
 * tag "a" from matching tag "a-b"), with their trees. Tags are validated
 * before (letters, digits, _ and -), so they are safe inside the pattern.
 * Exits 0.
 */
const char sbx__e2b_kill_tagged_script[] =
    KILL_SCAN "u='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'; r=(); for t; "
              "do r+=(\"capybara-exec /tmp/[.]capybara-exec-$t-$u( |$)\"); done; wrappers "
              "\"${r[@]}\"; orphans \"${r[@]}\"; kill_trees";

/*
 * READ_SCRIPT PATH N (as the sandbox user): exit 3 when PATH does not exist,
 * 4 when it is a directory, else the first N bytes of PATH on stdout (the
 * provider asks for max_bytes + 1 to detect truncation). Permissions are the
 * sandbox user's.
 */
const char sbx__e2b_read_script[] = "if [ ! -e \"$1\" ]; then exit 3; fi; if [ -d \"$1\" ]; then "
                                    "exit 4; fi; exec head -c \"$2\" -- \"$1\"";

/*
 * STAT_SCRIPT PATH (as the sandbox user): exit 3 when PATH does not exist,
 * else prints "<size> directory" or "<size> file" (size through stat -L,
 * falling back to wc -c), which the provider parses with
 * ^(\d+) (file|directory)\n?$.
 */
const char sbx__e2b_stat_script[] =
    "if [ ! -e \"$1\" ]; then exit 3; fi; s=$(stat -L -c %s -- \"$1\" 2>/dev/null) || s=$(($(wc -c "
    "< \"$1\"))); if [ -d \"$1\" ]; then echo \"$s directory\"; else echo \"$s file\"; fi";

/*
 * LIST_SCRIPT PATH (as the sandbox user; ours, not the seed's): exit 3 when
 * PATH does not exist, 4 when it is not a directory (symlinks followed),
 * else one record "<type> <size> <name>\0" per entry of PATH, not recursive,
 * where type is find's %y (f, d, l, p, s, c, b) and size is lstat's. NUL
 * ends a record because a name may hold any other byte. find exits non-zero
 * (stderr says why) when PATH cannot be read as the user.
 */
const char sbx__e2b_list_script[] =
    "if [ ! -e \"$1\" ]; then exit 3; fi; if [ ! -d \"$1\" ]; then exit 4; fi; exec find -H "
    "\"$1\" -mindepth 1 -maxdepth 1 -printf '%y %s %f\\0'";

/*
 * STAGE_READ_SCRIPT PATH STAGING N READ_SCRIPT (as root; ours): copies the
 * first N bytes of PATH into the root-only staging file STAGING, PATH read by
 * READ_SCRIPT as the sandbox user (runuser), so permissions and symlinks
 * resolve as that user exactly as for a direct read; only the staging file,
 * which the user cannot reach, is opened by root. Exit statuses are
 * READ_SCRIPT's (3 missing, 4 a directory); on any failure the staging file
 * is removed. envd's GET /files then sends STAGING raw.
 */
const char sbx__e2b_stage_read_script[] =
    "umask 077; mkdir -p -- " SBX_E2B_UPLOAD_DIR " || exit 1; runuser -u " SBX_E2B_SANDBOX_USER
    " -- /bin/sh -c \"$4\" capybara-read \"$1\" \"$3\" > \"$2\"; s=$?; if [ $s -ne 0 ]; then rm -f "
    "-- \"$2\"; fi; exit $s";

/*
 * READ_SIZED_SCRIPT PATH N LIMIT (as the sandbox user; ours): READ_SCRIPT,
 * except that a regular file larger than LIMIT bytes is not read: exit 5, and
 * the provider moves it raw through a staging file (STAGE_READ_SCRIPT).
 */
const char sbx__e2b_read_sized_script[] =
    "if [ ! -e \"$1\" ]; then exit 3; fi; if [ -d \"$1\" ]; then exit 4; fi; if [ -f \"$1\" ] && "
    "[ \"$(stat -L -c %s -- \"$1\" 2>/dev/null || echo 0)\" -gt \"$3\" ]; then exit 5; fi; exec "
    "head -c \"$2\" -- \"$1\"";

/*
 * ENTRY_FORMAT: find -printf's record of one path as lstat sees it, seven
 * NUL-ended fields: type (%y: f d l p s c b), size, permission bits in octal,
 * owner, group (names, or the ids without one), mtime as "<s>.<fraction>" and
 * the symlink's target as stored (empty for others).
 */
#define ENTRY_FORMAT "'%y\\0%s\\0%m\\0%u\\0%g\\0%T@\\0%l\\0'"
/*
 * ENOENT_OR_FAIL: after a failed step whose stderr is in $e: exit 3 when it
 * was "No such file or directory" (LC_ALL=C), else put $e on stderr, exit 1.
 */
#define ENOENT_OR_FAIL                                                                             \
	"case $e in *'No such file or directory') exit 3;; esac; printf '%s\\n' \"$e\" >&2; exit " \
	"1"
/*
 * PATH_INFO_SCRIPT PATH (as the call's user; ours): ENTRY_FORMAT's record of
 * PATH (not followed) on stdout; exit 3 when PATH (or a parent) does not
 * exist, 1 with find's message on stderr for any other failure (permission).
 */
const char sbx__e2b_path_info_script[] =
    "export LC_ALL=C; { e=$(find \"$1\" -maxdepth 0 -printf " ENTRY_FORMAT
    " 2>&1 >&3); s=$?; } 3>&1; [ $s -eq 0 ] && exit 0; " ENOENT_OR_FAIL;
/* REMOVE_PATH_SCRIPT PATH (as the call's user; ours): rm -rf; a missing PATH is success. */
const char sbx__e2b_remove_path_script[] = "export LC_ALL=C; exec rm -rf -- \"$1\"";
/*
 * MAKE_DIR_SCRIPT PATH (as the call's user; ours): makes PATH's parents, then
 * PATH itself with one mkdir, so "made it" is exact: exit 0 made, 4 a
 * directory (or a symlink to one) was there, 5 something else is in the
 * way, 1 with mkdir's message otherwise.
 */
const char sbx__e2b_make_dir_script[] =
    "export LC_ALL=C; e=$(mkdir -p -- \"$(dirname -- \"$1\")\" 2>&1) && e=$(mkdir -- \"$1\" "
    "2>&1) && exit 0; [ -d \"$1\" ] && exit 4; { [ -e \"$1\" ] || [ -L \"$1\" ]; } && exit 5; "
    "printf '%s\\n' \"$e\" >&2; exit 1";
/*
 * RENAME_SCRIPT FROM TO (as the call's user; ours): exit 3 when FROM does not
 * exist; else makes TO's parents, `mv -T` (rename(2)'s meaning: TO is
 * replaced, never entered) and prints ENTRY_FORMAT's record of TO; exit 1
 * with the failing tool's message otherwise.
 */
const char sbx__e2b_rename_script[] =
    "export LC_ALL=C; e=$(find \"$1\" -maxdepth 0 -printf '' 2>&1) || { " ENOENT_OR_FAIL
    "; }; if ! e=$(mkdir -p -- \"$(dirname -- \"$2\")\" 2>&1) || ! e=$(mv -T -- \"$1\" \"$2\" "
    "2>&1); then printf '%s\\n' \"$e\" >&2; exit 1; fi; exec find \"$2\" -maxdepth 0 "
    "-printf " ENTRY_FORMAT;
/*
 * WRITE_MANY_SCRIPT WHO PATH STAGING [PATH STAGING]... (as root; ours): each
 * PATH in order from its root-only STAGING file as USER_WRITE_SCRIPT writes
 * one (as the sandbox user, parents made, no symlink escape), or as
 * SKILLS_WRITE_SCRIPT for /skills and below, or as root when WHO is "root".
 * Every staging file is removed, written or not. At the first failure the
 * rest are not written: its PATH goes to stdout, the tool's message to
 * stderr, and the exit is 1; 0 when all were written.
 */
const char sbx__e2b_write_many_script[] =
    "w=$1; shift; s=0; while [ $# -ge 2 ]; do p=$1; g=$2; shift 2; if [ $s = 0 ]; then case "
    "$w:$p in root:*) ( mkdir -p -- \"$(dirname -- \"$p\")\" && cat -- \"$g\" > \"$p\" ) || s=1 "
    ";; *:/skills|*:/skills/*) ( umask 022; mkdir -p -- \"$(dirname -- \"$p\")\" && cat -- "
    "\"$g\" > \"$p\" && chmod 0644 \"$p\" ) || s=1 ;; *) runuser -u " SBX_E2B_SANDBOX_USER
    " -- /bin/sh -c 'set -e; mkdir -p -- \"$(dirname -- \"$1\")\"; cat > \"$1\"' capybara-write "
    "\"$p\" < \"$g\" || s=1 ;; esac; [ $s = 1 ] && printf '%s' \"$p\"; fi; rm -f -- \"$g\"; done; "
    "exit $s";
/*
 * WATCH_CHECK_SCRIPT DIR (as the watch's user; ours): exit 3 when DIR does
 * not exist, 4 when it is no directory, 5 when the user may not list it (read
 * and search); 0 otherwise. envd watches as root, so this is what keeps a
 * watch to what the user could see through a shell.
 */
const char sbx__e2b_watch_check_script[] =
    "[ -e \"$1\" ] || exit 3; [ -d \"$1\" ] || exit 4; { [ -r \"$1\" ] && [ -x \"$1\" ]; } || "
    "exit 5; exit 0";
/*
 * TEMPLATE_CHECK_SCRIPT (as root; ours): one line per convention of
 * templates/capybara-sandbox the sandbox lacks (the user sandbox with uid
 * 1000, /workspace, /skills root 0755, /opt/capybara root 0700, setsid,
 * runuser, timeout, pgrep, pkill); nothing when it has them all. Exits 0.
 */
const char sbx__e2b_template_check_script[] =
    "c() { printf '%s\\n' \"$1\"; }; [ \"$(id -u sandbox 2>/dev/null)\" = 1000 ] || c 'user "
    "sandbox with uid 1000'; [ -d /workspace ] || c /workspace; [ \"$(stat -c '%U %a' /skills "
    "2>/dev/null)\" = 'root 755' ] || c '/skills (root, 0755)'; [ \"$(stat -c '%U %a' "
    "/opt/capybara 2>/dev/null)\" = 'root 700' ] || c '/opt/capybara (root, 0700)'; for t in "
    "setsid runuser timeout pgrep pkill; do command -v \"$t\" >/dev/null 2>&1 || c \"$t\"; "
    "done; exit 0";
/* REMOVE_SCRIPT PATH (as root; ours): removes a staging file; a missing one is fine. */
const char sbx__e2b_remove_script[] = "rm -f -- \"$1\"";

/*
 * USER_WRITE_SCRIPT PATH STAGING (as root): root opens the root-only staging
 * file STAGING and feeds it on stdin to a shell running as the sandbox user,
 * which creates PATH's parents and writes PATH: the write happens with the
 * sandbox user's permissions, so a symlink cannot make root write outside
 * what the user may write. The staging file is always removed; exit 0 only
 * when the write succeeded.
 */
const char sbx__e2b_user_write_script[] =
    "s=1; runuser -u " SBX_E2B_SANDBOX_USER
    " -- /bin/sh -c 'set -e; mkdir -p -- \"$(dirname -- \"$1\")\"; cat > \"$1\"' capybara-write "
    "\"$1\" < \"$2\" && s=0; rm -f -- \"$2\"; exit $s";

/*
 * SKILLS_WRITE_SCRIPT PATH STAGING (as root, for /skills and below): writes
 * PATH as root with mode 0644 (umask 022 for new parents), so skills are
 * readable but not writable by the sandbox user. Removes the staging file;
 * exit 0 only when every step succeeded.
 */
const char sbx__e2b_skills_write_script[] =
    "umask 022; s=1; mkdir -p -- \"$(dirname -- \"$1\")\" && cat -- \"$2\" > \"$1\" && chmod 0644 "
    "\"$1\" && s=0; rm -f -- \"$2\"; exit $s";

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
	args[0] = "-w";
	args[1] = "/bin/sh";
	args[2] = "-c";
	args[3] = sbx__e2b_exec_wrapper;
	args[4] = "capybara-exec";
	args[5] = ctl;
	args[6] = command;
	args[7] = seconds_buf;
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

void sbx__uuid(char out[37])
{
	uuid_t u;
	uuid_generate_random(u);
	uuid_unparse_lower(u, out);
}
