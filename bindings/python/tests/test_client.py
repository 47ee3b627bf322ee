"""sandbox_e2b (sync Client and asyncio AsyncClient) against fake-e2b."""
from __future__ import annotations

import asyncio
import datetime
import logging
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from sandbox_e2b import (AsyncClient, CallbackError, CancelToken, Client, DirEntry,  # noqa: E402
                         Limits, SandboxError, SandboxGone, Stat)

from sandbox_e2b import _protocol  # noqa: E402
from fake import Fake  # noqa: E402

fake: Fake


def setUpModule() -> None:
    global fake
    if not os.environ.get("SANDBOX_E2B_BIN"):
        raise RuntimeError("set SANDBOX_E2B_BIN to the sandbox-e2b binary")
    fake = Fake()


def tearDownModule() -> None:
    fake.stop()


def wait_for(fn, what: str, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while not fn():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


class _Records(logging.Handler):
    """The records of one logger at `level` or above, with an event set at the first."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.event.set()


class SyncClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.c = Client(fake.config(), envd_url=fake.url)
        cls.sid = cls.c.create("py-main", Limits(cpu=1, memory_mb=512, disk_mb=1024))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.c.close()

    def sh(self, command: str) -> str:
        return self.c.exec(self.sid, command).stdout

    def test_exec_result(self) -> None:
        r = self.c.exec(self.sid, 'echo "$A $PWD"; printf "\\xff" >&2; exit 3', cwd="/tmp",
                        env={"A": "x y"}, timeout_ms=10000, max_output_bytes=1000)
        self.assertEqual(r.exit_code, 3)
        self.assertEqual(r.stdout, "x y /tmp\n")
        self.assertEqual(r.stderr_bytes, b"\xff")
        self.assertEqual(r.stderr, "\ufffd")
        self.assertEqual((r.truncated, r.timed_out, r.aborted), (False, False, False))

    def test_streaming_callbacks_and_stdin(self) -> None:
        chunks, errs = [], []
        first = threading.Event()

        def on_out(t: str) -> None:
            chunks.append(t)
            if "first\n" in "".join(chunks):
                first.set()

        out = {}
        t = threading.Thread(target=lambda: out.update(r=self.c.exec(
            self.sid, "echo first; while [ ! -e /tmp/py-go ]; do sleep 0.02; done; "
            "printf 't\\xc3'; sleep 0.2; printf '\\xa9\\n'; echo e >&2; cat",
            on_stdout=on_out, on_stderr=errs.append, stdin=b"in\xff")))
        t.start()
        self.assertTrue(first.wait(30))  # streamed while the command still waits
        self.c.write_file(self.sid, "/tmp/py-go", "")
        t.join(30)
        self.assertEqual("".join(chunks), "first\nt\u00e9\nin\ufffd")
        self.assertEqual(errs, ["e\n"])
        self.assertEqual(out["r"].stdout_bytes, b"first\nt\xc3\xa9\nin\xff")

    def test_a_raising_callback_is_surfaced_with_the_result(self) -> None:
        calls = []

        def bad(t: str) -> None:
            calls.append(t)
            raise ValueError("handler broke")

        with self.assertRaises(CallbackError) as cm:
            self.c.exec(self.sid, "echo one; sleep 0.1; echo two; exit 4", on_stdout=bad)
        self.assertEqual(cm.exception.code, "callback")
        self.assertIsInstance(cm.exception.__cause__, ValueError)
        self.assertEqual(str(cm.exception.__cause__), "handler broke")
        self.assertEqual((cm.exception.result.exit_code, cm.exception.result.stdout), (4, "one\ntwo\n"))
        self.assertEqual(calls, ["one\n"])  # not called again after it raised

        async def coro(t: str) -> None:
            pass

        with self.assertRaises(CallbackError) as cm:
            self.c.exec(self.sid, "echo x", on_stdout=coro)
        self.assertIsInstance(cm.exception.__cause__, TypeError)
        self.assertIn("AsyncClient", str(cm.exception.__cause__))

    def test_pause_during_commands_then_attach_by_pid(self) -> None:
        # Each command prints "tick" until its go file exists: a chunk after the resume proves the
        # new stream is attached before the go file is written (no race with the command's end).
        sid = self.c.create("py-pause", Limits(cpu=1, memory_mb=512, disk_mb=1024))

        def loop(name: str, code: int) -> str:
            return (f"echo {name}-start; while [ ! -e /tmp/go-{name} ]; do echo tick; sleep 0.05; done; "
                    f"echo {name}-end; exit {code}")

        state = {"resumed": False}
        fg_started, bg_started, bg_again, fg_again = (threading.Event() for _ in range(4))
        fg_out: list = []
        bg_out: list = []

        def on_fg(t: str) -> None:
            fg_out.append(t)
            if "fg-start\n" in "".join(fg_out):
                fg_started.set()

        def on_bg(t: str) -> None:
            bg_out.append(t)
            if "bg-start\n" in "".join(bg_out):
                bg_started.set()
            if state["resumed"]:
                bg_again.set()

        got: dict = {}
        bg_got: dict = {}

        def catch(into: dict, fn) -> None:
            try:
                into["r"] = fn()
            except SandboxError as e:
                into["e"] = e

        t = threading.Thread(target=catch, args=(got, lambda: self.c.exec(sid, loop("fg", 3), on_stdout=on_fg)))
        t.start()
        bg = self.c.start(sid, loop("bg", 7), on_stdout=on_bg)
        w = threading.Thread(target=catch, args=(bg_got, bg.wait))
        w.start()
        self.assertTrue(fg_started.wait(30) and bg_started.wait(30))
        self.c.suspend(sid)
        t.join(60)
        w.join(60)
        for g in (got, bg_got):
            self.assertIn("e", g, g)
            self.assertEqual(g["e"].code, "paused")
            self.assertRegex(str(g["e"]), r"was paused while .* ran; it goes on after a resume: resume\(id\), "
                                          r"then attach\(id, pid\)")
            self.assertNotIn("transfer closed", str(g["e"]))
        self.assertEqual(self.c.resume(sid), "resumed")

        # the background handle's wait attaches anew and streams the rest into the same on_stdout
        state["resumed"] = True
        again: dict = {}
        w = threading.Thread(target=catch, args=(again, bg.wait))
        w.start()
        self.assertTrue(bg_again.wait(30))
        self.c.write_file(sid, "/tmp/go-bg", "")
        w.join(60)
        r = again["r"]
        self.assertEqual(r.exit_code, 7)
        self.assertRegex(r.stdout, r"^(tick\n)+bg-end\n$")
        self.assertRegex("".join(bg_out), r"^bg-start\n(tick\n)*bg-end\n$")

        # the foreground exec's command is still running: found by ps, attached by pid
        mine = [p for p in self.c.ps(sid) if p.command and "go-fg" in p.command]
        self.assertEqual(len(mine), 1)
        attached: list = []

        def on_attached(t: str) -> None:
            attached.append(t)
            fg_again.set()

        a = self.c.attach(sid, mine[0].pid, on_stdout=on_attached)
        self.assertEqual(a.pid, mine[0].pid)
        done: dict = {}
        aw = threading.Thread(target=catch, args=(done, a.wait))
        aw.start()
        self.assertTrue(fg_again.wait(30))
        self.c.write_file(sid, "/tmp/go-fg", "")
        aw.join(60)
        r = done["r"]
        self.assertEqual((r.exit_code, r.timed_out, r.aborted), (3, False, False))
        self.assertRegex(r.stdout, r"^(tick\n)+fg-end\n$")
        self.assertEqual("".join(attached), r.stdout)
        with self.assertRaises(SandboxError) as cm:
            self.c.attach(sid, 0)
        self.assertEqual(cm.exception.code, "invalid")
        self.c.destroy(sid)

    def test_list_info_list_dir(self) -> None:
        mine = self.c.list(name="py-main")
        self.assertEqual([(s.id, s.name, s.state) for s in mine], [(self.sid, "py-main", "running")])
        info = self.c.info(self.sid)
        self.assertEqual(info.id, self.sid)
        # times as aware datetimes in UTC, as E2B's SDK gives them; the end is at least the
        # deployment's 3600 s timeout after the start (calls since extended it)
        now = datetime.datetime.now(datetime.timezone.utc)
        self.assertIsInstance(info.started_at, datetime.datetime)
        self.assertEqual(info.started_at.tzinfo, datetime.timezone.utc)  # type: ignore[union-attr]
        self.assertTrue(now - datetime.timedelta(minutes=10) < info.started_at <= now, info)  # type: ignore[operator]
        self.assertGreaterEqual(info.end_at - info.started_at, datetime.timedelta(seconds=3600))  # type: ignore[operator]
        self.assertEqual(mine[0].started_at, info.started_at)
        self.c.write_file(self.sid, "/workspace/pyls/b.bin", b"\x00\x01")
        self.assertEqual(self.c.list_dir(self.sid, "/workspace/pyls"), [DirEntry("b.bin", "file", 2)])
        self.assertIsNone(self.c.list_dir(self.sid, "/workspace/nope"))

    def test_background_process_stdin_stream_ps_wait_kill(self) -> None:
        seen = []
        echoed = threading.Event()

        def on_out(t: str) -> None:
            seen.append(t)
            if "ping\n" in "".join(seen):
                echoed.set()

        p = self.c.start(self.sid, "cat; echo end", stdin=True, on_stdout=on_out)
        self.assertIn(p.pid, [x.pid for x in self.c.ps(self.sid)])
        p.send_stdin("ping\n")
        self.assertTrue(echoed.wait(30))  # streamed while it still runs
        p.close_stdin()
        r = p.wait()
        self.assertEqual((r.exit_code, r.stdout), (0, "ping\nend\n"))
        self.assertEqual("".join(seen), "ping\nend\n")
        q = self.c.start(self.sid, "sleep 95")
        q.kill()
        r = q.wait()
        self.assertIsNone(r.exit_code)
        self.assertEqual(self.sh("pgrep -f 'sleep 9[5]' || true"), "")

    def test_output_cap_cuts_at_utf8_boundary(self) -> None:
        r = self.c.exec(self.sid, "printf 'ab\\xc3\\xa9cd'", max_output_bytes=3)
        self.assertEqual(r.stdout, "ab")
        self.assertTrue(r.truncated)

    def test_timeout_kills_the_tree(self) -> None:
        r = self.c.exec(self.sid, "echo before; (sleep 71 &); sleep 72", timeout_ms=1000)
        self.assertTrue(r.timed_out)
        self.assertIsNone(r.exit_code)
        self.assertEqual(r.stdout, "before\n")
        self.assertEqual(self.sh("pgrep -f 'sleep 7[12]' || true"), "")

    def test_cancel_token_aborts_exec(self) -> None:
        tok = CancelToken()
        out = {}
        t = threading.Thread(target=lambda: out.update(r=self.c.exec(
            self.sid, "echo started; touch /tmp/py-cancel; sleep 73", cancel=tok)))
        t.start()
        wait_for(lambda: self.c.stat(self.sid, "/tmp/py-cancel") is not None, "the command")
        t0 = time.monotonic()
        tok.cancel()
        t.join(30)
        took = time.monotonic() - t0
        r = out["r"]
        self.assertTrue(r.aborted)
        self.assertIsNone(r.exit_code)
        self.assertEqual(r.stdout, "started\n")
        self.assertLess(took, 10)
        self.assertEqual(self.sh("pgrep -f 'sleep 7[3]' || true"), "")

    def test_cancelled_token_raises_before_sending(self) -> None:
        tok = CancelToken()
        tok.cancel()
        with self.assertRaises(SandboxError) as cm:
            self.c.exec(self.sid, "true", cancel=tok)
        self.assertEqual(cm.exception.code, "aborted")

    def test_files(self) -> None:
        self.c.write_file(self.sid, "/workspace/p/q/bin", b"\x00\x01\xff")
        f = self.c.read_file(self.sid, "/workspace/p/q/bin")
        assert f is not None
        self.assertEqual((f.data, f.truncated), (b"\x00\x01\xff", False))
        self.c.write_file(self.sid, "/workspace/t.txt", "héllo")
        f = self.c.read_file(self.sid, "/workspace/t.txt", max_bytes=2)
        assert f is not None
        self.assertEqual((f.data, f.truncated), ("héllo".encode()[:2], True))
        self.assertEqual(self.c.stat(self.sid, "/workspace/t.txt"), Stat(size=6, is_dir=False))
        st = self.c.stat(self.sid, "/workspace")
        assert st is not None and st.is_dir
        self.assertIsNone(self.c.stat(self.sid, "/workspace/none"))
        self.assertIsNone(self.c.read_file(self.sid, "/workspace/none"))
        self.assertIsNone(self.c.read_file(self.sid, "/workspace"))

    def test_skills_written_by_root(self) -> None:
        self.c.write_file(self.sid, "/skills/py/SKILL.md", "# s\n")
        self.assertEqual(self.sh("stat -c '%U %a' /skills/py/SKILL.md"), "root 644\n")

    def test_kill_tagged_and_kill_all(self) -> None:
        res = {}

        def run(key: str, n: int, tag) -> None:
            res[key] = self.c.exec(self.sid, f"touch /tmp/py-tag-{n}; sleep {n}", tag=tag, timeout_ms=120000)

        ts = [threading.Thread(target=run, args=a) for a in (("a", 81, "one"), ("b", 82, "two"))]
        for t in ts:
            t.start()
        for n in (81, 82):
            wait_for(lambda: self.c.stat(self.sid, f"/tmp/py-tag-{n}") is not None, "tagged command")
        self.c.kill_tagged(self.sid, ["one"])
        ts[0].join(30)
        self.assertEqual(res["a"].exit_code, 137)
        self.assertEqual(self.sh("pgrep -c -f '^sleep 8[12]' || true"), "1\n")
        self.c.kill_all(self.sid)
        ts[1].join(30)
        self.assertEqual(res["b"].exit_code, 137)

    def test_concurrent_calls_from_threads(self) -> None:
        out = [None] * 16

        def run(i: int) -> None:
            out[i] = self.c.exec(self.sid, f"sleep 0.2; echo {i}").stdout

        ts = [threading.Thread(target=run, args=(i,)) for i in range(16)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        self.assertEqual(out, [f"{i}\n" for i in range(16)])

    def test_lifecycle_and_gone(self) -> None:
        sid = self.c.create("py-life")
        self.c.write_file(sid, "/workspace/k", "kept")
        self.c.suspend(sid)
        self.assertEqual(self.c.resume(sid), "resumed")
        self.assertEqual(self.c.read_file(sid, "/workspace/k").data, b"kept")  # type: ignore[union-attr]
        self.c.destroy_by_name("py-life")
        self.assertEqual(self.c.resume(sid), "gone")
        with self.assertRaises(SandboxGone) as cm:
            self.c.exec(sid, "true")
        self.assertEqual(cm.exception.code, "gone")
        self.assertEqual(cm.exception.http_status, 404)
        self.c.destroy(sid)  # a missing sandbox is success

    def test_invalid_arguments(self) -> None:
        with self.assertRaises(SandboxError) as cm:
            self.c.create("bad name")
        self.assertEqual(cm.exception.code, "invalid")
        self.assertNotIsInstance(cm.exception, SandboxGone)
        with self.assertRaises(SandboxError) as cm:
            self.c.create("x", {"cpu": "one"})
        self.assertEqual(cm.exception.code, "invalid_params")
        self.assertIn("params.limits.cpu", str(cm.exception))

    def test_invalid_config_names_the_key_without_the_secret(self) -> None:
        with Client(fake.config(timeoutSeconds=5)) as bad:
            with self.assertRaises(SandboxError) as cm:
                bad.resume("x")
        self.assertIn("timeoutSeconds", str(cm.exception))
        self.assertNotIn("e2b_py_test", str(cm.exception))

    def test_sandbox_e2b_config_without_a_config_and_debug_log_level(self) -> None:
        """README "Configuration and logs": config=None reads SANDBOX_E2B_CONFIG (the JSON);
        a config given wins over it; log_level="debug" sends one http line per request."""
        import json
        import logging
        env = {k: v for k, v in os.environ.items() if not k.startswith(("E2B_", "SANDBOX_E2B_CONFIG"))}
        env.update(SANDBOX_E2B_CONFIG=json.dumps(fake.config()), SANDBOX_E2B_ENVD_URL=fake.url)
        with Client(env=env) as c:
            self.assertEqual(c.exec(self.sid, "echo via-config").stdout, "via-config\n")
            self.assertEqual(c.server_info["config"]["apiKey"], "[redacted]")
        bad = dict(env, SANDBOX_E2B_CONFIG='{"apiKey": 5}')
        with Client(fake.config(), envd_url=fake.url, env=bad) as c:
            self.assertEqual(c.exec(self.sid, "echo own").stdout, "own\n")
        logger = logging.getLogger("sandbox_e2b.test_debug")
        with self.assertLogs(logger, level="DEBUG") as logs, \
                Client(fake.config(), envd_url=fake.url, logger=logger, log_level="debug") as c:
            c.stat(self.sid, "/workspace")
        self.assertTrue(any(r.levelno == logging.DEBUG and r.getMessage().startswith("http")
                            for r in logs.records), [r.getMessage() for r in logs.records])
        self.assertFalse(any("e2b_py_test" in r.getMessage() for r in logs.records))

    def test_keys_the_config_leaves_out_come_from_the_e2b_variables(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("E2B_", "SANDBOX_E2B_CONFIG"))}
        env.update(E2B_API_KEY="e2b_py_test", E2B_TEMPLATE="capybara-sandbox", E2B_API_URL=fake.url,
                   E2B_SANDBOX_URL=fake.url, SANDBOX_E2B_ENVD_URL="")
        for config in ({}, None):
            with self.subTest(config=config), Client(config, env=env) as c:
                self.assertEqual(c.exec(self.sid, "echo via-env").stdout, "via-env\n")
                self.assertEqual(c.server_info["config"]["apiUrl"], fake.url)
                self.assertEqual(c.server_info["config"]["template"], "capybara-sandbox")
        with Client({"apiUrl": "http://127.0.0.1:1"}, env=env) as c:  # an explicit key wins
            with self.assertRaises(SandboxError) as cm:
                c.resume(self.sid)
            self.assertEqual(cm.exception.code, "network")
            self.assertIn("connect failed: Failed to connect to 127.0.0.1 port 1 ", str(cm.exception))

    def test_no_config_says_what_a_package_user_does(self) -> None:
        bare = {"PATH": os.environ["PATH"], "SANDBOX_E2B_BIN": os.environ["SANDBOX_E2B_BIN"]}
        with Client(env=bare) as c:
            with self.assertRaises(SandboxError) as cm:
                c.list()
        self.assertEqual(cm.exception.code, "not_configured")
        self.assertEqual(str(cm.exception), 'no deployment config: pass one to Client(config) ({"apiKey": ..., '
                         '"template": ...}) or set E2B_API_KEY and E2B_TEMPLATE (README "Configuration")')
        seen = _Records(logging.WARNING)
        logger = logging.getLogger("sandbox_e2b")
        logger.addHandler(seen)
        try:
            with Client(env=dict(bare, E2B_API_KEY="e2b_py_test")) as c:
                with self.assertRaises(SandboxError) as cm:
                    c.list()
                # serve says so on its stderr at start, which the client reads on a thread of its
                # own: the line may come after the answer on stdout, so wait for it
                self.assertTrue(seen.event.wait(60), "serve's warning never reached the logger")
        finally:
            logger.removeHandler(seen)
        self.assertIn("invalid deployment config: template: required; waiting for initialize",
                      seen.records[0].getMessage())
        self.assertNotIn("e2b_py_test", seen.records[0].getMessage())
        self.assertEqual(str(cm.exception), "no deployment config: the one from the environment was refused "
                         "(invalid deployment config: template: required); pass one to Client(config) or fix "
                         'E2B_API_KEY / E2B_TEMPLATE / E2B_API_URL / E2B_DOMAIN (README "Configuration")')
        self.assertNotIn("e2b_py_test", str(cm.exception))
        self.assertEqual(cm.exception.e2b_code, "config_template")

    def test_a_refused_config_names_the_variables_serve_read(self) -> None:
        # the variables are the engine's (cli/config.c): a config from SANDBOX_E2B_CONFIG names
        # it first, which no list in the package knew; the reason is the error's e2b_code
        bare = {"PATH": os.environ["PATH"], "SANDBOX_E2B_BIN": os.environ["SANDBOX_E2B_BIN"],
                "SANDBOX_E2B_CONFIG": '{"apiKey":"e2b_py_test","template":"t","extra":1}'}
        with Client(env=bare) as c:
            with self.assertRaises(SandboxError) as cm:
                c.list()
        self.assertEqual(cm.exception.code, "not_configured")
        self.assertEqual(cm.exception.e2b_code, "config_keys")
        self.assertEqual(str(cm.exception), "no deployment config: the one from the environment was refused "
                         "(invalid deployment config: extra: unrecognized key); pass one to Client(config) or "
                         "fix SANDBOX_E2B_CONFIG / E2B_API_KEY / E2B_TEMPLATE / E2B_API_URL / E2B_DOMAIN "
                         '(README "Configuration")')

    def test_not_configured_by_an_engine_without_config_vars_keeps_its_message(self) -> None:
        rpc = {"code": -32001, "message": "no deployment config: send initialize first",
               "data": {"code": "not_configured"}}
        self.assertEqual(str(_protocol.error_from(rpc)), "no deployment config: send initialize first")
        rpc["data"]["config_vars"] = ["X_KEY", "X_TEMPLATE"]
        self.assertEqual(str(_protocol.error_from(rpc)), 'no deployment config: pass one to Client(config) '
                         '({"apiKey": ..., "template": ...}) or set X_KEY and X_TEMPLATE (README "Configuration")')

    def test_library_warnings_reach_the_sandbox_e2b_logger(self) -> None:
        with Client(fake.config(domainAllowlist=False), envd_url=fake.url) as c:
            with self.assertLogs("sandbox_e2b", level="WARNING") as cm:
                sid = c.create("py-warn", Limits(egress="allowlist", allow_hosts=["pypi.org"]))
            self.assertEqual(len(cm.records), 1, cm.output)
            self.assertEqual(cm.records[0].levelname, "WARNING")
            self.assertIn("domain allowlists are disabled", cm.records[0].getMessage())
            self.assertNotIn("e2b_py_test", "\n".join(cm.output))
            c.destroy(sid)

    def test_killed_child_recovers(self) -> None:
        with Client(fake.config(), envd_url=fake.url) as c:
            self.assertEqual(c.resume(self.sid), "resumed")
            pid = c._conn.proc.pid  # type: ignore[union-attr]
            out = {}

            def run() -> None:
                try:
                    c.exec(self.sid, "touch /tmp/py-kill; sleep 74")
                except SandboxError as e:
                    out["e"] = e

            t = threading.Thread(target=run)
            t.start()
            wait_for(lambda: self.c.stat(self.sid, "/tmp/py-kill") is not None, "the command")
            os.kill(pid, 9)
            t.join(30)
            self.assertEqual(out["e"].code, "bridge")
            self.assertIn("killed by signal 9", str(out["e"]))
            self.assertEqual(c.exec(self.sid, "echo back").stdout, "back\n")
        self.c.kill_all(self.sid)


class TimesTest(unittest.TestCase):
    def test_rfc3339_times_become_aware_utc_datetimes(self) -> None:
        utc = datetime.timezone.utc
        p = _protocol.parse_time
        self.assertEqual(p("2026-12-01T21:58:58.484Z"), datetime.datetime(2026, 12, 1, 21, 58, 58, 484000, utc))
        self.assertEqual(p("2026-12-01T21:58:58Z"), datetime.datetime(2026, 12, 1, 21, 58, 58, 0, utc))
        self.assertEqual(p("2026-12-01T21:58:58.123456789Z"), datetime.datetime(2026, 12, 1, 21, 58, 58, 123456, utc))
        self.assertEqual(p("2026-12-01T23:58:58+02:00"), datetime.datetime(2026, 12, 1, 21, 58, 58, 0, utc))
        self.assertEqual(p("2026-12-01T20:28:58-01:30"), datetime.datetime(2026, 12, 1, 21, 58, 58, 0, utc))
        self.assertEqual(p("2026-12-01T21:58:58Z").tzinfo, utc)  # type: ignore[union-attr]
        self.assertIsNone(p(None))
        for bad in ("2026-12-01", "2026-13-01T00:00:00Z", "yesterday", 5, "2026-12-01T21:58:58"):
            with self.assertRaises(SandboxError) as cm:
                p(bad)
            self.assertEqual(cm.exception.code, "protocol")


class ExampleTest(unittest.TestCase):
    def test_quickstart_example_runs(self) -> None:
        """examples/quickstart.py, the README's walk-through, asserts each step itself."""
        here = os.path.dirname(os.path.abspath(__file__))
        env = dict(os.environ, E2B_API_KEY="e2b_py_test",
                   PYTHONPATH=os.path.join(here, "..", "src"))
        p = subprocess.run([sys.executable, os.path.join(here, "..", "examples", "quickstart.py"),
                            fake.url], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=240, check=False)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        self.assertEqual(p.stdout.decode().splitlines()[1:], [
            "line 1", "line 2", "line 3", "aborted: True None 'started\\n'",
            "destroyed; exec after it raises SandboxGone", "asyncio: task cancelled, command killed"])


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    async def test_async_flow_and_task_cancellation(self) -> None:
        async with AsyncClient(fake.config(), envd_url=fake.url) as c:
            sid = await c.create("py-async")
            rs = await asyncio.gather(*(c.exec(sid, f"sleep 0.2; echo {i}") for i in range(16)))
            self.assertEqual([r.stdout for r in rs], [f"{i}\n" for i in range(16)])
            seen: list = []
            r = await c.exec(sid, "echo out; echo err >&2", on_stdout=lambda t: seen.append(("o", t)),
                             on_stderr=lambda t: seen.append(("e", t)))
            self.assertEqual(sorted(seen), [("e", "err\n"), ("o", "out\n")])
            self.assertEqual((r.stdout, r.stderr), ("out\n", "err\n"))
            await c.write_file(sid, "/workspace/a.txt", b"async")
            f = await c.read_file(sid, "/workspace/a.txt")
            self.assertEqual(f.data, b"async")  # type: ignore[union-attr]
            task = asyncio.ensure_future(c.exec(sid, "touch /tmp/py-async; sleep 75"))
            for _ in range(1500):
                if await c.stat(sid, "/tmp/py-async") is not None:
                    break
                await asyncio.sleep(0.02)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task  # ends once the server answered: the command is killed by then
            self.assertEqual((await c.exec(sid, "pgrep -f 'sleep 7[5]' || true")).stdout, "")
            p = await c.start(sid, "read x; echo got $x", stdin=True)
            await p.send_stdin(b"it\n")
            r = await p.wait()
            self.assertEqual(r.stdout, "got it\n")
            self.assertEqual([e.name for e in (await c.list_dir(sid, "/workspace")) or []], ["a.txt"])
            await c.destroy(sid)
            with self.assertRaises(SandboxGone):
                await c.stat(sid, "/workspace")

    async def test_async_handlers_are_awaited_in_order_output_never_lost(self) -> None:
        async with AsyncClient(fake.config(), envd_url=fake.url) as c:
            sid = await c.create("py-async-handlers")
            seen: list = []

            async def slow_out(t: str) -> None:
                await asyncio.sleep(0.01)  # yields: a later chunk must still wait for this one
                seen.append(("o", t))

            async def on_err(t: str) -> None:
                seen.append(("e", t))

            cmd = "for i in $(seq 1 50); do echo $i; done; echo err >&2; printf 'caf\\303'; sleep 0.1; printf '\\251'"
            r = await c.exec(sid, cmd, on_stdout=slow_out, on_stderr=on_err)
            out = "".join(t for k, t in seen if k == "o")
            self.assertEqual(out, "".join(f"{i}\n" for i in range(1, 51)) + "caf\u00e9")
            self.assertEqual(out, r.stdout)  # every chunk handled before exec returned
            self.assertEqual([t for k, t in seen if k == "e"], ["err\n"])

            # a sync callable still works; a background command's async handler too
            sync_seen: list = []
            r = await c.exec(sid, "echo s", on_stdout=sync_seen.append)
            self.assertEqual((sync_seen, r.stdout), (["s\n"], "s\n"))
            bg: list = []

            async def on_bg(t: str) -> None:
                await asyncio.sleep(0)
                bg.append(t)

            p = await c.start(sid, "read x; echo got $x; echo more", stdin=True, on_stdout=on_bg)
            await p.send_stdin(b"it\n")
            r = await p.wait()
            self.assertEqual(("".join(bg), r.stdout), ("got it\nmore\n", "got it\nmore\n"))

            # a handler that raises: the exec runs to its end, then CallbackError with the result
            async def bad(t: str) -> None:
                raise ValueError("async handler broke")

            with self.assertRaises(CallbackError) as cm:
                await c.exec(sid, "echo a; echo b; exit 5", on_stdout=bad)
            self.assertIsInstance(cm.exception.__cause__, ValueError)
            self.assertEqual((cm.exception.result.exit_code, cm.exception.result.stdout), (5, "a\nb\n"))
            p = await c.start(sid, "echo x; sleep 300")
            a = await c.attach(sid, p.pid)
            task = asyncio.ensure_future(a.wait())
            await a.kill()
            r = await task
            self.assertEqual(r.exit_code, None)
            await p.wait()
            await c.destroy(sid)


if __name__ == "__main__":
    unittest.main()
