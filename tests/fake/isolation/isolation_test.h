/*
 * tests/fake/isolation/isolation_test.h — what the isolation suite's files share: the runtime
 * (rt, made by the group setup in test_isolation.c), its state directory, the box helpers
 * (isolation_support.c) and the tests main lists.
 */
#ifndef FK_TEST_ISOLATION_TEST_H
#define FK_TEST_ISOLATION_TEST_H

#include "box_run.h"
#include "runtime.h"

extern fk_rt *rt;
char *sh(const char *box, const char *user, const char *script);
void box_create_opts(const char *id, const fk_box_options *o);
void box_create(const char *id);
void box_write(const char *box, const char *path, const char *data);
extern char state_dir[];

/* The tests of the other files, which main lists. */
void test_isolation__fork_bomb_is_held_and_box_recovers(void **state);
void test_isolation__memory_hog_is_killed_inside(void **state);
void test_isolation__limits_are_the_boxs_cgroup_files(void **state);
void test_isolation__600_mib_in_a_512_mib_box_is_oom_killed(void **state);
void test_isolation__usage_counts_the_boxs_memory(void **state);
void test_isolation__1000_execs_under_1024_fds(void **state);
void test_isolation__listdir_deep_tree_is_answered(void **state);
void test_isolation__watches_are_capped_across_watches(void **state);
void test_isolation__listdir_of_a_huge_directory_is_refused(void **state);
void test_isolation__listdir_of_long_names_is_bounded_by_bytes(void **state);
void test_isolation__recursive_watch_of_a_wide_tree(void **state);
void test_isolation__other_users_cannot_list_the_sandboxes(void **state);
void test_isolation__other_users_cannot_reach_a_sandbox_tree(void **state);
void test_isolation__root_inside_is_an_unprivileged_host_id(void **state);
void test_isolation__disk_is_capped_per_box(void **state);
void test_isolation__files_api_opens_only_regular_files_outside_proc(void **state);
void test_isolation__files_remove_refuses_the_box_mount_points(void **state);
void test_isolation__files_move_refuses_the_box_mount_points(void **state);
void test_isolation__huge_etc_passwd_is_not_read(void **state);
void test_isolation__starts_are_made_in_the_boxs_cgroups(void **state);
void test_isolation__refused_clone3_moves_to_the_same_cgroups(void **state);

#endif
