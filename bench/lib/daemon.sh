# shellcheck shell=bash
# bench/lib/daemon.sh (sourced by fake.sh and relay.sh): a server a bench script starts in the
# background and waits for until it says where it listens.
#
#   daemon_start NAME WORKDIR SEXPR SECONDS CMD [ARG...]
#       runs CMD ARG... with its output in WORKDIR/NAME.out and NAME.err; sets daemon_pid, and
#       daemon_said to what `sed -n SEXPR` prints of NAME.out once it prints something (SECONDS
#       at most); 1 with the reason on stderr when CMD exits first or does not say so in time
#   daemon_stop PID   SIGTERM and wait (nothing for an empty PID)

daemon_pid=
daemon_said=

daemon_start() {
  local name=$1 work=$2 sexpr=$3 seconds=$4
  shift 4
  # the file exists before the server starts: the redirection happens in the child, which
  # the loop below may outrun (sed on a missing file ends a script under set -e)
  : >"$work/$name.out"
  "$@" >>"$work/$name.out" 2>"$work/$name.err" &
  daemon_pid=$!
  daemon_said=
  for _ in $(seq $((seconds * 10))); do
    daemon_said=$(sed -n "$sexpr" "$work/$name.out" || true)
    [ -n "$daemon_said" ] && return 0
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
      echo "$name exited before listening: $(tail -5 "$work/$name.err")" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "$name did not say it listens within $seconds s: $(tail -5 "$work/$name.err")" >&2
  return 1
}

daemon_stop() {
  if [ -n "$1" ]; then
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
