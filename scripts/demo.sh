#!/usr/bin/env bash
# Quick start: install dependencies, build, and run the demo. Without E2B
# credentials (E2B_API_KEY + E2B_TEMPLATE, or SANDBOX_E2B_CONFIG) the demo
# starts the local fake-e2b server itself and stops it afterwards.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
case "$build" in /*) ;; *) build=$root/$build ;; esac

# The local fake-e2b makes each sandbox from Linux namespaces and cgroups: root only. Said
# before the minutes of building, not as a failed step after them.
local_fake=1 # the demo's own rule (sandbox-e2b demo --help): no credentials, or --local
[ -n "${E2B_API_KEY:-}${SANDBOX_E2B_CONFIG:-}" ] && local_fake=0
for a in "$@"; do case $a in --config | --config=*) local_fake=0 ;; esac; done
for a in "$@"; do [ "$a" = --local ] && local_fake=1; done
# E2B_API_KEY alone (an E2B SDK user's shell) sends the demo to E2B, which needs a template
if [ "$local_fake" = 0 ] && [ -z "${E2B_TEMPLATE:-}${SANDBOX_E2B_CONFIG:-}" ]; then
	given=0
	for a in "$@"; do case $a in --config | --config=* | --template | --template=*) given=1 ;; esac; done
	if [ "$given" = 0 ]; then
		echo "demo.sh: E2B_API_KEY is set, so the demo runs on E2B, which needs a template:" \
			"set E2B_TEMPLATE (or pass --template T); for the local fake-e2b instead, unset" \
			"E2B_API_KEY or pass --local" >&2
		exit 2
	fi
fi
if [ "$(id -u)" -ne 0 ] && [ "$local_fake" = 1 ]; then
	echo "demo.sh: run as root (su -, or sudo bash scripts/demo.sh): the local fake-e2b runs each" \
		"sandbox in Linux namespaces and cgroups (README \"Quick start\"); with E2B credentials" \
		"(E2B_API_KEY and E2B_TEMPLATE) the demo runs on E2B instead" >&2
	exit 1
fi

bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DSBX_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
exec "$build/cli/sandbox-e2b" demo "$@"
