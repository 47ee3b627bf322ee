"""``AsyncClient``: the asyncio twin of ``client.Client``: the same methods in
the same order, each a coroutine. Cancelling the task awaiting a call aborts
the call on the server (an exec's remote process tree is killed)."""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _protocol as proto
from ._async_io import AsyncConnection
from .types import ExecResult, FileContent, Limits, Stat

__all__ = ["AsyncClient"]

Bytes = Union[bytes, bytearray, memoryview, str]


class AsyncClient:
    """See ``Client`` for the parameters. Use ``async with AsyncClient(...) as c``."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None, *, envd_url: Optional[str] = None,
                 bin: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 logger: Optional[logging.Logger] = None) -> None:
        self._config = config
        self._envd_url = envd_url
        self._bin = bin
        self._env = env
        self._logger = logger or logging.getLogger("sandbox_e2b")
        self._lock: Optional[asyncio.Lock] = None
        self._conn: Optional[AsyncConnection] = None
        self.info: Optional[Dict[str, Any]] = None

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
            conn = await AsyncConnection.start(bin, self._env, self._logger)
            try:
                self.info = await conn.call("initialize", proto.initialize_params(self._config, self._envd_url))
            except BaseException:
                await conn.close()
                raise
            self._conn = conn
            return conn

    async def _call(self, method: str, params: Dict[str, Any], notify: Any = None) -> Any:
        return await (await self._connection()).call(method, params, notify)

    async def create(self, name: str, limits: Optional[Union[Limits, Mapping[str, Any]]] = None) -> str:
        return (await self._call("create", {"name": name, "limits": proto.limits_params(limits)}))["id"]

    async def resume(self, id: str) -> str:
        return (await self._call("resume", {"id": id}))["status"]

    async def suspend(self, id: str) -> None:
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
        router = proto.OutputRouter(on_stdout, on_stderr)
        params = proto.exec_params(id, command, cwd, env, timeout_ms, max_output_bytes, tag, router.wanted,
                                   stdin)
        r = await self._call("exec", params, router if router.wanted else None)
        router.finish()
        return proto.exec_result(r)

    async def read_file(self, id: str, path: str, *, max_bytes: Optional[int] = None) -> Optional[FileContent]:
        return proto.file_result(await self._call("read_file", {"id": id, "path": path, "max_bytes": max_bytes}))

    async def write_file(self, id: str, path: str, data: Bytes) -> None:
        await self._call("write_file", {"id": id, "path": path, **proto.data_params(data)})

    async def stat(self, id: str, path: str) -> Optional[Stat]:
        return proto.stat_result(await self._call("stat", {"id": id, "path": path}))
