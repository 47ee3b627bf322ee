#!/usr/bin/env python3
"""bench/start_cost.py: what one exec of `true` costs fake-e2b, by the shape of its Start.

    python3 bench/start_cost.py URL [--api-key KEY] [--count N] [--gap MS[,MS...]]
                                    [--modes seed,line,direct,sdk] [--user NAME]

Creates a capybara-sandbox on the fake-e2b at URL (plain HTTP, no relay), then sends `Start`s
of `true` over one keep-alive connection, the modes in turn (A B C A B C ...), and prints per
gap the median time of a whole Start (request to end of stream) per mode and its ratio to the
last mode's. Modes (docs/internals/exec-cost.md):

    seed    the seed's line with the exec helper of the day before: setsid -w /bin/sh -c
            WRAPPER (pid file, kill check, exec /opt/capybara-exec CTL CMD SECONDS)
    line    the exec line: /bin/sh -c WRAPPER, which execs /opt/capybara-exec with
            --session (session, pid file and kill check in the helper); the library's start
            where the sandbox lacks the helper, and for background commands
    direct  the library's exec: /opt/capybara-exec CTL CMD SECONDS --session --mark as envd's
            command (docs/exec.md "How a command runs")
    sdk     the official SDK's /bin/bash -l -c true

The library's shapes run as --user (default sandbox, as the library sends it: Basic auth; ''
for none), the SDK's as the SDK sends it, naming no user. --gap sleeps that many ms after each Start: the bench's relay leaves the server idle one RTT
between two sequential execs, after which a Start used to wait for the kernel's cgroup lock
(docs/internals/exec-cost.md "Joining the box's cgroups").
"""
import argparse
import base64
import http.client
import json
import statistics
import struct
import time
import urllib.parse

SEED = (
    'c=$1; echo $$ > "$c.pid" 2>/dev/null; if [ -e "$c.kill" ]; then exit 137; fi; if [ -x '
    '/opt/capybara-exec ]; then exec /opt/capybara-exec "$@"; fi; timeout -s KILL "$3" '
    '/bin/bash -c "$2"; s=$?; rm -f "$c.pid"; exit $s'
)
LINE = (
    'if [ -x /opt/capybara-exec ]; then exec /opt/capybara-exec "$1" "$2" "$3" --session; fi; '
    'exec setsid -w /bin/sh -c "$4" capybara-exec "$1" "$2" "$3"'
)
SEED_WRAPPER = (
    'c=$1; echo $$ > "$c.pid" 2>/dev/null; if [ -e "$c.kill" ]; then exit 137; fi; timeout -s '
    'KILL "$3" /bin/bash -c "$2"; s=$?; rm -f "$c.pid"; exit $s'
)


def process(mode, i):
    ctl = "/tmp/.capybara-exec-bench-%d" % i
    env = {"HOME": "/workspace", "LANG": "C.UTF-8"}
    if mode == "seed":
        return {"cmd": "setsid", "args": ["-w", "/bin/sh", "-c", SEED, "capybara-exec", ctl, "true", "65"],
                "envs": env, "cwd": "/workspace"}
    if mode == "line":
        return {"cmd": "/bin/sh", "args": ["-c", LINE, "capybara-exec", ctl, "true", "65", SEED_WRAPPER],
                "envs": env, "cwd": "/workspace"}
    if mode == "direct":
        return {"cmd": "/opt/capybara-exec", "args": [ctl, "true", "65", "--session", "--mark"],
                "envs": env, "cwd": "/workspace"}
    return {"cmd": "/bin/bash", "args": ["-l", "-c", "true"], "envs": {}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--api-key", default="e2b_bench")
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--gap", default="0,20")
    ap.add_argument("--modes", default="seed,line,direct,sdk")
    ap.add_argument("--user", default="sandbox",
                    help="the library's shapes run as this user, as it sends them (Basic auth); "
                         "'' for none; the SDK's shape never names one, as the SDK")
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    conn = http.client.HTTPConnection(u.hostname, u.port)
    conn.request("POST", "/sandboxes", body=json.dumps({"templateID": "capybara-sandbox", "timeout": 3600}),
                 headers={"X-API-Key": a.api_key, "content-type": "application/json"})
    r = conn.getresponse()
    created = json.loads(r.read())
    sid = created["sandboxID"]
    modes = a.modes.split(",")
    hdr = {"content-type": "application/connect+json", "e2b-sandbox-id": sid, "e2b-sandbox-port": "49983",
           "connect-protocol-version": "1"}
    try:
        for gap in [float(g) for g in a.gap.split(",")]:
            ms = {m: [] for m in modes}
            for i in range(a.count + 2):
                for m in modes:
                    j = json.dumps({"process": process(m, i), "stdin": False}).encode()
                    t = time.monotonic()
                    h = dict(hdr)
                    if a.user and m != "sdk":
                        h["Authorization"] = "Basic " + base64.b64encode((a.user + ":").encode()).decode()
                    conn.request("POST", "/process.Process/Start", body=b"\0" + struct.pack(">I", len(j)) + j,
                                 headers=h)
                    body = conn.getresponse().read()
                    if b'"exit status 0"' not in body:
                        raise SystemExit("start_cost: %s: %r" % (m, body[:300]))
                    if i >= 2:  # two warm-up rounds
                        ms[m].append((time.monotonic() - t) * 1000)
                    if gap:
                        time.sleep(gap / 1000)
            base = statistics.median(ms[modes[-1]])
            print("gap %g ms, %d Starts each: " % (gap, a.count) + ", ".join(
                "%s %.1f ms (%.2f)" % (m, statistics.median(ms[m]), statistics.median(ms[m]) / base) for m in modes))
    finally:
        conn.request("DELETE", "/sandboxes/" + sid, headers={"X-API-Key": a.api_key})
        conn.getresponse().read()


if __name__ == "__main__":
    main()
