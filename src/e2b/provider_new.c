/*
 * e2b/provider_new.c: the E2B provider's vtable and sbx_e2b_provider_new()
 * (sandbox/e2b.h): the top of src/e2b, naming every provider_*.c's entry
 * points; nothing below calls up into it.
 */
#include <string.h>

#include "contract/provider.h"
#include "e2b/provider_int.h"
#include "util/alloc.h"
#include "util/err.h"

static const sbx_provider_vtable e2b_vtable = {
    .name = "e2b",
    .concurrent_exec = true,
    .create = sbx__e2b_create,
    .create_with = sbx__e2b_create_with,
    .set_timeout = sbx__e2b_set_timeout,
    .resume = sbx__e2b_resume,
    .suspend = sbx__e2b_suspend,
    .destroy = sbx__e2b_destroy,
    .destroy_by_name = sbx__e2b_destroy_by_name,
    .kill_all = sbx__e2b_kill_all,
    .kill_tagged = sbx__e2b_kill_tagged,
    .exec = sbx__e2b_exec,
    .read_file = sbx__e2b_read_file,
    .write_file = sbx__e2b_write_file,
    .stat = sbx__e2b_stat,
    .list = sbx__e2b_list,
    .get_info = sbx__e2b_get_info,
    .list_dir = sbx__e2b_list_dir,
    .host = sbx__e2b_host,
    .metrics = sbx__e2b_metrics,
    .path_info = sbx__e2b_path_info,
    .remove = sbx__e2b_remove,
    .make_dir = sbx__e2b_make_dir,
    .rename = sbx__e2b_rename,
    .read_stream = sbx__e2b_read_stream,
    .write_stream = sbx__e2b_write_stream,
    .free = sbx__e2b_provider_free,
    .process_start = sbx__e2b_process_start,
    .process_attach = sbx__e2b_process_attach,
    .process_wait = sbx__e2b_process_wait,
    .process_send_stdin = sbx__e2b_process_send_stdin,
    .process_close_stdin = sbx__e2b_process_close_stdin,
    .process_kill = sbx__e2b_process_kill,
    .process_free = sbx__e2b_process_free,
    .process_kill_pid = sbx__e2b_process_kill_pid,
    .process_list = sbx__e2b_process_list,
    .pty_start = sbx__e2b_pty_start,
    .pty_attach = sbx__e2b_pty_attach,
    .pty_send_input = sbx__e2b_pty_send_input,
    .pty_resize = sbx__e2b_pty_resize,
    .pty_kill = sbx__e2b_pty_kill,
    .pty_wait = sbx__e2b_pty_wait,
    .pty_free = sbx__e2b_pty_free,
    .watch_dir = sbx__e2b_watch_dir,
    .watch_next = sbx__e2b_watch_next,
    .watch_free = sbx__e2b_watch_free,
    .write_files = sbx__e2b_write_files,
};

static bool is_http_url(const char *u)
{
	return (strncmp(u, "http://", 7) == 0 && u[7]) || (strncmp(u, "https://", 8) == 0 && u[8]);
}

static int copy_config(sbx__e2b_provider *p, const sbx_e2b_config *cfg, const sbx_e2b_options *opts,
                       sbx_error *err)
{
	sbx_buf api = SBX_BUF_INIT(64 * 1024);
	size_t n;
	int error;

	p->timeout_seconds = cfg->timeout_seconds;
	p->domain_allowlist = cfg->domain_allowlist;
	p->allow_open_egress = cfg->allow_open_egress;
	if (opts)
		p->logger = opts->logger;
	if (!(p->domain = sbx__strdup(cfg->domain ? cfg->domain : "e2b.app")) ||
	    !(p->template_id = sbx__strdup(cfg->template_id)))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	if (opts && opts->envd_url) {
		n = strlen(opts->envd_url);
		while (n > 0 && opts->envd_url[n - 1] == '/')
			n--;
		if (!(p->envd_url = sbx__strndup(opts->envd_url, n)))
			return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	}
	if (cfg->effective_api_url)
		error = sbx_buf_puts(&api, cfg->effective_api_url);
	else if (cfg->api_url)
		error = sbx_buf_puts(&api, cfg->api_url);
	else
		error = sbx_buf_printf(&api, "https://api.%s", p->domain);
	if (error == 0 && (error = sbx_global_init()) < 0)
		sbx__error_set(err, error, "cannot initialise libcurl");
	if (error == 0 && (error = sbx__http_new(&p->http, err)) == 0) {
		sbx__http_set_logger(p->http, &p->logger);
		if (opts && opts->version >= 2)
			error =
			    sbx__http_set_test_tls(p->http, opts->tls_ca_file, opts->connect_to);
		if (error == 0)
			error = sbx__e2b_api_init(&p->api, p->http, (const char *)api.ptr,
			                          cfg->api_key, err);
		p->api.logger = p->logger; /* retries are logged (docs/reliability.md) */
	}
	sbx_buf_dispose(&api);
	return error < 0 ? sbx__error_set(err, error, "out of memory") : 0;
}

int sbx_e2b_provider_new(sbx_provider **out, const sbx_e2b_config *cfg, const sbx_e2b_options *opts,
                         sbx_error *err)
{
	sbx__e2b_provider *p;
	int error;

	if (!out)
		return sbx__error_set(err, SBX_EINVALID, "out is NULL");
	*out = NULL;
	if (!cfg || !cfg->api_key || !cfg->api_key[0] || !cfg->template_id || !cfg->template_id[0])
		return sbx__error_set(err, SBX_EINVALID,
		                      "an E2B config with apiKey and template is required");
	for (const char *k = cfg->api_key; *k; k++) {
		/* sent as "X-API-KEY: <key>": a CR or LF would inject headers (fetch refuses it) */
		if ((unsigned char)*k < 0x20 || (unsigned char)*k == 0x7f)
			return sbx__error_set(err, SBX_EINVALID,
			                      "apiKey contains a control character");
	}
	if (cfg->timeout_seconds < 60 || cfg->timeout_seconds > SBX_MAX_TIMEOUT_SECONDS)
		return sbx__error_set(err, SBX_EINVALID, "timeoutSeconds must be 60..86400");
	if (opts && opts->version != 1 && opts->version != SBX_E2B_OPTIONS_VERSION)
		return sbx__error_set(err, SBX_EINVALID, "unsupported sbx_e2b_options version %u",
		                      opts->version);
	if (opts && opts->envd_url && !is_http_url(opts->envd_url))
		return sbx__error_set(err, SBX_EINVALID, "envd_url must be an http or https URL");
	if (!(p = sbx__calloc(1, sizeof(*p))))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	if ((error = sbx__e2b_attach_init(p, err)) < 0 ||
	    (error = copy_config(p, cfg, opts, err)) < 0 ||
	    (error = sbx__provider_new(out, &e2b_vtable, p, err)) < 0) {
		sbx__e2b_provider_free(p);
		return error;
	}
	return 0;
}
