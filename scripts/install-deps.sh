#!/usr/bin/env bash
# Install what sandbox-e2b needs to build, test and run its demo on Debian 12.
# Idempotent: re-running installs nothing new. Must run as root (or with sudo).
#   --package  also what scripts/package.sh needs to make dist/ (README.md "Install"):
#              patchelf, file (CPack's deb generator) and Debian's python3-setuptools,
#              python3-wheel and python3-pip
set -euo pipefail
package=0
case "${1:-}" in
--package) package=1 ;;
"") ;;
*)
	echo "usage: install-deps.sh [--package]" >&2
	exit 2
	;;
esac

pkgs=(
	build-essential cmake pkg-config git ca-certificates
	libcurl4-openssl-dev libjansson-dev libmicrohttpd-dev libcmocka-dev uuid-dev libssl-dev
	zlib1g-dev # fake-e2b: gzip Content-Encoding on envd /files
	libseccomp-dev libcap-dev
	util-linux procps coreutils iproute2 make gcc
	e2fsprogs # fake-e2b: mke2fs makes each sandbox's disk image; debugfs reads one in a test
	curl # the sandbox network test (tests/fake/net) fetches from inside boxes
	python3 # the Python package (bindings/python) and its tests; python3 in fake-e2b's base template
	python-is-python3 # `python` in fake-e2b's base template, as in E2B's base
	libnss-myhostname # *.localhost names resolve to loopback (fake-e2b --tls per-sandbox hosts)
	sudo    # fake-e2b's base template: passwordless sudo for its user
	qemu-system-x86 busybox-static # tests/vm/run-v2.sh: fake-e2b's cgroup v2 tests in a VM
	jq # README's and docs/cli.md's CLI examples pipe --json into it
)
# Node.js and npm only run the peer test and the SDK benchmark; keep a newer
# Node the machine already has rather than Debian's.
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
[ "$package" = 1 ] && pkgs+=(patchelf file python3-setuptools python3-wheel python3-pip)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=
# a fresh Debian 12 has no sudo unless its installer set one up: then only root installs
nosudo=0
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
	command -v sudo >/dev/null 2>&1 || nosudo=1
fi
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all packages present"
else
	if [ "$nosudo" = 1 ]; then
		echo "install-deps: run as root (su -, then bash $0${1:+ $1}): apt-get installs" \
			"${missing[*]} and there is no sudo" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Debian 12's kernel, unpacked (never installed: its boot hooks do not run) for the cgroup v2 VM
# test (ctest fake_cgroup_v2_vm); without it that test is skipped
if [ "$nosudo" = 1 ]; then
	echo "install-deps: not root, no sudo: no kernel for tests/vm/run-v2.sh (its test will be skipped)"
else
	$SUDO bash "$(dirname "$0")/../tests/vm/run-v2.sh" --fetch-kernel ||
		echo "install-deps: no kernel for tests/vm/run-v2.sh (its test will be skipped)"
fi
