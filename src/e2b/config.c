/*
 * e2b/config.c: the deployment config (docs/contract.md "The deployment config";
 * the seed's is a strict zod object), parsed here with
 * jansson and checked key by key, every problem collected as "<key>: <rule>"
 * and joined with "; " (zod reports every issue, not the first).
 *
 * The API key is a secret: no message ever contains a value from the config,
 * only key names; jansson's error text (which quotes input) is never used.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <sandbox/e2b.h>
#include <sandbox/lifetime.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "e2b/names.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/err.h"

#define CONFIG_MAX_BYTES        (1024 * 1024) /* a config is a few hundred bytes */
#define CONFIG_MAX_DEPTH        32            /* the config is flat; deeper is surely wrong */
#define CONFIG_JSON_MAX         (64 * 1024)   /* most bytes of a rendered config */
#define DEFAULT_DOMAIN          "e2b.app"
#define DEFAULT_TIMEOUT_SECONDS 3600
#define MIN_TIMEOUT_SECONDS     60

/* Problems found so far, "<key>: <rule>; ..."; cut (never overflowing) when full. */
typedef struct problems {
	char text[SBX_ERROR_MESSAGE_MAX];
	size_t len;
	int count;
	bool template_at_fault; /* the reason SBX_E2B_CONFIG_TEMPLATE, whatever the text holds */
} problems;

/* An SBX_EINVALID with its reason (sandbox/e2b.h "SBX_E2B_CONFIG_*") as err->e2b_code. */
#define config_invalid(err, reason, ...)                                                           \
	sbx__error_set_http(err, SBX_EINVALID, 0, reason, __VA_ARGS__)

static void problem(problems *p, const char *key, const char *rule)
{
	char q[SBX_QUOTE_SIZE];
	int n;
	if (strcmp(key, "template") == 0)
		p->template_at_fault = true;
	if (p->len >= sizeof(p->text) - 1)
		return;
	n = snprintf(p->text + p->len, sizeof(p->text) - p->len, "%s%s: %s", p->count ? "; " : "",
	             sbx__quote(q, sizeof(q), key, strlen(key)), rule);
	p->count++;
	if (n > 0)
		p->len += (size_t)n;
	if (p->len > sizeof(p->text) - 1)
		p->len = sizeof(p->text) - 1;
}

/* Nesting depth of a JSON text, skipping strings; checked before jansson parses it. */
static size_t json_depth(const char *s, size_t len)
{
	size_t depth = 0, max = 0;
	bool in_string = false, escaped = false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (in_string) {
			if (escaped)
				escaped = false;
			else if (c == '\\')
				escaped = true;
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == '{' || c == '[') {
			if (++depth > max)
				max = depth;
		} else if ((c == '}' || c == ']') && depth > 0) {
			depth--;
		}
	}
	return max;
}

static int load(json_t **root, const char *json, size_t len, sbx_error *err)
{
	json_error_t jerr;
	if (!json)
		return sbx__error_set(err, SBX_EINVALID, "config JSON is NULL");
	if (len > CONFIG_MAX_BYTES)
		return config_invalid(err, SBX_E2B_CONFIG_TOO_LARGE,
		                      "config is larger than %d bytes", CONFIG_MAX_BYTES);
	if (json_depth(json, len) > CONFIG_MAX_DEPTH)
		return config_invalid(err, SBX_E2B_CONFIG_TOO_DEEP,
		                      "config nests deeper than %d levels", CONFIG_MAX_DEPTH);
	/* Integers as reals: zod's int() accepts 3600.0, and a huge number then fails
	 * the range check instead of the parse. */
	*root = json_loadb(
	    json, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL | JSON_DECODE_ANY, &jerr);
	if (*root)
		return 0;
	switch (json_error_code(&jerr)) {
	case json_error_out_of_memory:
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	case json_error_duplicate_key:
		return config_invalid(err, SBX_E2B_CONFIG_DUPLICATE_KEY,
		                      "config has a duplicate key (line %d, column %d)", jerr.line,
		                      jerr.column);
	default: /* jerr.text may quote the input, which holds the API key */
		return config_invalid(err, SBX_E2B_CONFIG_NOT_JSON,
		                      "config is not valid JSON (line %d, column %d)", jerr.line,
		                      jerr.column);
	}
}

/* The value of a string key, or NULL when absent (a problem is noted if wrong). */
static const char *string_field(problems *p, json_t *root, const char *key, bool required,
                                bool nonempty)
{
	json_t *v = json_object_get(root, key);
	if (!v) {
		if (required)
			problem(p, key, "required");
		return NULL;
	}
	if (!json_is_string(v)) {
		problem(p, key, "expected string");
		return NULL;
	}
	if (nonempty && json_string_length(v) == 0) {
		problem(p, key, "must not be empty");
		return NULL;
	}
	return json_string_value(v);
}

static void bool_field(problems *p, json_t *root, const char *key, bool *out)
{
	json_t *v = json_object_get(root, key);
	if (!v)
		return;
	if (!json_is_boolean(v))
		problem(p, key, "expected boolean");
	else
		*out = json_is_true(v);
}

static void timeout_field(problems *p, json_t *root, int64_t *out)
{
	json_t *v = json_object_get(root, "timeoutSeconds");
	double d;
	if (!v)
		return;
	if (!json_is_number(v)) {
		problem(p, "timeoutSeconds", "expected integer");
		return;
	}
	d = json_number_value(v);
	if (!isfinite(d) || floor(d) != d)
		problem(p, "timeoutSeconds", "expected integer");
	else if (d < MIN_TIMEOUT_SECONDS)
		problem(p, "timeoutSeconds", "must be >= 60");
	else if (d > SBX_MAX_TIMEOUT_SECONDS)
		problem(p, "timeoutSeconds", "must be <= 86400");
	else
		*out = (int64_t)d;
}

/*
 * What a WHATWG URL parser (`new URL`, and fetch) makes of its input before
 * parsing: every ASCII tab, LF and CR removed, then leading and trailing C0
 * controls and spaces. Into `out` (>= len + 1 bytes); returns the new length.
 */
static size_t whatwg_clean(char *out, const char *url, size_t len)
{
	size_t n = 0, a = 0;

	for (size_t i = 0; i < len; i++)
		if (url[i] != '\t' && url[i] != '\n' && url[i] != '\r')
			out[n++] = url[i];
	while (n > 0 && (unsigned char)out[n - 1] <= 0x20)
		n--;
	while (a < n && (unsigned char)out[a] <= 0x20)
		a++;
	memmove(out, out + a, n - a);
	out[n - a] = '\0';
	return n - a;
}

/* /^https?:\/\//i: zod's z.url({protocol: /^https?$/}) asks for it on the trimmed value. */
static bool starts_http_slashes(const char *s, size_t len)
{
	size_t k = len >= 5 && (s[4] == 's' || s[4] == 'S') ? 5 : 4;
	return len >= k + 3 && strncasecmp(s, "http", 4) == 0 && memcmp(s + k, "://", 3) == 0;
}

/*
 * zod's z.url({protocol: /^https?$/}) on the trimmed value (docs/contract.md,
 * "The deployment config"): the text must start with http:// or https://
 * (any case; "http:/x", which a URL parser would take, is refused), and must
 * parse as a URL with an http(s) scheme and a host once the URL parser's own
 * clean-up is applied (so "http://x<TAB>y" is http://xy, as fetch sends it).
 * 0 valid, 1 invalid, SBX_ENOMEM.
 */
static int check_url(const char *url, size_t len)
{
	CURLU *h = curl_url();
	char *s, *host = NULL, *scheme = NULL;
	CURLUcode rc;
	int result = 1;

	if (!h)
		return SBX_ENOMEM;
	if (!starts_http_slashes(url, len)) {
		curl_url_cleanup(h);
		return 1;
	}
	if (!(s = sbx__malloc(len + 1))) {
		curl_url_cleanup(h);
		return SBX_ENOMEM;
	}
	whatwg_clean(s, url, len);
	rc = curl_url_set(h, CURLUPART_URL, s, 0);
	if (rc == CURLUE_OUT_OF_MEMORY)
		result = SBX_ENOMEM;
	else if (rc == CURLUE_OK && curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	         curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK && host[0] &&
	         (strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0))
		result = 0;
	curl_free(host);
	curl_free(scheme);
	sbx__free(s);
	curl_url_cleanup(h);
	return result;
}

static bool is_js_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The values a valid config holds, borrowed from the parsed JSON. */
typedef struct fields {
	const char *api_key, *api_url, *domain, *template_id;
	size_t api_url_len;
	int64_t timeout_seconds;
	bool domain_allowlist, allow_open_egress;
} fields;

static int check_api_url(problems *p, json_t *root, fields *f)
{
	const char *url = string_field(p, root, "apiUrl", false, false);
	size_t len;
	int rc;
	if (!url)
		return 0;
	len = strlen(url);
	while (len > 0 && is_js_space(url[len - 1]))
		len--;
	while (len > 0 && is_js_space(url[0])) {
		url++;
		len--;
	}
	if ((rc = check_url(url, len)) < 0)
		return rc;
	if (rc > 0)
		problem(p, "apiUrl", "must be an http or https URL");
	f->api_url = url;
	f->api_url_len = len;
	return 0;
}

static int check_fields(problems *p, json_t *root, fields *f)
{
	static const char *const known[] = {"apiKey",         "apiUrl",         "domain",
	                                    "template",       "timeoutSeconds", "domainAllowlist",
	                                    "allowOpenEgress"};
	const char *key;
	json_t *v;
	int error;

	f->api_key = string_field(p, root, "apiKey", true, true);
	if ((error = check_api_url(p, root, f)) < 0)
		return error;
	if ((v = json_object_get(root, "domain")) && !json_is_string(v))
		problem(p, "domain", "expected string");
	else if (v && !sbx__is_hostname(json_string_value(v), json_string_length(v)))
		problem(p, "domain", "domain must be a lowercase hostname such as e2b.app");
	else if (v)
		f->domain = json_string_value(v);
	f->template_id = string_field(p, root, "template", true, true);
	timeout_field(p, root, &f->timeout_seconds);
	bool_field(p, root, "domainAllowlist", &f->domain_allowlist);
	bool_field(p, root, "allowOpenEgress", &f->allow_open_egress);
	json_object_foreach(root, key, v)
	{
		size_t i = 0;
		while (i < sizeof(known) / sizeof(known[0]) && strcmp(key, known[i]) != 0)
			i++;
		if (i == sizeof(known) / sizeof(known[0]))
			problem(p, key, "unrecognized key");
	}
	return 0;
}

static int build(sbx_e2b_config **out, const fields *f)
{
	sbx_e2b_config *cfg = sbx__calloc(1, sizeof(*cfg));
	sbx_buf url = SBX_BUF_INIT(CONFIG_MAX_BYTES);
	size_t len;

	if (!cfg)
		return SBX_ENOMEM;
	cfg->timeout_seconds = f->timeout_seconds;
	cfg->domain_allowlist = f->domain_allowlist;
	cfg->allow_open_egress = f->allow_open_egress;
	if (!(cfg->api_key = sbx__strdup(f->api_key)) || !(cfg->domain = sbx__strdup(f->domain)) ||
	    !(cfg->template_id = sbx__strdup(f->template_id)) ||
	    (f->api_url && !(cfg->api_url = sbx__strndup(f->api_url, f->api_url_len))))
		goto nomem;
	if (f->api_url) {
		/* requests go where fetch would send them: the URL parser's clean-up applied */
		unsigned char *tail;
		if (sbx_buf_reserve(&url, f->api_url_len + 1, &tail) < 0)
			goto nomem;
		sbx_buf_commit(&url, whatwg_clean((char *)tail, f->api_url, f->api_url_len));
	} else if (sbx_buf_printf(&url, "https://api.%s", cfg->domain) < 0) {
		goto nomem;
	}
	if (sbx_buf_detach(&url, (unsigned char **)&cfg->effective_api_url, &len) < 0)
		goto nomem;
	*out = cfg;
	return 0;
nomem:
	sbx_buf_dispose(&url);
	sbx_e2b_config_free(cfg);
	return SBX_ENOMEM;
}

int sbx_e2b_config_parse(sbx_e2b_config **out, const char *json, size_t len, sbx_error *err)
{
	fields f = {.domain = DEFAULT_DOMAIN,
	            .timeout_seconds = DEFAULT_TIMEOUT_SECONDS,
	            .domain_allowlist = true,
	            .allow_open_egress = false};
	problems p = {.len = 0, .count = 0, .template_at_fault = false};
	json_t *root = NULL;
	int error;

	if (!out)
		return sbx__error_set(err, SBX_EINVALID, "out is NULL");
	*out = NULL;
	if ((error = load(&root, json, len, err)) < 0)
		return error;
	if (!json_is_object(root)) {
		error =
		    config_invalid(err, SBX_E2B_CONFIG_NOT_OBJECT, "config must be a JSON object");
		goto done;
	}
	p.text[0] = '\0';
	if ((error = check_fields(&p, root, &f)) < 0) {
		sbx__error_set(err, error, "out of memory");
		goto done;
	}
	if (p.count > 0) {
		error = config_invalid(
		    err, p.template_at_fault ? SBX_E2B_CONFIG_TEMPLATE : SBX_E2B_CONFIG_KEYS, "%s",
		    p.text);
		goto done;
	}
	if ((error = build(out, &f)) < 0)
		sbx__error_set(err, error, "out of memory");
done:
	json_decref(root);
	return error;
}

void sbx_e2b_config_free(sbx_e2b_config *cfg)
{
	if (!cfg)
		return;
	if (cfg->api_key)
		explicit_bzero(cfg->api_key, strlen(cfg->api_key));
	sbx__free(cfg->api_key);
	sbx__free(cfg->api_url);
	sbx__free(cfg->domain);
	sbx__free(cfg->template_id);
	sbx__free(cfg->effective_api_url);
	sbx__free(cfg);
}

/* Steals `v` (jansson's _new convention); -1 when either is NULL or on OOM. */
static int set_new(json_t *obj, const char *key, json_t *v)
{
	return v ? json_object_set_new(obj, key, v) : -1;
}

static int dump_to_buf(const char *buffer, size_t size, void *data)
{
	return sbx_buf_put(data, buffer, size) < 0 ? -1 : 0;
}

int sbx_e2b_config_to_json(char **out, const sbx_e2b_config *cfg, sbx_error *err)
{
	sbx_buf b = SBX_BUF_INIT(CONFIG_JSON_MAX);
	json_t *obj;
	int error = SBX_ENOMEM;

	if (!out || !cfg)
		return sbx__error_set(err, SBX_EINVALID, "out and cfg are required");
	*out = NULL;
	if (!(obj = json_object()))
		return sbx__error_set(err, SBX_ENOMEM, "out of memory");
	/* The keys in docs/contract.md "The deployment config"'s order; the API key never leaves
	 * the struct. */
	if (set_new(obj, "apiKey", json_string("[redacted]")) < 0 ||
	    (cfg->api_url && set_new(obj, "apiUrl", json_string(cfg->api_url)) < 0) ||
	    set_new(obj, "domain", json_string(cfg->domain ? cfg->domain : "")) < 0 ||
	    set_new(obj, "template", json_string(cfg->template_id ? cfg->template_id : "")) < 0 ||
	    set_new(obj, "timeoutSeconds", json_integer(cfg->timeout_seconds)) < 0 ||
	    set_new(obj, "domainAllowlist", json_boolean(cfg->domain_allowlist)) < 0 ||
	    set_new(obj, "allowOpenEgress", json_boolean(cfg->allow_open_egress)) < 0)
		goto done;
	if (json_dump_callback(obj, dump_to_buf, &b, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0)
		goto done;
	error = sbx_buf_detach(&b, (unsigned char **)out, NULL);
done:
	sbx_buf_dispose(&b);
	json_decref(obj);
	return error < 0 ? sbx__error_set(err, error, "out of memory") : 0;
}
