#!/usr/bin/env bash
# check-exports.sh <path to libsandbox-e2b.so>: fail when the shared library
# exports a symbol that is not part of the public API, i.e. whose name does not
# start with sbx_ (CONTRIBUTING.md "Code rules"). Internal shared helpers are sbx__ and
# must stay hidden too. Toolchain symbols (_init, _fini, ...) are ignored.
set -euo pipefail
lib=${1:?usage: check-exports.sh <path to libsandbox-e2b.so>}
[ -f "$lib" ] || { echo "check-exports: no such file: $lib" >&2; exit 2; }

# Defined (not U), global dynamic symbols.
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[A-Z]$/ {print $3}' | sed 's/@.*//' | sort -u)
[ -n "$syms" ] || { echo "check-exports: $lib exports nothing" >&2; exit 1; }

bad=$(printf '%s\n' "$syms" |
	grep -Ev '^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_)$' |
	grep -Ev '^sbx_[a-zA-Z0-9]' || true)
internal=$(printf '%s\n' "$syms" | grep -E '^sbx__' || true)
bad=$(printf '%s\n%s\n' "$bad" "$internal" | sed '/^$/d' | sort -u)
if [ -n "$bad" ]; then
	echo "check-exports: $lib exports symbols outside the sbx_ API:" >&2
	printf '  %s\n' $bad >&2
	exit 1
fi
echo "check-exports: $(printf '%s\n' "$syms" | grep -c '^sbx_') sbx_ symbols, nothing else"
