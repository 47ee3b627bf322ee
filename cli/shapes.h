/*
 * cli/shapes.h: THE one place that turns library results into JSON.
 *
 * Every JSON object the tool prints (`--json`) and every result of
 * `sandbox-e2b serve` (JSON-RPC) is built here, so one result has one shape
 * everywhere (docs/cli.md "JSON output"). Callers add nothing to these
 * objects except the command-specific keys documented next to each function.
 *
 * The bytes rule: a byte string (command output, file contents) is a JSON
 * string under KEY when it is valid UTF-8 (NUL bytes included, as \u0000);
 * otherwise KEY is null and KEY_b64 holds the bytes base64-encoded (RFC 4648,
 * with padding), so no byte is lost.
 *
 * Every function returns a new reference (the caller owns it, json_decref)
 * or NULL when out of memory; none keeps a pointer to its arguments. All are
 * thread-safe (no shared state). Floor: <sandbox.h> and jansson only.
 */
#ifndef SBX_CLI_SHAPES_H
#define SBX_CLI_SHAPES_H

#include <jansson.h>
#include <sandbox.h>
#include <sandbox/files.h>
#include <sandbox/info.h>
#include <sandbox/metrics.h>
#include <sandbox/paths.h>
#include <sandbox/process.h>
#include <stdbool.h>
#include <stddef.h>

/* Set KEY (or KEY null + KEY_b64) on obj per the bytes rule. 0, or -1 when out of memory. */
int cli_shape_bytes(json_t *obj, const char *key, const unsigned char *data, size_t len);

/*
 * An error: {"code": "SBX_E...", "message", "hint"?, "http_status"?, "e2b_code"?}.
 * `code` is an sbx_error_code (its name is used); `message` NULL: err's message
 * (without the "sandbox-e2b: " prefix); `hint` NULL: no hint key. http_status
 * and e2b_code appear only when err has them. The tool prints {"error": <this>}.
 */
json_t *cli_shape_error(int code, const sbx_error *err, const char *message, const char *hint);

/*
 * An exec result: {"exit_code": int|null, "stdout"|"stdout_b64", "stderr"|"stderr_b64",
 * "truncated", "timed_out", "aborted"} (bytes rule on stdout and stderr).
 */
json_t *cli_shape_exec_result(const sbx_exec_result *r);

/* A created sandbox: {"id", "name"}. */
json_t *cli_shape_created(const char *id, const char *name);

/* A resume outcome: {"id", "status": "resumed"|"gone"}. */
json_t *cli_shape_resume(const char *id, sbx_resume_status st);

/*
 * A read file: {"path", "exists": true, "size": bytes in content, "truncated",
 * "content"|"content_b64"}; f NULL (no such file): {"path", "exists": false}.
 */
json_t *cli_shape_file(const char *path, const sbx_file *f);

/* A stat: {"path", "exists", "size": bytes, "is_dir"}. */
json_t *cli_shape_stat(const char *path, const sbx_stat *st);

/* A state as a word: "running", "paused" ("any" for SBX_STATE_ANY). */
const char *cli_shape_state_name(sbx_sandbox_state st);

/*
 * A sandbox (list item, info): {"id", "name": string|null, "state": "running"|"paused",
 * "template_id", "started_at", "end_at": RFC 3339 UTC with ms, or null when unknown}.
 */
json_t *cli_shape_sandbox_info(const sbx_sandbox_info *info);

/* A sandbox list: an array of cli_shape_sandbox_info objects, in the list's order. */
json_t *cli_shape_info_list(const sbx_info_list *list);

/*
 * A directory listing: {"path", "entries": [{"name", "type": "file"|"dir"|"symlink"|"other",
 * "size": bytes}], "truncated"}. Entry names follow the bytes rule (name / name_b64).
 */
json_t *cli_shape_dir(const char *path, const sbx_dir *dir);

/* An entry type as a word: "file", "dir", "symlink", "other". */
const char *cli_shape_entry_type_name(sbx_entry_type t);

/*
 * A path's entry (sandbox/paths.h): {"path","name","type","size","mode"
 * (the permission bits as a number), "permissions","owner","group","mtime"
 * (RFC 3339 UTC with 0, 3, 6 or 9 fraction digits, as protobuf's Timestamp),
 * "symlink_target" (a string or null)}; path, name and symlink_target follow
 * the bytes rule. NULL when out of memory.
 */
json_t *cli_shape_entry_info(const sbx_entry_info *e);

/*
 * The running commands of a sandbox: {"id", "processes": [{"pid", "tag": string|null,
 * "command": the shell text of a command this library started, or null,
 * "cmd", "args": [..], "cwd": string|null}]}.
 */
json_t *cli_shape_process_list(const char *id, const sbx_process_info_list *list);

/* A started background command: {"id", "pid"}. */
json_t *cli_shape_process_started(const char *id, uint32_t pid);

/*
 * Metrics (sandbox/metrics.h): {"id","metrics":[{"timestamp_unix","timestamp" (RFC 3339
 * UTC),"cpu_count","cpu_used_pct","mem_used","mem_total","mem_cache","disk_used",
 * "disk_total"}]} (bytes; oldest first). NULL when out of memory.
 */
json_t *cli_shape_metrics(const char *id, const sbx_metrics *m);

#endif
