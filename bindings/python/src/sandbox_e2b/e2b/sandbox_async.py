"""``AsyncSandbox``: E2B's asyncio Python shape (``from e2b import AsyncSandbox``)
over the sandbox-e2b engine: ``Sandbox``'s steps, each on a thread of its own
so no event loop owns the engine child (one child serves every loop and
``asyncio.run``). Cancelling the task awaiting a call aborts it in the
engine. Output handlers run on the event loop, one chunk at a time in
arrival order; an ``async def`` handler is awaited before the next chunk,
and a call returns only after its handlers saw all the output."""
from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import threading
from datetime import datetime
from typing import Any, Callable, Deque, Dict, List, Literal, Optional, Tuple, TypeVar, Union, overload

from .. import _protocol as proto
from ..client import CancelToken, Process
from ..types import Limits
from . import _ops as ops
from . import exceptions as ex
from ._types import (ApiParams, EntryInfo, FilesystemEvent, OutputHandler, ProcessInfo, PtySize, SandboxInfo, SandboxListOrder,
                     SandboxMetrics, SandboxQuery, Username, WriteEntry, WriteInfo)
from ._base import PaginatorBase, SandboxBase, SandboxPart, check_read_format, read_as
from ._variant import class_method_variant

__all__ = ["AsyncSandbox", "AsyncCommands", "AsyncCommandHandle", "AsyncFilesystem", "AsyncPty",
           "AsyncSandboxPaginator", "AsyncWatchHandle"]

T = TypeVar("T")
Data = Union[str, bytes, Any]


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args, cancel=token)`` on a new thread; cancelling the awaiting task
    cancels the token (the engine aborts the call) and waits for its answer."""
    loop = asyncio.get_running_loop()
    fut: "asyncio.Future[T]" = loop.create_future()
    token = CancelToken()

    def run() -> None:
        try:
            r: Any = fn(*args, cancel=token)
            ok = True
        except BaseException as e:
            r, ok = e, False

        def settle() -> None:
            if not fut.done():
                if ok:
                    fut.set_result(r)
                else:
                    fut.set_exception(r)
        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is closed: nobody waits
            pass

    threading.Thread(target=run, name="sandbox-e2b-call", daemon=True).start()
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        token.cancel()
        if not fut.done():
            try:
                await asyncio.shield(fut)
            except BaseException:
                pass
        raise


class _AsyncSink:
    """Output from the engine reader's thread, moved to the loop in order:
    kept (the result's text) and handed to the handlers one at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_stdout: Optional[OutputHandler],
                 on_stderr: Optional[OutputHandler], on_pty: Optional[Callable[[bytes], Any]] = None) -> None:
        self.loop = loop
        self.handlers: Dict[str, Optional[Callable[[Any], Any]]] = {"stdout": on_stdout, "stderr": on_stderr,
                                                                    "pty": on_pty}
        self.chunks: List[Tuple[str, Any]] = []
        self.queue: Deque[Tuple[str, Any]] = collections.deque()
        self.task: Optional["asyncio.Task[None]"] = None
        self.error: Optional[BaseException] = None

    def _from_thread(self, stream: str, text: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(self._push, stream, text)
        except RuntimeError:  # loop closed
            pass

    def stdout(self, text: str) -> None:
        self._from_thread("stdout", text)

    def stderr(self, text: str) -> None:
        self._from_thread("stderr", text)

    def pty(self, data: bytes) -> None:
        self._from_thread("pty", data)

    def _push(self, stream: str, text: Any) -> None:
        self.chunks.append((stream, text))
        if self.handlers[stream] is None or self.error is not None:
            return
        self.queue.append((stream, text))
        if self.task is None or self.task.done():
            self.task = self.loop.create_task(self._run())

    async def _run(self) -> None:
        while self.queue and self.error is None:
            stream, text = self.queue.popleft()
            h = self.handlers[stream]
            if h is None:
                continue
            try:
                r = h(text)
                if inspect.isawaitable(r):
                    await r
            except Exception as e:  # raised by the call once the command ended
                self.error = e
                self.queue.clear()

    async def drain(self) -> None:
        """Wait until every chunk that reached the loop was handled (call after
        the call's answer, which comes after its output)."""
        await asyncio.sleep(0)
        while self.task is not None and not self.task.done():
            await asyncio.shield(self.task)

    def cancel(self) -> None:
        self.queue.clear()
        if self.task is not None:
            self.task.cancel()

    def text(self, stream: str) -> str:
        return "".join(t for s, t in self.chunks if s == stream)


class AsyncCommandHandle:
    """A background command (E2B's ``AsyncCommandHandle``): ``pid``,
    ``await wait()``, ``kill()``, ``send_stdin()``, ``disconnect()``, and
    ``stdout`` / ``stderr`` / ``exit_code`` / ``error`` so far. A pause makes
    ``wait`` raise ``SandboxPausedException``; after a resume, ``wait`` again
    attaches anew and gets the rest and the exit code."""

    def __init__(self, commands: Any, process: Any, sink: _AsyncSink,
                 timeout: Optional[float]) -> None:
        self._commands = commands
        self._process = process
        self._sink = sink
        self._timeout = timeout
        self._result: Optional[ex.CommandResult] = None
        self._exit: Optional[ex.CommandResult] = None
        self._waiter = self._start_waiter()

    def _start_waiter(self) -> "asyncio.Task[Any]":
        async def waiting() -> Any:
            if self._timeout:
                try:
                    return await asyncio.wait_for(in_thread(ops.wait, self._process), self._timeout)
                except asyncio.TimeoutError:
                    raise ex.TimeoutException(f"stopped waiting for command {self.pid} after "
                                              f"{self._timeout} s (it goes on running)") from None
            return await in_thread(ops.wait, self._process)

        return asyncio.ensure_future(waiting())

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def stdout(self) -> str:
        """The stdout so far."""
        return self._sink.text("stdout")

    @property
    def stderr(self) -> str:
        return self._sink.text("stderr")

    @property
    def exit_code(self) -> Optional[int]:
        """None while it runs."""
        end = self._result or self._exit
        return end.exit_code if end is not None else None

    @property
    def error(self) -> Optional[str]:
        end = self._result or self._exit
        return end.error if end is not None else None

    async def wait(self) -> ex.CommandResult:
        """The result once it ended (``Sandbox``'s ``CommandHandle.wait`` rules),
        after the handlers saw all its output."""
        if self._result is not None:
            return self._result
        if self._exit is not None:
            raise self._exit  # type: ignore[misc]
        if self._waiter.done() and isinstance(self._waiter.exception(), ex.SandboxPausedException):
            if self._process.id in ops._paused:  # not resumed yet
                raise self._waiter.exception()  # type: ignore[misc]
            self._waiter = self._start_waiter()  # attach anew after a resume
        try:
            r = await asyncio.shield(self._waiter)
        finally:
            if self._waiter.done():
                await self._sink.drain()
        if self._sink.error is not None:
            raise self._sink.error
        try:
            self._result = ops.outcome(r, *ops.texts(r, self._sink), None, self.pid)
        except ex.CommandExitException as e:
            self._exit = e
            raise
        return self._result

    async def kill(self) -> bool:
        return await self._commands.kill(self.pid)

    async def send_stdin(self, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        await self._commands.send_stdin(self.pid, data)

    async def close_stdin(self, request_timeout: Optional[float] = None) -> None:
        await self._commands.close_stdin(self.pid)

    async def disconnect(self) -> None:
        """Stop receiving its output; the command goes on (``commands.connect(pid)``)."""
        self._sink.handlers = {"stdout": None, "stderr": None}
        self._sink.cancel()
        self._waiter.cancel()
        await asyncio.gather(self._waiter, return_exceptions=True)


class AsyncCommands(SandboxPart):
    """``sbx.commands`` of an ``AsyncSandbox`` (E2B's async ``Commands``)."""

    async def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        return await in_thread(ops.ps, self._c, self._sbx.sandbox_id)

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        return await in_thread(ops.kill_process, self._c, self._sbx.sandbox_id, pid)

    async def send_stdin(self, pid: int, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        await in_thread(ops.send_stdin, self._c, self._sbx.sandbox_id, pid, data)

    async def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        await in_thread(ops.close_stdin, self._c, self._sbx.sandbox_id, pid)

    async def kill_tagged(self, tags: List[str]) -> None:
        """Ours: kill every command started with one of these tags."""
        await in_thread(ops.kill_tagged, self._c, self._sbx.sandbox_id, list(tags))

    async def kill_all(self) -> None:
        """Ours: kill every command of the sandbox."""
        await in_thread(ops.kill_all, self._c, self._sbx.sandbox_id)

    @overload
    async def run(self, cmd: str, background: Union[Literal[False], None] = None,
                  envs: Optional[Dict[str, str]] = None, user: Optional[Username] = None, cwd: Optional[str] = None,
                  on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
                  stdin: Optional[bool] = None, timeout: Optional[float] = 60,
                  request_timeout: Optional[float] = None, *, max_output_bytes: Optional[int] = None,
                  tag: Optional[str] = None) -> ex.CommandResult: ...

    @overload
    async def run(self, cmd: str, background: Literal[True], envs: Optional[Dict[str, str]] = None,
                  user: Optional[Username] = None, cwd: Optional[str] = None,
                  on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
                  stdin: Optional[bool] = None, timeout: Optional[float] = 60,
                  request_timeout: Optional[float] = None, *, max_output_bytes: Optional[int] = None,
                  tag: Optional[str] = None) -> AsyncCommandHandle: ...

    async def run(self, cmd: str, background: Optional[bool] = None, envs: Optional[Dict[str, str]] = None,
                  user: Optional[Username] = None, cwd: Optional[str] = None,
                  on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
                  stdin: Optional[bool] = None, timeout: Optional[float] = 60,
                  request_timeout: Optional[float] = None, *, max_output_bytes: Optional[int] = None,
                  tag: Optional[str] = None) -> Union[ex.CommandResult, AsyncCommandHandle]:
        """``Sandbox.commands.run``'s twin; handlers may be ``async def`` (awaited in order)."""
        sid = self._sbx.sandbox_id
        sink = _AsyncSink(asyncio.get_running_loop(), on_stdout, on_stderr)
        if background or stdin:
            params = ops.exec_params(sid, cmd, envs, user, cwd, timeout, max_output_bytes, tag, True)
            p = await in_thread(ops.start, self._c, sid, params, bool(stdin), sink)
            handle = AsyncCommandHandle(self, p, sink, None)
            return handle if background else await handle.wait()
        router = proto.OutputRouter(sink.stdout if on_stdout else None, sink.stderr if on_stderr else None)
        params = ops.exec_params(sid, cmd, envs, user, cwd, timeout, max_output_bytes, tag, router.wanted)
        try:
            r = await in_thread(ops.run, self._c, sid, params, router, timeout)
            await sink.drain()
        except BaseException:
            sink.cancel()
            raise
        if sink.error is not None:
            raise sink.error
        return ops.outcome(r, r.stdout, r.stderr, timeout, None)

    async def connect(self, pid: int, timeout: Optional[float] = 60, request_timeout: Optional[float] = None,
                      on_stdout: Optional[OutputHandler] = None,
                      on_stderr: Optional[OutputHandler] = None) -> AsyncCommandHandle:
        """Attach to a running command by pid: its output from now on and its end;
        ``timeout`` (seconds, 0: none) bounds the wait."""
        loop = asyncio.get_running_loop()
        sink = _AsyncSink(loop, on_stdout, on_stderr)
        live = asyncio.Event()

        def on_attached() -> None:
            try:
                loop.call_soon_threadsafe(live.set)
            except RuntimeError:
                pass

        def attach(cancel: Optional[CancelToken] = None) -> Tuple[Process, bool]:
            return ops.attach(self._c, self._sbx.sandbox_id, pid, sink, on_attached)
        p, tells = await in_thread(attach)
        h = AsyncCommandHandle(self, p, sink, timeout or None)
        if tells:  # once the attach is live (or the wait ended)
            waiter = asyncio.ensure_future(live.wait())
            await asyncio.wait([waiter, h._waiter], return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
        return h


class AsyncPty(SandboxPart):
    """``sbx.pty`` of an ``AsyncSandbox`` (E2B's async ``Pty``): ``on_data`` gets
    the terminal's bytes (an ``async def`` is awaited, in order)."""

    async def create(self, size: PtySize, on_data: Callable[[bytes], Any], user: Optional[Username] = None,
                     cwd: Optional[str] = None, envs: Optional[Dict[str, str]] = None,
                     timeout: Optional[float] = 60, request_timeout: Optional[float] = None) -> AsyncCommandHandle:
        sink = _AsyncSink(asyncio.get_running_loop(), None, None, on_data)
        p = await in_thread(ops.pty_start, self._c, self._sbx.sandbox_id, size, user, cwd, envs, timeout, sink)
        return AsyncCommandHandle(self, p, sink, None)

    async def connect(self, pid: int, on_data: Callable[[bytes], Any], timeout: Optional[float] = 60,
                      request_timeout: Optional[float] = None) -> AsyncCommandHandle:
        sink = _AsyncSink(asyncio.get_running_loop(), None, None, on_data)
        p = await in_thread(ops.pty_attach, self._c, self._sbx.sandbox_id, pid, sink)
        return AsyncCommandHandle(self, p, sink, timeout or None)

    async def send_stdin(self, pid: int, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        await in_thread(ops.pty_input, self._c, self._sbx.sandbox_id, pid, data)

    async def resize(self, pid: int, size: PtySize, request_timeout: Optional[float] = None) -> None:
        await in_thread(ops.pty_resize, self._c, self._sbx.sandbox_id, pid, size)

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        return await in_thread(ops.pty_kill, self._c, self._sbx.sandbox_id, pid)

    async def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        raise ex.InvalidArgumentException("a terminal has no stdin to close: send b\"\\x04\" (Ctrl-D)")


class AsyncWatchHandle:
    """A watched directory (E2B's ``AsyncWatchHandle``): ``on_event`` gets each
    event in order (an ``async def`` awaited), ``on_exit`` the end (None after
    ``stop``, else the error); ``await stop()``."""

    def __init__(self, sink: _AsyncSink, task: "asyncio.Task[None]", token: CancelToken,
                 on_exit: Optional[Callable[[Optional[Exception]], Any]]) -> None:
        self._sink, self._task, self._token, self._on_exit = sink, task, token, on_exit
        self._stopped = False
        self._ended = asyncio.ensure_future(self._end())

    async def _end(self) -> None:
        err: Optional[Exception] = None
        try:
            await asyncio.shield(self._task)
        except Exception as e:
            err = e
        await self._sink.drain()
        if self._on_exit is not None:
            r = self._on_exit(None if self._stopped else err)
            if inspect.isawaitable(r):
                await r

    async def stop(self) -> None:
        """Stop watching; returns once ``on_exit`` ran."""
        self._stopped = True
        self._token.cancel()
        await asyncio.shield(self._ended)


class AsyncFilesystem(SandboxPart):
    """``sbx.files`` of an ``AsyncSandbox``: ``Sandbox.files``'s methods, awaited."""

    async def read(self, path: str, format: Literal["text", "bytes", "stream"] = "text",
                   user: Optional[Username] = None, request_timeout: Optional[float] = None, *,
                   max_bytes: Optional[int] = None) -> Any:
        """str for ``"text"``, ``bytearray`` for ``"bytes"``, an async iterator of bytes for ``"stream"``."""
        check_read_format(format)
        data = await in_thread(ops.read, self._c, self._sbx.sandbox_id, path, user, max_bytes)
        if format != "stream":
            return read_as(data, format)

        async def chunks() -> Any:
            if data:
                yield data
        return chunks()

    async def write(self, path: str, data: Data, user: Optional[Username] = None,
                    request_timeout: Optional[float] = None) -> WriteInfo:
        return await in_thread(ops.write, self._c, self._sbx.sandbox_id, path, ops.data_of(data), user)

    async def write_files(self, files: List[WriteEntry], user: Optional[Username] = None,
                          request_timeout: Optional[float] = None) -> List[WriteInfo]:
        return await in_thread(ops.write_many, self._c, self._sbx.sandbox_id, list(files), user)

    async def list(self, path: str, depth: Optional[int] = 1, user: Optional[Username] = None,
                   request_timeout: Optional[float] = None) -> List[EntryInfo]:
        def walk(cancel: Optional[CancelToken] = None) -> List[EntryInfo]:
            return list(ops.walk(self._c, self._sbx.sandbox_id, path, depth, user, cancel))
        return await in_thread(walk)

    async def exists(self, path: str, user: Optional[Username] = None,
                     request_timeout: Optional[float] = None) -> bool:
        return await in_thread(ops.path_info, self._c, self._sbx.sandbox_id, path, user) is not None

    async def get_info(self, path: str, user: Optional[Username] = None,
                       request_timeout: Optional[float] = None) -> EntryInfo:
        return await in_thread(ops.get_info, self._c, self._sbx.sandbox_id, path, user)

    async def remove(self, path: str, user: Optional[Username] = None,
                     request_timeout: Optional[float] = None) -> None:
        await in_thread(ops.remove, self._c, self._sbx.sandbox_id, path, user)

    async def rename(self, old_path: str, new_path: str, user: Optional[Username] = None,
                     request_timeout: Optional[float] = None) -> EntryInfo:
        return await in_thread(ops.rename, self._c, self._sbx.sandbox_id, old_path, new_path, user)

    async def make_dir(self, path: str, user: Optional[Username] = None,
                       request_timeout: Optional[float] = None) -> bool:
        return await in_thread(ops.make_dir, self._c, self._sbx.sandbox_id, path, user)

    async def watch_dir(self, path: str, on_event: Callable[[FilesystemEvent], Any],
                        on_exit: Optional[Callable[[Optional[Exception]], Any]] = None,
                        user: Optional[Username] = None, request_timeout: Optional[float] = None,
                        timeout: Optional[float] = 60, recursive: bool = False) -> AsyncWatchHandle:
        """Watch a directory; returns once envd watches. ``timeout`` seconds (0:
        none) end the watch (``on_exit`` gets a ``TimeoutException``)."""
        loop = asyncio.get_running_loop()
        sink = _AsyncSink(loop, None, None)
        sink.handlers["event"] = on_event
        started = asyncio.Event()
        token = CancelToken()

        def on_started() -> None:
            try:
                loop.call_soon_threadsafe(started.set)
            except RuntimeError:
                pass

        notify = ops.watch_notify(on_started, lambda e: sink._from_thread("event", e))
        params = ops.watch_params(self._sbx.sandbox_id, path, recursive, user)

        def run(cancel: Optional[CancelToken] = None) -> None:
            ops.watch(self._c, params, notify, cancel=token)

        async def watching() -> None:
            if timeout:
                try:
                    await asyncio.wait_for(asyncio.shield(in_thread(run)), timeout)
                except asyncio.TimeoutError:
                    token.cancel()
                    raise ex.TimeoutException(f"watch of {path} ended after its timeout of {timeout} s") from None
            else:
                await in_thread(run)

        if not await in_thread(lambda cancel=None: ops.advertises(self._c, "watch_started")):
            started.set()  # an engine that does not tell
        task = asyncio.ensure_future(watching())
        waiter = asyncio.ensure_future(started.wait())
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
        if not started.is_set():
            waiter.cancel()
            await task  # raises the watch's error
            raise ex.SandboxException(f"watch of {path} ended before it started")
        return AsyncWatchHandle(sink, task, token, on_exit)


class AsyncSandboxPaginator(PaginatorBase):
    """E2B's ``AsyncSandboxPaginator``: ``has_next``, ``next_token``, ``await next_items()``."""

    async def next_items(self) -> List[SandboxInfo]:
        self._check_next()
        if self._pages.items is None:
            self._pages.items = await in_thread(ops.list_all, self._client, self.query, self.order)
        return self._pages.take()


class AsyncSandbox(SandboxBase):
    """An E2B sandbox for asyncio (E2B's ``AsyncSandbox``): ``await
    AsyncSandbox.create()``, ``await AsyncSandbox.connect(sandbox_id)``."""

    _Commands, _Filesystem, _Pty = AsyncCommands, AsyncFilesystem, AsyncPty
    _name = "AsyncSandbox"

    @property
    def commands(self) -> AsyncCommands:
        return self._commands

    @property
    def files(self) -> AsyncFilesystem:
        return self._filesystem

    @property
    def pty(self) -> AsyncPty:
        return self._pty

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.kill()

    @classmethod
    async def create(cls, template: Optional[str] = None, timeout: Optional[int] = None,
                     metadata: Optional[Dict[str, str]] = None, envs: Optional[Dict[str, str]] = None,
                     allow_internet_access: Optional[bool] = None, network: Optional[Dict[str, Any]] = None,
                     logger: Optional[logging.Logger] = None, *,
                     limits: Optional[Union[Limits, Dict[str, Any]]] = None, **opts: Any) -> "AsyncSandbox":
        """``Sandbox.create``'s twin."""
        if logger is not None:
            opts["logger"] = logger
        c, sid = await in_thread(ops.create, ApiParams(**opts), template, timeout, metadata, envs,
                                 allow_internet_access, network, limits)
        return cls(sandbox_id=sid, client=c)

    @classmethod
    async def _cls_connect(cls, sandbox_id: str, timeout: Optional[int] = None, **opts: Any) -> "AsyncSandbox":
        c = cls._client_of(opts)
        await in_thread(ops.connect, c, sandbox_id, timeout)
        return cls(sandbox_id=sandbox_id, client=c)

    @class_method_variant("_cls_connect")
    async def connect(self, timeout: Optional[int] = None, **opts: Any) -> "AsyncSandbox":
        ops.check_opts(opts)
        await in_thread(ops.connect, self._client, self._sandbox_id, timeout)
        return self

    @classmethod
    def list(cls, query: Optional[SandboxQuery] = None, limit: Optional[int] = None,
             next_token: Optional[str] = None, order: Optional[SandboxListOrder] = None,
             **opts: Any) -> AsyncSandboxPaginator:
        """Not a coroutine (as in E2B): the paginator's ``next_items`` is."""
        return AsyncSandboxPaginator(cls._client_of(opts), query, limit, next_token, order)

    @classmethod
    async def _cls_kill(cls, sandbox_id: str, **opts: Any) -> bool:
        return await in_thread(ops.kill, cls._client_of(opts), sandbox_id)

    @class_method_variant("_cls_kill")
    async def kill(self, **opts: Any) -> bool:
        ops.check_opts(opts)
        return await in_thread(ops.kill, self._client, self._sandbox_id)

    @classmethod
    async def _cls_pause(cls, sandbox_id: str, **opts: Any) -> bool:
        return await in_thread(ops.pause, cls._client_of(opts), sandbox_id)

    @class_method_variant("_cls_pause")
    async def pause(self, **opts: Any) -> bool:
        ops.check_opts(opts)
        return await in_thread(ops.pause, self._client, self._sandbox_id)

    @classmethod
    async def _cls_set_timeout(cls, sandbox_id: str, timeout: int, **opts: Any) -> None:
        await in_thread(ops.set_timeout, cls._client_of(opts), sandbox_id, timeout)

    @class_method_variant("_cls_set_timeout")
    async def set_timeout(self, timeout: int, **opts: Any) -> None:
        ops.check_opts(opts)
        await in_thread(ops.set_timeout, self._client, self._sandbox_id, timeout)

    @classmethod
    async def _cls_get_info(cls, sandbox_id: str, **opts: Any) -> SandboxInfo:
        return await in_thread(ops.info, cls._client_of(opts), sandbox_id)

    @class_method_variant("_cls_get_info")
    async def get_info(self, **opts: Any) -> SandboxInfo:
        ops.check_opts(opts)
        return await in_thread(ops.info, self._client, self._sandbox_id)

    @classmethod
    async def _cls_get_metrics(cls, sandbox_id: str, start: Optional[datetime] = None,
                               end: Optional[datetime] = None, **opts: Any) -> List[SandboxMetrics]:
        return await in_thread(ops.get_metrics, cls._client_of(opts), sandbox_id, start, end)

    @class_method_variant("_cls_get_metrics")
    async def get_metrics(self, start: Optional[datetime] = None, end: Optional[datetime] = None,
                          **opts: Any) -> List[SandboxMetrics]:
        ops.check_opts(opts)
        return await in_thread(ops.get_metrics, self._client, self._sandbox_id, start, end)

    async def is_running(self, request_timeout: Optional[float] = None) -> bool:
        return await in_thread(ops.is_running, self._client, self._sandbox_id)

