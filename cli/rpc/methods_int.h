/*
 * cli/rpc/methods_int.h: what the `serve` handler files share: the params and result helpers
 * (methods_params.c), and the parse and run steps of the file (methods_files.c) and command
 * (methods_process.c) methods that the one method table in methods.c names. Private to cli/rpc.
 */
#ifndef SBX_CLI_RPC_METHODS_INT_H
#define SBX_CLI_RPC_METHODS_INT_H

#include "rpc.h"

/* methods_params.c */
int serve_finish(int rc, const sbx_error *err, json_t *result, json_t **out, serve_fail *f);
int serve_get_bool(json_t *obj, const char *key, const char *where, bool *out, serve_fail *f);
int serve_get_bytes(json_t *p, const char *key, bool required, serve_args *a, serve_fail *f);
int serve_get_number(json_t *obj, const char *key, const char *where, double *out, serve_fail *f);
int serve_get_str(json_t *obj, const char *key, bool required, const char *where, const char **out,
                  serve_fail *f);
int serve_get_str_array(json_t *obj, const char *key, bool required, const char *where,
                        const char ***out, size_t *n, serve_fail *f);
int serve_get_str_map(json_t *p, const char *key, sbx_env_var **out, size_t *n, serve_fail *f);
int serve_get_uint(json_t *obj, const char *key, const char *where, uint64_t min, uint64_t max,
                   uint64_t *out, bool *given, serve_fail *f);
int serve_only_keys(json_t *obj, const char *const *allowed, const char *where, serve_fail *f);
int serve_parse_id(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_only_id(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_env(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_user(json_t *p, serve_args *a, serve_fail *f);
json_t *serve_ok_with(const char *key, const char *value);

/* methods_files.c */
int serve_parse_path_op(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_read_file(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_rename(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_stat(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_watch(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_write_file(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_write_files(json_t *p, serve_args *a, serve_fail *f);
int serve_run_list_dir(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_make_dir(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_path_info(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_read_file(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_remove(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_rename(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_stat(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_watch(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_write_file(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_write_files(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);

/* methods_process.c */
int serve_parse_exec(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_pid_only(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_pty_resize(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_pty_start(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_send_stdin(json_t *p, serve_args *a, serve_fail *f);
int serve_parse_wait(json_t *p, serve_args *a, serve_fail *f);
int serve_run_close_stdin(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_exec(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_kill_process(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_ps(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_pty_attach(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_pty_input(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_pty_kill(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_pty_resize(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_pty_start(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_pty_wait(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_send_stdin(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);
int serve_run_wait(serve_call *c, const serve_args *a, json_t **out, serve_fail *f);

#endif
