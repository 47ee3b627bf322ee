/*
 * e2b/scripts.h: the in-sandbox shell scripts (data) and the exec wrapper's
 * arguments, exactly as the seed defines them (docs/exec.md "How a command
 * runs"; docs/contract.md "exec"), except those marked "ours".
 *
 * Each script is src/e2b/scripts/NAME.sh, whose opening comment says what it
 * guarantees; the build (cmake/embed.cmake, MODE=shell) drops its comments,
 * joins its lines with one space and emits the C string sbx__e2b_NAME, so the
 * sandbox gets the one line the seed wrote, while shellcheck (scripts/lint.sh)
 * reads the file. @MACRO@ in a script is the macro below. They are data: the
 * provider passes them to `/bin/sh -c SCRIPT NAME ARGS...` (kill_all and
 * kill_tagged to SBX_E2B_KILL_SHELL), so "$1", "$2", ... are the arguments
 * after the script name. Every value from a caller travels as an argument,
 * never pasted into a script. tests/unit/test_scripts.c pins each script's
 * SHA-256.
 */
#ifndef SBX_E2B_SCRIPTS_H
#define SBX_E2B_SCRIPTS_H

#include <stddef.h>
#include <stdint.h>

#define SBX_E2B_SANDBOX_USER             "sandbox"
#define SBX_E2B_ROOT_USER                "root"
#define SBX_E2B_UPLOAD_DIR               "/opt/capybara/upload"
#define SBX_E2B_IN_SANDBOX_GRACE_SECONDS 5
/* The exec helper of templates/capybara-sandbox: envd's command itself (the direct form), or
 * EXEC_WRAPPER runs it when executable (docs/exec.md "How a command runs"). */
#define SBX_E2B_EXEC_HELPER "/opt/capybara-exec"
/* What the helper writes on stderr first with --mark (its MARK, byte for byte): NUL
 * "capybara-exec" NUL, SBX_E2B_EXEC_MARK_LEN bytes. */
#define SBX_E2B_EXEC_MARK     "\0capybara-exec\0"
#define SBX_E2B_EXEC_MARK_LEN 15
/* The shell of KILL_ALL_SCRIPT and KILL_TAGGED_SCRIPT (bash: read -d '', [[ =~ ]], arrays);
 * the exec wrapper runs every command with it too, so a sandbox has it. */
#define SBX_E2B_KILL_SHELL "/bin/bash"

extern const char sbx__e2b_exec_wrapper[];          /* EXEC_WRAPPER (ours: the exec helper) */
extern const char sbx__e2b_exec_seed_wrapper[];     /* SEED_WRAPPER (the seed's wrapper) */
extern const char sbx__e2b_fileop_wrapper[];        /* FILEOP_WRAPPER (ours) */
extern const char sbx__e2b_kill_script[];           /* KILL_SCRIPT */
extern const char sbx__e2b_kill_all_script[];       /* KILL_ALL_SCRIPT (ours: bash, no fork) */
extern const char sbx__e2b_kill_tagged_script[];    /* KILL_TAGGED_SCRIPT (ours: bash, no fork) */
extern const char sbx__e2b_read_script[];           /* READ_SCRIPT */
extern const char sbx__e2b_stat_script[];           /* STAT_SCRIPT */
extern const char sbx__e2b_stage_read_script[];     /* STAGE_READ_SCRIPT (ours: raw reads) */
extern const char sbx__e2b_read_sized_script[];     /* READ_SIZED_SCRIPT (ours: raw reads) */
extern const char sbx__e2b_remove_script[];         /* REMOVE_SCRIPT (ours: staging cleanup) */
extern const char sbx__e2b_list_script[];           /* LIST_SCRIPT (ours: list_dir) */
extern const char sbx__e2b_template_check_script[]; /* TEMPLATE_CHECK_SCRIPT (ours) */
extern const char sbx__e2b_path_info_script[];      /* PATH_INFO_SCRIPT (ours: paths.h) */
extern const char sbx__e2b_remove_path_script[];    /* REMOVE_PATH_SCRIPT (ours: paths.h) */
extern const char sbx__e2b_make_dir_script[];       /* MAKE_DIR_SCRIPT (ours: paths.h) */
extern const char sbx__e2b_rename_script[];         /* RENAME_SCRIPT (ours: paths.h) */
extern const char sbx__e2b_write_many_script[];     /* WRITE_MANY_SCRIPT (ours: paths.h) */
extern const char sbx__e2b_watch_check_script[];    /* WATCH_CHECK_SCRIPT (ours: watch.h) */
extern const char sbx__e2b_user_write_script[];     /* USER_WRITE_SCRIPT */
extern const char sbx__e2b_skills_write_script[];   /* SKILLS_WRITE_SCRIPT */

/*
 * In-sandbox timeout of the `timeout -s KILL` backstop: ceil(timeout_ms / 1000)
 * + 5 seconds, computed without overflow for any uint64_t.
 */
uint64_t sbx__e2b_exec_seconds(uint64_t timeout_ms);

/*
 * The command and argv of an exec (docs/exec.md "How a command runs"): SBX_E2B_EXEC_CMD with
 * {"-c", EXEC_WRAPPER, "capybara-exec", ctl, command, "<seconds>", SEED_WRAPPER}.
 * `seconds_buf` (>= 24 bytes) holds the decimal seconds; args[] (7 entries)
 * borrow from the inputs and seconds_buf.
 */
#define SBX_E2B_EXEC_CMD  "/bin/sh"
#define SBX_E2B_EXEC_ARGC 7
void sbx__e2b_exec_args(const char *args[SBX_E2B_EXEC_ARGC], char *seconds_buf, size_t buflen,
                        const char *ctl, const char *command, uint64_t timeout_ms);
/*
 * The direct form of an exec (docs/exec.md "How a command runs"): SBX_E2B_EXEC_HELPER as envd's
 * command with {ctl, command, "<seconds>", "--session", "--mark"}, where `seconds` is what
 * sbx__e2b_exec_args() wrote. Borrows all three.
 */
#define SBX_E2B_EXEC_DIRECT_ARGC 5
void sbx__e2b_exec_direct_args(const char *args[SBX_E2B_EXEC_DIRECT_ARGC], const char *ctl,
                               const char *command, const char *seconds);

/*
 * The argv head of `setsid` for a file operation:
 * {"-w", "/bin/sh", "-c", FILEOP_WRAPPER, "capybara-exec", ctl, "<seconds>", "/bin/sh"};
 * the script's own args ("-c", SCRIPT, NAME, ARGS...) follow. Seconds as
 * for an exec (sbx__e2b_exec_seconds).
 */
#define SBX_E2B_FILEOP_ARGC 8
void sbx__e2b_fileop_args(const char *args[SBX_E2B_FILEOP_ARGC], char *seconds_buf, size_t buflen,
                          const char *ctl, uint64_t timeout_ms);
/* "/tmp/.capybara-fileop-<uuid>". `out` >= 64 bytes. 0, SBX_EINTERNAL. */
int sbx__e2b_fileop_control_path(char *out, size_t outlen);

/*
 * The exec control path: "/tmp/.capybara-exec-<uuid>" or
 * "/tmp/.capybara-exec-<tag>-<uuid>" (lowercase UUID v4). `out` >= 128 bytes.
 * The tag must already be valid. Returns 0, SBX_EINTERNAL.
 */
int sbx__e2b_exec_control_path(char *out, size_t outlen, const char *tag);

/* A lowercase random UUID v4 (36 chars + NUL) into out (>= 37 bytes). */
void sbx__uuid(char out[37]);

#endif
