/*
 * sandbox/e2b.h: the E2B provider of the sandbox@1 contract and its
 * deployment config (docs/contract.md "The deployment config"; the wire
 * protocol it speaks: docs/protocol.md).
 */
#ifndef SANDBOX_E2B_H
#define SANDBOX_E2B_H

#include "common.h"
#include "error.h"
#include "log.h"
#include "sandbox.h"

SBX_BEGIN_DECLS

/**
 * A normalized deployment config, defaults filled in. Made by
 * sbx_e2b_config_parse(); owned by the caller, freed with
 * sbx_e2b_config_free(). Read-only once made; safe to share between threads.
 */
typedef struct sbx_e2b_config {
	char *api_key;           /**< secret: never log or print it */
	char *api_url;           /**< "apiUrl" as given, or NULL */
	char *domain;            /**< default "e2b.app" */
	char *template_id;       /**< "template" */
	int64_t timeout_seconds; /**< 60..86400, default 3600 */
	bool domain_allowlist;   /**< default true */
	bool allow_open_egress;  /**< default false */
	char *effective_api_url; /**< api_url, or "https://api.<domain>" */
} sbx_e2b_config;

/*
 * Why sbx_e2b_config_parse() refused a config, as data: its SBX_EINVALID carries one of these
 * in err->e2b_code (no server answered, so the field holds the library's own reason; the names
 * never collide with an E2B or Connect code). Branch on them, never on the message, whose keys
 * come from the input. Stable: never renamed or reused. An argument error (out or json NULL)
 * leaves e2b_code "".
 */
#define SBX_E2B_CONFIG_TOO_LARGE     "config_too_large"     /**< more than 1 MiB */
#define SBX_E2B_CONFIG_TOO_DEEP      "config_too_deep"      /**< nests deeper than 32 levels */
#define SBX_E2B_CONFIG_NOT_JSON      "config_not_json"      /**< a JSON syntax error */
#define SBX_E2B_CONFIG_DUPLICATE_KEY "config_duplicate_key" /**< a key given twice */
#define SBX_E2B_CONFIG_NOT_OBJECT    "config_not_object"    /**< valid JSON, not an object */
/** Keys break their rules and "template" is one of them (missing, not a string, empty). */
#define SBX_E2B_CONFIG_TEMPLATE "config_template"
/** Keys break their rules (wrong type, out of range, unknown key), "template" not among them. */
#define SBX_E2B_CONFIG_KEYS "config_keys"

/**
 * An SBX_ENETWORK that could not reach envd (a sandbox's https://49983-<id>.<domain>, or the
 * envd_url option) carries this in err->e2b_code: the Connect code a Connect client reports
 * when it cannot reach the server. One that could not reach the API server (apiUrl) leaves
 * e2b_code "". Branch on it to tell the two apart, never on the message.
 */
#define SBX_E2B_ENVD_UNAVAILABLE "unavailable"

/**
 * Parse and validate a deployment config JSON object with exactly the keys and
 * rules of docs/contract.md "The deployment config": apiKey (required, non-empty string), apiUrl
 * (optional http or https URL), domain (hostname pattern, default "e2b.app"), template (required,
 * non-empty), timeoutSeconds (integer 60..86400, default 3600), domainAllowlist (boolean, default
 * true), allowOpenEgress (boolean, default false). Unknown keys, wrong types and out-of-range
 * values are errors.
 *
 * Thread-safe (no shared state).
 *
 * @param[out] out  the config; caller frees with sbx_e2b_config_free(). NULL
 *                  on failure.
 * @param json, len the JSON text, len bytes (need not be NUL-terminated; at
 *                  most 1 MiB, nesting at most 32 levels, no duplicate key).
 * @return 0, SBX_EINVALID (err->message names every offending key and its
 *         rule, separated by "; "; never quotes the input, which holds the
 *         API key; err->e2b_code says which rule failed, one of the
 *         SBX_E2B_CONFIG_* reasons above), SBX_ENOMEM.
 */
SBX_EXTERN int sbx_e2b_config_parse(sbx_e2b_config **out, const char *json, size_t len,
                                    sbx_error *err);

/** Free a config (zeroing the API key first). Accepts NULL. Not while another thread reads it. */
SBX_EXTERN void sbx_e2b_config_free(sbx_e2b_config *cfg);

/**
 * Render the normalized config as a JSON object (the seven keys in the seed's
 * order: apiKey, apiUrl, domain, template, timeoutSeconds, domainAllowlist,
 * allowOpenEgress; defaults filled in, apiUrl omitted when unset) with apiKey
 * replaced by "[redacted]".
 * Thread-safe (cfg is only read).
 * @param[out] out  NUL-terminated compact JSON; caller frees with sbx_free().
 *                  NULL on failure.
 * @return 0, SBX_EINVALID (out or cfg NULL), SBX_ENOMEM.
 */
SBX_EXTERN int sbx_e2b_config_to_json(char **out, const sbx_e2b_config *cfg, sbx_error *err);

#define SBX_E2B_OPTIONS_VERSION 2

/** Options of sbx_e2b_provider_new(). Initialise with SBX_E2B_OPTIONS_INIT. */
typedef struct sbx_e2b_options {
	unsigned int version; /**< SBX_E2B_OPTIONS_VERSION */
	/**
	 * envd base URL override (docs/protocol.md "Reaching envd"), e.g.
	 * "http://127.0.0.1:49983" for fake-e2b or a self-hosted gateway; requests
	 * are routed by the E2b-Sandbox-Id header. NULL: https://49983-<id>.<domain>.
	 * Copied.
	 */
	const char *envd_url;
	sbx_logger logger; /**< NULL fn = silent; copied, the payload is borrowed until free */
	/* Version 2 (read only when version >= 2): */
	/**
	 * Test option: trust only the certificate authorities in this PEM file (for example
	 * fake-e2b --tls's `ca.pem`) instead of the system's, for the API and envd. NULL: the
	 * system's. Copied.
	 */
	const char *tls_ca_file;
	/**
	 * Test option: where to connect, in curl's CURLOPT_CONNECT_TO form
	 * "HOST:PORT:CONNECT-HOST:CONNECT-PORT" (empty parts match every host or port), e.g.
	 * "::127.0.0.1:8443" sends https://api.<domain> and https://49983-<id>.<domain> to a
	 * local fake-e2b while TLS still checks the names. NULL: DNS as usual. Copied.
	 */
	const char *connect_to;
} sbx_e2b_options;

/* clang-format off */
#define SBX_E2B_OPTIONS_INIT {SBX_E2B_OPTIONS_VERSION, NULL, {NULL, NULL}, NULL, NULL}
/* clang-format on */

/**
 * Create an E2B provider (the seed's createE2BSandbox, docs/contract.md). The config
 * is copied (cfg may be freed afterwards); `opts` may be NULL (defaults). The
 * provider is safe to use from many threads at once (sandbox/sandbox.h).
 * Calls sbx_global_init() itself.
 * @param[out] out  caller frees with sbx_provider_free(). NULL on failure.
 * @param cfg       from sbx_e2b_config_parse(), or filled by hand: api_key and
 *                  template_id non-empty, timeout_seconds 60..86400; domain
 *                  NULL means "e2b.app", effective_api_url NULL means api_url
 *                  or "https://api.<domain>". A hand-filled struct stays the
 *                  caller's: never pass it to sbx_e2b_config_free().
 * @return 0, SBX_EINVALID (out NULL, cfg incomplete or out of range, api_key
 *         with a control character (it is sent as a header), unknown
 *         options version (1 and 2 are known), envd_url not http(s)), SBX_ENOMEM,
 *         SBX_EINTERNAL
 *         (libcurl could not be initialised).
 */
SBX_EXTERN int sbx_e2b_provider_new(sbx_provider **out, const sbx_e2b_config *cfg,
                                    const sbx_e2b_options *opts, sbx_error *err);

SBX_END_DECLS

#endif
