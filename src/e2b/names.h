/* e2b/names.h: the E2B-specific patterns (sandbox names, ids, host names: docs/contract.md
 * "Definitions"). */
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
