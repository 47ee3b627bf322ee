# shellcheck shell=bash
# bench/lib/fake.sh (sourced): one fake-e2b for a bench script, on a port of its own.
#
#   fake_start FAKE WORKDIR [FLAG...]  start FAKE --port 0 --quiet --api-key e2b_bench [FLAG...],
#                                      its output in WORKDIR/fake.out and fake.err; sets
#                                      fakepid and url (http://127.0.0.1:PORT) once it says it
#                                      listens (30 s at most); 1 with the reason on stderr when
#                                      it exits first or does not say so in time
#   fake_stop                          SIGTERM and wait (nothing when none was started)

# shellcheck source=bench/lib/daemon.sh
. "$(dirname "${BASH_SOURCE[0]}")/daemon.sh"

fakepid=
url=

fake_start() {
  local fake=$1 work=$2 rc=0
  shift 2
  daemon_start fake "$work" 's/^fake-e2b listening on \(http:[^ ]*\).*/\1/p' 30 \
    "$fake" --port 0 --quiet --api-key e2b_bench "$@" || rc=1
  fakepid=$daemon_pid
  # shellcheck disable=SC2034 # the sourcing script reads it
  url=$daemon_said
  return $rc
}

fake_stop() {
  daemon_stop "$fakepid"
  fakepid=
}
