#!/usr/bin/env bash
# tests/unit/check_citations_test.sh ROOT: scripts/check-citations.sh passes on the tree, refuses
# each form of a citation of a note that does not ship (planted in a temporary tree, naming the
# file and line) and lets "the seed" and a token seed through (ctest unit.check_citations). The
# planted lines are built with printf so that this file does not cite anything itself.
set -euo pipefail
root=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check="$root/scripts/check-citations.sh"
bash "$check" "$root" || { echo "FAIL: the tree is refused"; exit 1; }
fails=0
# refused LINE: a file holding LINE (as its second line) is refused, at line 2.
refused() {
	local out
	printf '/* ok */\n%s\n' "$1" >"$tmp/a.c"
	if out=$(bash "$check" "$tmp" a.c); then
		echo "FAIL: [$1] passes"
		fails=1
	elif ! grep -q '^a\.c:2: cites "' <<<"$out"; then
		printf 'FAIL: [%s]: wanted "a.c:2: cites ...", got:\n%s\n' "$1" "$out"
		fails=1
	fi
}
refused "$(printf '/* as iss%s %d says */' ue 23)"
refused "$(printf '// see Issues #%d' 9)"
refused "$(printf '(%s-%s.md §4.1)' e2b protocol)"
refused "$(printf '# the st%s brief' yle)"
refused "$(printf 'from the Des%s brief' ign)"
printf '%s\n' "as the seed does (docs/contract.md \"exec\")" "fk_registry_new(&reg, rt, seed)" \
	"an issue that is open" >"$tmp/b.md"
bash "$check" "$tmp" b.md || { echo "FAIL: the seed, a token seed or a bare issue is refused"; fails=1; }
[ $fails -eq 0 ] && echo "check-citations: passes the tree and 'the seed', refuses 5 citations"
exit $fails
