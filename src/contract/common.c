/*
 * contract/common.c: one-time library initialisation, version, sbx_free and
 * log level names. The only process-wide state is libcurl's global init, done
 * once through pthread_once (docs/contract.md "Many processes, one sandbox").
 */
#include <curl/curl.h>
#include <pthread.h>
#include <sandbox/common.h>
#include <sandbox/error.h>
#include <sandbox/log.h>

#include "util/alloc.h"

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result = CURLE_FAILED_INIT;

static void global_init_once(void)
{
	global_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int sbx_global_init(void)
{
	if (pthread_once(&global_once, global_init_once) != 0)
		return SBX_EINTERNAL;
	/* Written once inside pthread_once, which orders it before every return here. */
	return global_result == CURLE_OK ? 0 : SBX_EINTERNAL;
}

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
