#!/usr/bin/env bash
# tests/peer/python-sdk.sh: the official e2b Python SDK's own tests (e2b-dev/E2B
# packages/python-sdk/tests) against a fake-e2b this script starts on E2B's production path
# (--tls --port 443 --domain e2b.localhost). Not part of ctest or .ci/run: it needs a checkout
# (or bare mirror) of e2b-dev/E2B, root (port 443) and Debian 12's Python packages. See
# tests/peer/README.md ("The official Python SDK's own tests") for what it finds and why.
#
#   tests/peer/python-sdk.sh [--fake PATH] [--keep] E2B_CHECKOUT [-- pytest args]
#
# pytest args default to the sandbox and API tests, sync and async. Exit: pytest's status.
set -euo pipefail

# The last python-sdk commit importable with Debian 12's packages: the next one (00253c39c)
# moves envd's RPC onto connectrpc, pyqwest and protobuf-py, which Debian does not package.
COMMIT=5e141a765
SDK_VERSION=2.34.0
PKGS=(python3-venv python3-httpx python3-httpcore python3-protobuf python3-attr
	python3-packaging python3-dateutil python3-typing-extensions python3-wcmatch python3-h2
	python3-rich python3-pytest python3-pytest-asyncio python3-pytest-xdist
	python3-pytest-timeout python3-dotenv)

here=$(cd "$(dirname "$0")" && pwd)
fake="$here/../../build/fake-e2b/fake-e2b"
keep=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--fake) fake=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) sed -n '2,10p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
[[ $# -ge 1 ]] || { echo "usage: $0 [--fake PATH] [--keep] E2B_CHECKOUT [-- pytest args]" >&2; exit 2; }
repo=$1
shift
[[ ${1:-} == -- ]] && shift
tests=("$@")
[[ ${#tests[@]} -gt 0 ]] || tests=(tests/sync/sandbox_sync tests/sync/api_sync
	tests/async/sandbox_async tests/async/api_async)

[[ $(id -u) -eq 0 ]] || { echo "$0: needs root (port 443)" >&2; exit 2; }
[[ -x $fake ]] || { echo "$0: no fake-e2b at $fake (--fake PATH)" >&2; exit 2; }
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
	echo "$0: missing Debian packages: apt-get install -y ${missing[*]}" >&2
	exit 2
fi
if ss -ltn 'sport = :443' | grep -q LISTEN; then
	echo "$0: port 443 is taken (another server's): not stopping it" >&2
	exit 2
fi

scratch=$(mktemp -d /var/tmp/e2b-python-sdk.XXXXXX)
server=""
cleanup() {
	if [[ -n $server ]] && kill -0 "$server" 2>/dev/null; then
		kill "$server"
		for _ in $(seq 120); do kill -0 "$server" 2>/dev/null || break; sleep 1; done
	fi
	if [[ $keep -eq 0 ]]; then rm -rf "$scratch"; else echo "kept $scratch"; fi
}
trap cleanup EXIT INT TERM

# the SDK and its tests at COMMIT, never into this repository
git -C "$repo" archive "$COMMIT" packages/python-sdk | tar -x -C "$scratch"
sdk="$scratch/packages/python-sdk"

# a venv over Debian's packages, the SDK from its source
/usr/bin/python3 -m venv --system-site-packages "$scratch/venv"
sp=$("$scratch/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$sp/e2b-$SDK_VERSION.dist-info" "$sp/dockerfile_parse"
printf 'Metadata-Version: 2.1\nName: e2b\nVersion: %s\n' "$SDK_VERSION" \
	>"$sp/e2b-$SDK_VERSION.dist-info/METADATA" # the SDK reads its version from it
echo "$sdk" >"$sp/e2b-sdk.pth"
# Debian 12 has no dockerfile-parse: a stand-in that fails when used (Template.from_dockerfile)
cat >"$sp/dockerfile_parse/__init__.py" <<'EOF'
class DockerfileParser:
    def __init__(self, *a, **k):
        raise RuntimeError("dockerfile-parse is not installed here (stand-in module)")
EOF
# Debian's httpx is 0.23.3, the SDK asks for >= 0.27: the two names that differ
cat >"$sp/e2b_httpx_compat.py" <<'EOF'
import sys
import typing

# a .pth runs this before the system dist-packages joins sys.path
for _p in ("/usr/local/lib/python3.11/dist-packages", "/usr/lib/python3/dist-packages"):
    if _p not in sys.path:
        sys.path.append(_p)

import httpx
import httpx._types as _t

if not hasattr(_t, "ProxyTypes"):  # httpx 0.26
    _t.ProxyTypes = typing.Union[_t.URLTypes, httpx.Proxy]


def _accept_proxy(cls):  # Client(proxy=) is httpx 0.26's; 0.23 has proxies=
    init = cls.__init__

    def __init__(self, *a, proxy=None, **k):
        if proxy is not None:
            k["proxies"] = proxy
        init(self, *a, **k)

    cls.__init__ = __init__


for _c in (httpx.Client, httpx.AsyncClient):
    _accept_proxy(_c)
EOF
echo "import e2b_httpx_compat" >"$sp/00-e2b-httpx-compat.pth"

# fake-e2b on E2B's production path, a fresh state, the template tests' image stand-ins
key="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"
"$fake" --tls --port 443 --domain e2b.localhost --state-dir "$scratch/state" --ephemeral \
	--api-key "$key" --sandbox-disk-mb 64 --image ubuntu:22.04=base --image ubuntu:24.04=base \
	--quiet >"$scratch/fake-e2b.log" 2>&1 &
server=$!
for _ in $(seq 100); do [[ -s $scratch/state/ca.pem ]] && grep -q listening "$scratch/fake-e2b.log" && break; sleep 0.1; done
grep -q listening "$scratch/fake-e2b.log" || { cat "$scratch/fake-e2b.log" >&2; exit 2; }

cd "$sdk"
rc=0
env -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_DEBUG -u E2B_ACCESS_TOKEN \
	E2B_DOMAIN=e2b.localhost E2B_API_KEY="$key" SSL_CERT_FILE="$scratch/state/ca.pem" \
	"$scratch/venv/bin/python" -m pytest -p no:cacheprovider -n 2 -q -rfE "${tests[@]}" || rc=$?
exit "$rc"
