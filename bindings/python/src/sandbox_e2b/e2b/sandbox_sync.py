"""``Sandbox``: E2B's sync Python shape (``from e2b import Sandbox``) over the
sandbox-e2b engine. Names, parameters, results and exceptions are those of
e2b-dev/E2B ``packages/python-sdk/e2b/sandbox_sync``; what differs is in
bindings/MIGRATING.md ("Python")."""
from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Tuple, Union, overload

from .. import _protocol as proto
from ..client import CancelToken, Client
from ..types import Limits
from . import _ops as ops
from . import exceptions as ex
from ._types import (ApiParams, EntryInfo, FilesystemEvent, OutputHandler, ProcessInfo, PtySize, SandboxInfo, SandboxListOrder,
                     SandboxMetrics, SandboxQuery, Username, WriteEntry, WriteInfo)
from ._base import PaginatorBase, SandboxBase, SandboxPart, check_read_format, read_as
from ._variant import class_method_variant

__all__ = ["Sandbox", "Commands", "CommandHandle", "Filesystem", "Pty", "SandboxPaginator", "WatchHandle"]

Data = Union[str, bytes, Any]


class _Sink:
    """A background command's output: every chunk kept in arrival order (the
    result's stdout / stderr) and handed to the handlers, on the engine
    reader's thread. A handler that raises is not called again; ``wait``
    raises its exception once the command ended."""

    def __init__(self, on_stdout: Optional[OutputHandler], on_stderr: Optional[OutputHandler],
                 on_pty: Optional[Callable[[bytes], Any]] = None) -> None:
        self.lock = threading.Condition()
        self.chunks: List[Tuple[str, Any]] = []
        self.handlers: Dict[str, Optional[Callable[[Any], Any]]] = {"stdout": on_stdout, "stderr": on_stderr,
                                                                    "pty": on_pty}
        self.error: Optional[BaseException] = None

    def _call(self, stream: str, text: Any) -> None:
        h = self.handlers[stream]
        if h is None or self.error is not None:
            return
        try:
            ops.sync_handler(h, stream)(text)  # an awaitable back is a TypeError
        except Exception as e:
            self.error = e

    def _add(self, stream: str, text: Any) -> None:
        with self.lock:
            self.chunks.append((stream, text))
            self.lock.notify_all()
            self._call(stream, text)

    def stdout(self, text: str) -> None:
        self._add("stdout", text)

    def stderr(self, text: str) -> None:
        self._add("stderr", text)

    def pty(self, data: bytes) -> None:
        self._add("pty", data)

    def take_handlers(self, on_stdout: Optional[OutputHandler], on_stderr: Optional[OutputHandler],
                      on_pty: Optional[Callable[[bytes], Any]] = None) -> None:
        """Handlers given to ``wait``: they get the output so far, then the rest."""
        with self.lock:
            new = {"stdout": on_stdout, "stderr": on_stderr, "pty": on_pty}
            for s, h in new.items():
                if h is not None:
                    self.handlers[s] = h
            for s, text in self.chunks:
                if new[s] is not None:
                    self._call(s, text)

    def text(self, stream: str) -> str:
        with self.lock:
            return "".join(t for s, t in self.chunks if s == stream)


class CommandHandle:
    """A background command (E2B's ``CommandHandle``): ``pid``, ``wait()``,
    ``kill()``, ``send_stdin()``, ``close_stdin()``, ``disconnect()``. Its end
    is awaited from the moment it is made, so no output is lost before
    ``wait``. A pause of the sandbox makes ``wait`` raise
    ``SandboxPausedException``; after a resume, ``wait`` again attaches anew
    and gets the rest of the output and the exit code."""

    def __init__(self, commands: Any, process: Any, sink: _Sink, timeout: Optional[float]) -> None:
        self._commands = commands
        self._process = process
        self._sink = sink
        self._timeout = timeout
        self._lock = threading.Lock()
        self._waiter: Optional[threading.Thread] = None
        self._token: Optional[CancelToken] = None
        self._outcome: Optional[Tuple[bool, Any]] = None
        self._result: Optional[ex.CommandResult] = None
        self._start_waiter()

    @property
    def pid(self) -> int:
        """The command's process id."""
        return self._process.pid

    def _start_waiter(self) -> None:
        token = CancelToken()
        done: List[Tuple[bool, Any]] = []

        def run() -> None:
            try:
                done.append((True, ops.wait(self._process, cancel=token)))
            except BaseException as e:  # kept for wait()
                done.append((False, e))
            with self._lock:
                self._outcome = done[0]
            with self._sink.lock:
                self._sink.lock.notify_all()

        t = threading.Thread(target=run, name=f"sandbox-e2b-wait-{self.pid}", daemon=True)
        with self._lock:
            self._waiter, self._token, self._outcome = t, token, None
        t.start()
        if self._timeout:
            timer = threading.Timer(self._timeout, token.cancel)
            timer.daemon = True
            timer.start()

    def wait(self, on_pty: Optional[Callable[[bytes], None]] = None, on_stdout: Optional[OutputHandler] = None,
             on_stderr: Optional[OutputHandler] = None) -> ex.CommandResult:
        """The result once the command ended: ``CommandExitException`` for a
        non-zero exit (``exit_code`` -1, ``error`` ``"signal: killed"`` after
        ``kill``), ``TimeoutException`` when it ran past its timeout,
        ``SandboxPausedException`` when the sandbox was paused meanwhile.
        ``on_stdout`` / ``on_stderr`` (``on_pty`` for a terminal: bytes) get
        the output so far, then the rest (on the engine reader's thread)."""
        if self._result is not None:
            return self._result
        self._sink.take_handlers(on_stdout, on_stderr, on_pty)
        with self._lock:
            again = self._outcome is not None and not self._outcome[0] and isinstance(
                self._outcome[1], ex.SandboxPausedException)
        if again:  # the last wait ended in a pause: attach anew once resumed
            if self._process.id in ops._paused:
                raise self._outcome[1]  # type: ignore[index]
            self._start_waiter()
        waiter = self._waiter
        assert waiter is not None
        while waiter.is_alive():
            waiter.join(0.5)
        with self._lock:
            assert self._outcome is not None
            ok, value = self._outcome
        if not ok:
            raise value
        if self._sink.error is not None:
            raise self._sink.error
        self._result = ops.outcome(value, *ops.texts(value, self._sink), self._timeout, self.pid)
        return self._result

    def __iter__(self) -> Iterator[Tuple[Optional[str], Optional[str], Optional[bytes]]]:
        """Its output as E2B's ``(stdout, stderr, pty)`` tuples, in arrival order
        (from its start, or from ``connect``), until it ends; an error that ended
        the wait (``SandboxPausedException``, ...) is raised."""
        i = 0
        while True:
            with self._sink.lock:
                while i >= len(self._sink.chunks) and self._outcome_now() is None:
                    self._sink.lock.wait(0.5)
                batch = self._sink.chunks[i:]
                i += len(batch)
                end = self._outcome_now() if not batch else None
            for stream, text in batch:
                if stream == "pty":
                    yield None, None, text
                else:
                    yield (text, None, None) if stream == "stdout" else (None, text, None)
            if end is not None:
                if not end[0]:
                    raise end[1]
                return

    def _outcome_now(self) -> Optional[Tuple[bool, Any]]:
        with self._lock:
            return self._outcome

    def kill(self) -> bool:
        """Kill the command and its whole process tree; False when it was not running."""
        return self._commands.kill(self.pid)

    def send_stdin(self, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        """Write to its stdin (it was started with ``stdin=True``; a terminal: typed into it)."""
        self._commands.send_stdin(self.pid, data)

    def close_stdin(self, request_timeout: Optional[float] = None) -> None:
        """Close its stdin (EOF)."""
        self._commands.close_stdin(self.pid)

    def disconnect(self) -> None:
        """Stop receiving its output and end; the command goes on
        (``commands.connect(pid)`` attaches again)."""
        with self._lock:
            token = self._token
        if token is not None:
            token.cancel()
        self._sink.handlers = {"stdout": None, "stderr": None}


class Commands(SandboxPart):
    """``sbx.commands`` (E2B's ``Commands``)."""

    def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        """The sandbox's running commands."""
        return ops.ps(self._c, self._sbx.sandbox_id)

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """Kill a command and its whole process tree; False when no command has that pid."""
        return ops.kill_process(self._c, self._sbx.sandbox_id, pid)

    def send_stdin(self, pid: int, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        """Write to the stdin of a command started with ``stdin=True`` by this process."""
        ops.send_stdin(self._c, self._sbx.sandbox_id, pid, data)

    def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        ops.close_stdin(self._c, self._sbx.sandbox_id, pid)

    def kill_tagged(self, tags: List[str]) -> None:
        """Ours: kill every command started with one of these ``tag``\\ s (and their trees)."""
        ops.kill_tagged(self._c, self._sbx.sandbox_id, list(tags))

    def kill_all(self) -> None:
        """Ours: kill every command of the sandbox."""
        ops.kill_all(self._c, self._sbx.sandbox_id)

    @overload
    def run(self, cmd: str, background: Union[Literal[False], None] = None, envs: Optional[Dict[str, str]] = None,
            user: Optional[Username] = None, cwd: Optional[str] = None,
            on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
            stdin: Optional[bool] = None, timeout: Optional[float] = 60, request_timeout: Optional[float] = None,
            *, max_output_bytes: Optional[int] = None, tag: Optional[str] = None) -> ex.CommandResult: ...

    @overload
    def run(self, cmd: str, background: Literal[True], envs: Optional[Dict[str, str]] = None,
            user: Optional[Username] = None, cwd: Optional[str] = None,
            on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
            stdin: Optional[bool] = None, timeout: Optional[float] = 60, request_timeout: Optional[float] = None,
            *, max_output_bytes: Optional[int] = None, tag: Optional[str] = None) -> CommandHandle: ...

    def run(self, cmd: str, background: Optional[bool] = None, envs: Optional[Dict[str, str]] = None,
            user: Optional[Username] = None, cwd: Optional[str] = None,
            on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
            stdin: Optional[bool] = None, timeout: Optional[float] = 60, request_timeout: Optional[float] = None,
            *, max_output_bytes: Optional[int] = None,
            tag: Optional[str] = None) -> Union[ex.CommandResult, CommandHandle]:
        """Run ``cmd`` with bash as ``user`` (E2B's ``commands.run``). Foreground:
        the result, ``CommandExitException`` on a non-zero exit,
        ``TimeoutException`` past ``timeout`` seconds (0: none; the process
        tree is killed). ``background=True``: a ``CommandHandle``. Output
        handlers are called on the engine reader's thread, in order, before
        ``run`` / ``wait`` return. Ours: ``max_output_bytes`` (default 64 MiB per
        stream, cut at a UTF-8 boundary, ``result.truncated``), ``tag``
        (``kill_tagged``)."""
        sid = self._sbx.sandbox_id
        if background or stdin:
            sink = _Sink(on_stdout, on_stderr)
            params = ops.exec_params(sid, cmd, envs, user, cwd, timeout, max_output_bytes, tag, True)
            handle = CommandHandle(self, ops.start(self._c, sid, params, bool(stdin), sink), sink, None)
            return handle if background else handle.wait()
        router = proto.OutputRouter(ops.sync_handler(on_stdout, "stdout"), ops.sync_handler(on_stderr, "stderr"))
        params = ops.exec_params(sid, cmd, envs, user, cwd, timeout, max_output_bytes, tag, router.wanted)
        r = ops.run(self._c, sid, params, router, timeout)
        if router.error is not None:
            raise router.error
        return ops.outcome(r, r.stdout, r.stderr, timeout, None)

    def connect(self, pid: int, timeout: Optional[float] = 60, request_timeout: Optional[float] = None,
                on_stdout: Optional[OutputHandler] = None,
                on_stderr: Optional[OutputHandler] = None) -> CommandHandle:
        """Attach to a running command by pid (E2B's ``commands.connect``): its
        output from now on (returns once the attach is live) and its end. ``timeout`` (seconds, 0: none) bounds
        the wait (then ``TimeoutException``; the command goes on)."""
        sink = _Sink(on_stdout, on_stderr)
        live = threading.Event()
        p, tells = ops.attach(self._c, self._sbx.sandbox_id, pid, sink, live.set)
        h = CommandHandle(self, p, sink, timeout or None)
        while tells and not live.wait(0.05):  # returns once the attach is live (or the wait ended)
            if h._outcome_now() is not None:
                break
        return h


class Pty(SandboxPart):
    """``sbx.pty`` (E2B's ``Pty``): terminals over serve's ``pty_*`` calls
    (docs/pty.md). A terminal's handle is a ``CommandHandle``: ``wait(on_pty=)``
    gets its output as bytes, ``kill()``, ``send_stdin()`` types into it."""

    def create(self, size: PtySize, user: Optional[Username] = None, cwd: Optional[str] = None,
               envs: Optional[Dict[str, str]] = None, timeout: Optional[float] = 60,
               request_timeout: Optional[float] = None) -> CommandHandle:
        """A login shell (``bash -i -l``) on a terminal of ``size``; ``timeout``
        seconds (0: none) bound it. Its output from the start goes to ``wait(on_pty=)``."""
        sink = _Sink(None, None)
        p = ops.pty_start(self._c, self._sbx.sandbox_id, size, user, cwd, envs, timeout, sink)
        return CommandHandle(self, p, sink, None)

    def connect(self, pid: int, timeout: Optional[float] = 60, request_timeout: Optional[float] = None) -> CommandHandle:
        """Follow a running terminal by pid (output from now on); ``timeout`` bounds the wait."""
        sink = _Sink(None, None)
        p = ops.pty_attach(self._c, self._sbx.sandbox_id, pid, sink)
        return CommandHandle(self, p, sink, timeout or None)

    def send_stdin(self, pid: int, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        """Type into the terminal (``b"\\x03"`` is Ctrl-C)."""
        ops.pty_input(self._c, self._sbx.sandbox_id, pid, data)

    def resize(self, pid: int, size: PtySize, request_timeout: Optional[float] = None) -> None:
        ops.pty_resize(self._c, self._sbx.sandbox_id, pid, size)

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """SIGKILL the terminal's process; False when this process holds no terminal with that pid."""
        return ops.pty_kill(self._c, self._sbx.sandbox_id, pid)

    def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        raise ex.InvalidArgumentException("a terminal has no stdin to close: send b\"\\x04\" (Ctrl-D)")


class WatchHandle:
    """A watched directory (E2B's ``WatchHandle``): ``get_new_events()`` and ``stop()``."""

    def __init__(self, client: Client, params: Dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self._events: List[FilesystemEvent] = []
        self._started = threading.Event()
        self._token = CancelToken()
        self._error: Optional[BaseException] = None
        self._closed = False
        notify = ops.watch_notify(self._started.set, self._add)

        def run() -> None:
            try:
                ops.watch(client, params, notify, cancel=self._token)
            except BaseException as e:  # given by get_new_events
                self._error = e
            self._started.set()

        if not ops.advertises(client, "watch_started"):  # an engine that does not tell
            self._started.set()
        self._thread = threading.Thread(target=run, name="sandbox-e2b-watch", daemon=True)
        self._thread.start()
        while not self._started.wait(0.5):
            pass
        if self._error is not None:
            raise self._error

    def _add(self, e: FilesystemEvent) -> None:
        with self._lock:
            self._events.append(e)

    def get_new_events(self, request_timeout: Optional[float] = None) -> List[FilesystemEvent]:
        """The events since the last call (or the start), in order. The watch's end
        (the sandbox paused or gone) is raised once its events were taken."""
        if self._closed:
            raise ex.SandboxException("The watcher is already stopped")
        with self._lock:
            events, self._events = self._events, []
        if not events and self._error is not None:
            raise self._error
        return events

    def stop(self, request_timeout: Optional[float] = None) -> None:
        """Stop watching; the events not taken yet are dropped."""
        self._closed = True
        self._token.cancel()
        while self._thread.is_alive():
            self._thread.join(0.5)


class Filesystem(SandboxPart):
    """``sbx.files`` (E2B's ``Filesystem``). Paths are absolute or relative to the user's home."""

    @overload
    def read(self, path: str, format: Literal["text"] = "text", user: Optional[Username] = None,
             request_timeout: Optional[float] = None, *, max_bytes: Optional[int] = None) -> str: ...

    @overload
    def read(self, path: str, format: Literal["bytes"], user: Optional[Username] = None,
             request_timeout: Optional[float] = None, *, max_bytes: Optional[int] = None) -> bytearray: ...

    @overload
    def read(self, path: str, format: Literal["stream"], user: Optional[Username] = None,
             request_timeout: Optional[float] = None, *, max_bytes: Optional[int] = None) -> Any: ...

    def read(self, path: str, format: Literal["text", "bytes", "stream"] = "text", user: Optional[Username] = None,
             request_timeout: Optional[float] = None, *, max_bytes: Optional[int] = None) -> Any:
        """The file's content: text (UTF-8, invalid bytes as U+FFFD), ``bytearray``
        or an iterator of ``bytes`` (``"stream"``: read whole first).
        ``FileNotFoundException`` when missing or a directory; a file longer than
        ``max_bytes`` (ours, default 64 MiB) raises rather than come back cut; an explicit
        ``max_bytes`` gives the first bytes. A directory: ``InvalidArgumentException``."""
        check_read_format(format)
        data = ops.read(self._c, self._sbx.sandbox_id, path, user, max_bytes)
        if format != "stream":
            return read_as(data, format)
        return iter([data] if data else [])

    def write(self, path: str, data: Data, user: Optional[Username] = None,
              request_timeout: Optional[float] = None) -> WriteInfo:
        """Write ``data`` (str as UTF-8, bytes, or a file object) to ``path`` as
        ``user``, parent directories made."""
        return ops.write(self._c, self._sbx.sandbox_id, path, data, user)

    def write_files(self, files: List[WriteEntry], user: Optional[Username] = None,
                    request_timeout: Optional[float] = None) -> List[WriteInfo]:
        """Write several files in one upload, in order (the first failure is raised;
        the files before it stay written)."""
        return ops.write_many(self._c, self._sbx.sandbox_id, list(files), user)

    def list(self, path: str, depth: Optional[int] = 1, user: Optional[Username] = None,
             request_timeout: Optional[float] = None) -> List[EntryInfo]:
        """The entries of a directory, ``depth`` levels down; ``FileNotFoundException`` when missing."""
        return list(ops.walk(self._c, self._sbx.sandbox_id, path, depth, user))

    def exists(self, path: str, user: Optional[Username] = None, request_timeout: Optional[float] = None) -> bool:
        return ops.path_info(self._c, self._sbx.sandbox_id, path, user) is not None

    def get_info(self, path: str, user: Optional[Username] = None,
                 request_timeout: Optional[float] = None) -> EntryInfo:
        """``path``'s entry (not following a symlink); ``FileNotFoundException`` when missing."""
        return ops.get_info(self._c, self._sbx.sandbox_id, path, user)

    def remove(self, path: str, user: Optional[Username] = None, request_timeout: Optional[float] = None) -> None:
        """Remove a file or a directory tree; a missing path is no error."""
        ops.remove(self._c, self._sbx.sandbox_id, path, user)

    def rename(self, old_path: str, new_path: str, user: Optional[Username] = None,
               request_timeout: Optional[float] = None) -> EntryInfo:
        """Move ``old_path`` to ``new_path``; the new entry. ``FileNotFoundException`` when missing."""
        return ops.rename(self._c, self._sbx.sandbox_id, old_path, new_path, user)

    def make_dir(self, path: str, user: Optional[Username] = None, request_timeout: Optional[float] = None) -> bool:
        """Make a directory and its parents; False when one was there."""
        return ops.make_dir(self._c, self._sbx.sandbox_id, path, user)

    def watch_dir(self, path: str, user: Optional[Username] = None, request_timeout: Optional[float] = None,
                  recursive: bool = False) -> WatchHandle:
        """Watch a directory (``recursive``: and below); returns once envd watches,
        so every change after it is reported. ``FileNotFoundException`` when it is
        no directory."""
        return WatchHandle(self._c, ops.watch_params(self._sbx.sandbox_id, path, recursive, user))


class SandboxPaginator(PaginatorBase):
    """E2B's ``SandboxPaginator``: ``has_next``, ``next_token``, ``next_items()``.
    The engine fetches the whole list (every E2B page) on the first
    ``next_items`` and pages it by ``limit`` (default 100)."""

    def next_items(self) -> List[SandboxInfo]:
        self._check_next()
        if self._pages.items is None:
            self._pages.items = ops.list_all(self._client, self.query, self.order)
        return self._pages.take()


class Sandbox(SandboxBase):
    """An E2B sandbox (E2B's ``Sandbox``): make one with ``Sandbox.create()``,
    reach one by id with ``Sandbox.connect(sandbox_id)``."""

    _Commands, _Filesystem, _Pty = Commands, Filesystem, Pty

    @property
    def commands(self) -> Commands:
        return self._commands

    @property
    def files(self) -> Filesystem:
        return self._filesystem

    @property
    def pty(self) -> Pty:
        return self._pty

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kill()

    @classmethod
    def create(cls, template: Optional[str] = None, timeout: Optional[int] = None,
               metadata: Optional[Dict[str, str]] = None, envs: Optional[Dict[str, str]] = None,
               allow_internet_access: Optional[bool] = None, network: Optional[Dict[str, Any]] = None,
               logger: Optional[logging.Logger] = None, *, limits: Optional[Union[Limits, Dict[str, Any]]] = None,
               **opts: Any) -> "Sandbox":
        """A new sandbox of ``template`` (default: the config's, ``E2B_TEMPLATE``,
        else ``capybara-sandbox``), living ``timeout`` seconds (1..86400; default the
        config's ``timeoutSeconds``), with ``metadata`` and ``envs``. Egress:
        ``allow_internet_access`` True is open (needs ``allowOpenEgress`` in the
        config), False none; ``network={"deny_out": ["0.0.0.0/0"]}`` none, with
        ``"allow_out": [hosts]`` an allowlist (``mcp``, ``iam``, ``lifecycle``,
        ``volume_mounts``: ``InvalidArgumentException``);
        default the engine's: none. Ours: ``limits``, and ``opts``
        (``ApiParams``: ``api_key``, ``domain``, ``api_url``, ``sandbox_url``,
        ``config``, ``bin``, ``env``, ``log_level``)."""
        if logger is not None:
            opts["logger"] = logger
        c, sid = ops.create(ApiParams(**opts), template, timeout, metadata, envs, allow_internet_access,
                            network, limits)
        return cls(sandbox_id=sid, client=c)

    @classmethod
    def _cls_connect(cls, sandbox_id: str, timeout: Optional[int] = None, **opts: Any) -> "Sandbox":
        c = cls._client_of(opts)
        ops.connect(c, sandbox_id, timeout)
        return cls(sandbox_id=sandbox_id, client=c)

    @class_method_variant("_cls_connect")
    def connect(self, timeout: Optional[int] = None, **opts: Any) -> "Sandbox":
        """Resume the sandbox when paused (``Sandbox.connect(sandbox_id)`` on the
        class); a ``timeout`` only extends its end. ``SandboxNotFoundException``
        when it is gone."""
        ops.check_opts(opts)
        ops.connect(self._client, self._sandbox_id, timeout)
        return self

    @classmethod
    def list(cls, query: Optional[SandboxQuery] = None, limit: Optional[int] = None,
             next_token: Optional[str] = None, order: Optional[SandboxListOrder] = None,
             **opts: Any) -> SandboxPaginator:
        """The team's sandboxes, running and paused (``query.state`` filters),
        newest first (``order="asc"``: oldest), as E2B's paginator."""
        return SandboxPaginator(cls._client_of(opts), query, limit, next_token, order)

    @classmethod
    def _cls_kill(cls, sandbox_id: str, **opts: Any) -> bool:
        return ops.kill(cls._client_of(opts), sandbox_id)

    @class_method_variant("_cls_kill")
    def kill(self, **opts: Any) -> bool:
        """Kill the sandbox; False when it did not exist."""
        ops.check_opts(opts)
        return ops.kill(self._client, self._sandbox_id)

    @classmethod
    def _cls_pause(cls, sandbox_id: str, **opts: Any) -> bool:
        return ops.pause(cls._client_of(opts), sandbox_id)

    @class_method_variant("_cls_pause")
    def pause(self, **opts: Any) -> bool:
        """Pause it (its processes frozen, memory kept); False when it was paused
        already. Commands streaming meanwhile raise ``SandboxPausedException``."""
        ops.check_opts(opts)
        return ops.pause(self._client, self._sandbox_id)

    @classmethod
    def _cls_set_timeout(cls, sandbox_id: str, timeout: int, **opts: Any) -> None:
        ops.set_timeout(cls._client_of(opts), sandbox_id, timeout)

    @class_method_variant("_cls_set_timeout")
    def set_timeout(self, timeout: int, **opts: Any) -> None:
        """The sandbox ends ``timeout`` seconds (1..86400) from now, sooner or later than before."""
        ops.check_opts(opts)
        ops.set_timeout(self._client, self._sandbox_id, timeout)

    @classmethod
    def _cls_get_info(cls, sandbox_id: str, **opts: Any) -> SandboxInfo:
        return ops.info(cls._client_of(opts), sandbox_id)

    @class_method_variant("_cls_get_info")
    def get_info(self, **opts: Any) -> SandboxInfo:
        ops.check_opts(opts)
        return ops.info(self._client, self._sandbox_id)

    @classmethod
    def _cls_get_metrics(cls, sandbox_id: str, start: Optional[datetime] = None, end: Optional[datetime] = None,
                         **opts: Any) -> List[SandboxMetrics]:
        return ops.get_metrics(cls._client_of(opts), sandbox_id, start, end)

    @class_method_variant("_cls_get_metrics")
    def get_metrics(self, start: Optional[datetime] = None, end: Optional[datetime] = None,
                    **opts: Any) -> List[SandboxMetrics]:
        """CPU, memory and disk samples from ``start`` (default: the sandbox's start) to ``end`` (now)."""
        ops.check_opts(opts)
        return ops.get_metrics(self._client, self._sandbox_id, start, end)

    def is_running(self, request_timeout: Optional[float] = None) -> bool:
        """True while it runs; False when paused or gone."""
        return ops.is_running(self._client, self._sandbox_id)
