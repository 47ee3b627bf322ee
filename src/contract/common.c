/*
 * contract/common.c: the version, sbx_free and log level names (sandbox/common.h).
 * sbx_global_init(), libcurl's global init, is the HTTP client's: e2b/http_global.c.
 */
#include <sandbox/common.h>
#include <sandbox/log.h>

#include "util/alloc.h"

void sbx_free(void *ptr)
{
	sbx__free(ptr);
}

const char *sbx_version(void)
{
	return SBX_VERSION;
}

const char *sbx_log_level_name(sbx_log_level level)
{
	switch (level) {
	case SBX_LOG_DEBUG:
		return "debug";
	case SBX_LOG_INFO:
		return "info";
	case SBX_LOG_WARN:
		return "warn";
	case SBX_LOG_ERROR:
		return "error";
	}
	return "unknown";
}
