# shellcheck shell=bash
# bench/lib/relay.sh (sourced): bench/relay.mjs in front of a server, on a port of its own.
#
#   relay_start WORKDIR TARGET [ARG...]  node relay.mjs --target TARGET (host:port) [ARG...],
#                                        its output in WORKDIR/relay.out and relay.err; sets
#                                        relaypid and relay_port once it says it listens (10 s
#                                        at most); 1 with the reason on stderr otherwise
#   relay_stop                           SIGTERM and wait (nothing when none is running);
#                                        relay.out then holds its closing counts

# shellcheck source=bench/lib/daemon.sh
. "$(dirname "${BASH_SOURCE[0]}")/daemon.sh"

relaypid=
relay_port=

relay_start() {
  local work=$1 target=$2 rc=0
  shift 2
  daemon_start relay "$work" 's/^relay listening on \([0-9]*\)$/\1/p' 10 \
    node "$(dirname "${BASH_SOURCE[0]}")/../relay.mjs" --target "$target" "$@" || rc=1
  relaypid=$daemon_pid
  # shellcheck disable=SC2034 # the sourcing script reads it
  relay_port=$daemon_said
  return $rc
}

relay_stop() {
  daemon_stop "$relaypid"
  relaypid=
}
