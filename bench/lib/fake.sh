# shellcheck shell=bash
# bench/lib/fake.sh (sourced): one fake-e2b for a bench script, on a port of its own.
#
#   fake_start FAKE WORKDIR [FLAG...]  start FAKE --port 0 --quiet --api-key e2b_bench [FLAG...],
#                                      its output in WORKDIR/fake.out and fake.err; sets
#                                      fakepid and url (http://127.0.0.1:PORT) once it says it
#                                      listens (30 s at most); 1 with the reason on stderr when
#                                      it exits first or does not say so in time
#   fake_stop                          SIGTERM and wait (nothing when none was started)

fakepid=
url=

fake_start() {
  local fake=$1 work=$2
  shift 2
  # the file exists before the server starts: the redirection happens in the child, which
  # the loop below may outrun (sed on a missing file ends a script under set -e)
  : >"$work/fake.out"
  "$fake" --port 0 --quiet --api-key e2b_bench "$@" >>"$work/fake.out" 2>"$work/fake.err" &
  fakepid=$!
  url=
  for _ in $(seq 300); do
    url=$(sed -n 's/^fake-e2b listening on \(http:[^ ]*\).*/\1/p' "$work/fake.out" || true)
    [ -n "$url" ] && return 0
    if ! kill -0 "$fakepid" 2>/dev/null; then
      echo "fake-e2b exited before listening: $(tail -5 "$work/fake.err")" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "fake-e2b did not say it listens within 30 s: $(tail -5 "$work/fake.err")" >&2
  return 1
}

fake_stop() {
  if [ -n "$fakepid" ]; then
    kill -TERM "$fakepid" 2>/dev/null || true
    wait "$fakepid" 2>/dev/null || true
    fakepid=
  fi
}
