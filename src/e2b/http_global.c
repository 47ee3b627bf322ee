/*
 * e2b/http_global.c: sbx_global_init() (sandbox/common.h), libcurl's global init once per
 * process through pthread_once: the library's only process-wide state (docs/contract.md
 * "Many processes, one sandbox"). It lives with the HTTP client, the one user of libcurl
 * (sbx__http_new() calls it, as the E2B provider's constructor does).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <sandbox/common.h>
#include <sandbox/error.h>

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
