# shellcheck shell=bash
# bench/lib/relay.sh (sourced): bench/relay.mjs in front of a server, on a port of its own.
#
#   relay_start WORKDIR TARGET [ARG...]  node relay.mjs --target TARGET (host:port) [ARG...],
#                                        its output in WORKDIR/relay.out and relay.err; sets
#                                        relaypid and relay_port once it says it listens (10 s
#                                        at most); 1 with the reason on stderr otherwise
#   relay_stop                           SIGTERM and wait (nothing when none is running);
#                                        relay.out then holds its closing counts

relaypid=
relay_port=

relay_start() {
  local work=$1 target=$2
  shift 2
  : >"$work/relay.out" # exists before the child opens it, as fake.out in fake.sh
  node "$(dirname "${BASH_SOURCE[0]}")/../relay.mjs" --target "$target" "$@" \
    >>"$work/relay.out" 2>"$work/relay.err" &
  relaypid=$!
  relay_port=
  for _ in $(seq 100); do
    relay_port=$(sed -n 's/^relay listening on \([0-9]*\)$/\1/p' "$work/relay.out")
    [ -n "$relay_port" ] && return 0
    if ! kill -0 "$relaypid" 2>/dev/null; then
      break
    fi
    sleep 0.1
  done
  echo "relay did not start: $(tail -5 "$work/relay.err")" >&2
  return 1
}

relay_stop() {
  if [ -n "$relaypid" ]; then
    kill -TERM "$relaypid" 2>/dev/null || true
    wait "$relaypid" 2>/dev/null || true
    relaypid=
  fi
}
