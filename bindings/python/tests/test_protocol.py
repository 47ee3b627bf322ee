"""`sandbox-e2b serve` on the wire: the recorded exchanges of
bindings/protocol/*.jsonl replayed byte for byte, the line cap, answers out
of order, a duplicate id, and EOF as a shutdown that kills remote commands."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import tempfile
import unittest
from typing import Optional, Sequence

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
    def __init__(self, *args: str, env: Optional[dict] = None, before: Sequence[str] = ()) -> None:
        self.p = subprocess.Popen([os.environ["SANDBOX_E2B_BIN"], *before, "serve", *args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env or clean_env())

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


class EngineTest(unittest.TestCase):
    """Which engine the package runs: SANDBOX_E2B_BIN, else PATH, else its own bundled one."""

    def test_order_and_version_report(self) -> None:
        from sandbox_e2b import __version__
        from sandbox_e2b._protocol import find_engine
        from sandbox_e2b.errors import SandboxError

        real = os.environ["SANDBOX_E2B_BIN"]
        with tempfile.TemporaryDirectory() as d:
            empty = os.path.join(d, "empty")
            on_path = os.path.join(d, "path")
            bundled = os.path.join(d, "_engine", "bin", "sandbox-e2b")
            os.makedirs(empty)
            os.makedirs(on_path)
            with self.assertRaises(SandboxError) as cm:
                find_engine({"PATH": empty}, bundled)
            self.assertEqual(cm.exception.code, "bridge")
            self.assertEqual(str(cm.exception), "sandbox-e2b not found: set SANDBOX_E2B_BIN to "
                             "the path of the sandbox-e2b binary, or put it on PATH (this "
                             "package has no bundled engine)")
            os.makedirs(os.path.dirname(bundled))
            os.symlink(real, bundled)
            self.assertEqual(find_engine({"PATH": empty}, bundled), (bundled, "bundled"))
            os.symlink(real, os.path.join(on_path, "sandbox-e2b"))
            self.assertEqual(find_engine({"PATH": on_path}, bundled),
                             (os.path.join(on_path, "sandbox-e2b"), "PATH"))
            self.assertEqual(find_engine({"PATH": on_path, "SANDBOX_E2B_BIN": "/x/y"}, bundled),
                             ("/x/y", "SANDBOX_E2B_BIN"))
            out = subprocess.run([sys.executable, "-m", "sandbox_e2b", "--version"],
                                 capture_output=True, text=True, timeout=60,
                                 env={"SANDBOX_E2B_BIN": real, "PYTHONPATH": os.path.join(
                                     HERE, "..", "src")})
            self.assertEqual((out.returncode, out.stderr), (0, ""))
            self.assertEqual(out.stdout, f"sandbox_e2b {__version__}\nengine: {real} "
                             f"(SANDBOX_E2B_BIN): sandbox-e2b {__version__}\n")


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

    def test_config_from_the_clis_sources_without_initialize(self) -> None:
        cfg = fake.config()
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(cfg, f)
            f.flush()
            sources = {
                "SANDBOX_E2B_CONFIG": ({"SANDBOX_E2B_CONFIG": json.dumps(cfg)}, ()),
                "E2B_API_KEY": ({"E2B_API_KEY": cfg["apiKey"], "E2B_TEMPLATE": cfg["template"],
                                 "E2B_API_URL": cfg["apiUrl"]}, ()),
                "--config": ({}, ("--config", f.name)),
            }
            for name, (extra, before) in sources.items():
                with self.subTest(source=name):
                    env = dict(clean_env(), SANDBOX_E2B_ENVD_URL=fake.url, **extra)
                    s = Serve(env=env, before=before)
                    sid = s.call(1, "create", {"name": "proto-src"})["result"]["id"]
                    r = s.call(2, "exec", {"id": sid, "command": "echo ok"})
                    self.assertEqual(r["result"]["stdout"], "ok\n")
                    self.assertEqual(s.call(3, "destroy", {"id": sid})["result"], {"ok": True, "id": sid})
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

    def test_exec_stream_sends_output_notifications_before_the_result(self) -> None:
        s = Serve()
        s.initialize()
        sid = s.call(1, "create", {"name": "proto-stream"})["result"]["id"]
        s.send({"jsonrpc": "2.0", "id": "x", "method": "exec", "params": {
            "id": sid, "stream": True,
            "command": "printf 'a\\n'; printf '\\377' >&2; printf b"}})
        msgs = []
        while True:
            m = s.recv()
            msgs.append(m)
            if "id" in m:
                break
        *notes, last = msgs
        self.assertEqual(last, {"jsonrpc": "2.0", "id": "x", "result": {
            "exit_code": 0, "stdout": "a\nb", "stderr": None, "stderr_b64": "/w==",
            "truncated": False, "timed_out": False, "aborted": False}})
        # every notification came before the result; per stream, in order, they add up to it
        got = {"stdout": b"", "stderr": b""}
        for m in notes:
            self.assertEqual((m["jsonrpc"], m["method"], m["params"]["id"]), ("2.0", "output", "x"))
            p = m["params"]
            if "data_b64" in p:
                self.assertEqual(sorted(p), ["data", "data_b64", "id", "stream"])
                self.assertIsNone(p["data"])
                got[p["stream"]] += base64.b64decode(p["data_b64"])
            else:
                self.assertEqual(sorted(p), ["data", "id", "stream"])
                got[p["stream"]] += p["data"].encode()
        self.assertEqual(got, {"stdout": b"a\nb", "stderr": b"\xff"})
        s.call(2, "destroy", {"id": sid})
        self.assertEqual(s.close(), 0)

    def test_results_are_the_clis_json(self) -> None:
        """Each method's result is what the CLI prints with --json for the same call
        (cli/shapes.c for both), bytes rule included; an error's data names the
        library's code and the HTTP status."""
        env = clean_env()
        env["SANDBOX_E2B_CONFIG"] = json.dumps(fake.config())
        env["SANDBOX_E2B_ENVD_URL"] = fake.url

        def cli(*args: str, stdin: bytes = b"") -> object:
            p = subprocess.run([os.environ["SANDBOX_E2B_BIN"], "--json", *args], input=stdin,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120,
                               check=False)
            return json.loads(p.stdout)

        s = Serve()
        s.initialize()
        n = iter(range(1, 1000))

        def rpc(method: str, **params: object) -> object:
            r = s.call(next(n), method, params)
            self.assertIn("result", r, r)
            return r["result"]

        created = rpc("create", name="proto-shapes")
        sid = created["id"]
        self.assertEqual(created, {"id": sid, "name": "proto-shapes"})
        other = cli("create", "proto-shapes-cli")
        self.assertEqual(sorted(other), ["id", "name"])
        self.assertEqual(other["name"], "proto-shapes-cli")
        self.assertEqual(rpc("destroy", id=other["id"]), cli("destroy", other["id"]))

        binary = b"ok\xff\xfe\x00"
        self.assertEqual(rpc("write_file", id=sid, path="/workspace/b.bin",
                             data_b64=base64.b64encode(binary).decode()),
                         {"ok": True, "path": "/workspace/b.bin", "bytes": 5})
        self.assertEqual(cli("write", sid, "/workspace/c.bin", "-", stdin=binary),
                         {"ok": True, "path": "/workspace/c.bin", "bytes": 5})
        self.assertEqual(rpc("write_file", id=sid, path="/workspace/t.txt", data="h\u00e9llo\n"),
                         cli("write", sid, "/workspace/t.txt", "-", stdin="h\u00e9llo\n".encode()))
        cases = [
            ("read_file", {"path": "/workspace/b.bin"}, ["read", sid, "/workspace/b.bin"],
             {"path": "/workspace/b.bin", "exists": True, "size": 5, "truncated": False,
              "content": None, "content_b64": base64.b64encode(binary).decode()}),
            ("read_file", {"path": "/workspace/t.txt"}, ["read", sid, "/workspace/t.txt"],
             {"path": "/workspace/t.txt", "exists": True, "size": 7, "truncated": False,
              "content": "h\u00e9llo\n"}),
            ("read_file", {"path": "/workspace/t.txt", "max_bytes": 2},
             ["read", sid, "/workspace/t.txt", "--max-bytes", "2"], None),
            ("stat", {"path": "/workspace/t.txt"}, ["stat", sid, "/workspace/t.txt"],
             {"path": "/workspace/t.txt", "exists": True, "size": 7, "is_dir": False}),
            ("stat", {"path": "/nope"}, ["stat", sid, "/nope"],
             {"path": "/nope", "exists": False, "size": 0, "is_dir": False}),
            ("exec", {"command": "printf 'ok\\377'; echo err >&2; exit 3"},
             ["exec", sid, "--", "printf 'ok\\377'; echo err >&2; exit 3"],
             {"exit_code": 3, "stdout": None, "stdout_b64": "b2v/", "stderr": "err\n",
              "truncated": False, "timed_out": False, "aborted": False}),
            ("exec", {"command": "seq 1 1000", "max_output_bytes": 10},
             ["exec", sid, "--max-output-bytes", "10", "--", "seq 1 1000"],
             {"exit_code": 0, "stdout": "1\n2\n3\n4\n5\n", "stderr": "", "truncated": True,
              "timed_out": False, "aborted": False}),
            ("resume", {}, ["resume", sid], {"id": sid, "status": "resumed"}),
            ("kill_tagged", {"tags": ["t1"]}, ["kill-tagged", sid, "t1"], {"ok": True, "id": sid}),
            ("kill_all", {}, ["kill-all", sid], {"ok": True, "id": sid}),
            ("list_dir", {"path": "/workspace"}, ["ls", sid, "/workspace"], None),
            ("info", {}, ["info", sid], None),
        ]
        for method, params, argv, want in cases:
            with self.subTest(method=method, params=params):
                got = rpc(method, id=sid, **params)
                self.assertEqual(got, cli(*argv))
                if want is not None:
                    self.assertEqual(got, want)
        # bytes rule on a name: list_dir gives name_b64 for a name that is not UTF-8
        rpc("exec", id=sid, command="mkdir /workspace/d && touch /workspace/d/$(printf 'x\\377')")
        listed = rpc("list_dir", id=sid, path="/workspace/d")
        self.assertEqual(listed, cli("ls", sid, "/workspace/d"))
        self.assertEqual(listed["entries"], [{"name": None, "name_b64": "eP8=", "type": "file",
                                              "size": 0}])
        self.assertEqual(rpc("destroy", id=sid), cli("destroy", sid))
        self.assertEqual(rpc("resume", id=sid), {"id": sid, "status": "gone"})
        r = s.call(next(n), "exec", {"id": sid, "command": "true"})
        self.assertEqual(r["error"]["code"], -32000)
        self.assertEqual((r["error"]["data"]["code"], r["error"]["data"]["http_status"]),
                         ("gone", 404))
        self.assertEqual(s.close(), 0)

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
