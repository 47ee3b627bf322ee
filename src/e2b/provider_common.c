/*
 * e2b/provider_common.c: the helpers every provider file shares: the logger, passing
 * an error on, the upload failure's words, the abort check, the envd user name.
 */

#include "e2b/provider_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "contract/provider.h"
#include "e2b/names.h"
#include "e2b/scripts.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/err.h"
#include <sandbox/validate.h>

void sbx__e2b_log(const sbx__e2b_provider *p, sbx_log_level level, const char *msg,
                  const sbx_log_field *fields, size_t n)
{
	if (p->logger.fn)
		p->logger.fn(level, msg, fields, n, p->logger.payload);
}

void sbx__e2b_pass_error(sbx_error *err, const sbx_error *local)
{
	if (err && err->code == 0 && local->code != 0)
		*err = *local;
}

void sbx__e2b_upload_failed(sbx_error *err, int error, const sbx_error *local)
{
	if (error == SBX_ETIMEOUT || error == SBX_EABORTED)
		sbx__error_set(err, error,
		               error == SBX_ETIMEOUT ? "E2B file upload timed out" : "aborted");
	else
		sbx__e2b_pass_error(err, local);
}

int sbx__e2b_aborted(sbx_signal *sig, sbx_error *err)
{
	if (sbx_signal_aborted(sig))
		return sbx__error_set(err, SBX_EABORTED, "aborted");
	return 0;
}

const char *sbx__e2b_user_name(sbx_user user)
{
	return user == SBX_USER_ROOT ? SBX_E2B_ROOT_USER : SBX_E2B_SANDBOX_USER;
}
