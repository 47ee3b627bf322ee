"""The command steps (E2B's SDK: sandbox/commands): exec in the foreground or the background,
ps, kill, stdin, attach and wait, the results as E2B's ``CommandResult``."""
from __future__ import annotations

import inspect
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ... import _protocol as proto
from ...client import CancelToken, Client, Process
from ...errors import CallbackError, SandboxError
from ...types import ExecResult
from .. import exceptions as ex
from .._types import ProcessInfo, Username
from .connection import OUTPUT_MAX_BYTES, _started, _user, fail, timeout_ms


def process_info(p: Any) -> ProcessInfo:
    return ProcessInfo(pid=p.pid, tag=p.tag, cmd=p.cmd, args=list(p.args), cwd=p.cwd, command=p.command)


def ps(c: Client, sid: str, cancel: Optional[CancelToken] = None) -> List[ProcessInfo]:
    try:
        return [process_info(p) for p in c.ps(sid, cancel=cancel)]
    except SandboxError as e:
        fail(e, f"sandbox {sid}")


def kill_process(c: Client, sid: str, pid: int, cancel: Optional[CancelToken] = None) -> bool:
    """True: killed (its whole tree); False: no command with that pid."""
    try:
        if all(p.pid != pid for p in c.ps(sid, cancel=cancel)):
            return False
        c._call("kill_process", {"id": sid, "pid": proto.check_pid(pid)}, cancel)
    except SandboxError as e:
        fail(e, f"command {pid}")
    return True


def send_stdin(c: Client, sid: str, pid: int, data: Union[str, bytes], cancel: Optional[CancelToken] = None) -> None:
    try:
        c._call("send_stdin", {"id": sid, "pid": proto.check_pid(pid), **proto.data_params(data)}, cancel)
    except SandboxError as e:
        fail(e, f"command {pid}")


def close_stdin(c: Client, sid: str, pid: int, cancel: Optional[CancelToken] = None) -> None:
    try:
        c._call("close_stdin", {"id": sid, "pid": proto.check_pid(pid)}, cancel)
    except SandboxError as e:
        fail(e, f"command {pid}")


def kill_tagged(c: Client, sid: str, tags: List[str], cancel: Optional[CancelToken] = None) -> None:
    try:
        c.kill_tagged(sid, tags, cancel=cancel)
    except SandboxError as e:
        fail(e, f"sandbox {sid}")


def kill_all(c: Client, sid: str, cancel: Optional[CancelToken] = None) -> None:
    try:
        c.kill_all(sid, cancel=cancel)
    except SandboxError as e:
        fail(e, f"sandbox {sid}")


def paused_message(sid: str, what: str) -> str:
    return (f"sandbox {sid} was paused while {what} ran: it is frozen, not killed; after "
            f"Sandbox.connect({sid!r}) resumes it, wait() again (or commands.connect(pid).wait(), "
            "the pid from commands.list()) gets the rest of its output and its exit code")


def exec_params(sid: str, cmd: str, envs: Optional[Mapping[str, str]], user: Optional[Username], cwd: Optional[str],
                timeout: Optional[float], max_output_bytes: Optional[int], tag: Optional[str],
                stream: bool) -> Dict[str, Any]:
    p = proto.exec_params(sid, cmd, cwd, envs, timeout_ms(timeout),
                          OUTPUT_MAX_BYTES if max_output_bytes is None else max_output_bytes, tag, stream)
    p["user"] = _user(user)
    return p


def sync_handler(h: Optional[Any], stream: str) -> Optional[Any]:
    """A sync Sandbox's handler: one that returns an awaitable is a TypeError (never a dropped coroutine)."""
    if h is None:
        return None

    def call(text: str) -> None:
        r = h(text)
        if inspect.isawaitable(r):
            if inspect.iscoroutine(r):
                r.close()
            raise TypeError(f"on_{stream} returned an awaitable: Sandbox cannot await it; "
                            "use AsyncSandbox for async handlers")
    return call


def texts(r: ExecResult, sink: Any) -> Tuple[str, str]:
    """A background command's text: what its handle's sink got (across
    re-attaches), else the wait's result (a command this process started,
    connected to again: its output went to the first handle)."""
    if sink.chunks:
        return sink.text("stdout"), sink.text("stderr")
    return r.stdout, r.stderr


def outcome(r: ExecResult, stdout: str, stderr: str, timeout: Optional[float], pid: Optional[int]) -> ex.CommandResult:
    """E2B's reading of a command's end: a result for exit 0, else CommandExitException
    (``error`` as envd words it: ``exit status N``, ``signal: killed``), TimeoutException on a timeout."""
    if r.timed_out:
        raise ex.TimeoutException(f"command{'' if pid is None else f' {pid}'} ran past its timeout of "
                                  f"{timeout} s; its process tree was killed")
    if r.exit_code == 0:
        return ex.CommandResult(stderr=stderr, stdout=stdout, exit_code=0, error=None, truncated=r.truncated)
    if r.exit_code is None:
        raise ex.CommandExitException(stderr=stderr, stdout=stdout, exit_code=-1, error="signal: killed",
                                      truncated=r.truncated)
    raise ex.CommandExitException(stderr=stderr, stdout=stdout, exit_code=r.exit_code,
                                  error=f"exit status {r.exit_code}", truncated=r.truncated)


def run(c: Client, sid: str, params: Dict[str, Any], router: proto.OutputRouter, timeout: Optional[float],
        cancel: Optional[CancelToken] = None) -> ExecResult:
    """A foreground command: exec, its output streamed to ``router``."""
    try:
        r = c._call("exec", params, cancel, router if router.wanted else None)
    except SandboxError as e:
        e = proto.paused_error(c._paused, sid, e, "the command")
        if e.code == "paused":
            raise ex.SandboxPausedException(paused_message(sid, "the command")) from e
        fail(e, "command")
    router.finish()
    return proto.exec_result(r)


def start(c: Client, sid: str, params: Dict[str, Any], stdin: bool, sink: Any,
          cancel: Optional[CancelToken] = None) -> Process:
    """A background command (its output to ``sink.stdout`` / ``sink.stderr`` from its start)."""
    router = proto.OutputRouter(sink.stdout, sink.stderr)
    params = dict(params, background=True, stdin_open=True if stdin else None, stream=True)
    try:
        conn = c._connection()
        route: List[int] = []
        r = conn.call("exec", params, cancel, router, route)
    except SandboxError as e:
        fail(e, "command")
    _started.add((sid, int(r["pid"])))
    return Process(c, conn, sid, int(r["pid"]), router, route[0] if route else None,
                   params.get("max_output_bytes"))


class AttachRouter(proto.OutputRouter):
    """An attach's router that also hears serve's ``attached`` (the attach is live)."""

    def __init__(self, sink: Any, on_attached: Any) -> None:
        super().__init__(sink.stdout, sink.stderr)
        self.on_attached = on_attached

    def __call__(self, method: str, params: Mapping[str, Any]) -> None:
        if method == "attached":
            self.on_attached()
        else:
            super().__call__(method, params)


def advertises(c: Client, notification: str) -> bool:
    """Whether the engine child sends this notification (initialize's list)."""
    c._connection()
    return notification in ((c.server_info or {}).get("notifications") or [])


def attach(c: Client, sid: str, pid: int, sink: Any, on_attached: Any = None) -> Tuple[Process, bool]:
    """A Process for a running command by pid, and whether serve will say ``attached``
    (a command this engine child did not start, with an engine that tells)."""
    try:
        conn = c._connection()
        p = Process(c, conn, sid, proto.check_pid(pid), AttachRouter(sink, on_attached or (lambda: None)), None,
                    None)
        running = any(q.pid == pid for q in c.ps(sid))
    except SandboxError as e:
        fail(e, f"command {pid}")
    if not running:  # E2B's connect: envd's not_found (a wait on it would say exit 0)
        raise ex.NotFoundException(f"command {pid} is not running")
    tells = (sid, pid) not in _started and advertises(c, "attached")
    return p, tells


def wait(p: Process, cancel: Optional[CancelToken] = None) -> ExecResult:
    """The end of a background command; a pause is SandboxPausedException."""
    try:
        return p.wait(cancel=cancel)
    except CallbackError as e:  # the sink never raises; kept for the rule's sake
        raise e.__cause__ or e
    except SandboxError as e:
        if e.code == "paused":
            raise ex.SandboxPausedException(paused_message(p.id, f"command {p.pid}")) from e
        if e.code == "aborted":
            raise ex.TimeoutException(f"stopped waiting for command {p.pid} (it goes on running)") from e
        fail(e, f"command {p.pid}")
