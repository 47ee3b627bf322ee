/*
 * tests/fuzz/fake_stub_link_check.c: links fake-e2b's router (and through it the whole HTTP
 * side) against fake_stub_runtime.c in every build; a runtime call without a stub there is a
 * link error here (tests/fuzz/CMakeLists.txt). Never run.
 */
#include "app.h"
#include "router.h"

int main(void)
{
	fk_app app = {0};
	fk_http_hooks h = fk_router_hooks(&app);
	return h.route ? 0 : 1;
}
