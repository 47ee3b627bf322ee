"""The terminal steps (E2B's SDK: sandbox/commands/pty): serve's ``pty_*`` calls
(docs/pty.md), a terminal shaped as a ``Process`` for the command handles."""
from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple, Union

from ... import _protocol as proto
from ...client import CancelToken, Client
from ...errors import SandboxError
from ...types import ExecResult
from .. import exceptions as ex
from .._types import Username
from .connection import _user, fail, timeout_ms


class PtyProcess:
    """A terminal held by the engine child, shaped as a ``Process`` for the
    command handles: ``id``, ``pid``, ``wait(cancel=)``."""

    def __init__(self, c: Client, conn: Any, sid: str, pid: int, rid: Optional[int]) -> None:
        self._c, self._conn, self.id, self.pid, self._rid = c, conn, sid, pid, rid

    def wait(self, cancel: Optional[CancelToken] = None) -> ExecResult:
        r = self._c._call("pty_wait", {"id": self.id, "pid": self.pid}, cancel)
        if self._rid is not None:
            self._conn.unroute(self._rid)
        killed = bool(r.get("killed"))
        return ExecResult(exit_code=None if killed else r.get("exit_code"), stdout="", stderr="", truncated=False,
                          timed_out=bool(r.get("timed_out")), aborted=killed)


def _pty_notify(sink: Any) -> Any:
    def notify(method: str, params: Mapping[str, Any]) -> None:
        if method == "output" and params.get("stream") == "pty":
            sink.pty(proto.bytes_of(params, "data"))
    return notify


def _size(size: Any) -> Tuple[int, int]:
    cols, rows = getattr(size, "cols", None), getattr(size, "rows", None)
    if not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 65535 for v in (cols, rows)):
        raise ex.InvalidArgumentException("size must be a PtySize with rows and cols from 1 to 65535")
    return int(cols), int(rows)  # type: ignore[arg-type]


def pty_start(c: Client, sid: str, size: Any, user: Optional[Username], cwd: Optional[str],
              envs: Optional[Mapping[str, str]], timeout: Optional[float], sink: Any,
              cancel: Optional[CancelToken] = None) -> PtyProcess:
    cols, rows = _size(size)
    params = {"id": sid, "cols": cols, "rows": rows, "cwd": cwd, "env": dict(envs) if envs is not None else None,
              "timeout_ms": 0 if timeout == 0 else timeout_ms(timeout), "user": _user(user)}
    try:
        conn = c._connection()
        route: List[int] = []
        r = conn.call("pty_start", params, cancel, _pty_notify(sink), route)
    except SandboxError as e:
        fail(e, "pty")
    return PtyProcess(c, conn, sid, int(r["pid"]), route[0] if route else None)


def pty_attach(c: Client, sid: str, pid: int, sink: Any, cancel: Optional[CancelToken] = None) -> PtyProcess:
    try:
        conn = c._connection()
        route: List[int] = []
        r = conn.call("pty_attach", {"id": sid, "pid": proto.check_pid(pid)}, cancel, _pty_notify(sink), route)
    except SandboxError as e:
        fail(e, f"pty {pid}")
    return PtyProcess(c, conn, sid, int(r["pid"]), route[0] if route else None)


def pty_input(c: Client, sid: str, pid: int, data: Union[str, bytes], cancel: Optional[CancelToken] = None) -> None:
    try:
        c._call("pty_input", {"id": sid, "pid": proto.check_pid(pid), **proto.data_params(data)}, cancel)
    except SandboxError as e:
        fail(e, f"pty {pid}")


def pty_resize(c: Client, sid: str, pid: int, size: Any, cancel: Optional[CancelToken] = None) -> None:
    cols, rows = _size(size)
    try:
        c._call("pty_resize", {"id": sid, "pid": proto.check_pid(pid), "cols": cols, "rows": rows}, cancel)
    except SandboxError as e:
        fail(e, f"pty {pid}")


def pty_kill(c: Client, sid: str, pid: int, cancel: Optional[CancelToken] = None) -> bool:
    """True: killed; False: not a terminal this process holds (serve's rule)."""
    try:
        c._call("pty_kill", {"id": sid, "pid": proto.check_pid(pid)}, cancel)
    except SandboxError as e:
        if e.code == "invalid_params":
            return False
        fail(e, f"pty {pid}")
    return True
