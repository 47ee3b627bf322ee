#!/usr/bin/env bash
# The official E2B JS SDK's own test suite against fake-e2b (tests/peer/README.md
# "The official SDK's own test suite").
#
#   tests/peer/official-suite.sh [options] <E2B checkout> [-- <vitest args>...]
#
# <E2B checkout>: a clone of e2b-dev/E2B (or a bare mirror of it) holding the
# commit below. Nothing of it is copied into this repository: the script
# extracts, with `git archive`, that commit's packages/js-sdk/tests (unmodified),
# vitest.config.mts, tsconfig.json and the SDK's five type-only source modules
# into a scratch directory under /var/tmp; installs npm e2b@2.51.0 and the
# suite's test tooling (vitest, msw, dotenv, error-stack-parser-es,
# @vitest/browser-playwright, playwright, vite) at the versions the commit's
# pnpm-lock.yaml resolved; rebuilds the SDK's src/ from the 2.51.0 package's
# dist/index.mjs.map (the tests import ../src); then, for each project, starts
# fake-e2b on E2B's production path (--tls --port 443, E2B_DOMAIN=e2b.localhost,
# NODE_EXTRA_CA_CERTS=<state>/ca.pem; the template project with
# --image ubuntu:22.04=base), runs vitest and prints a summary.
#
# Options:
#   --fake PATH        fake-e2b binary (default: <repo>/build/fake-e2b/fake-e2b)
#   --project NAME     unit, connectionConfig or template; repeatable
#                      (default: all three, in that order)
#   --expected FILE    expected failures (default tests/peer/official-suite.expected);
#                      '-' for none. Exit 1 when any test not listed there fails.
#   --results DIR      keep each project's vitest log, JSON report, failure list
#                      and fake-e2b log in DIR (default: <scratch>/results)
#   --scratch DIR      work in DIR (created if missing, never removed; an npm
#                      install already there with the same pins is reused)
#   --keep             keep the scratch directory (default: removed at exit)
#   --workers N        vitest workers (default 2)
#   --timeout S        stop a project's vitest after S seconds (default 1800)
#   --no-server        start no fake-e2b: nothing listens on 443, so every
#                      request fails to connect (what a test does without a server)
#   --commit REV       E2B commit (default b8029973; the expected list is for it)
#   -- ARGS            passed to vitest (e.g. test files: tests/client.test.ts)
#
# Needs: root (port 443, fake-e2b's sandboxes), node >= 20, npm and the npm
# registry, git, tar; nothing else from the internet. Exit status: 0 when every
# failure is expected, 1 when some test failed that the list does not name,
# 2 when the suite could not be run. Cleans up what it started (fake-e2b, its
# state directory, vitest, the scratch directory) at exit, on Ctrl-C too.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
helper=$here/official-suite.mjs

commit=b8029973
sdk_version=2.51.0
fake=$repo/build/fake-e2b/fake-e2b
expected=$here/official-suite.expected
projects=()
results=
scratch=
keep=0
own_scratch=1
workers=2
timeout_s=1800
no_server=0
vitest_args=()
# the suite's tooling that the run needs, pinned from the commit's lockfile
tools=(vitest msw dotenv error-stack-parser-es @vitest/browser-playwright playwright vite)
# type-only modules of the SDK (erased from the 2.51.0 bundle and its map)
type_only=(src/api/schema.gen.ts src/envd/schema.gen.ts src/volume/schema.gen.ts
  src/sandbox/mcp.d.ts src/template/types.ts)

die() {
  echo "official-suite: $*" >&2
  exit 2
}
usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

e2b=
while [ $# -gt 0 ]; do
  case $1 in
    --fake) fake=${2:?}; shift 2 ;;
    --project) projects+=("${2:?}"); shift 2 ;;
    --expected) expected=${2:?}; shift 2 ;;
    --results) results=${2:?}; shift 2 ;;
    --scratch) scratch=${2:?}; own_scratch=0; shift 2 ;;
    --keep) keep=1; shift ;;
    --workers) workers=${2:?}; shift 2 ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --no-server) no_server=1; shift ;;
    --commit) commit=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    --) shift; vitest_args=("$@"); break ;;
    -*) echo "official-suite: unknown option $1" >&2; usage ;;
    *) [ -z "$e2b" ] || usage; e2b=$1; shift ;;
  esac
done
[ -n "$e2b" ] || usage
[ ${#projects[@]} -gt 0 ] || projects=(unit connectionConfig template)
for p in "${projects[@]}"; do
  case $p in unit | connectionConfig | template) ;; *) die "unknown project '$p' (unit, connectionConfig, template)" ;; esac
done
[[ $workers =~ ^[1-9][0-9]*$ ]] || die "--workers wants a positive number"
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "--timeout wants a positive number of seconds"
[ "$no_server" = 1 ] || [ "$(id -u)" = 0 ] || die "run as root (port 443 and fake-e2b's sandboxes)"
for t in node npm git tar ss setsid timeout; do
  command -v "$t" >/dev/null || die "$t is not installed"
done
git -C "$e2b" rev-parse --git-dir >/dev/null 2>&1 || die "$e2b is not a git checkout or git directory"
git -C "$e2b" cat-file -e "$commit^{commit}" 2>/dev/null || die "$e2b has no commit $commit"
commit_full=$(git -C "$e2b" rev-parse "$commit^{commit}")
if [ "$no_server" = 0 ]; then
  case $fake in /*) ;; *) fake=$PWD/$fake ;; esac
  [ -x "$fake" ] || die "$fake is not executable (build it, or give --fake PATH)"
fi
if [ "$expected" != - ]; then
  [ -r "$expected" ] || die "cannot read the expected-failures list $expected"
  expected=$(cd "$(dirname "$expected")" && pwd)/$(basename "$expected")
fi

# ---- cleanup: only what this script started ----
fake_pid=
fake_state=
job_pid=
stop_group() { # TERM the process group a setsid child leads, then wait for it
  local pid=$1
  kill -0 "$pid" 2>/dev/null || return 0
  if [ "$(ps -o pgid= -p "$pid" | tr -d ' ')" = "$pid" ]; then
    kill -TERM -- "-$pid" 2>/dev/null || true
  else
    kill -TERM "$pid" 2>/dev/null || true
  fi
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
stop_fake() {
  local clean=1
  if [ -n "$fake_pid" ]; then
    # fake-e2b's own SIGTERM shutdown destroys every sandbox; give it time
    kill -TERM "$fake_pid" 2>/dev/null || true
    for _ in $(seq 600); do kill -0 "$fake_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$fake_pid" 2>/dev/null; then
      echo "official-suite: fake-e2b (pid $fake_pid) did not stop in 60 s; killing it" >&2
      kill -KILL "$fake_pid" 2>/dev/null || true
      clean=0
    fi
    wait "$fake_pid" 2>/dev/null || true
    fake_pid=
  fi
  if [ -n "$fake_state" ]; then
    if [ "$clean" = 1 ]; then
      rm -rf --one-file-system "$fake_state"
    else
      # its sandboxes were not torn down: leave their files for a look
      echo "official-suite: left fake-e2b's state directory $fake_state" >&2
    fi
    fake_state=
  fi
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$job_pid" ]; then stop_group "$job_pid"; job_pid=; fi
  stop_fake
  if [ -n "$scratch" ] && [ "$own_scratch" = 1 ]; then
    if [ "$keep" = 1 ]; then
      echo "official-suite: kept $scratch" >&2
    else
      rm -rf "$scratch"
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "official-suite: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

# run_job DIR LOG CMD...: run CMD in DIR in its own process group (so cleanup
# can stop it and its workers, and only them), output to LOG, with the
# variables named in job_unset removed from its environment and the NAME=VALUE
# pairs of job_env added (values never appear on a command line); returns
# CMD's status
job_env=()
job_unset=()
run_job() {
  local dir=$1 log=$2
  shift 2
  (
    cd "$dir"
    for v in "${job_unset[@]}"; do unset "$v"; done
    [ ${#job_env[@]} = 0 ] || export "${job_env[@]}"
    exec setsid "$@" >"$log" 2>&1 </dev/null
  ) &
  job_pid=$!
  local rc=0
  wait "$job_pid" || rc=$?
  job_pid=
  return "$rc"
}

# ---- scratch directory ----
if [ -z "$scratch" ]; then
  scratch=$(mktemp -d /var/tmp/official-suite.XXXXXX)
else
  mkdir -p "$scratch"
  scratch=$(cd "$scratch" && pwd)
fi
[ -n "$results" ] || results=$scratch/results
mkdir -p "$results"
results=$(cd "$results" && pwd)
sdk=$scratch/js-sdk
start_all=$SECONDS
echo "official-suite: E2B ${commit_full:0:8} packages/js-sdk/tests with npm e2b@$sdk_version; scratch $scratch"

# ---- the suite, unmodified, from the commit ----
rm -rf "$sdk"
mkdir -p "$sdk"
paths=(tests vitest.config.mts tsconfig.json "${type_only[@]}")
git -C "$e2b" archive "$commit_full" "${paths[@]/#/packages/js-sdk/}" |
  tar -x -C "$sdk" --strip-components=2
git -C "$e2b" show "$commit_full:pnpm-lock.yaml" >"$scratch/pnpm-lock.yaml"
[ -f "$sdk/tests/setup.ts" ] || die "the commit's packages/js-sdk/tests has no setup.ts"

# ---- npm: e2b@2.51.0 and the tooling at the lockfile's versions ----
mapfile -t pins < <(node "$helper" versions "$scratch/pnpm-lock.yaml" "${tools[@]}")
[ ${#pins[@]} = ${#tools[@]} ] || die "could not pin the suite's tooling from pnpm-lock.yaml"
deps="\"e2b\": \"$sdk_version\""
for p in "${pins[@]}"; do deps+=", \"${p%@*}\": \"${p##*@}\""; done
want_pkg="{ \"name\": \"official-suite-run\", \"private\": true, \"dependencies\": { $deps } }"
if [ -f "$scratch/package.json" ] && [ "$(cat "$scratch/package.json")" = "$want_pkg" ] &&
  [ "$(node -p "require('$scratch/node_modules/e2b/package.json').version" 2>/dev/null)" = "$sdk_version" ]; then
  echo "official-suite: reusing the npm install in $scratch"
else
  echo "$want_pkg" >"$scratch/package.json"
  echo "official-suite: npm install e2b@$sdk_version ${pins[*]}"
  t0=$SECONDS
  # no install scripts: nothing is fetched but the registry's packages
  # (playwright's browsers are never downloaded; the browser project is not run)
  job_env=(PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1)
  if ! run_job "$scratch" "$scratch/npm-install.log" \
    npm install --no-audit --no-fund --ignore-scripts --loglevel=error; then
    tail -n 30 "$scratch/npm-install.log" >&2
    die "npm install failed (log above)"
  fi
  echo "official-suite: npm install took $((SECONDS - t0)) s"
fi
have=$(node -p "require('$scratch/node_modules/e2b/package.json').version")
[ "$have" = "$sdk_version" ] || die "node_modules/e2b is $have, not $sdk_version"

# ---- src/ = the 2.51.0 package's own source (its source map) ----
node "$helper" recover-src "$scratch/node_modules/e2b" "$sdk" | sed 's/^/official-suite: src\/: /'

# ---- fake-e2b on E2B's production path ----
port443_free() { [ -z "$(ss -Hltn 'sport = :443')" ]; }
start_fake() { # start_fake <project> [fake-e2b args...]
  local project=$1
  shift
  port443_free || die "port 443 is in use ($(ss -Hltnp 'sport = :443' | head -n 1)); this script binds it itself and never stops another's server"
  fake_state=$(mktemp -d /var/tmp/official-suite-state.XXXXXX)
  setsid "$fake" --tls --port 443 --domain e2b.localhost --state-dir "$fake_state" --ephemeral \
    --port-file "$fake_state/port" --quiet "$@" >"$results/$project.fake-e2b.log" 2>&1 </dev/null &
  fake_pid=$!
  # the port file is written once fake-e2b listens (its key file before it)
  for _ in $(seq 600); do
    [ -s "$fake_state/port" ] && break
    kill -0 "$fake_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! [ -s "$fake_state/port" ]; then
    tail -n 20 "$results/$project.fake-e2b.log" >&2
    die "fake-e2b did not start (log above)"
  fi
  [ -s "$fake_state/port.api-key" ] || die "fake-e2b wrote no API key file"
}

# environment of a run: nothing of the caller's E2B_* settings leaks in
mapfile -t job_unset < <(compgen -e | grep '^E2B_' || true)

overall=0
summary_lines=()
for project in "${projects[@]}"; do
  fake_args=()
  [ "$project" = template ] && fake_args=(--image ubuntu:22.04=base)
  if [ "$no_server" = 1 ]; then
    port443_free || die "--no-server: something listens on port 443"
    job_env=(NO_COLOR=1 E2B_DOMAIN=e2b.localhost "E2B_API_KEY=e2b_$(printf '0%.0s' $(seq 40))")
  else
    start_fake "$project" "${fake_args[@]}"
    job_env=(NO_COLOR=1 E2B_DOMAIN=e2b.localhost "E2B_API_KEY=$(head -n 1 "$fake_state/port.api-key")"
      "NODE_EXTRA_CA_CERTS=$fake_state/ca.pem")
  fi
  echo "official-suite: $project: vitest (log $results/$project.log)"
  rm -f "$results/$project.json"
  t0=$SECONDS
  rc=0
  run_job "$sdk" "$results/$project.log" timeout --kill-after=30 "$timeout_s" \
    "$scratch/node_modules/.bin/vitest" run --project "$project" --maxWorkers="$workers" \
    --reporter=default --reporter=json --outputFile.json="$results/$project.json" \
    "${vitest_args[@]}" || rc=$?
  took=$((SECONDS - t0))
  job_env=()
  [ "$rc" != 124 ] && [ "$rc" != 137 ] || echo "official-suite: $project: vitest stopped after --timeout $timeout_s s" >&2
  [ "$no_server" = 1 ] || stop_fake
  if ! [ -s "$results/$project.json" ]; then
    tail -n 30 "$results/$project.log" >&2
    die "$project: vitest wrote no report (status $rc; log above)"
  fi
  src=0
  node "$helper" summary "$project" "$results/$project.json" "$sdk" "$expected" "$results" || src=$?
  [ "$src" -le 1 ] || die "$project: could not summarize the report"
  [ "$src" = 0 ] || overall=1
  read -r np nf ns nu <"$results/$project.counts"
  echo "   wall time ${took} s"
  summary_lines+=("$(printf '%-17s %4d passed %4d failed %4d skipped  %3d not expected  %4d s' \
    "$project" "$np" "$nf" "$ns" "$nu" "$took")")
done

echo "== official suite, E2B ${commit_full:0:8}, e2b@$sdk_version, fake-e2b $([ "$no_server" = 1 ] && echo 'none (--no-server)' || echo "$fake")"
for l in "${summary_lines[@]}"; do echo "   $l"; done
echo "   total wall time $((SECONDS - start_all)) s; results in $results$([ "$own_scratch" = 1 ] && [ "$keep" = 0 ] && [[ $results == "$scratch"/* ]] && echo ' (removed with the scratch directory; --keep or --results DIR keeps them)')"
if [ "$overall" = 0 ]; then
  echo "official-suite: every failure is expected ($(basename "$expected"))"
else
  echo "official-suite: some tests failed that $(basename "$expected") does not expect (NOT EXPECTED above)"
fi
exit "$overall"
