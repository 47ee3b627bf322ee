#!/usr/bin/env bash
# After a test run: fail if fake-e2b left anything behind on this machine (after the suite,
# no stray process or mount is left: fake-e2b/README.md "Tests"). Checks for
#   - fake-e2b servers, sandbox init processes and process shims (comm "fake-e2b", "fk-init",
#     "fk-shim"; a kept server's boxes and shims outlive it: live restore),
#   - any process in a PID namespace other than init's (a sandbox process),
#   - mounts of a sandbox root, cgroups of a runtime (freezer, pids, memory, cpu; the v2
#     directories of the sandboxes' bind programs, under unified/ or the v2 root), default
#     state dirs (/var/tmp/fake-e2b-*, /tmp/fake-e2b-*, and /dev/shm/fake-e2b-* of old builds),
#   - network interfaces: fake-e2b makes none on the host (a sandbox's network namespace has only
#     `lo` and dies with it), so any veth named fkn<pid>h is the network test's upstream link.
# Run it only when no fake-e2b should be running (CI does, after the suite).
set -u
bad=0
say() { printf 'check-no-strays: %s\n' "$*"; bad=1; }

host_pidns=$(readlink /proc/self/ns/pid)
for d in /proc/[0-9]*; do
	pid=${d#/proc/}
	comm=$(cat "$d/comm" 2>/dev/null) || continue
	case "$comm" in
	fake-e2b | fk-init | fk-shim) say "process $pid ($comm) still running: $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null | head -c 120)" ;;
	esac
	[ -s "$d/cmdline" ] || continue # kernel threads
	ns=$(readlink "$d/ns/pid" 2>/dev/null) || continue
	[ "$ns" = "$host_pidns" ] || say "process $pid ($comm) lives in another PID namespace ($ns)"
done

if grep -E 'fake-e2b' /proc/self/mountinfo >/dev/null 2>&1; then
	say "mounts left: $(grep -E 'fake-e2b' /proc/self/mountinfo | head -5)"
fi
# sandbox disks (<state>/<id>.disk) free their loop device when their last mount goes
if command -v losetup >/dev/null 2>&1; then
	left=$(losetup -n -l -O NAME,BACK-FILE 2>/dev/null | grep -E 'fake-e2b|\.disk( \(deleted\))?$' | head -5)
	[ -z "$left" ] || say "loop devices left: $left"
fi
for ctl in freezer pids memory cpu cpuacct unified .; do
	[ -d "/sys/fs/cgroup/$ctl/fake-e2b" ] || continue
	left=$(find "/sys/fs/cgroup/$ctl/fake-e2b" -mindepth 1 -maxdepth 3 -type d 2>/dev/null | head -5)
	[ -z "$left" ] || say "$ctl cgroups left: $left"
done
left=$(ls -d /var/tmp/fake-e2b-* /tmp/fake-e2b-* /dev/shm/fake-e2b-* 2>/dev/null | head -5)
[ -z "$left" ] || say "state directories left: $left"

left=$(ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^fkn[0-9]+h/ {print $2}' | head -5)
[ -z "$left" ] || say "network test veths left (tests/fake/net): $left"

[ "$bad" = 0 ] && echo "check-no-strays: nothing left behind"
exit "$bad"
