/*
 * e2b/names.c: the E2B-specific patterns (sandbox names, sandbox ids, host names:
 * docs/contract.md "Definitions"), as hand-written matchers: the patterns are simple character
 * classes, and a regex engine would add locale dependence (regcomp's ranges)
 * for no gain.
 */
#include "e2b/names.h"

#include <string.h>

#include "util/err.h"

static bool is_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* The seed's message is "invalid sandbox name: NAME"; the rule after it (docs/contract.md
 * "Definitions") is ours. */
#define NAME_RULE                                                                                  \
	"a name is 1 to 101 letters, digits, '_', '.' or '-', starting with a letter or digit: "   \
	"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$"

/* ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$ */
int sbx__e2b_validate_name(const char *name, sbx_error *err)
{
	char q[SBX_QUOTE_SIZE];
	size_t len = name ? strnlen(name, 102) : 0;
	bool ok = len >= 1 && len <= 101 && is_alnum((unsigned char)name[0]);

	for (size_t i = 1; ok && i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		ok = is_alnum(c) || c == '_' || c == '.' || c == '-';
	}
	if (ok)
		return 0;
	if (!name)
		return sbx__error_set(err, SBX_EINVALID,
		                      "invalid sandbox name: (null) (" NAME_RULE ")");
	return sbx__error_set(err, SBX_EINVALID, "invalid sandbox name: %s (" NAME_RULE ")",
	                      sbx__quote(q, sizeof(q), name, strlen(name)));
}

/* ^[a-zA-Z0-9-]{1,128}$ */
int sbx__e2b_validate_sandbox_id(const char *id, sbx_error *err)
{
	char q[SBX_QUOTE_SIZE];
	size_t len = id ? strnlen(id, 129) : 0;
	bool ok = len >= 1 && len <= 128;

	for (size_t i = 0; ok && i < len; i++) {
		unsigned char c = (unsigned char)id[i];
		ok = is_alnum(c) || c == '-';
	}
	if (ok)
		return 0;
	if (!id)
		return sbx__error_set(err, SBX_EINVALID, "invalid E2B sandbox id: null");
	return sbx__error_set(err, SBX_EINVALID, "invalid E2B sandbox id: \"%s\"",
	                      sbx__quote(q, sizeof(q), id, strlen(id)));
}

/*
 * ^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$ : two or
 * more dot-separated labels of [a-z0-9-], none empty, none starting or ending
 * with '-'. No length limits (docs/contract.md "Definitions" sets none).
 */
bool sbx__is_hostname(const char *s, size_t len)
{
	size_t labels = 0, start = 0;

	if (!s)
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.') {
			unsigned char c = (unsigned char)s[i];
			if (!is_lower_alnum(c) && c != '-')
				return false;
			continue;
		}
		if (i == start || s[start] == '-' || s[i - 1] == '-')
			return false; /* empty label, or one starting or ending with '-' */
		labels++;
		start = i + 1;
	}
	return labels >= 2;
}
