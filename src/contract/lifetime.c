/*
 * contract/lifetime.c: the public calls of sandbox/lifetime.h (create with
 * options, set_timeout). Shared checks first (aborted signal, provider, NULL
 * pointers, the options), then the provider's vtable.
 */
#include "contract/command.h"
#include "contract/provider.h"

#include <sandbox/lifetime.h>
#include <sandbox/validate.h>
#include <string.h>

#include "util/alloc.h"
#include "util/err.h"

/* Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF). */
static bool utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], need, min, v;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1, min = 0x80, v = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2, min = 0x800, v = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3, min = 0x10000, v = c & 0x07;
		else
			return false;
		if (n - i <= need)
			return false;
		for (unsigned k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			v = (v << 6) | (s[i + k] & 0x3f);
		}
		if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
			return false;
		i += need + 1;
	}
	return true;
}

static int check_metadata(const sbx_env_var *m, sbx_error *err)
{
	size_t kl, vl;

	if (!m->key || !m->value)
		return sbx__missing(err, !m->key ? "metadata key" : "metadata value");
	kl = strlen(m->key);
	vl = strlen(m->value);
	if (kl == 0 || kl > SBX_MAX_METADATA_KEY)
		return sbx__error_set(err, SBX_EINVALID, "metadata keys must be 1 to %d bytes",
		                      SBX_MAX_METADATA_KEY);
	for (size_t i = 0; i < kl; i++)
		if ((unsigned char)m->key[i] <= 0x20 || (unsigned char)m->key[i] >= 0x7f)
			return sbx__error_set(
			    err, SBX_EINVALID,
			    "metadata keys must be printable ASCII without spaces");
	if (vl > SBX_MAX_METADATA_VALUE)
		return sbx__error_set(err, SBX_EINVALID, "metadata value of %s is over %d bytes",
		                      m->key, SBX_MAX_METADATA_VALUE);
	if (!utf8_ok((const unsigned char *)m->value, vl))
		return sbx__error_set(err, SBX_EINVALID, "metadata value of %s is not UTF-8",
		                      m->key);
	for (size_t i = 0; i < vl; i++)
		if ((unsigned char)m->value[i] < 0x20 || m->value[i] == 0x7f)
			return sbx__error_set(err, SBX_EINVALID,
			                      "metadata value of %s has a control character",
			                      m->key);
	return 0;
}

static int check_create_options(const sbx_create_options *o, sbx_error *err)
{
	int error;

	if (o->version != SBX_CREATE_OPTIONS_VERSION)
		return sbx__error_set(err, SBX_EINVALID,
		                      "unsupported sbx_create_options version %u", o->version);
	if (o->timeout_seconds > SBX_MAX_TIMEOUT_SECONDS)
		return sbx__error_set(err, SBX_EINVALID,
		                      "create timeout_seconds must be 1..%d (0: the config's)",
		                      SBX_MAX_TIMEOUT_SECONDS);
	if ((error = sbx__env_check(o->env, o->env_count, err)) < 0)
		return error;
	if (o->metadata_count > 0 && !o->metadata)
		return sbx__missing(err, "metadata");
	if (o->metadata_count > SBX_MAX_METADATA)
		return sbx__error_set(err, SBX_EINVALID, "at most %d metadata pairs",
		                      SBX_MAX_METADATA);
	for (size_t i = 0; i < o->metadata_count; i++) {
		if ((error = check_metadata(&o->metadata[i], err)) < 0)
			return error;
		for (size_t j = 0; j < i; j++)
			if (strcmp(o->metadata[i].key, o->metadata[j].key) == 0)
				return sbx__error_set(err, SBX_EINVALID,
				                      "metadata key %s is given twice",
				                      o->metadata[i].key);
	}
	return 0;
}

int sbx_sandbox_create_with(char **id_out, sbx_provider *p, const char *name,
                            const sbx_limits *limits, const sbx_create_options *opts,
                            sbx_signal *sig, sbx_error *err)
{
	int error;

	if (!opts)
		return sbx_sandbox_create(id_out, p, name, limits, sig, err);
	if (id_out)
		*id_out = NULL;
	if ((error = sbx__provider_check(p, sig, err)) < 0)
		return error;
	if (!id_out)
		return sbx__missing(err, "id_out");
	if (!name)
		return sbx__missing(err, "name");
	if (!limits)
		return sbx__missing(err, "limits");
	if ((error = check_create_options(opts, err)) < 0)
		return error;
	if (!p->vt->create_with)
		return sbx__unsupported(err, p, "create_with");
	if ((error = p->vt->create_with(p->impl, id_out, name, limits, opts, sig, err)) < 0 &&
	    *id_out) {
		sbx__free(*id_out);
		*id_out = NULL;
	}
	return error;
}

int sbx_sandbox_set_timeout(sbx_provider *p, const char *id, uint64_t timeout_seconds,
                            sbx_signal *sig, sbx_error *err)
{
	int error;

	if ((error = sbx__call_check(p, sig, SBX__NEED_ID, NULL, id, err)) < 0)
		return error;
	if (timeout_seconds > SBX_MAX_TIMEOUT_SECONDS)
		return sbx__error_set(err, SBX_EINVALID, "timeout_seconds must be 0..%d",
		                      SBX_MAX_TIMEOUT_SECONDS);
	if (!p->vt->set_timeout)
		return sbx__unsupported(err, p, "set_timeout");
	return p->vt->set_timeout(p->impl, id, timeout_seconds, sig, err);
}
