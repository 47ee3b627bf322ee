# scripts/src-floors.sh: the floors of src/, lowest first, in one place (sourced by lint.sh,
# which checks includes, and check-layers.sh, which checks the symbols the objects use).
# docs/internals/architecture.md "The library" describes them: the public headers, util/,
# contract/, then src/e2b/ in three floors: the wire leaves (HTTP, Connect envelopes, names,
# in-sandbox scripts, exit statuses), the two services (the control-plane API and envd, with
# the config that names their addresses), and the provider that implements contract/'s table.
# A new file in src/e2b/ lands on the provider floor unless it is listed lower here.
# shellcheck shell=bash

# src_floor PATH: the floor of PATH, as included ("e2b/http.h") or as a file ("src/e2b/http.c");
# 9 for anything outside src/ and include/.
src_floor() {
	local p=${1#src/}
	case "$p" in
	sandbox/* | sandbox.h) echo 0 ;;
	util/*) echo 1 ;;
	contract/*) echo 2 ;;
	e2b/http.* | e2b/http_*.* | e2b/envelope.* | e2b/names.* | e2b/scripts.* | e2b/scripts_sh.* | e2b/exit_status.*) echo 3 ;;
	e2b/api.* | e2b/envd.* | e2b/envd_*.* | e2b/config.*) echo 4 ;;
	e2b/*) echo 5 ;;
	*) echo 9 ;;
	esac
}
