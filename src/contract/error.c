/*
 * contract/error.c: names of error codes and resetting an sbx_error. The codes come from
 * <sandbox/error.h>; scripts/check-facts.sh (lint) fails when a code is not named here as
 * itself, or serve's wire names (cli/rpc/fail.c, bindings/protocol/methods.md) drift.
 */
#include <sandbox/error.h>
#include <string.h>

const char *sbx_error_code_name(int code)
{
	switch (code) {
	case SBX_OK:
		return "SBX_OK";
	case SBX_EINVALID:
		return "SBX_EINVALID";
	case SBX_EGONE:
		return "SBX_EGONE";
	case SBX_EABORTED:
		return "SBX_EABORTED";
	case SBX_ETIMEOUT:
		return "SBX_ETIMEOUT";
	case SBX_ETOOLARGE:
		return "SBX_ETOOLARGE";
	case SBX_ENOMEM:
		return "SBX_ENOMEM";
	case SBX_EPROTOCOL:
		return "SBX_EPROTOCOL";
	case SBX_EHTTP:
		return "SBX_EHTTP";
	case SBX_ENETWORK:
		return "SBX_ENETWORK";
	case SBX_EUSER:
		return "SBX_EUSER";
	case SBX_ESANDBOX:
		return "SBX_ESANDBOX";
	case SBX_EINTERNAL:
		return "SBX_EINTERNAL";
	}
	return "SBX_E?";
}

void sbx_error_clear(sbx_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}
