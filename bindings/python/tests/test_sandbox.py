"""sandbox_e2b's E2B shape (Sandbox, AsyncSandbox) against fake-e2b: each call's
exact result and error, CommandExitException, async handlers awaited, and a
pause during commands then a resume (bindings/MIGRATING.md, "Python")."""
from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import unittest
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from sandbox_e2b import Limits  # noqa: E402
from sandbox_e2b.e2b import (AsyncSandbox, CommandExitException, CommandResult, EntryInfo,  # noqa: E402
                             FileNotFoundException, FilesystemEvent, FilesystemEventType, FileType, InvalidArgumentException, NotFoundException,
                             ProcessInfo, PtySize, Sandbox, SandboxException, SandboxInfo, SandboxNotFoundException,
                             SandboxPausedException, SandboxQuery, SandboxState, TimeoutException, WriteInfo)
from fake import Fake  # noqa: E402

fake: Fake
OPTS: Dict[str, Any] = {}
SMALL = Limits(cpu=1, memory_mb=512, disk_mb=1024)


def setUpModule() -> None:
    global fake
    if not os.environ.get("SANDBOX_E2B_BIN"):
        raise RuntimeError("set SANDBOX_E2B_BIN to the sandbox-e2b binary")
    fake = Fake("--sandbox-disk-mb", os.environ.get("ITEST_SANDBOX_DISK_MB", "64"))
    OPTS.update(api_key="e2b_py_test", api_url=fake.url, sandbox_url=fake.url)


def tearDownModule() -> None:
    from sandbox_e2b.e2b import _ops
    _ops._close_all()
    fake.stop()


def new(**kw: Any) -> Sandbox:
    return Sandbox.create("capybara-sandbox", limits=SMALL, **kw, **OPTS)


def aware(t: Any) -> bool:
    return isinstance(t, datetime) and t.tzinfo is not None and t.utcoffset() == timedelta(0)


class SandboxTest(unittest.TestCase):
    sbx: Sandbox

    @classmethod
    def setUpClass(cls) -> None:
        cls.sbx = new(timeout=600, envs={"FROM_CREATE": "c v"}, metadata={"owner": "py-test"})

    @classmethod
    def tearDownClass(cls) -> None:
        cls.sbx.kill()

    def test_create_and_get_info(self) -> None:
        info = self.sbx.get_info()
        self.assertIsInstance(info, SandboxInfo)
        self.assertEqual(info.sandbox_id, self.sbx.sandbox_id)
        self.assertEqual(info.template_id, "capybara-sandbox")
        self.assertIs(info.state, SandboxState.RUNNING)
        self.assertRegex(info.sandbox_name or "", r"^e2b-[0-9a-f]{32}$")
        self.assertTrue(aware(info.started_at) and aware(info.end_at))
        self.assertEqual(Sandbox.get_info(self.sbx.sandbox_id, **OPTS), info)
        self.assertTrue(self.sbx.is_running())
        self.assertEqual(self.sbx.get_host(8080), f"8080-{self.sbx.sandbox_id}.e2b.app")
        with self.assertRaises(InvalidArgumentException):
            self.sbx.get_host(0)

    def test_run_result_envs_cwd_user(self) -> None:
        out: List[str] = []
        err: List[str] = []
        r = self.sbx.commands.run('echo "$FROM_CREATE|$A|$PWD"; whoami; echo e >&2', envs={"A": "x y"}, cwd="/tmp",
                                  on_stdout=out.append, on_stderr=err.append)
        self.assertEqual(r, CommandResult(stderr="e\n", stdout="c v|x y|/tmp\nsandbox\n", exit_code=0, error=None))
        self.assertEqual(("".join(out), "".join(err)), (r.stdout, r.stderr))
        self.assertEqual(self.sbx.commands.run("whoami", user="root").stdout, "root\n")
        self.assertEqual(self.sbx.commands.run("whoami", user="user").stdout, "sandbox\n")
        with self.assertRaises(InvalidArgumentException):
            self.sbx.commands.run("true", user="nobody")  # type: ignore[arg-type]

    def test_non_zero_exit_raises_command_exit_exception(self) -> None:
        with self.assertRaises(CommandExitException) as cm:
            self.sbx.commands.run("echo out; echo bad >&2; exit 3")
        e = cm.exception
        self.assertEqual((e.stdout, e.stderr, e.exit_code, e.error), ("out\n", "bad\n", 3, "exit status 3"))
        self.assertIsInstance(e, SandboxException)
        self.assertIsInstance(e, CommandResult)
        self.assertEqual(str(e), "Command exited with code 3 and error:\nbad\n")

    def test_timeout_raises_and_kills(self) -> None:
        t0 = time.monotonic()
        with self.assertRaises(TimeoutException) as cm:
            self.sbx.commands.run("sleep 30", timeout=1)
        self.assertLess(time.monotonic() - t0, 25)
        self.assertIn("timeout of 1 s", str(cm.exception))
        self.assertEqual([p for p in self.sbx.commands.list() if p.command == "sleep 30"], [])

    def test_output_cap_is_ours(self) -> None:
        r = self.sbx.commands.run("head -c 5000 /dev/zero | tr '\\0' a", max_output_bytes=100)
        self.assertEqual((r.stdout, r.truncated), ("a" * 100, True))
        r = self.sbx.commands.run("head -c 2000000 /dev/zero | tr '\\0' a")  # past the engine's 1 MiB
        self.assertEqual((len(r.stdout), r.truncated), (2000000, False))

    def test_egress_options(self) -> None:
        s = new(network={"deny_out": ["0.0.0.0/0"], "allow_out": ["pypi.org"]})
        try:
            self.assertTrue(s.is_running())
        finally:
            s.kill()

    def test_background_handle_list_kill(self) -> None:
        h = self.sbx.commands.run("echo a; sleep 0.2; echo b; exit 4", background=True)
        self.assertIsInstance(h.pid, int)
        with self.assertRaises(CommandExitException) as cm:
            h.wait()
        self.assertEqual((cm.exception.stdout, cm.exception.exit_code), ("a\nb\n", 4))

        h = self.sbx.commands.run("sleep 60", background=True, tag="py-sleep")
        procs = self.sbx.commands.list()
        mine = [p for p in procs if p.pid == h.pid]
        self.assertEqual(len(mine), 1)
        self.assertIsInstance(mine[0], ProcessInfo)
        self.assertEqual((mine[0].command, mine[0].cwd), ("sleep 60", "/workspace"))
        self.assertTrue(h.kill())
        with self.assertRaises(CommandExitException) as cm:
            h.wait()
        self.assertEqual((cm.exception.exit_code, cm.exception.error), (-1, "signal: killed"))
        self.assertFalse(self.sbx.commands.kill(h.pid))
        self.assertFalse(h.kill())

        r = self.sbx.commands.run("echo ok", background=True).wait()
        self.assertEqual(r, CommandResult(stderr="", stdout="ok\n", exit_code=0, error=None))

    def test_kill_tagged_and_wait_handlers_get_earlier_output(self) -> None:
        h = self.sbx.commands.run("echo early; sleep 60", background=True, tag="py-tagged")
        got: List[str] = []
        deadline = time.monotonic() + 30
        while "early" not in "".join(t for s, t in h._sink.chunks) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.sbx.commands.kill_tagged(["py-tagged"])
        with self.assertRaises(CommandExitException) as cm:
            h.wait(on_stdout=got.append)
        # the engine's kill script SIGKILLs the command: its wrapper exits 137
        self.assertEqual(("".join(got), cm.exception.stdout, cm.exception.exit_code, cm.exception.error),
                         ("early\n", "early\n", 137, "exit status 137"))

    def test_stdin(self) -> None:
        h = self.sbx.commands.run("cat; echo end", background=True, stdin=True)
        h.send_stdin("one ")
        self.sbx.commands.send_stdin(h.pid, b"two\xc3\xa9")
        h.close_stdin()
        self.assertEqual(h.wait().stdout, "one two\u00e9end\n")

    def test_connect_by_pid(self) -> None:
        # Started by another engine child (another process, as far as this one knows): connect
        # streams its output from the attach on and gets its end.
        elsewhere = Sandbox.connect(self.sbx.sandbox_id, log_level="warn", **OPTS)
        self.assertIsNot(elsewhere._client, self.sbx._client)
        h = elsewhere.commands.run("while [ ! -e /tmp/go-conn ]; do echo tick; sleep 0.05; done; echo done; exit 2",
                                   background=True)
        seen = threading.Event()
        got: List[str] = []

        def on(t: str) -> None:
            got.append(t)
            seen.set()

        c = self.sbx.commands.connect(h.pid, on_stdout=on)
        self.assertEqual(c.pid, h.pid)
        self.assertTrue(seen.wait(30))  # attached: now let it end
        self.sbx.files.write("/tmp/go-conn", "")
        with self.assertRaises(CommandExitException) as cm:
            c.wait()
        self.assertEqual(cm.exception.exit_code, 2)
        self.assertRegex(cm.exception.stdout, r"^(tick\n)*done\n$")
        self.assertEqual("".join(got), cm.exception.stdout)
        with self.assertRaises(CommandExitException) as cm:
            h.wait()
        self.assertRegex(cm.exception.stdout, r"^(tick\n)+done\n$")

        # connect returns once the attach is live: output right after it is delivered
        h = elsewhere.commands.run("while [ ! -e /tmp/go-live ]; do sleep 0.02; done; echo live", background=True)
        c = self.sbx.commands.connect(h.pid)
        self.sbx.files.write("/tmp/go-live", "")
        self.assertEqual(c.wait().stdout, "live\n")
        self.assertEqual(h.wait().stdout, "live\n")

        # a command that is no longer running: E2B's NotFoundException
        with self.assertRaises(NotFoundException):
            self.sbx.commands.connect(h.pid)

    def test_files(self) -> None:
        f = self.sbx.files
        self.assertEqual(f.write("/tmp/py-files/a.txt", "h\u00e9llo"),
                         WriteInfo(name="a.txt", type=FileType.FILE, path="/tmp/py-files/a.txt"))
        self.assertEqual(f.read("/tmp/py-files/a.txt"), "h\u00e9llo")
        self.assertEqual(f.read("/tmp/py-files/a.txt", format="bytes"), bytearray("h\u00e9llo".encode()))
        self.assertEqual(b"".join(f.read("/tmp/py-files/a.txt", format="stream")), "h\u00e9llo".encode())
        f.write("/tmp/py-files/b.bin", b"\xff\x00")
        self.assertEqual(f.read("/tmp/py-files/b.bin", format="bytes"), bytearray(b"\xff\x00"))
        with self.assertRaises(FileNotFoundException):
            f.read("/tmp/py-files/missing")
        with self.assertRaises(InvalidArgumentException):
            f.read("/tmp/py-files")  # a directory
        self.assertEqual(f.read("/tmp/py-files/a.txt", format="bytes", max_bytes=2), bytearray(b"h\xc3"))
        with self.assertRaises(InvalidArgumentException):
            f.read("/tmp/py-files/a.txt", user="root")
        self.assertTrue(f.exists("/tmp/py-files/a.txt"))
        self.assertFalse(f.exists("/tmp/py-files/missing"))

        i = f.get_info("/tmp/py-files/a.txt")
        self.assertIsInstance(i, EntryInfo)
        self.assertEqual((i.name, i.type, i.path, i.size, i.permissions, i.owner, i.group, i.symlink_target),
                         ("a.txt", FileType.FILE, "/tmp/py-files/a.txt", 6, "-rw-r--r--", "sandbox", "sandbox",
                          None))
        self.assertEqual(i.mode & 0o777, 0o644)
        self.assertTrue(aware(i.modified_time))
        with self.assertRaises(FileNotFoundException) as fe:
            f.get_info("/tmp/py-files/missing")
        self.assertIsInstance(fe.exception, NotFoundException)

        self.assertTrue(f.make_dir("/tmp/py-files/d/e"))
        self.assertFalse(f.make_dir("/tmp/py-files/d/e"))
        self.assertEqual([(e.name, e.type) for e in f.list("/tmp/py-files")],
                         [("a.txt", FileType.FILE), ("b.bin", FileType.FILE), ("d", FileType.DIR)])
        self.assertEqual([e.path for e in f.list("/tmp/py-files", depth=3)],
                         ["/tmp/py-files/a.txt", "/tmp/py-files/b.bin", "/tmp/py-files/d", "/tmp/py-files/d/e"])
        with self.assertRaises(FileNotFoundException):
            f.list("/tmp/py-files/missing")

        r = f.rename("/tmp/py-files/b.bin", "/tmp/py-files/d/c.bin")
        self.assertEqual((r.name, r.path, r.size, r.type), ("c.bin", "/tmp/py-files/d/c.bin", 2, FileType.FILE))
        self.assertFalse(f.exists("/tmp/py-files/b.bin"))
        with self.assertRaises(FileNotFoundException):
            f.rename("/tmp/py-files/b.bin", "/tmp/py-files/x")
        self.assertEqual([w.path for w in f.write_files([{"path": "/tmp/py-files/w1", "data": "1"},
                                                          {"path": "/tmp/py-files/w2", "data": b"2"}])],
                         ["/tmp/py-files/w1", "/tmp/py-files/w2"])
        f.remove("/tmp/py-files/d")
        self.assertFalse(f.exists("/tmp/py-files/d/c.bin"))
        f.remove("/tmp/py-files/d")  # missing: no error

        self.sbx.commands.run("mkdir -p /tmp/py-root && chmod 700 /tmp/py-root", user="root")
        self.assertTrue(f.make_dir("/tmp/py-root/sub", user="root"))
        self.assertEqual(f.get_info("/tmp/py-root/sub", user="root").owner, "root")
        self.assertEqual(f.write("/tmp/py-root/r.txt", "as root", user="root"),
                         WriteInfo(name="r.txt", type=FileType.FILE, path="/tmp/py-root/r.txt"))
        self.assertEqual(f.get_info("/tmp/py-root/r.txt", user="root").owner, "root")
        self.assertEqual(self.sbx.commands.run("cat /tmp/py-root/r.txt", user="root").stdout, "as root")
        with self.assertRaises(SandboxException):  # the sandbox user may not write there
            f.write("/tmp/py-root/u.txt", "no")
        with self.assertRaises(InvalidArgumentException):
            f.write_files([{"path": "/tmp/x"}])  # type: ignore[typeddict-item]
        self.assertEqual(f.write_files([]), [])

    def test_list_paginator_and_query(self) -> None:
        other = new()
        try:
            p = Sandbox.list(limit=1, **OPTS)
            ids = []
            while p.has_next:
                page = p.next_items()
                self.assertEqual(len(page), 1)
                ids.append(page[0].sandbox_id)
            self.assertIsNone(p.next_token)
            self.assertEqual(len(set(ids)), len(ids))
            self.assertLess(ids.index(other.sandbox_id), ids.index(self.sbx.sandbox_id))  # newest first
            self.assertEqual(ids[0], other.sandbox_id)
            with self.assertRaises(SandboxException):
                p.next_items()
            asc = Sandbox.list(order="asc", **OPTS).next_items()
            self.assertEqual([i.sandbox_id for i in asc], ids[::-1])
            resumed = Sandbox.list(limit=1, next_token="1", **OPTS).next_items()
            self.assertEqual([i.sandbox_id for i in resumed], ids[1:2])
            self.assertTrue(other.pause())
            paused = Sandbox.list(query=SandboxQuery(state=[SandboxState.PAUSED]), **OPTS).next_items()
            self.assertIn((other.sandbox_id, SandboxState.PAUSED), [(i.sandbox_id, i.state) for i in paused])
            self.assertEqual({i.state for i in paused}, {SandboxState.PAUSED})
            later = Sandbox.list(query=SandboxQuery(started_after=datetime.now(timezone.utc) + timedelta(hours=1)),
                                 **OPTS).next_items()
            self.assertEqual(later, [])
            with self.assertRaises(InvalidArgumentException):
                Sandbox.list(query=SandboxQuery(metadata={"owner": "py-test"}), **OPTS).next_items()
            tpl = Sandbox.list(query=SandboxQuery(template="capybara-sandbox"), **OPTS).next_items()
            self.assertIn(self.sbx.sandbox_id, [i.sandbox_id for i in tpl])
            self.assertEqual(Sandbox.list(query=SandboxQuery(template="other"), **OPTS).next_items(), [])
            with self.assertRaises(InvalidArgumentException):
                Sandbox.list(order="up", **OPTS).next_items()  # type: ignore[arg-type]
        finally:
            other.kill()

    def test_lifecycle_pause_connect_kill(self) -> None:
        born = datetime.now(timezone.utc)
        s = new()
        sid = s.sandbox_id
        s.files.write("/workspace/k", "kept")
        self.assertTrue(s.pause())
        self.assertFalse(s.pause())  # paused already
        self.assertFalse(s.is_running())
        self.assertIs(s.get_info().state, SandboxState.PAUSED)
        again = Sandbox.connect(sid, **OPTS)
        self.assertEqual(again.sandbox_id, sid)
        self.assertTrue(again.is_running())
        self.assertEqual(again.files.read("/workspace/k"), "kept")

        s.set_timeout(1000)
        left = (s.get_info().end_at - datetime.now(timezone.utc)).total_seconds()  # type: ignore[operator]
        self.assertTrue(990 <= left <= 1001, left)
        s.connect(timeout=500)  # only ever extends
        left = (s.get_info().end_at - datetime.now(timezone.utc)).total_seconds()  # type: ignore[operator]
        self.assertTrue(990 <= left <= 1001, left)
        Sandbox.connect(sid, timeout=3000, **OPTS)
        left = (s.get_info().end_at - datetime.now(timezone.utc)).total_seconds()  # type: ignore[operator]
        self.assertTrue(2990 <= left <= 3001, left)
        with self.assertRaises(InvalidArgumentException):
            s.set_timeout(0)

        # From before the create: its sample at create is in range. Not the default start, the
        # resume's: a new run starts there, and its first sample comes from the 5 s sampler
        # (fake-e2b/README.md "Control plane", the metrics row; E2B too answers [] at first).
        m = s.get_metrics(start=born)
        self.assertGreaterEqual(len(m), 1)
        self.assertTrue(all(aware(x.timestamp) and x.cpu_count >= 1 and x.mem_total > 0 for x in m))

        self.assertTrue(Sandbox.kill(sid, **OPTS))
        self.assertFalse(s.kill())
        self.assertFalse(s.is_running())
        with self.assertRaises(SandboxNotFoundException):
            s.get_info()
        with self.assertRaises(SandboxNotFoundException):
            Sandbox.connect(sid, **OPTS)
        with self.assertRaises(SandboxNotFoundException):
            s.commands.run("true")
        with self.assertRaises(TypeError):
            Sandbox.connect(sid, no_such_option=1, **OPTS)
        with self.assertRaises(TypeError):
            s.pause(keep_memory=False)  # not taken: memory is always kept

    def test_pause_during_commands_then_resume(self) -> None:
        """The documented outcome: a command streaming when this process pauses
        the sandbox raises SandboxPausedException; it is frozen, not killed;
        after Sandbox.connect, the handle's wait (or commands.connect(pid) for a
        foreground run) gets the rest of the output and the exit code."""
        s = new()

        def loop(name: str, code: int) -> str:
            return (f"echo {name}-start; while [ ! -e /tmp/go-{name} ]; do echo tick; sleep 0.05; done; "
                    f"echo {name}-end; exit {code}")

        started = {k: threading.Event() for k in ("fg", "bg", "bg-again", "fg-again")}
        resumed = [False]
        fg_out: List[str] = []
        bg_out: List[str] = []

        def on_fg(t: str) -> None:
            fg_out.append(t)
            started["fg"].set()

        def on_bg(t: str) -> None:
            bg_out.append(t)
            started["bg-again" if resumed[0] else "bg"].set()

        fg: Dict[str, BaseException] = {}

        def run_fg() -> None:
            try:
                s.commands.run(loop("fg", 3), on_stdout=on_fg, timeout=0)
            except BaseException as e:
                fg["e"] = e

        t = threading.Thread(target=run_fg)
        t.start()
        h = s.commands.run(loop("bg", 7), background=True, on_stdout=on_bg)
        self.assertTrue(started["fg"].wait(30) and started["bg"].wait(30))
        self.assertTrue(s.pause())
        t.join(60)
        self.assertIsInstance(fg.get("e"), SandboxPausedException)
        self.assertEqual(fg["e"].code, "paused")  # type: ignore[attr-defined]
        with self.assertRaises(SandboxPausedException) as cm:
            h.wait()
        self.assertIn(f"sandbox {s.sandbox_id} was paused while command {h.pid} ran", str(cm.exception))
        self.assertIn("Sandbox.connect", str(cm.exception))
        self.assertNotIn("transfer closed", str(cm.exception))

        Sandbox.connect(s.sandbox_id, **OPTS)
        resumed[0] = True
        bg: Dict[str, Any] = {}

        def wait_bg() -> None:
            try:
                h.wait()
            except BaseException as e:
                bg["e"] = e

        w = threading.Thread(target=wait_bg)
        w.start()
        self.assertTrue(started["bg-again"].wait(30))  # attached anew: let it end
        s.files.write("/tmp/go-bg", "")
        w.join(60)
        e = bg["e"]
        self.assertIsInstance(e, CommandExitException)
        self.assertEqual(e.exit_code, 7)
        self.assertRegex(e.stdout, r"^bg-start\n(tick\n)*bg-end\n$")

        mine = [p for p in s.commands.list() if p.command and "go-fg" in p.command]
        self.assertEqual(len(mine), 1)
        got: List[str] = []

        def on_again(t: str) -> None:
            got.append(t)
            started["fg-again"].set()

        c = s.commands.connect(mine[0].pid, on_stdout=on_again)
        self.assertTrue(started["fg-again"].wait(30))
        s.files.write("/tmp/go-fg", "")
        with self.assertRaises(CommandExitException) as cm2:
            c.wait()
        self.assertEqual(cm2.exception.exit_code, 3)
        self.assertRegex(cm2.exception.stdout, r"^(tick\n)+fg-end\n$")
        s.kill()

    def test_pty(self) -> None:
        pty = self.sbx.pty
        h = pty.create(PtySize(rows=24, cols=80), envs={"PV": "x"})
        self.assertIsInstance(h.pid, int)
        pty.resize(h.pid, PtySize(rows=30, cols=100))
        pty.send_stdin(h.pid, b"stty size; echo hi-$((1+2))-$PV; exit 3\n")
        got: List[bytes] = []
        with self.assertRaises(CommandExitException) as cm:
            h.wait(on_pty=got.append)
        out = b"".join(got)
        self.assertEqual((cm.exception.exit_code, cm.exception.error), (3, "exit status 3"))
        self.assertIn(b"30 100\r\n", out)
        self.assertIn(b"hi-3-x\r\n", out)

        h = pty.create(PtySize(rows=24, cols=80), timeout=0)
        self.assertTrue(h.kill())
        with self.assertRaises(CommandExitException) as cm:
            h.wait()
        self.assertEqual((cm.exception.exit_code, cm.exception.error), (-1, "signal: killed"))
        self.assertFalse(pty.kill(h.pid))  # no longer held
        with self.assertRaises(InvalidArgumentException):
            pty.create(PtySize(rows=0, cols=80))

        h = pty.create(PtySize(rows=24, cols=80))
        pty.send_stdin(h.pid, "echo iter-ok; exit\n")
        chunks = [p for _, _, p in h if p]
        self.assertIn(b"iter-ok\r\n", b"".join(chunks))
        self.assertEqual(h.wait().exit_code, 0)

    def test_watch_dir(self) -> None:
        f = self.sbx.files
        f.make_dir("/workspace/py-watch/sub")
        w = f.watch_dir("/workspace/py-watch", recursive=True)
        f.make_dir("/workspace/py-watch/new")  # right after watch_dir returned: seen
        f.make_dir("/workspace/py-watch/sub/deep")
        got: List[FilesystemEvent] = []
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            got += w.get_new_events()
            time.sleep(0.02)
        self.assertEqual(got, [FilesystemEvent(name="new", type=FilesystemEventType.CREATE),
                               FilesystemEvent(name="sub/deep", type=FilesystemEventType.CREATE)])
        self.assertEqual(w.get_new_events(), [])
        w.stop()
        with self.assertRaises(SandboxException):
            w.get_new_events()
        with self.assertRaises(FileNotFoundException):
            f.watch_dir("/workspace/py-watch/missing")

    def test_watch_dir_error_is_mapped_from_data_not_message(self) -> None:
        # the names hold the other reasons' messages: a mapping by text would pick the wrong class
        odd = "/workspace/no such directory"
        self.sbx.commands.run(f"touch '{odd}'; mkdir -m 700 '/tmp/no such directory'", user="root")
        with self.assertRaises(SandboxException) as cm:
            self.sbx.files.watch_dir(odd)
        self.assertIs(type(cm.exception), SandboxException)
        self.assertEqual(str(cm.exception), f"watch {odd}: cannot watch {odd}: not a directory")
        with self.assertRaises(SandboxException) as cm:
            self.sbx.files.watch_dir("/tmp/no such directory")
        self.assertIs(type(cm.exception), SandboxException)
        self.assertEqual(str(cm.exception), "watch /tmp/no such directory: cannot watch /tmp/no such directory: "
                                            "permission denied for /tmp/no such directory")
        with self.assertRaises(FileNotFoundException) as cm:
            self.sbx.files.watch_dir("/workspace/not a directory")
        self.assertEqual(str(cm.exception), "/workspace/not a directory: no such directory")
        self.sbx.commands.run(f"rm -rf '{odd}' '/tmp/no such directory'", user="root")

    def test_sync_handler_returning_a_coroutine_is_an_error(self) -> None:
        async def coro(t: str) -> None:
            pass

        with self.assertRaises(TypeError) as cm:
            self.sbx.commands.run("echo x", on_stdout=coro)
        self.assertIn("AsyncSandbox", str(cm.exception))
        # a background command's handler too (its sink calls the same check), raised by wait
        with self.assertRaises(TypeError) as cm:
            self.sbx.commands.run("echo x", background=True, on_stdout=coro).wait()
        self.assertIn("AsyncSandbox", str(cm.exception))

    def test_a_handler_that_raises(self) -> None:
        def boom(t: str) -> None:
            raise ValueError("boom")

        with self.assertRaises(ValueError):
            self.sbx.commands.run("echo x", on_stdout=boom)
        with self.assertRaises(ValueError):
            self.sbx.commands.run("echo x", background=True, on_stdout=boom).wait()

    def test_invalid_create_options(self) -> None:
        with self.assertRaises(InvalidArgumentException):
            Sandbox.create("capybara-sandbox", timeout=0, **OPTS)
        with self.assertRaises(InvalidArgumentException):
            Sandbox.create("capybara-sandbox", network={"deny_out": ["10.0.0.0/8"]}, **OPTS)
        with self.assertRaises(InvalidArgumentException):
            Sandbox.create("capybara-sandbox", network={"deny_out": ["0.0.0.0/0"], "rules": {}}, **OPTS)
        with self.assertRaises(InvalidArgumentException):
            Sandbox.create("capybara-sandbox", lifecycle={"on_timeout": "kill"}, **OPTS)
        with self.assertRaises(InvalidArgumentException):
            Sandbox.create("capybara-sandbox", allow_internet_access=True, **OPTS)  # allowOpenEgress is off
        with self.assertRaises(InvalidArgumentException):
            Sandbox.create("capybara-sandbox", metadata={"capybara-sandbox-name": "x"}, **OPTS)


class AsyncSandboxTest(unittest.TestCase):
    def test_async_calls_and_handlers_awaited(self) -> None:
        async def main() -> None:
            s = await AsyncSandbox.create("capybara-sandbox", limits=SMALL, **OPTS)
            try:
                self.assertTrue(await s.is_running())
                seen: List[str] = []
                order: List[str] = []

                async def slow(t: str) -> None:
                    order.append("start " + t)
                    await asyncio.sleep(0.05)
                    seen.append(t)
                    order.append("end " + t)

                r = await s.commands.run("echo 1; sleep 0.2; echo 2; sleep 0.2; echo 3", on_stdout=slow)
                self.assertEqual(r, CommandResult(stderr="", stdout="1\n2\n3\n", exit_code=0, error=None))
                self.assertEqual("".join(seen), "1\n2\n3\n")  # every chunk handled before run returned
                self.assertEqual(order, [x for t in seen for x in ("start " + t, "end " + t)])  # one at a time

                with self.assertRaises(CommandExitException) as cm:
                    await s.commands.run("echo no >&2; exit 9")
                self.assertEqual((cm.exception.stderr, cm.exception.exit_code), ("no\n", 9))

                bg_seen: List[str] = []

                async def on_bg(t: str) -> None:
                    await asyncio.sleep(0.01)
                    bg_seen.append(t)

                h = await s.commands.run("echo a; sleep 0.2; echo b", background=True, on_stdout=on_bg)
                self.assertIsNone(h.exit_code)
                r = await h.wait()
                self.assertEqual((r.stdout, "".join(bg_seen), h.exit_code, h.stdout), ("a\nb\n", "a\nb\n", 0, "a\nb\n"))

                h = await s.commands.run("sleep 60", background=True)
                self.assertTrue(await h.kill())
                with self.assertRaises(CommandExitException) as cm:
                    await h.wait()
                self.assertEqual((cm.exception.exit_code, h.exit_code, h.error), (-1, -1, "signal: killed"))

                task = asyncio.ensure_future(s.commands.run("sleep 300; echo never", tag="py-cancel"))
                while not [p for p in await s.commands.list() if p.command == "sleep 300; echo never"]:
                    await asyncio.sleep(0.05)
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                self.assertEqual([p for p in await s.commands.list() if p.command == "sleep 300; echo never"], [])

                w = await s.files.write("/tmp/as/x", "data")
                self.assertEqual(w.path, "/tmp/as/x")
                self.assertEqual(await s.files.read("/tmp/as/x"), "data")
                self.assertEqual([c async for c in await s.files.read("/tmp/as/x", format="stream")], [b"data"])
                self.assertEqual([e.name for e in await s.files.list("/tmp/as")], ["x"])
                self.assertTrue(await s.files.exists("/tmp/as/x"))
                with self.assertRaises(FileNotFoundException):
                    await s.files.get_info("/tmp/as/y")

                p = AsyncSandbox.list(**OPTS)
                items = await p.next_items()
                self.assertIn(s.sandbox_id, [i.sandbox_id for i in items])
                self.assertFalse(p.has_next)
                self.assertIs((await s.get_info()).state, SandboxState.RUNNING)
                self.assertTrue(await s.pause())
                self.assertFalse(await AsyncSandbox.pause(s.sandbox_id, **OPTS))
                s2 = await AsyncSandbox.connect(s.sandbox_id, **OPTS)
                self.assertTrue(await s2.is_running())
            finally:
                self.assertTrue(await s.kill())
            self.assertFalse(await AsyncSandbox.kill(s.sandbox_id, **OPTS))
            with self.assertRaises(SandboxNotFoundException):
                await AsyncSandbox.connect(s.sandbox_id, **OPTS)

        asyncio.run(main())

    def test_async_pty(self) -> None:
        async def main() -> None:
            s = await AsyncSandbox.create("capybara-sandbox", limits=SMALL, **OPTS)
            got: List[bytes] = []
            seen = asyncio.Event()

            async def on_data(b: bytes) -> None:
                await asyncio.sleep(0.01)
                got.append(b)
                if b"ready-7" in b"".join(got):
                    seen.set()

            h = await s.pty.create(PtySize(rows=24, cols=80), on_data=on_data)
            await s.pty.send_stdin(h.pid, b"echo ready-$((3+4))\n")
            await asyncio.wait_for(seen.wait(), 30)
            await s.pty.send_stdin(h.pid, b"exit 5\n")
            with self.assertRaises(CommandExitException) as cm:
                await h.wait()
            self.assertEqual(cm.exception.exit_code, 5)
            self.assertIn(b"ready-7\r\n", b"".join(got))
            await s.kill()

        asyncio.run(main())

    def test_async_watch_dir(self) -> None:
        async def main() -> None:
            s = await AsyncSandbox.create("capybara-sandbox", limits=SMALL, **OPTS)
            await s.files.make_dir("/workspace/aw")
            got: List[FilesystemEvent] = []
            exits: List[Any] = []
            seen = asyncio.Event()

            async def on_event(e: FilesystemEvent) -> None:
                await asyncio.sleep(0.01)
                got.append(e)
                seen.set()

            elsewhere = await AsyncSandbox.connect(s.sandbox_id, log_level="warn", **OPTS)
            h = await elsewhere.commands.run("while [ ! -e /tmp/go-alive ]; do sleep 0.02; done; echo alive",
                                             background=True)
            c = await s.commands.connect(h.pid)  # live when it returns
            await s.files.write("/tmp/go-alive", "")
            self.assertEqual((await c.wait()).stdout, "alive\n")

            w = await s.files.watch_dir("/workspace/aw", on_event, on_exit=exits.append, timeout=0)
            await s.files.make_dir("/workspace/aw/x")
            await asyncio.wait_for(seen.wait(), 30)
            await w.stop()
            self.assertEqual(got, [FilesystemEvent(name="x", type=FilesystemEventType.CREATE)])
            self.assertEqual(exits, [None])
            with self.assertRaises(FileNotFoundException):
                await s.files.watch_dir("/workspace/nope", on_event)
            await s.kill()

        asyncio.run(main())

    def test_two_event_loops_share_the_engine(self) -> None:
        async def make() -> str:
            s = await AsyncSandbox.create("capybara-sandbox", limits=SMALL, **OPTS)
            return s.sandbox_id

        async def use(sid: str) -> str:
            s = await AsyncSandbox.connect(sid, **OPTS)
            out = (await s.commands.run("echo again")).stdout
            await s.kill()
            return out

        sid = asyncio.run(make())
        self.assertEqual(asyncio.run(use(sid)), "again\n")

    def test_async_pause_during_a_background_command(self) -> None:
        async def main() -> None:
            s = await AsyncSandbox.create("capybara-sandbox", limits=SMALL, **OPTS)
            first, again = asyncio.Event(), asyncio.Event()
            resumed = [False]

            async def on(t: str) -> None:
                (again if resumed[0] else first).set()

            h = await s.commands.run("echo s; while [ ! -e /tmp/go ]; do echo tick; sleep 0.05; done; echo end",
                                     background=True, on_stdout=on)
            await asyncio.wait_for(first.wait(), 30)
            await s.pause()
            with self.assertRaises(SandboxPausedException):
                await h.wait()
            await AsyncSandbox.connect(s.sandbox_id, **OPTS)
            resumed[0] = True
            w = asyncio.ensure_future(h.wait())
            await asyncio.wait_for(again.wait(), 30)
            await s.files.write("/tmp/go", "")
            r = await w
            self.assertEqual(r.exit_code, 0)
            self.assertRegex(r.stdout, r"^s\n(tick\n)*end\n$")
            await s.kill()

        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()
