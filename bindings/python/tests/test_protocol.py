"""`sandbox-e2b serve` on the wire: the recorded exchanges of
bindings/protocol/*.jsonl replayed byte for byte, the line cap, answers out
of order, a duplicate id, and EOF as a shutdown that kills remote commands."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from sandbox_e2b import Client  # noqa: E402

from fake import Fake  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOCOL = os.path.join(HERE, "..", "..", "protocol")
fake: Fake


def setUpModule() -> None:
    global fake
    fake = Fake()


def tearDownModule() -> None:
    fake.stop()


def clean_env() -> dict:
    env = dict(os.environ)
    for k in ("SANDBOX_E2B_CONFIG", "E2B_API_KEY", "E2B_TEMPLATE", "SANDBOX_E2B_ENVD_URL"):
        env.pop(k, None)
    return env


class Serve:
    def __init__(self, *args: str) -> None:
        self.p = subprocess.Popen([os.environ["SANDBOX_E2B_BIN"], "serve", *args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=clean_env())

    def send_raw(self, data: bytes) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, msg: dict) -> None:
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def recv(self) -> dict:
        assert self.p.stdout is not None
        line = self.p.stdout.readline()
        if not line:
            raise AssertionError("serve closed its output")
        return json.loads(line)

    def call(self, id, method: str, params: dict) -> dict:
        self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        return self.recv()

    def initialize(self) -> dict:
        return self.call(0, "initialize", {"config": fake.config(), "envd_url": fake.url})

    def close(self) -> int:
        assert self.p.stdin is not None
        self.p.stdin.close()
        rc = self.p.wait(60)
        for f in (self.p.stdout, self.p.stderr):
            if f:
                f.close()
        return rc


class ProtocolTest(unittest.TestCase):
    def test_recorded_exchanges(self) -> None:
        for name in sorted(os.listdir(PROTOCOL)):
            if not name.endswith(".jsonl"):
                continue
            with self.subTest(file=name):
                s = Serve()
                with open(os.path.join(PROTOCOL, name), encoding="utf-8") as f:
                    for n, line in enumerate(f, 1):
                        step = json.loads(line)
                        s.send_raw(step["send"].encode() + b"\n")
                        if "expect" in step:
                            self.assertEqual(s.recv(), step["expect"], f"{name}:{n}")
                self.assertEqual(s.close(), 0)

    def test_line_over_the_cap_is_refused_unread_and_the_server_goes_on(self) -> None:
        s = Serve("--max-line-bytes", "4096")
        big = b'{"jsonrpc":"2.0","id":1,"method":"stat","params":{"path":"' + b"a" * (256 << 20) + b'"}}\n'
        s.send_raw(big)
        r = s.recv()
        self.assertEqual(r, {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "invalid request: line over 4096 bytes (the cap); not read"}})
        with open(f"/proc/{s.p.pid}/status") as f:
            hwm = next(int(x.split()[1]) for x in f if x.startswith("VmHWM:"))
        self.assertLess(hwm, 64 * 1024, "peak RSS in KiB after a 256 MiB line")
        self.assertEqual(s.initialize()["result"]["max_line_bytes"], 4096)
        self.assertEqual(s.close(), 0)

    def test_answers_out_of_order_and_duplicate_ids(self) -> None:
        s = Serve()
        s.initialize()
        sid = s.call(1, "create", {"name": "proto-order"})["result"]["id"]
        s.send({"jsonrpc": "2.0", "id": "slow", "method": "exec",
                "params": {"id": sid, "command": "sleep 1; echo slow"}})
        s.send({"jsonrpc": "2.0", "id": "slow", "method": "stat", "params": {"id": sid, "path": "/"}})
        dup = s.recv()
        self.assertEqual(dup["error"]["code"], -32600)
        self.assertIn("already used", dup["error"]["message"])
        fast = s.call("fast", "exec", {"id": sid, "command": "echo fast"})
        self.assertEqual((fast["id"], fast["result"]["stdout"]), ("fast", "fast\n"))
        slow = s.recv()
        self.assertEqual((slow["id"], slow["result"]["stdout"]), ("slow", "slow\n"))
        s.call(2, "destroy", {"id": sid})
        self.assertEqual(s.close(), 0)

    def test_cancel_request_aborts_exec_with_output_so_far(self) -> None:
        s = Serve()
        s.initialize()
        sid = s.call(1, "create", {"name": "proto-cancel"})["result"]["id"]
        s.send({"jsonrpc": "2.0", "id": 2, "method": "exec",
                "params": {"id": sid, "command": "echo started; touch /tmp/pc; sleep 77"}})
        with Client(fake.config(), envd_url=fake.url) as c:
            end = time.monotonic() + 30
            while c.stat(sid, "/tmp/pc") is None:
                self.assertLess(time.monotonic(), end)
                time.sleep(0.02)
            s.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}})
            r = s.recv()["result"]
            # the shell in the sandbox may report the kill on stderr (docs/cli.md)
            self.assertIn(r.pop("stderr"), ("", "Killed\n"))
            self.assertEqual(r, {"exit_code": None, "stdout": "started\n", "truncated": False,
                                 "timed_out": False, "aborted": True})
            self.assertEqual(c.exec(sid, "pgrep -f 'sleep 7[7]' || true").stdout, "")
            c.destroy(sid)
        self.assertEqual(s.close(), 0)

    def test_eof_aborts_calls_in_flight_kills_remote_commands_and_exits_0(self) -> None:
        with Client(fake.config(), envd_url=fake.url) as c:
            sid = c.create("proto-eof")
            s = Serve()
            s.initialize()
            s.send({"jsonrpc": "2.0", "id": 1, "method": "exec",
                    "params": {"id": sid, "command": "touch /tmp/pe; sleep 78"}})
            end = time.monotonic() + 30
            while c.stat(sid, "/tmp/pe") is None:
                self.assertLess(time.monotonic(), end)
                time.sleep(0.02)
            assert s.p.stdin is not None
            s.p.stdin.close()
            r = s.recv()  # the aborted call still gets its answer before the exit
            self.assertTrue(r["result"]["aborted"])
            self.assertEqual(s.p.wait(60), 0)
            for f in (s.p.stdout, s.p.stderr):
                if f:
                    f.close()
            self.assertEqual(c.exec(sid, "pgrep -f 'sleep 7[8]' || true").stdout, "")
            c.destroy(sid)

    def test_initialize_is_refused_while_a_background_command_is_kept(self) -> None:
        s = Serve()
        s.initialize()
        sid = s.call(1, "create", {"name": "proto-bg"})["result"]["id"]
        pid = s.call(2, "exec", {"id": sid, "command": "sleep 79", "background": True})["result"]["pid"]
        r = s.initialize()
        self.assertEqual(r["error"]["code"], -32600)
        self.assertIn("background commands", r["error"]["message"])
        self.assertTrue(s.call(3, "kill_process", {"id": sid, "pid": pid})["result"]["ok"])
        self.assertTrue(s.call(4, "wait", {"id": sid, "pid": pid})["result"]["aborted"])
        self.assertTrue(s.initialize()["result"]["configured"])
        s.call(5, "destroy", {"id": sid})
        self.assertEqual(s.close(), 0)

    def test_eof_kills_background_commands(self) -> None:
        with Client(fake.config(), envd_url=fake.url) as c:
            sid = c.create("proto-bg-eof")
            s = Serve()
            s.initialize()
            s.call(1, "exec", {"id": sid, "command": "touch /tmp/bg80; sleep 80", "background": True})
            end = time.monotonic() + 30
            while c.stat(sid, "/tmp/bg80") is None:
                self.assertLess(time.monotonic(), end)
                time.sleep(0.02)
            end = time.monotonic() + 30
            while c.exec(sid, "pgrep -c -f '^sleep 8[0]' || true").stdout != "1\n":
                self.assertLess(time.monotonic(), end)
                time.sleep(0.02)
            self.assertEqual(s.close(), 0)
            self.assertEqual(c.exec(sid, "pgrep -f '^sleep 8[0]' || true").stdout, "")
            c.destroy(sid)

    def test_errors_carry_data_and_no_secret(self) -> None:
        s = Serve()
        cfg = {"apiKey": "e2b_very_secret", "template": "t", "apiUrl": "http://127.0.0.1:9"}
        self.assertTrue(s.call(0, "initialize", {"config": cfg})["result"]["configured"])
        r = s.call(1, "resume", {"id": "i1"})
        self.assertEqual(r["error"]["code"], -32000)
        self.assertEqual(r["error"]["data"]["code"], "network")
        self.assertNotIn("e2b_very_secret", json.dumps(r))
        s.p.stdin.close()  # type: ignore[union-attr]
        s.p.wait(30)
        err = s.p.stderr.read()  # type: ignore[union-attr]
        self.assertNotIn(b"e2b_very_secret", err)
        s.p.stdout.close()  # type: ignore[union-attr]
        s.p.stderr.close()  # type: ignore[union-attr]


if __name__ == "__main__":
    unittest.main()
