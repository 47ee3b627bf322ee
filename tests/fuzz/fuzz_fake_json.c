/*
 * fuzz_fake_json: JSON bodies fake-e2b validates before acting
 * (fake-e2b/api/control/ create and network checks, admin/faults.c rules):
 * any bytes are parsed, then checked as a v2 and a legacy create body and as a
 * fault rule. A body that validates has a timeout in 1..86400 s.
 */
#include <stdint.h>
#include <stdlib.h>

#include "control.h"
#include "faults.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!j)
		return 0;
	for (int v2 = 0; v2 < 2; v2++) {
		long timeout = -1;
		char why[160];
		if (json_is_object(j) &&
		    !fk_control_create_validate(j, v2, &timeout, why, sizeof(why)) &&
		    (timeout < 1 || timeout > FK_MAX_TIMEOUT_S))
			abort();
	}
	(void)fk_control_validate_network(json_object_get(j, "network"));
	(void)fk_control_egress_none(json_object_get(j, "allow_internet_access"),
	                             json_object_get(j, "network"));
	long t = 0;
	(void)fk_control_timeout_field(j, "timeout", 15, 0, &t);
	fk_faults *f = fk_faults_new();
	const char *why = NULL;
	if (f && fk_faults_add(f, j, &why) > 0) {
		fk_fault out;
		fk_faults_match(f, "GET", "/sandboxes/x", &out);
		fk_fault_dispose(&out);
		json_decref(fk_faults_list(f));
	}
	fk_faults_free(f);
	json_decref(j);
	return 0;
}
