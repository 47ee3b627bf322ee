/*
 * tests/fake/runtime/runtime_test.h — what the runtime test program's files share: the runtime
 * they all use (rt, made by the group setup in test_runtime.c), commands and files in a box
 * (runtime_helpers.c) and the /proc probes that find a box's tasks after it is gone.
 */
#ifndef FK_TEST_RUNTIME_TEST_H
#define FK_TEST_RUNTIME_TEST_H

#include "box_run.h"
#include "runtime.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A box's tasks: in its PID namespace (by inode, which the kernel reuses) AND either its PID 1
 * (pid + start time) or carrying the box's marker env (FK_TEST_MARK, set by box_create). */
typedef struct box_id {
	unsigned long pidns;
	pid_t init;
	unsigned long long init_start;
	char mark[96];
} box_id;

extern fk_rt *rt;
char *sh(const char *box, const char *user, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
fk_proc *start_bg(const char *box, const char *user, const char *script);
void box_create(const char *id, bool net_none);
void box_destroy(const char *id);
void wait_end(fk_proc *p, int *status);
char *box_read(const char *box, const char *path);
void box_write(const char *box, const char *path, const char *user, const char *data);
unsigned long ns_inode(pid_t pid, const char *ns);
box_id box_ident(pid_t owner, const char *box, pid_t init);
int count_box(const box_id *b);
bool mounts_mention(const char *needle);
int child_box_main(const char *state_dir);
extern char self_exe[4096];

/* The tests of the other files, which main lists. */
void test_runtime__exit_status_env_and_cwd(void **state);
void test_runtime__exit_ends_stream_despite_background_holder(void **state);
void test_runtime__pty_is_a_terminal(void **state);
void test_runtime__kill_ends_stream_despite_background_holder(void **state);
void test_runtime__sigterm_handler_output_does_not_kill_it(void **state);
void test_runtime__stdin_pipe(void **state);
void test_runtime__slow_subscriber_does_not_grow_memory(void **state);
void test_runtime__output_without_subscriber_is_discarded(void **state);
void test_runtime__upload_through_symlink_stays_inside(void **state);
void test_runtime__upload_semantics(void **state);
void test_runtime__upload_64mib_is_fast(void **state);
void test_runtime__stat_list_mkdir_move_remove(void **state);
void test_runtime__unknown_box_and_bad_input(void **state);
void test_runtime__rt_free_leaves_nothing(void **state);
void test_runtime__concurrent_starts_in_one_box(void **state);
void test_runtime__degraded_mode_still_runs_processes(void **state);
void test_runtime__killed_server_leaves_no_box_running(void **state);

#endif
