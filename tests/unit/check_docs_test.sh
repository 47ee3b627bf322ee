#!/usr/bin/env bash
# tests/unit/check_docs_test.sh ROOT BUILD CLI FAKE: scripts/check-docs.sh passes the tree's docs
# against the build (its ctests and targets, the CLI's and fake-e2b's --help), and refuses each
# kind of wrong name drifted into a copy of the tree, naming the doc, the line and the name
# (ctest unit.check_docs).
set -euo pipefail
root=$(cd "$1" && pwd)
build=$2 cli=$3 fake=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	ctest --test-dir "$build" -N
	cmake --build "$build" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/... \1/p; s/^\([A-Za-z0-9_.+-]*\): .*/... \1/p'
} >"$tmp/names"
grep -q 'Test *#[0-9]*: unit.check_docs$' "$tmp/names" || { echo "FAIL: no ctest list"; exit 1; }
check() { bash "$root/scripts/check-docs.sh" --ctest "$tmp/names" --cli "$cli" --fake "$fake" "$@"; }
check "$root" || { echo "FAIL: the tree's docs are refused"; exit 1; }
mkdir "$tmp/tree"
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$tmp/tree" 2>/dev/null) || true
check "$tmp/tree" >/dev/null || { echo "FAIL: the copy is refused"; check "$tmp/tree"; exit 1; }
fails=0
# drift FILE SED-EXPR WANT: after SED-EXPR on FILE of the copy (which must change it), the check
# fails and prints a line containing WANT (no line numbers: the docs move); FILE is restored
# afterwards.
drift() {
	local f=$1 expr=$2 want=$3 out
	sed -i.orig "$expr" "$tmp/tree/$f"
	if cmp -s "$tmp/tree/$f" "$tmp/tree/$f.orig"; then
		echo "FAIL: '$expr' does not change $f"
		fails=1
	elif out=$(check "$tmp/tree"); then
		echo "FAIL: $f drifted by '$expr' passes"
		fails=1
	elif ! grep -qF -- "$want" <<<"$out"; then
		printf 'FAIL: %s drifted by %s: wanted a line with %s, got:\n%s\n' "$f" "$expr" "$want" "$out"
		fails=1
	fi
	mv "$tmp/tree/$f.orig" "$tmp/tree/$f"
}
drift CONTRIBUTING.md 's|(`scripts/check-facts.sh`)|(`scripts/check-fact.sh`)|' \
	'`scripts/check-fact.sh`: no such file'
drift docs/internals/architecture.md 's|\[wire.md\](wire.md)|[wire.md](wires.md)|g' \
	'link wires.md: no such file'
drift fake-e2b/SECURITY.md 's|`oom_spares_pid1`|`oom_spares_pid2`|g' \
	'`oom_spares_pid2`: no such name in the tree (nor a test case)'
drift fake-e2b/SECURITY.md 's|`kill_all__ends_a_fork_bomb`|`kill_all__ends_two_fork_bombs`|' \
	'`kill_all__ends_two_fork_bombs`: no such name in the tree (nor a test case)'
drift CONTRIBUTING.md "s/-R 'unit.config|integration_test_exec'/-R 'unit.config|integration_exec'/" \
	'`ctest -R integration_exec`: matches no ctest'
drift fake-e2b/SECURITY.md 's|`fake.http`|`fake.https`|g' \
	'`fake.https`: no such ctest'
drift tests/fuzz/README.md 's/^| `fuzz_envelope` |/| `fuzz_envelop` |/' \
	'`fuzz_envelop`: no tests/fuzz/fuzz_*.c of that name'
drift README.md 's/^sandbox-e2b ps "\$id"/sandbox-e2b pss "$id"/' \
	'`sandbox-e2b pss`: no such command'
drift README.md 's/^sandbox-e2b ps "\$id"/sandbox-e2b ps --all "$id"/' \
	'`sandbox-e2b ps --all`: no such option'
drift docs/cli.md 's/^| `create NAME \(.*\) \[--allow-host H\]/| `create NAME \1 [--allow-hosts H]/' \
	'`sandbox-e2b create --allow-hosts`: no such option'
drift README.md 's/^\(build\/fake-e2b\/fake-e2b --port 0\) --quiet/\1 --quieter/' \
	'`fake-e2b --quieter`: no such option'
[ $fails -eq 0 ] && echo "check-docs: passes the docs, refuses 11 drifts"
exit $fails
