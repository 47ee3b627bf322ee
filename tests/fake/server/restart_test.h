/*
 * tests/fake/server/restart_test.h — what the restart test program's files share: its server
 * binary, state directories, a kept server's flags and the requests and probes they all make
 * (restart_support.c).
 */
#ifndef FK_TEST_RESTART_TEST_H
#define FK_TEST_RESTART_TEST_H

#include "fkserver.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define KEY "e2b_restart_test_key_0123456789"

/* A background process counting in /tmp/count (its pid in /tmp/bgpid), and one that keeps a
 * shell variable only in its memory, writing it to /tmp/v: both outlive their Start. */
#define COUNTER                                                                                    \
	"sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done' "             \
	"</dev/null >/dev/null 2>&1 & echo $! > /tmp/bgpid"
#define MID_EXEC "touch /tmp/mid-exec; i=0; while :; do i=$((i+1)); echo n$i; sleep 0.05; done"
#define MEMORY                                                                                     \
	"sh -c 'v=mem-$$-$(date +%N); echo $v > /tmp/want; while :; do echo $v > /tmp/v; "         \
	"sleep 0.05; done' </dev/null >/dev/null 2>&1 & echo $! > /tmp/bgpid"

extern const char *g_bin;
void new_state(char *out, size_t cap);
void rm_state(const char *dir);
extern const char *const kept_flags[];
fkr *api(fks *s, const char *method, const char *path, const char *body);
void state_of(fks *s, const char *id, char *out, size_t cap);
void assert_state(fks *s, const char *id, const char *want);
void pause_box(fks *s, const char *id);
long connect_box(fks *s, const char *id);
int count_listed(fks *s, const char *query);
long envd_status_with(fks *s, fks_box *b, const char *token);
int box_pids(pid_t server, const char *id, pid_t *out, int cap);
bool alive(pid_t pid);
void box_with_file(fks *s, fks_box *b, const char *text);
void assert_file(fks *s, fks_box *b, const char *text);
void assert_logged(fks *s, const char *line);
pid_t start_cut_stream(fks *s, fks_box *b, const char *line);
size_t listed_procs(fks *s, fks_box *b, unsigned *pid_out, char *cmd_out, size_t cap);
fkr *connect_proc(fks *s, fks_box *b, unsigned pid, long ms);
void kill_proc(fks *s, fks_box *b, unsigned pid);
pid_t start_with_stdin(fks *s, fks_box *b, const char *line);
pid_t send_input(fks *s, fks_box *b, unsigned pid, size_t triples);
bool box_wait(fks *s, fks_box *b, const char *line);

/* The tests of the other files, which main lists. */
void test_restart__unread_stdin_does_not_hold_shutdown(void **unused);
void test_restart__taken_shim_names_do_not_block_starts(void **unused);
void test_restart__sigterm_keeps_running_and_paused_with_files(void **unused);
void test_restart__crash_keeps_running_and_paused_with_files(void **unused);
void test_restart__adopted_sandbox_times_out(void **unused);
void test_restart__shims_are_in_the_shims_cgroup(void **unused);
void test_restart__ephemeral_leaves_nothing(void **unused);
void test_restart__crashed_ephemeral_dir_is_removed_by_the_next(void **unused);
void test_restart__state_dir_others_may_write_is_refused(void **unused);

#endif
