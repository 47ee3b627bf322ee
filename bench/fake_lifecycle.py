#!/usr/bin/env python3
"""bench/fake_lifecycle.py: client wall time of fake-e2b's create, Start and pause.

Usage: bench/fake_lifecycle.py FAKE_E2B_BIN [--state-dir DIR] [--cycles N] [--starts N]

Starts the binary on port 0 (with --state-dir DIR: a kept server, live restore; without: the
default ephemeral one), then N times create -> Start of `true` -> pause -> delete, then N2
Starts of `true` on one sandbox, and prints the medians (min-max) in ms. Run it as root (as
fake-e2b runs). Used for the figures in fake-e2b/README.md "Performance notes".
"""
import argparse
import json
import os
import signal
import statistics
import struct
import subprocess
import tempfile
import time
import urllib.request

KEY = "e2b_bench_key_0123456789abcdef"


def call(port, method, path, body=None, headers=None, raw=None):
    h = {"X-API-Key": KEY}
    h.update(headers or {})
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    if body is not None:
        h["Content-Type"] = "application/json"
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers=h)
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.status, r.read()


def start_true(port, sb):
    j = json.dumps({"process": {"cmd": "/bin/true"}}).encode()
    env = b"\0" + struct.pack(">I", len(j)) + j
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "Content-Type": "application/connect+json",
         "Authorization": "Basic cm9vdDo="}
    if sb.get("envdAccessToken"):
        h["X-Access-Token"] = sb["envdAccessToken"]
    st, body = call(port, "POST", "/process.Process/Start", headers=h, raw=env)
    assert st == 200 and b"exit status 0" in body, body[:200]


def timed(f, *a):
    t = time.monotonic()
    r = f(*a)
    return (time.monotonic() - t) * 1000, r


def fmt(v):
    return f"{statistics.median(v):.1f} ms ({min(v):.1f}-{max(v):.1f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("--state-dir")
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--starts", type=int, default=40)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fk-bench-")
    portfile = os.path.join(tmp, "port")
    argv = [a.bin, "--port", "0", "--port-file", portfile, "--api-key", KEY, "--quiet",
            "--sandbox-disk-mb", "64"]
    argv += ["--state-dir", a.state_dir] if a.state_dir else []
    srv = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if os.path.exists(portfile) and open(portfile).read().strip():
                break
            time.sleep(0.05)
        port = int(open(portfile).read())
        create, start, pause = [], [], []
        for _ in range(a.cycles):
            ms, (st, body) = timed(call, port, "POST", "/v2/sandboxes",
                                   {"templateID": "base", "timeout": 300})
            assert st == 201
            sb = json.loads(body)
            create.append(ms)
            ms, _ = timed(start_true, port, sb)
            start.append(ms)
            ms, (st, _) = timed(call, port, "POST", f"/sandboxes/{sb['sandboxID']}/pause")
            assert st == 204
            pause.append(ms)
            call(port, "DELETE", f"/sandboxes/{sb['sandboxID']}")
        st, body = call(port, "POST", "/v2/sandboxes", {"templateID": "base"})
        sb = json.loads(body)
        starts = [timed(start_true, port, sb)[0] for _ in range(a.starts)]
        call(port, "DELETE", f"/sandboxes/{sb['sandboxID']}")
        print(f"create {fmt(create)}; Start after create {fmt(start)}; pause {fmt(pause)}; "
              f"Start x{a.starts} {fmt(starts)}")
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait()


if __name__ == "__main__":
    main()
