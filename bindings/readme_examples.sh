#!/usr/bin/env bash
# README's first hands-on blocks, exactly as printed, as a new user runs them in the clone:
#   1. "fake-e2b, the local E2B": its ```sh block (start a fake-e2b, point the official SDK's
#      variables at it, create a sandbox, exec in it) with `kill $fk` held back until the end;
#   2. "Packages: Node and Python": its first ```js block saved as example.mjs and its first
#      ```python block as example.py, run in the same environment (README says where to save
#      them: the clone's top folder);
#   3. "The library in brief": its second ```sh block (hello against that fake-e2b, with the
#      block's PORT), ./hello being the build's example-hello (examples/hello.c);
#   4. docs/cli.md "Quick start": its copy of the fake-e2b block (the third ```bash), whole.
# The blocks run in a scratch folder whose build/ and bindings/ are this build's and tree's,
# with HOME there (the block writes ~/.fake-e2b-key).
#
#   bash bindings/readme_examples.sh      # FAKE_E2B and SANDBOX_E2B_BIN from ctest
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
: "${FAKE_E2B:?set FAKE_E2B to fake-e2b}" "${SANDBOX_E2B_BIN:?set SANDBOX_E2B_BIN to sandbox-e2b}"
: "${EXAMPLE_HELLO:?set EXAMPLE_HELLO to the example-hello program}"
tmp=$(mktemp -d /var/tmp/sbx-readme-examples.XXXXXX)
cleanup() {
	[ -s "$tmp/fk.pid" ] && kill "$(cat "$tmp/fk.pid")" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL - $*" >&2
	exit 1
}

# The Nth (default first) fenced block of LANG in README's section whose heading starts with
# SECTION (DOC=docs/cli.md for that doc's).
block() {
	awk -v sec_re="^## $1" -v lang="$2" -v want="${3:-1}" '
		/^## / { sec = ($0 ~ sec_re) }
		sec && n < want && $0 == "```" lang { n++; on = (n == want); next }
		on && $0 == "```" { on = 0 }
		on { print }' "$root/${DOC:-README.md}"
}
block "fake-e2b, the local E2B" sh >"$tmp/fake.sh"
block "Packages" js >"$tmp/example.mjs"
block "Packages" python >"$tmp/example.py"
block "The library in brief" sh 2 >"$tmp/hello.sh"
DOC=docs/cli.md block "Quick start" bash 3 >"$tmp/cli-fake.sh"
for f in fake.sh example.mjs example.py hello.sh cli-fake.sh; do
	[ -s "$tmp/$f" ] || fail "README has no block for $f"
done
grep -qx 'kill $fk .*' "$tmp/fake.sh" || fail "README's fake-e2b block no longer ends with 'kill \$fk'"
mkdir -p "$tmp/build/fake-e2b" "$tmp/build/cli"
ln -s "$FAKE_E2B" "$tmp/build/fake-e2b/fake-e2b"
ln -s "$SANDBOX_E2B_BIN" "$tmp/build/cli/sandbox-e2b"
ln -s "$root/bindings" "$tmp/bindings"
unset SANDBOX_E2B_CONFIG SANDBOX_E2B_ENVD_URL E2B_API_KEY E2B_TEMPLATE E2B_API_URL E2B_SANDBOX_URL E2B_DOMAIN

# 1. the block up to its `kill $fk`, then the environment it exported, for 2
cd "$tmp"
sed '/^kill \$fk/d' fake.sh >fake-run.sh
cat >>fake-run.sh <<'EOF'
echo "$fk" >fk.pid
export -p | grep -E '^declare -x (E2B_|SANDBOX_E2B_)' >env.sh
echo "PORT=$PORT" >>env.sh
EOF
# to a file: the fake-e2b it starts keeps its stdout open (a $(...) would wait for it)
HOME=$tmp bash -e fake-run.sh >fake.out 2>&1 || fail "README's fake-e2b block: exit $?: $(cat fake.out)"
grep -qx sandbox fake.out && grep -qx /workspace fake.out ||
	fail "README's fake-e2b block printed no sandbox, /workspace: $(cat fake.out)"
echo "ok - README's fake-e2b block: whoami, pwd in the sandbox it made"

# 2. the package examples, with what the block exported (and SANDBOX_E2B_BIN, as README says)
# shellcheck disable=SC1091
. ./env.sh
export SANDBOX_E2B_BIN
out=$(node example.mjs) || fail "node example.mjs: exit $?: $out"
grep -q '^  exitCode: 0,$' <<<"$out" || fail "node example.mjs printed no 'exitCode: 0': $out"
grep -q "^  stdout: 'Linux " <<<"$out" || fail "node example.mjs printed no uname -a: $out"
echo "ok - README's Node example (node example.mjs)"
out=$(python3 example.py) || fail "python3 example.py: exit $?: $out"
grep -q '^Linux ' <<<"$out" || fail "python3 example.py streamed no uname -a: $out"
[ "$(tail -n 1 <<<"$out")" = 0 ] || fail "python3 example.py: last line not the exit code 0: $out"
echo "ok - README's Python example (python3 example.py)"

# 3. hello (examples/hello.c) with the block's PORT
ln -s "$EXAMPLE_HELLO" hello
# in this shell's PORT, as README says (a subshell: its exports stay there)
# shellcheck disable=SC1091
out=$( (set -e && . ./hello.sh) 2>&1) || fail "README's hello block: exit $?: $out"
[ "$out" = hello ] || fail "README's hello block printed '$out', not hello"
echo "ok - README's hello block (./hello)"

# docs/cli.md's copy of the block, whole (it destroys its sandbox, then stops its fake-e2b)
mkdir cli-home
HOME=$tmp/cli-home bash -e cli-fake.sh >cli-fake.out 2>&1 ||
	fail "docs/cli.md's fake-e2b block: exit $?: $(cat cli-fake.out)"
grep -qx sandbox cli-fake.out && grep -qx /workspace cli-fake.out ||
	fail "docs/cli.md's fake-e2b block printed no sandbox, /workspace: $(cat cli-fake.out)"
echo "ok - docs/cli.md's fake-e2b block"

# the examples destroyed theirs: only the block's own sandbox is left, then its kill stops all
left=$("$SANDBOX_E2B_BIN" list --json | tr -d ' ')
[[ $left =~ ^\[\{\"id\":\"[a-z0-9]+\",\"name\":\"demo\", ]] && [[ $left != *"},{"* ]] ||
	fail "the examples left other sandboxes than the block's 'demo': $left"
fk=$(cat fk.pid)
kill "$fk"
while kill -0 "$fk" 2>/dev/null; do sleep 0.1; done
rm fk.pid
echo "ok - README's 'kill \$fk' stops fake-e2b"
