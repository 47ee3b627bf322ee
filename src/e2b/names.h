/* e2b/names.h: the seed's E2B-specific patterns (NAME_RE, SANDBOX_ID_RE, HOSTNAME_RE). */
#ifndef SBX_E2B_NAMES_H
#define SBX_E2B_NAMES_H

#include <sandbox/error.h>
#include <stdbool.h>

/* ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$ ; SBX_EINVALID "invalid sandbox name: NAME (the rule)" */
int sbx__e2b_validate_name(const char *name, sbx_error *err);
/* ^[a-zA-Z0-9-]{1,128}$ ; SBX_EINVALID "invalid E2B sandbox id: ..." */
int sbx__e2b_validate_sandbox_id(const char *id, sbx_error *err);
/* ^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$ */
bool sbx__is_hostname(const char *s, size_t len);

#endif
