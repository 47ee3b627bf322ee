"""The asyncio transport: one ``sandbox-e2b serve`` child, a reader task that
matches responses to futures by id. Cancelling the task that awaits a call
sends ``$/cancelRequest`` (the server aborts it, killing a remote command)."""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _protocol as proto
from .errors import BridgeError

Notify = Callable[[str, Mapping[str, Any]], None]

# A result line may be large (read_file content, exec output): allow 512 MiB.
LINE_LIMIT = 512 << 20


class AsyncConnection:
    def __init__(self, bin: str, proc: asyncio.subprocess.Process, logger: logging.Logger) -> None:
        self.bin = bin
        self.proc = proc
        self.logger = logger
        self.pending: Dict[int, Tuple[asyncio.Future, Optional[Notify]]] = {}
        self.routes: Dict[int, Notify] = {}  # notifications that outlive a response
        self.next_id = 1
        # serve's names of errors without data (initialize's error_codes), once it answered
        self.error_codes: Dict[str, str] = {}
        self.closed: Optional[BaseException] = None
        self.reader = asyncio.ensure_future(self._read())
        self.stderr_reader = asyncio.ensure_future(self._read_stderr())

    @classmethod
    async def start(cls, bin: str, env: Optional[Mapping[str, str]], logger: logging.Logger,
                    args: Sequence[str] = ()) -> "AsyncConnection":
        try:
            proc = await asyncio.create_subprocess_exec(
                bin, "serve", *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=dict(env) if env is not None else None,
                limit=LINE_LIMIT)
        except OSError as e:
            raise BridgeError(f"sandbox-e2b serve ({bin}) could not be started: {e.strerror}",
                              code="bridge") from None
        return cls(bin, proc, logger)

    @property
    def alive(self) -> bool:
        return self.closed is None

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    async def call(self, method: str, params: Dict[str, Any], notify: Optional[Notify] = None,
                   route: Optional[List[int]] = None) -> Any:
        if self.closed is not None:
            raise self.closed
        id = self.next_id
        self.next_id += 1
        if route is not None and notify is not None:
            route.append(id)
            self.routes[id] = notify
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self.pending[id] = (fut, notify)
        try:
            self._write(proto.request(id, method, params))
            await self.proc.stdin.drain()  # type: ignore[union-attr]
        except (OSError, ConnectionError):
            self.pending.pop(id, None)
            raise BridgeError(f"sandbox-e2b serve ({self.bin}) is gone; the next call starts "
                              "a new one", code="bridge") from None
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            # Abort the call on the server and wait for its answer (an exec's
            # remote tree is killed by then), unless cancelled again; then re-raise.
            if not fut.done() and self.closed is None:
                try:
                    self._write(proto.cancel(id))
                    await asyncio.shield(fut)
                except BaseException:
                    pass
            self.pending.pop(id, None)
            raise

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            try:
                line = await self.proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                break
            if not line:
                break
            msg = proto.decode(line)
            if msg is None:
                continue
            if "method" in msg and "id" not in msg:
                params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
                if msg["method"] == "log":
                    self._log(params)
                    continue
                entry = self.pending.get(params.get("id"))  # type: ignore[arg-type]
                fn = entry[1] if entry is not None else self.routes.get(params.get("id"))  # type: ignore[arg-type]
                if fn is not None:
                    try:
                        fn(msg["method"], params)
                    except Exception:
                        self.logger.exception("sandbox-e2b: output callback failed")
                continue
            entry = self.pending.pop(msg.get("id"), None)  # type: ignore[arg-type]
            if entry is None or entry[0].done():
                continue
            if "error" in msg:
                entry[0].set_exception(proto.error_from(msg["error"], self.error_codes))
            else:
                entry[0].set_result(msg.get("result"))
        code = await self.proc.wait()
        why = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        err = BridgeError(f"sandbox-e2b serve ({self.bin}) {why} while the call was in flight; "
                          "the next call starts a new one", code="bridge")
        self.closed = err
        pending, self.pending = self.pending, {}
        for fut, _ in pending.values():
            if not fut.done():
                fut.set_exception(err)

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while True:
            line = await self.proc.stderr.readline()
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip("\n")
            if text:
                self.logger.warning("%s", text)

    def _log(self, params: Mapping[str, Any]) -> None:
        level = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
                 "error": logging.ERROR}.get(str(params.get("level")), logging.INFO)
        fields = params.get("fields") or {}
        extra = " ".join(f"{k}={v}" for k, v in fields.items()) if isinstance(fields, dict) else ""
        self.logger.log(level, "%s%s", params.get("message", ""), f" ({extra})" if extra else "")

    async def close(self, timeout: float = 30) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        await asyncio.gather(self.reader, self.stderr_reader, return_exceptions=True)
