#!/usr/bin/env bash
# tests/unit/check_facts_test.sh ROOT: scripts/check-facts.sh passes on the tree, and refuses
# each fact drifted in one of its places (a copy of the files in a temporary tree), naming the
# place and what it has (ctest unit.check_facts).
set -euo pipefail
root=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
files=(cli/config.c README.md include/sandbox/error.h src/contract/error.c
	cli/rpc/fail.c cli/rpc/rpc.h bindings/protocol/methods.md)
for f in "${files[@]}"; do
	mkdir -p "$tmp/$(dirname "$f")"
	cp "$root/$f" "$tmp/$f"
done
bash "$root/scripts/check-facts.sh" "$tmp" || { echo "FAIL: the tree's copy is refused"; exit 1; }
fails=0
# drift FILE SED-EXPR WANT: after SED-EXPR on FILE (which must change it), the check fails
# and prints a line starting with WANT; FILE is restored afterwards.
drift() {
	local f=$1 expr=$2 want=$3 out
	sed -i.orig "$expr" "$tmp/$f"
	if cmp -s "$tmp/$f" "$tmp/$f.orig"; then
		echo "FAIL: '$expr' does not change $f"
		fails=1
	elif out=$(bash "$root/scripts/check-facts.sh" "$tmp"); then
		echo "FAIL: $f drifted by '$expr' passes"
		fails=1
	elif ! grep -qF -- "$want" <<<"$out"; then
		printf 'FAIL: %s drifted by %s: wanted a line starting %s, got:\n%s\n' "$f" "$expr" \
			"$want" "$out"
		fails=1
	fi
	mv "$tmp/$f.orig" "$tmp/$f"
}
drift README.md 's/^| `domain` | `E2B_DOMAIN` |/| `domain` | `E2B_HOST` |/' \
	"README.md (Configuration): the config keys from E2B_* variables differs from cli/config.c"
drift cli/config.c 's/{"domain", "E2B_DOMAIN"}/{"domain", "E2B_HOST"}/' \
	"README.md (Configuration): the config keys from E2B_* variables differs from cli/config.c"
drift include/sandbox/error.h 's/^\(\s*\)SBX_EINTERNAL = -12/\1SBX_ENEW = -13,\n\1SBX_EINTERNAL = -12/' \
	"src/contract/error.c: the codes sbx_error_code_name names differs from include/sandbox/error.h"
drift src/contract/error.c 's/return "SBX_EGONE";/return "SBX_EGONNE";/' \
	"src/contract/error.c: sbx_error_code_name: SBX_EGONE=SBX_EGONNE"
drift cli/rpc/fail.c 's/{SBX_ETOOLARGE, "too_large"}/{SBX_ETOOLARGE, "toolarge"}/' \
	"bindings/protocol/methods.md: the wire names of data.code differs from cli/rpc/fail.c: has [invalid, gone, aborted, timeout, too_large,"
drift cli/rpc/fail.c 's/{SBX_EUSER, "user"}/{SBX_EUSER, "gone"}/' \
	"cli/rpc/fail.c: lib_names: a wire name twice: gone"
drift cli/rpc/fail.c 's/{SBX_ESANDBOX, "sandbox"},//' \
	"cli/rpc/fail.c: the codes lib_names names differs from include/sandbox/error.h (all but SBX_EINTERNAL)"
drift cli/rpc/fail.c 's/{RPC_INVALID_PARAMS, "invalid_params"}/{RPC_INVALID_PARAMS, "bad_params"}/' \
	"bindings/protocol/methods.md: the names of the JSON-RPC codes differs from cli/rpc/fail.c (rpc_names): has [-32700=parse_error, -32600=invalid_request, -32601=method_not_found, -32602=invalid_params,"
drift bindings/protocol/methods.md 's/^`internal`, -32001 `not_configured`/`internal`, -32001 `unconfigured`/' \
	"bindings/protocol/methods.md: the names of the JSON-RPC codes differs from cli/rpc/fail.c (rpc_names): has [-32700=parse_error, -32600=invalid_request, -32601=method_not_found, -32602=invalid_params, -32603=internal, -32000=internal, -32001=unconfigured,"
drift cli/rpc/fail.c '1i #define RPC_PARSE_ERROR (-32700)' \
	"cli/rpc/fail.c: RPC_PARSE_ERROR is defined again in cli/rpc/rpc.h: define it once, in a header they share"
[ $fails -eq 0 ] && echo "check-facts: passes the tree, refuses 10 drifts"
exit $fails
