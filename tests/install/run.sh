#!/usr/bin/env bash
# README's first steps on a machine that has nothing, each in a clean Debian 12 root
# (debootstrap --variant=minbase, from the archive this machine's apt uses):
#
# 1. From a clone (git clone of this repository at its HEAD), as README says: without root,
#    scripts/install-deps.sh and scripts/demo.sh say so first; as root, `bash scripts/demo.sh`
#    (README "Quick start": dependencies, build, the demo against its own fake-e2b) passes,
#    then `bash scripts/install-deps.sh --package && bash scripts/package.sh` (README "Install")
#    writes the same artifacts as DIST has. This root is pivot_root'ed into, not chroot'ed:
#    fake-e2b's user namespaces are refused to a chrooted process. --no-source skips it.
# 2. The three installs: each artifact of scripts/package.sh is installed with its one
#    command and its quickstart runs against a fake-e2b outside the root (loopback):
#   npm install /dist/sandbox-e2b-V.tgz + the Node quickstart, no SANDBOX_E2B_BIN
#   python3 -m venv v && v/bin/pip install --no-index /dist/...whl + the Python quickstart
#   apt-get install ./*.deb: sandbox-e2b --version, pkg-config, a C program, fake-e2b --help
# Inside the root only Debian packages of the same archive are added (nodejs, npm,
# python3-venv, gcc, libc6-dev, pkg-config, ca-certificates); the engine's
# libraries must all come from the package that bundles them.
#
#   bash tests/install/run.sh [--no-source] [DIST]   # DIST: default dist/ (bash scripts/package.sh)
#
# Needs root (chroot, mounts) and debootstrap; exits 77 (skipped) without them or
# without the archive. The base root is cached in SBX_ROOT_CACHE (default
# /var/cache/sandbox-e2b-root) with the downloaded .debs; each run works on an
# overlay of it, thrown away at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
SOURCE=1
[ "${1:-}" = --no-source ] && SOURCE=0 && shift
DIST=$(cd "${1:-dist}" && pwd)
CACHE=${SBX_ROOT_CACHE:-/var/cache/sandbox-e2b-root}
SUITE=bookworm

skip() {
	echo "tests/install: SKIPPED: $*"
	exit 77
}
die() {
	echo "tests/install: FAILED: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || skip "needs root (chroot and mounts)"
command -v debootstrap >/dev/null || skip "needs debootstrap (apt-get install debootstrap)"
command -v unshare >/dev/null || skip "needs unshare (util-linux)"

VERSION=$(cat "$REPO/build-pkg/version.txt" 2>/dev/null || true)
[ -n "$VERSION" ] || VERSION=$(sed -n 's/^project(sandbox-e2b VERSION \([^ ]*\) .*/\1/p' CMakeLists.txt)
TGZ=$DIST/sandbox-e2b-$VERSION.tgz
WHL=$(ls "$DIST"/sandbox_e2b-"$VERSION"-py3-none-*.whl 2>/dev/null | head -1)
DEBS=("$DIST"/sandbox-e2b_"$VERSION"_*.deb "$DIST"/libsandbox-e2b0_"$VERSION"_*.deb
	"$DIST"/libsandbox-e2b-dev_"$VERSION"_*.deb "$DIST"/fake-e2b_"$VERSION"_*.deb)
for f in "$TGZ" "$WHL" "${DEBS[@]}"; do
	[ -f "$f" ] || die "no ${f:-wheel} in $DIST: run bash scripts/package.sh first"
done

# The Debian archive of this machine's apt (deb822 .sources or one-line lists).
MIRROR=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '
	/^URIs:/ {u = $2} /^Suites:/ {for (i = 2; i <= NF; i++) if ($i == "'$SUITE'") s = 1}
	/^$/ {if (s && u) {print u; exit} u = ""; s = 0} END {if (s && u) print u}' | head -1)
[ -n "$MIRROR" ] || MIRROR=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
	awk '$1 == "deb" && $3 == "'$SUITE'" {print $2; exit}' | sed 's/\[[^]]*\] *//')
[ -n "$MIRROR" ] || skip "no $SUITE archive in this machine's apt sources"
curl -fsS -o /dev/null --max-time 20 "$MIRROR/dists/$SUITE/Release" ||
	skip "the archive $MIRROR is not reachable"

BASE=$CACHE/$SUITE-minbase
mkdir -p "$CACHE/archives/partial" "$CACHE/lists/partial"
if [ ! -x "$BASE/usr/bin/apt-get" ]; then
	echo "== making the clean root: debootstrap --variant=minbase $SUITE $MIRROR (cached in $BASE)"
	rm -rf "$BASE.tmp"
	debootstrap --variant=minbase --cache-dir="$CACHE/archives" "$SUITE" "$BASE.tmp" "$MIRROR" \
		>"$CACHE/debootstrap.log" 2>&1 || die "debootstrap failed: $CACHE/debootstrap.log"
	echo "deb $MIRROR $SUITE main" >"$BASE.tmp/etc/apt/sources.list"
	rm -f "$BASE.tmp"/var/cache/apt/archives/*.deb
	mv "$BASE.tmp" "$BASE"
fi
echo "deb $MIRROR $SUITE main" >"$BASE/etc/apt/sources.list"

W=$(mktemp -d /var/tmp/sbx-install.XXXXXX)
FAKE_PID=
cleanup() {
	[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null && wait "$FAKE_PID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

if [ "$SOURCE" = 1 ]; then
	S=$W/src
	mkdir -p "$S/upper/src" "$S/work" "$S/root"
	git clone -q "$REPO" "$S/upper/src/sandbox-e2b" || die "git clone $REPO"
	(cd "$DIST" && ls sandbox-e2b-*.tgz sandbox_e2b-*.whl ./*.deb | sed 's#^\./##' | sort) >"$S/upper/want"
	cat >"$S/upper/source.sh" <<'EOF'
#!/bin/bash
# Runs inside a clean root of its own: README's first commands in a clone, as a new user.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
fail() { echo "FAILED: $*" >&2; exit 1; }
cd /src/sandbox-e2b
echo "== without root (setpriv to nobody; this root has no sudo): install-deps.sh and demo.sh say so"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@" 2>&1; }
out=$(nobody bash scripts/install-deps.sh) && fail "install-deps.sh installed without root: $out"
[[ $out == "install-deps: run as root (su -, then bash scripts/install-deps.sh): apt-get installs "*" and there is no sudo" ]] ||
	fail "install-deps.sh without root or sudo said: $out"
out=$(nobody bash scripts/demo.sh) && fail "demo.sh ran without root: $out"
[[ $out == "demo.sh: run as root (su -, or sudo bash scripts/demo.sh): "* ]] || fail "demo.sh without root said: $out"
echo "== E2B_API_KEY without a template: demo.sh says so before building"
out=$(E2B_API_KEY=e2b_0000000000 bash scripts/demo.sh 2>&1) && fail "demo.sh ran with E2B_API_KEY and no template: $out"
[[ $out == "demo.sh: E2B_API_KEY is set, so the demo runs on E2B, which needs a template: "* ]] ||
	fail "demo.sh with E2B_API_KEY and no template said: $out"
[ ! -e build ] || fail "demo.sh with E2B_API_KEY and no template built"
echo "== bash scripts/demo.sh (README \"Quick start\", as root)"
apt-get update -qq
start=$(date +%s)
bash scripts/demo.sh >/tmp/demo.out 2>&1 || { tail -40 /tmp/demo.out; fail "bash scripts/demo.sh"; }
grep -E '^demo passed: [0-9]+ steps in [0-9]+ ms$' /tmp/demo.out || { tail -40 /tmp/demo.out; fail "no 'demo passed' line"; }
echo "demo.sh took $(($(date +%s) - start)) s (dependencies, the build with its tests, the demo)"
echo "== bash scripts/install-deps.sh --package && bash scripts/package.sh (README \"Install\")"
bash scripts/install-deps.sh --package >/tmp/deps.out 2>&1 || { tail -20 /tmp/deps.out; fail "install-deps.sh --package"; }
bash scripts/package.sh >/tmp/package.out 2>&1 || { tail -20 /tmp/package.out; fail "bash scripts/package.sh"; }
got=$(cd dist && ls sandbox-e2b-*.tgz sandbox_e2b-*.whl ./*.deb | sed 's#^\./##' | sort)
[ "$got" = "$(cat /want)" ] || fail "package.sh in the clone wrote '$got', not DIST's '$(cat /want)'"
echo "== from a clone: OK ($SECONDS s in all)"
EOF
	chmod +x "$S/upper/source.sh"
	# the VM test's kernel (install-deps.sh fetches it) from this machine's copy when it has one
	KDIR=${SBX_VM_KERNEL_DIR:-/var/cache/sandbox-e2b/vm-kernel}
	echo "== a clean root for README's quick start in a clone: an overlay of $BASE"
	unshare --mount --propagation private -- bash -euc '
		B=$1 S=$2 C=$3 K=$4
		mount -t overlay overlay -o lowerdir="$B",upperdir="$S/upper",workdir="$S/work" "$S/root"
		R=$S/root
		mount -t proc proc "$R/proc"
		mount --rbind /sys "$R/sys"
		mount --make-rslave "$R/sys"
		mount --bind /dev "$R/dev"
		mount --bind /dev/pts "$R/dev/pts"
		mount -t tmpfs tmpfs "$R/dev/shm"
		mount -t tmpfs tmpfs "$R/tmp"
		mount --bind "$C/archives" "$R/var/cache/apt/archives"
		mount --bind "$C/lists" "$R/var/lib/apt/lists"
		if [ -e "$K/.complete" ]; then
			mkdir -p "$R/var/cache/sandbox-e2b/vm-kernel"
			mount --bind -o ro "$K" "$R/var/cache/sandbox-e2b/vm-kernel"
		fi
		cp /etc/resolv.conf "$R/etc/resolv.conf"
		mkdir -p "$R/.oldroot"
		cd "$R"
		pivot_root . .oldroot
		umount -l /.oldroot
		exec /usr/bin/env -i /bin/bash /source.sh
	' _ "$BASE" "$S" "$CACHE" "$KDIR" || die "README's quick start in a clone, in a clean root (above)"
fi

# fake-e2b from its .deb, outside the root, on loopback.
dpkg-deb -x "$DIST"/fake-e2b_"$VERSION"_*.deb "$W/fake"
mkdir -p "$W/fk-state"
mkfifo "$W/fake.out"
"$W/fake/usr/bin/fake-e2b" --port 0 --api-key e2b_local_key --tls --state-dir "$W/fk-state" \
	--quiet >"$W/fake.out" 2>"$W/fake.err" </dev/null &
FAKE_PID=$!
# The listening line is printed once the server is ready; fd 3 stays open (its stdout) to the end.
exec 3<"$W/fake.out"
URL=
if read -r -t 60 line <&3 && [[ $line =~ ^fake-e2b\ listening\ on\ (https://127\.0\.0\.1:[0-9]+)$ ]]; then
	URL=${BASH_REMATCH[1]}
fi
[ -n "$URL" ] || die "fake-e2b printed no listening line in 60 s (got '${line:-}'): $(cat "$W/fake.err")"
echo "== fake-e2b (from its .deb) at $URL, outside the root"

mkdir -p "$W/upper" "$W/work" "$W/root"
cp "${DEBS[@]}" "$TGZ" "$WHL" "$W/upper/"
cat >"$W/inner.sh" <<'EOF'
#!/bin/bash
# Runs inside the clean root. $1: fake-e2b's URL, $2: the version.
set -euo pipefail
URL=$1 VERSION=$2
export DEBIAN_FRONTEND=noninteractive HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset SANDBOX_E2B_BIN
fail() { echo "FAILED: $*" >&2; exit 1; }
same() { [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; }
engine_libs() { # the engine resolves every library but glibc's inside DIR
	local bin=$1 dir=$2
	ldd "$bin" | grep -q "not found" && { ldd "$bin"; fail "$bin: a library is missing"; }
	ldd "$bin" | awk '$2 == "=>" {print $3}' | while read -r p; do
		case "$(readlink -f "$p")" in
		"$dir"/*) ;;
		/usr/lib/x86_64-linux-gnu/lib[cm].so.6 | /usr/lib/x86_64-linux-gnu/libresolv.so.2) ;;
		*) fail "$bin loads $p from outside its package" ;;
		esac
	done
}
ca() { # trust fake-e2b's CA the system's way (ca-certificates' bundle)
	cp /fake-ca.pem /usr/local/share/ca-certificates/fake-e2b.crt
	update-ca-certificates >/dev/null 2>&1
}

echo "== apt-get install nodejs npm python3-venv ca-certificates (Debian 12's own)"
apt-get update -qq
apt-get install -y -qq --no-install-recommends nodejs npm python3-venv ca-certificates >/dev/null
node --version
ls /usr/bin/sandbox-e2b /usr/bin/fake-e2b 2>/dev/null && fail "the root has a sandbox-e2b before the test installs one"

echo "== npm install /sandbox-e2b-$VERSION.tgz in an empty project"
mkdir /proj && cd /proj
npm init -y >/dev/null
npm install --offline --no-audit --no-fund /sandbox-e2b-$VERSION.tgz
E=/proj/node_modules/sandbox-e2b/prebuilds/linux-x64
same "$(node --input-type=module -e "import { findBinary } from 'sandbox-e2b'; console.log(findBinary())")" \
	"$E/bin/sandbox-e2b" "the engine the Node package finds"
engine_libs "$E/bin/sandbox-e2b" "$E/lib"
same "$("$E/bin/sandbox-e2b" --version)" "sandbox-e2b $VERSION" "the npm engine's version"
ca
echo "installed: $(du -sk node_modules/sandbox-e2b | cut -f1) KiB in node_modules/sandbox-e2b"
cp node_modules/sandbox-e2b/examples/quickstart.mjs /proj/
node /proj/quickstart.mjs "$URL"
echo "== npm: OK"

echo "== python3 -m venv v && v/bin/pip install --no-index /sandbox_e2b-...whl"
cd /root
python3 -m venv v
v/bin/pip install -q --no-index /sandbox_e2b-$VERSION-py3-none-*.whl
P=$(v/bin/python -c 'import sandbox_e2b, os; print(os.path.dirname(sandbox_e2b.__file__))')
same "$(v/bin/python -m sandbox_e2b --version)" "sandbox_e2b $VERSION
engine: $P/_engine/bin/sandbox-e2b (bundled): sandbox-e2b $VERSION" "python -m sandbox_e2b --version"
engine_libs "$P/_engine/bin/sandbox-e2b" "$P/_engine/lib"
echo "installed: $(du -sk "$P" | cut -f1) KiB in $P"
(cd /tmp && /root/v/bin/python "$P/docs/examples/quickstart.py" "$URL")
# TLS with an explicit CA file and no system bundle entry: SSL_CERT_FILE
rm /usr/local/share/ca-certificates/fake-e2b.crt && update-ca-certificates --fresh >/dev/null 2>&1
out=$(E2B_API_KEY=e2b_local_key E2B_API_URL=$URL "$P/_engine/bin/sandbox-e2b" list 2>&1) &&
	fail "an untrusted fake-e2b CA was accepted: $out"
SSL_CERT_FILE=/fake-ca.pem E2B_API_KEY=e2b_local_key E2B_API_URL=$URL "$P/_engine/bin/sandbox-e2b" list >/dev/null ||
	fail "SSL_CERT_FILE=/fake-ca.pem was not trusted"
echo "== wheel: OK"

echo "== apt-get install ./sandbox-e2b_*.deb ./libsandbox-e2b0_*.deb ./libsandbox-e2b-dev_*.deb ./fake-e2b_*.deb"
cd /
apt-get install -y -qq --no-install-recommends ./sandbox-e2b_"$VERSION"_*.deb ./libsandbox-e2b0_"$VERSION"_*.deb \
	./libsandbox-e2b-dev_"$VERSION"_*.deb ./fake-e2b_"$VERSION"_*.deb gcc libc6-dev pkg-config >/dev/null
same "$(sandbox-e2b --version)" "sandbox-e2b $VERSION" "sandbox-e2b --version"
libs=$(pkg-config --libs sandbox-e2b)
same "${libs% }" "-lsandbox-e2b" "pkg-config --libs sandbox-e2b (its trailing blank left out)"
same "$(pkg-config --modversion sandbox-e2b)" "$VERSION" "pkg-config --modversion sandbox-e2b"
cat >/tmp/t.c <<'C'
#include <sandbox.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	const char *json = "{\"apiKey\":\"e2b_local_key\",\"template\":\"capybara-sandbox\"}";
	sbx_e2b_config *cfg = NULL;
	sbx_error err = {0};
	int rc = sbx_e2b_config_parse(&cfg, json, strlen(json), &err);
	printf("%s %d %s\n", sbx_version(), rc, rc == 0 ? cfg->template_id : err.message);
	sbx_e2b_config_free(cfg);
	return rc != 0;
}
C
gcc -Wall -Werror -o /tmp/t /tmp/t.c $(pkg-config --cflags --libs sandbox-e2b)
same "$(/tmp/t)" "$VERSION 0 capybara-sandbox" "a C program against libsandbox-e2b-dev"
so=$(ldd /tmp/t | awk '$1 == "libsandbox-e2b.so.0" {print $3}')
same "$(readlink -f "$so")" "/usr/lib/x86_64-linux-gnu/libsandbox-e2b.so.$VERSION" "the library /tmp/t loads"
fake-e2b --help >/tmp/fk-help
grep -q -- '--port' /tmp/fk-help || fail "fake-e2b --help says nothing of --port"
unit=/usr/lib/systemd/system/fake-e2b.service
exe=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$unit")
same "$exe" /usr/bin/fake-e2b "the binary fake-e2b.service starts"
same "$(stat -c '%a %U' /etc/fake-e2b /etc/fake-e2b/api-key | tr '\n' ' ')" "700 root 600 root " \
	"the unit's API key file and its directory (postinst)"
grep -qE '^e2b_[0-9a-f]{40}$' /etc/fake-e2b/api-key || fail "/etc/fake-e2b/api-key is not e2b_ and 40 hex digits"
# the unit's command line, its state directory moved to /tmp and port 3000 to a free one,
# starts (reading that key file) and says it listens
read -ra cmd < <(sed -n 's/^ExecStart=//p' "$unit" | sed 's#/var/lib/fake-e2b#/tmp/fk-unit#; s#--port 3000#--port 0#')
mkfifo /tmp/unit.out
"${cmd[@]}" >/tmp/unit.out 2>/tmp/unit.err &
upid=$!
exec 4</tmp/unit.out
read -r -t 60 uline <&4 || uline=
kill "$upid"
wait "$upid" || true
exec 4<&-
[[ $uline =~ ^fake-e2b\ listening\ on\ http://127\.0\.0\.1:[0-9]+$ ]] ||
	fail "the unit's command line: '$uline' $(cat /tmp/unit.err)"
ca
E2B_API_KEY=e2b_local_key E2B_API_URL=$URL sandbox-e2b list >/dev/null || fail "sandbox-e2b list against fake-e2b"
echo "== debs: OK"
EOF
chmod +x "$W/inner.sh"
cp "$W/inner.sh" "$W/upper/inner.sh"
cp "$W/fk-state/ca.pem" "$W/upper/fake-ca.pem"

# A mount namespace of its own: every mount below ends with it, whatever fails.
echo "== the clean root: an overlay of $BASE"
unshare --mount --propagation private -- bash -euc '
	B=$1 W=$2 C=$3 URL=$4 V=$5
	mount -t overlay overlay -o lowerdir="$B",upperdir="$W/upper",workdir="$W/work" "$W/root"
	R=$W/root
	mount -t proc proc "$R/proc"
	mount --bind /dev "$R/dev"
	mount --bind /dev/pts "$R/dev/pts"
	mount -t tmpfs tmpfs "$R/dev/shm"
	mount -t tmpfs tmpfs "$R/tmp"
	mount --bind "$C/archives" "$R/var/cache/apt/archives"
	mount --bind "$C/lists" "$R/var/lib/apt/lists"
	cp /etc/resolv.conf "$R/etc/resolv.conf"
	exec chroot "$R" /usr/bin/env -i /bin/bash /inner.sh "$URL" "$V"
' _ "$BASE" "$W" "$CACHE" "$URL" "$VERSION" || die "inside the clean root (above)"
echo "tests/install: PASSED (npm, wheel, debs on a clean Debian 12 root)"
