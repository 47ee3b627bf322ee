/*
 * contract/provider.h: the seam between the public contract (sandbox.h) and a
 * provider implementation. Knows nothing of E2B.
 *
 * src/contract/provider.c implements the public sbx_sandbox_* functions: it
 * checks arguments that every provider shares (NULL pointers, an already
 * aborted signal, tags, paths, env keys, limits), zeroes outputs, then calls
 * the provider's vtable. A provider (src/e2b/provider.c) fills a vtable and
 * wraps its state with sbx__provider_new().
 */
#ifndef SBX_CONTRACT_PROVIDER_H
#define SBX_CONTRACT_PROVIDER_H

#include <sandbox/files.h>
#include <sandbox/info.h>
#include <sandbox/lifetime.h>
#include <sandbox/metrics.h>
#include <sandbox/paths.h>
#include <sandbox/ports.h>
#include <sandbox/process.h>
#include <sandbox/pty.h>
#include <sandbox/sandbox.h>
#include <sandbox/watch.h>

typedef struct sbx_provider_vtable {
	const char *name; /* "e2b" */
	bool concurrent_exec;
	int (*create)(void *impl, char **id_out, const char *name, const sbx_limits *limits,
	              sbx_signal *sig, sbx_error *err);
	int (*resume)(void *impl, sbx_resume_status *out, const char *id, sbx_signal *sig,
	              sbx_error *err);
	int (*suspend)(void *impl, const char *id, sbx_signal *sig, sbx_error *err);
	int (*destroy)(void *impl, const char *id, sbx_signal *sig, sbx_error *err);
	int (*destroy_by_name)(void *impl, const char *name, sbx_signal *sig, sbx_error *err);
	int (*kill_all)(void *impl, const char *id, sbx_signal *sig, sbx_error *err);
	int (*kill_tagged)(void *impl, const char *id, const char *const *tags, size_t ntags,
	                   sbx_signal *sig, sbx_error *err);
	int (*exec)(void *impl, sbx_exec_result *out, const char *id, const char *command,
	            const sbx_exec_options *opts, sbx_signal *sig, sbx_error *err);
	int (*read_file)(void *impl, sbx_file **out, const char *id, const char *path,
	                 size_t max_bytes, sbx_signal *sig, sbx_error *err);
	int (*write_file)(void *impl, const char *id, const char *path, const void *data,
	                  size_t len, sbx_signal *sig, sbx_error *err);
	int (*stat)(void *impl, sbx_stat *out, const char *id, const char *path, sbx_signal *sig,
	            sbx_error *err);
	/* sandbox/info.h and sandbox/files.h (contract/info.c, contract/files.c); NULL: unsupported
	 */
	int (*list)(void *impl, sbx_info_list **out, const sbx_list_options *opts, sbx_signal *sig,
	            sbx_error *err);
	int (*get_info)(void *impl, sbx_sandbox_info **out, const char *id, sbx_signal *sig,
	                sbx_error *err);
	int (*list_dir)(void *impl, sbx_dir **out, const char *id, const char *path,
	                sbx_signal *sig, sbx_error *err);
	int (*read_stream)(void *impl, sbx_read_result *out, const char *id, const char *path,
	                   sbx_sink_fn sink, void *payload, const sbx_file_options *opts,
	                   sbx_signal *sig, sbx_error *err);
	int (*write_stream)(void *impl, const char *id, const char *path, sbx_input_fn source,
	                    void *payload, const sbx_file_options *opts, sbx_signal *sig,
	                    sbx_error *err);
	/* sandbox/lifetime.h (contract/lifetime.c); options checked. NULL: unsupported */
	int (*create_with)(void *impl, char **id_out, const char *name, const sbx_limits *limits,
	                   const sbx_create_options *opts, sbx_signal *sig, sbx_error *err);
	int (*set_timeout)(void *impl, const char *id, uint64_t timeout_seconds, sbx_signal *sig,
	                   sbx_error *err);
	/* sandbox/metrics.h (contract/metrics.c); times checked. NULL: unsupported */
	int (*metrics)(void *impl, sbx_metrics **out, const char *id, int64_t start_unix,
	               int64_t end_unix, sbx_signal *sig, sbx_error *err);
	/* sandbox/ports.h (contract/ports.c); port checked. NULL: unsupported */
	int (*host)(void *impl, sbx_host **out, const char *id, unsigned int port, sbx_signal *sig,
	            sbx_error *err);
	/* sandbox/paths.h (contract/paths.c); options arrive checked, never NULL. NULL: unsupported
	 */
	int (*path_info)(void *impl, sbx_entry_info **out, const char *id, const char *path,
	                 const sbx_path_options *opts, sbx_signal *sig, sbx_error *err);
	int (*remove)(void *impl, const char *id, const char *path, const sbx_path_options *opts,
	              sbx_signal *sig, sbx_error *err);
	int (*make_dir)(void *impl, bool *created, const char *id, const char *path,
	                const sbx_path_options *opts, sbx_signal *sig, sbx_error *err);
	int (*rename)(void *impl, sbx_entry_info **out, const char *id, const char *from,
	              const char *to, const sbx_path_options *opts, sbx_signal *sig,
	              sbx_error *err);
	void (*free)(void *impl);
	/*
	 * Background commands (sandbox/process.h). `h` is the provider's handle
	 * state, wrapped by contract/process.c; options arrive checked and
	 * normalised (version, tag, env, timeout).
	 */
	int (*process_start)(void *impl, void **h_out, uint32_t *pid_out, const char *id,
	                     const char *command, const sbx_process_options *opts, sbx_signal *sig,
	                     sbx_error *err);
	int (*process_attach)(void *impl, void **h_out, const char *id, uint32_t pid,
	                      const sbx_process_options *opts, sbx_signal *sig, sbx_error *err);
	int (*process_wait)(void *h, sbx_exec_result *out, sbx_signal *sig, sbx_error *err);
	int (*process_send_stdin)(void *h, const void *data, size_t len, sbx_signal *sig,
	                          sbx_error *err);
	int (*process_close_stdin)(void *h, sbx_signal *sig, sbx_error *err);
	int (*process_kill)(void *h, sbx_signal *sig, sbx_error *err);
	void (*process_free)(void *h);
	int (*process_kill_pid)(void *impl, const char *id, uint32_t pid, sbx_signal *sig,
	                        sbx_error *err);
	int (*process_list)(void *impl, sbx_process_info_list **out, const char *id,
	                    sbx_signal *sig, sbx_error *err);
	/* Terminals (sandbox/pty.h, contract/pty.c); options checked. NULL: unsupported */
	int (*pty_start)(void *impl, void **h_out, uint32_t *pid_out, const char *id,
	                 const char *command, const sbx_pty_options *opts, sbx_signal *sig,
	                 sbx_error *err);
	int (*pty_attach)(void *impl, void **h_out, const char *id, uint32_t pid,
	                  const sbx_pty_options *opts, sbx_signal *sig, sbx_error *err);
	int (*pty_send_input)(void *h, const void *data, size_t len, sbx_signal *sig,
	                      sbx_error *err);
	int (*pty_resize)(void *h, uint16_t cols, uint16_t rows, sbx_signal *sig, sbx_error *err);
	int (*pty_kill)(void *h, sbx_signal *sig, sbx_error *err);
	int (*pty_wait)(void *h, sbx_pty_result *out, sbx_signal *sig, sbx_error *err);
	void (*pty_free)(void *h);
	/* Directory watches (sandbox/watch.h, contract/watch.c); path and options checked. */
	int (*watch_dir)(void *impl, void **h_out, const char *id, const char *path,
	                 const sbx_watch_options *opts, sbx_signal *sig, sbx_error *err);
	int (*watch_next)(void *h, sbx_watch_event *out, uint64_t timeout_ms, sbx_signal *sig,
	                  sbx_error *err);
	void (*watch_free)(void *h);
	/* sandbox/paths.h sbx_sandbox_write_files; files and options checked. NULL: unsupported */
	int (*write_files)(void *impl, const char *id, const sbx_write_entry *files, size_t n,
	                   const sbx_path_options *opts, sbx_signal *sig, sbx_error *err);
} sbx_provider_vtable;

/* The provider object behind the opaque public sbx_provider. */
struct sbx_provider {
	const sbx_provider_vtable *vt;
	void *impl;
};
/* The provider's vtable and state, for contract/process.c. */
const sbx_provider_vtable *sbx__provider_vt(const sbx_provider *p);
void *sbx__provider_impl(const sbx_provider *p);

/* exec's option checks (tag, env, timeout, stdin) on a normalised struct. 0 or SBX_EINVALID. */
int sbx__exec_options_check(const sbx_exec_options *o, sbx_error *err);

/*
 * Copy `in` (NULL = defaults; version 1 or 2) into a full version-2 struct.
 * 0, or SBX_EINVALID for an unknown version.
 */
int sbx__exec_options_normalize(sbx_exec_options *o, const sbx_exec_options *in, sbx_error *err);

/*
 * Wrap `impl` in a provider. On success the provider owns impl (freed by
 * vt->free in sbx_provider_free()); on failure (SBX_ENOMEM) impl is untouched.
 */
int sbx__provider_new(sbx_provider **out, const sbx_provider_vtable *vt, void *impl,
                      sbx_error *err);

/*
 * The checks every public call starts with, in the seed's order (docs/contract.md "Methods"): an
 * aborted signal (SBX_EABORTED), then a NULL provider (SBX_EINVALID).
 */
int sbx__provider_check(const sbx_provider *p, const sbx_signal *sig, sbx_error *err);

/* SBX_EINVALID "<what> is NULL". */
int sbx__missing(sbx_error *err, const char *what);
/* SBX_EINTERNAL "provider <name> does not implement <method>". */
int sbx__unsupported(sbx_error *err, const sbx_provider *p, const char *method);

/*
 * sbx__provider_check, then, in this order, the `out` pointer (with SBX__NEED_OUT) and the
 * sandbox id (with SBX__NEED_ID) are not NULL ("out is NULL", "id is NULL").
 */
#define SBX__NEED_OUT 1u
#define SBX__NEED_ID  2u
int sbx__call_check(const sbx_provider *p, const sbx_signal *sig, unsigned need, const void *out,
                    const char *id, sbx_error *err);

#endif
