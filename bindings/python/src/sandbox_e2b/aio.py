"""``AsyncClient``: the asyncio twin of ``client.Client``: the same methods in
the same order, each a coroutine. Cancelling the task awaiting a call aborts
the call on the server; the task ends (CancelledError) once the server
answered, so an exec's remote process tree is already killed by then (a
second cancel stops waiting for that)."""
from __future__ import annotations

import asyncio
import collections
import inspect
import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Union

from . import _protocol as proto
from ._async_io import AsyncConnection
from .errors import SandboxError
from .types import DirEntry, ExecResult, FileContent, Limits, ProcessInfo, SandboxInfo, Stat

__all__ = ["AsyncClient", "AsyncProcess"]

Bytes = Union[bytes, bytearray, memoryview, str]


class AsyncOutputRouter(proto.OutputRouter):
    """``OutputRouter`` for asyncio: a handler may be sync or ``async def``.
    Chunks are queued in arrival order (at most the call's output budget) and
    one task runs the handlers one at a time, awaiting an async one before the
    next chunk; ``drain`` waits until every chunk was handled, so a call
    returns only after its handlers saw all the output."""

    def __init__(self, on_stdout: Optional[proto.OutputCallback], on_stderr: Optional[proto.OutputCallback]):
        super().__init__(on_stdout, on_stderr)
        self._queue: "collections.deque[tuple]" = collections.deque()
        self._task: Optional[asyncio.Task] = None

    def deliver(self, stream: str, cb: proto.OutputCallback, text: str) -> None:
        if self.error is not None:
            return
        self._queue.append((cb, text))
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while self._queue and self.error is None:
            cb, text = self._queue.popleft()
            try:
                r = cb(text)
                if inspect.isawaitable(r):
                    await r
            except Exception as e:  # surfaced by check(), after the command ended
                self.error = e
                self._queue.clear()

    async def drain(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    def cancel(self) -> None:
        self._queue.clear()
        if self._task is not None:
            self._task.cancel()

    async def settle(self, r: Any) -> ExecResult:
        """The result once the handlers saw all the output (``check``'s rules)."""
        self.finish()
        await self.drain()
        return self.check(proto.exec_result(r))


class AsyncClient:
    """See ``Client`` for the parameters. Use ``async with AsyncClient(...) as c``."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None, *, envd_url: Optional[str] = None,
                 bin: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 logger: Optional[logging.Logger] = None, log_level: str = "info") -> None:
        self._config = config
        self._log_level = log_level
        self._envd_url = envd_url
        self._bin = bin
        self._env = env
        self._logger = logger or logging.getLogger("sandbox_e2b")
        self._lock: Optional[asyncio.Lock] = None
        self._conn: Optional[AsyncConnection] = None
        self._paused: Set[str] = set()  # sandboxes this client suspended (proto.paused_error)
        self.server_info: Optional[Dict[str, Any]] = None

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        """End the serve child (calls in flight are aborted, remote commands killed)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    async def _connection(self) -> AsyncConnection:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._conn is not None and self._conn.alive:
                return self._conn
            bin = self._bin or proto.find_binary(self._env)
            conn = await AsyncConnection.start(bin, proto.child_env(self._env), self._logger,
                                               proto.serve_args(self._config is not None))
            try:
                self.server_info = await conn.call("initialize", proto.initialize_params(self._config, self._envd_url, self._log_level))
            except BaseException:
                await conn.close()
                raise
            codes = self.server_info.get("error_codes") if isinstance(self.server_info, dict) else None
            conn.error_codes = codes if isinstance(codes, dict) else {}
            self._conn = conn
            return conn

    async def _call(self, method: str, params: Dict[str, Any], notify: Any = None) -> Any:
        return await (await self._connection()).call(method, params, notify)

    async def create(self, name: str, limits: Optional[Union[Limits, Mapping[str, Any]]] = None) -> str:
        return (await self._call("create", {"name": name, "limits": proto.limits_params(limits)}))["id"]

    async def resume(self, id: str) -> str:
        status = (await self._call("resume", {"id": id}))["status"]
        self._paused.discard(id)
        return status

    async def suspend(self, id: str) -> None:
        self._paused.add(id)
        await self._call("suspend", {"id": id})

    async def destroy(self, id: str) -> None:
        await self._call("destroy", {"id": id})

    async def destroy_by_name(self, name: str) -> None:
        await self._call("destroy_by_name", {"name": name})

    async def kill_all(self, id: str) -> None:
        await self._call("kill_all", {"id": id})

    async def kill_tagged(self, id: str, tags: Sequence[str]) -> None:
        await self._call("kill_tagged", {"id": id, "tags": list(tags)})

    async def exec(self, id: str, command: str, *, cwd: Optional[str] = None,
                   env: Optional[Mapping[str, str]] = None, timeout_ms: Optional[int] = None,
                   max_output_bytes: Optional[int] = None, tag: Optional[str] = None,
                   on_stdout: Optional[proto.OutputCallback] = None,
                   on_stderr: Optional[proto.OutputCallback] = None,
                   stdin: Optional[Bytes] = None) -> ExecResult:
        router = AsyncOutputRouter(on_stdout, on_stderr)
        params = proto.exec_params(id, command, cwd, env, timeout_ms, max_output_bytes, tag, router.wanted,
                                   stdin)
        try:
            try:
                r = await self._call("exec", params, router if router.wanted else None)
            except SandboxError as e:
                raise proto.paused_error(self._paused, id, e, "the command") from e
            return await router.settle(r)
        except BaseException:
            router.cancel()
            raise

    async def read_file(self, id: str, path: str, *, max_bytes: Optional[int] = None) -> Optional[FileContent]:
        return proto.file_result(await self._call("read_file", {"id": id, "path": path, "max_bytes": max_bytes}))

    async def write_file(self, id: str, path: str, data: Bytes) -> None:
        await self._call("write_file", {"id": id, "path": path, **proto.data_params(data)})

    async def stat(self, id: str, path: str) -> Optional[Stat]:
        return proto.stat_result(await self._call("stat", {"id": id, "path": path}))

    # ---- beyond the contract: listing and background commands ----

    async def list(self, *, name: Optional[str] = None, state: Optional[str] = None) -> List[SandboxInfo]:
        return [proto.info_result(r) for r in await self._call("list", {"name": name, "state": state})]

    async def info(self, id: str) -> SandboxInfo:
        return proto.info_result(await self._call("info", {"id": id}))

    async def list_dir(self, id: str, path: str) -> Optional[List[DirEntry]]:
        return proto.dir_result(await self._call("list_dir", {"id": id, "path": path}))

    async def ps(self, id: str) -> List[ProcessInfo]:
        return proto.ps_result(await self._call("ps", {"id": id}))

    async def start(self, id: str, command: str, *, cwd: Optional[str] = None,
                    env: Optional[Mapping[str, str]] = None, timeout_ms: Optional[int] = None,
                    max_output_bytes: Optional[int] = None, tag: Optional[str] = None,
                    stdin: bool = False, on_stdout: Optional[proto.OutputCallback] = None,
                    on_stderr: Optional[proto.OutputCallback] = None) -> "AsyncProcess":
        router = AsyncOutputRouter(on_stdout, on_stderr)
        params = proto.start_params(id, command, cwd, env, timeout_ms, max_output_bytes, tag,
                                    router.wanted, stdin)
        conn = await self._connection()
        route: List[int] = []
        r = await conn.call("exec", params, router if router.wanted else None, route)
        return AsyncProcess(self, conn, id, int(r["pid"]), router, route[0] if route else None,
                            max_output_bytes)

    async def attach(self, id: str, pid: int, *, on_stdout: Optional[proto.OutputCallback] = None,
                     on_stderr: Optional[proto.OutputCallback] = None,
                     max_output_bytes: Optional[int] = None) -> "AsyncProcess":
        """``Client.attach``'s twin: a running command by pid."""
        proto.check_pid(pid)
        return AsyncProcess(self, await self._connection(), id, pid, AsyncOutputRouter(on_stdout, on_stderr),
                            None, max_output_bytes)


class AsyncProcess:
    """A background command started by ``AsyncClient.start`` (the twin of ``client.Process``)."""

    def __init__(self, client: AsyncClient, conn: AsyncConnection, id: str, pid: int,
                 router: AsyncOutputRouter, rid: Optional[int], max_output_bytes: Optional[int]) -> None:
        self._client, self._conn, self.id, self.pid = client, conn, id, pid
        self._router, self._rid, self._max = router, rid, max_output_bytes

    async def wait(self) -> ExecResult:
        try:
            r = await self._client._call("wait", proto.wait_params(self.id, self.pid, self._max, self._router.wanted),
                                         self._router if self._router.wanted else None)
        except SandboxError as e:
            raise proto.paused_error(self._client._paused, self.id, e, f"command {self.pid}") from e
        if self._rid is not None:
            self._conn.routes.pop(self._rid, None)
        return await self._router.settle(r)

    async def send_stdin(self, data: Bytes) -> None:
        await self._client._call("send_stdin", {"id": self.id, "pid": self.pid, **proto.data_params(data)})

    async def close_stdin(self) -> None:
        await self._client._call("close_stdin", {"id": self.id, "pid": self.pid})

    async def kill(self) -> None:
        await self._client._call("kill_process", {"id": self.id, "pid": self.pid})
