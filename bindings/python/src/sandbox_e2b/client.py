"""``Client``: the sync API of sandbox_e2b over ``sandbox-e2b serve``.

Method names, parameters and results are the serve contract's
(bindings/protocol/methods.md); ``aio.AsyncClient`` has the same methods in
the same order. A Client may be used from many threads at once.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Union

from . import _protocol as proto
from ._sync_io import CancelToken, SyncConnection
from .errors import SandboxError
from .types import DirEntry, ExecResult, FileContent, Limits, ProcessInfo, SandboxInfo, Stat

__all__ = ["Client", "CancelToken", "Process"]

Bytes = Union[bytes, bytearray, memoryview, str]


class Client:
    """A sandbox-e2b client. ``config``: the deployment config (``apiKey``,
    ``template``, ``apiUrl``, ``domain``, ``timeoutSeconds``,
    ``domainAllowlist``, ``allowOpenEgress``), checked by the C parser; a key
    it leaves out comes from ``E2B_API_KEY`` / ``E2B_TEMPLATE`` /
    ``E2B_API_URL`` / ``E2B_DOMAIN`` when set; None uses the CLI's sources
    (the same variables, ``SANDBOX_E2B_CONFIG``). ``envd_url``: envd address override (fake-e2b,
    self-hosted). ``bin``: the sandbox-e2b binary (default SANDBOX_E2B_BIN,
    else PATH). ``logger`` (default "sandbox_e2b") gets the library's log lines
    from ``log_level`` up ("debug" adds one per HTTP request). The child starts
    on the first call."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None, *, envd_url: Optional[str] = None,
                 bin: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 logger: Optional[logging.Logger] = None, log_level: str = "info") -> None:
        self._config = config
        self._log_level = log_level
        self._envd_url = envd_url
        self._bin = bin
        self._env = env
        self._logger = logger or logging.getLogger("sandbox_e2b")
        self._lock = threading.Lock()
        self._conn: Optional[SyncConnection] = None
        self._paused: Set[str] = set()  # sandboxes this client suspended (proto.paused_error)
        self.server_info: Optional[Dict[str, Any]] = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """End the serve child (calls in flight are aborted, remote commands killed)."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _connection(self) -> SyncConnection:
        with self._lock:
            if self._conn is not None and self._conn.alive:
                return self._conn
            bin = self._bin or proto.find_binary(self._env)
            conn = SyncConnection(bin, proto.child_env(self._env), self._logger,
                                  proto.serve_args(self._config is not None))
            try:
                self.server_info = conn.call("initialize", proto.initialize_params(self._config, self._envd_url, self._log_level))
            except BaseException:
                conn.close()
                raise
            codes = self.server_info.get("error_codes") if isinstance(self.server_info, dict) else None
            conn.error_codes = codes if isinstance(codes, dict) else {}
            self._conn = conn
            return conn

    def _call(self, method: str, params: Dict[str, Any], cancel: Optional[CancelToken] = None,
              notify: Any = None) -> Any:
        if cancel is not None and cancel.cancelled:
            raise proto.error_from({"code": -32800, "message": "aborted", "data": {"code": "aborted"}})
        return self._connection().call(method, params, cancel, notify)

    def create(self, name: str, limits: Optional[Union[Limits, Mapping[str, Any]]] = None, *,
               cancel: Optional[CancelToken] = None) -> str:
        """Create a sandbox named ``name`` (replacing one with that name); returns its id."""
        return self._call("create", {"name": name, "limits": proto.limits_params(limits)}, cancel)["id"]

    def resume(self, id: str, *, cancel: Optional[CancelToken] = None) -> str:
        """"resumed", or "gone" when the sandbox no longer exists."""
        status = self._call("resume", {"id": id}, cancel)["status"]
        self._paused.discard(id)
        return status

    def suspend(self, id: str, *, cancel: Optional[CancelToken] = None) -> None:
        """Pause it: an exec or wait in flight raises SandboxError code "paused"
        (the command goes on after resume: attach by pid)."""
        self._paused.add(id)
        self._call("suspend", {"id": id}, cancel)

    def destroy(self, id: str, *, cancel: Optional[CancelToken] = None) -> None:
        self._call("destroy", {"id": id}, cancel)

    def destroy_by_name(self, name: str, *, cancel: Optional[CancelToken] = None) -> None:
        self._call("destroy_by_name", {"name": name}, cancel)

    def kill_all(self, id: str, *, cancel: Optional[CancelToken] = None) -> None:
        self._call("kill_all", {"id": id}, cancel)

    def kill_tagged(self, id: str, tags: Sequence[str], *, cancel: Optional[CancelToken] = None) -> None:
        self._call("kill_tagged", {"id": id, "tags": list(tags)}, cancel)

    def exec(self, id: str, command: str, *, cwd: Optional[str] = None,
             env: Optional[Mapping[str, str]] = None, timeout_ms: Optional[int] = None,
             max_output_bytes: Optional[int] = None, tag: Optional[str] = None,
             on_stdout: Optional[proto.OutputCallback] = None,
             on_stderr: Optional[proto.OutputCallback] = None,
             stdin: Optional[Bytes] = None,
             cancel: Optional[CancelToken] = None) -> ExecResult:
        """Run ``command`` with /bin/bash -c as the sandbox user. on_stdout /
        on_stderr get text as it arrives (on the reader thread). A timeout or a
        cancel returns a result (timed_out / aborted, exit_code None) after the
        remote process tree is killed."""
        router = proto.OutputRouter(on_stdout, on_stderr)
        params = proto.exec_params(id, command, cwd, env, timeout_ms, max_output_bytes, tag, router.wanted,
                                   stdin)
        try:
            r = self._call("exec", params, cancel, router if router.wanted else None)
        except SandboxError as e:
            raise proto.paused_error(self._paused, id, e, "the command") from e
        router.finish()
        return router.check(proto.exec_result(r))

    def read_file(self, id: str, path: str, *, max_bytes: Optional[int] = None,
                  cancel: Optional[CancelToken] = None) -> Optional[FileContent]:
        """The file's first max_bytes (default 16 MiB), or None when missing or a directory."""
        return proto.file_result(self._call("read_file", {"id": id, "path": path, "max_bytes": max_bytes}, cancel))

    def write_file(self, id: str, path: str, data: Bytes, *, cancel: Optional[CancelToken] = None) -> None:
        """Write bytes (or text, as UTF-8) as the sandbox user, creating parent directories."""
        self._call("write_file", {"id": id, "path": path, **proto.data_params(data)}, cancel)

    def stat(self, id: str, path: str, *, cancel: Optional[CancelToken] = None) -> Optional[Stat]:
        """Size and type, or None when the path does not exist."""
        return proto.stat_result(self._call("stat", {"id": id, "path": path}, cancel))



    # ---- beyond the contract: listing and background commands ----

    def list(self, *, name: Optional[str] = None, state: Optional[str] = None,
             cancel: Optional[CancelToken] = None) -> List[SandboxInfo]:
        """This deployment's sandboxes (made by create), newest first; state "running"/"paused"."""
        return [proto.info_result(r) for r in self._call("list", {"name": name, "state": state}, cancel)]

    def info(self, id: str, *, cancel: Optional[CancelToken] = None) -> SandboxInfo:
        return proto.info_result(self._call("info", {"id": id}, cancel))

    def list_dir(self, id: str, path: str, *, cancel: Optional[CancelToken] = None) -> Optional[List[DirEntry]]:
        """The entries of a directory sorted by name, or None when the path does not exist."""
        return proto.dir_result(self._call("list_dir", {"id": id, "path": path}, cancel))

    def ps(self, id: str, *, cancel: Optional[CancelToken] = None) -> List[ProcessInfo]:
        """The sandbox's running commands."""
        return proto.ps_result(self._call("ps", {"id": id}, cancel))

    def start(self, id: str, command: str, *, cwd: Optional[str] = None,
              env: Optional[Mapping[str, str]] = None, timeout_ms: Optional[int] = None,
              max_output_bytes: Optional[int] = None, tag: Optional[str] = None,
              stdin: bool = False, on_stdout: Optional[proto.OutputCallback] = None,
              on_stderr: Optional[proto.OutputCallback] = None,
              cancel: Optional[CancelToken] = None) -> "Process":
        """Start a background command and return its ``Process`` (``stdin=True``:
        a stdin pipe for send_stdin). It is killed when the client closes."""
        router = proto.OutputRouter(on_stdout, on_stderr)
        params = proto.start_params(id, command, cwd, env, timeout_ms, max_output_bytes, tag,
                                    router.wanted, stdin)
        if cancel is not None and cancel.cancelled:
            raise proto.error_from({"code": -32800, "message": "aborted", "data": {"code": "aborted"}})
        conn = self._connection()
        route: List[int] = []
        r = conn.call("exec", params, cancel, router if router.wanted else None, route)
        return Process(self, conn, id, int(r["pid"]), router, route[0] if route else None,
                       max_output_bytes)

    def attach(self, id: str, pid: int, *, on_stdout: Optional[proto.OutputCallback] = None,
               on_stderr: Optional[proto.OutputCallback] = None,
               max_output_bytes: Optional[int] = None) -> "Process":
        """A running command by pid (E2B's ``commands.connect``): one ``start`` or
        ``exec`` started, one another client started, or one whose stream a pause
        broke (after resume). ``wait()`` gets its output from the attach on and its
        end; ``kill()`` works; stdin needs the ``start`` handle."""
        proto.check_pid(pid)
        return Process(self, self._connection(), id, pid, proto.OutputRouter(on_stdout, on_stderr),
                       None, max_output_bytes)


class Process:
    """A background command started by ``Client.start``."""

    def __init__(self, client: Client, conn: SyncConnection, id: str, pid: int,
                 router: proto.OutputRouter, rid: Optional[int], max_output_bytes: Optional[int]) -> None:
        self._client, self._conn, self.id, self.pid = client, conn, id, pid
        self._router, self._rid, self._max = router, rid, max_output_bytes

    def wait(self, *, cancel: Optional[CancelToken] = None) -> ExecResult:
        """The result once the command ends (aborted: killed by kill()). A cancel stops only the wait."""
        try:
            r = self._client._call("wait", proto.wait_params(self.id, self.pid, self._max, self._router.wanted),
                                   cancel, self._router if self._router.wanted else None)
        except SandboxError as e:
            raise proto.paused_error(self._client._paused, self.id, e, f"command {self.pid}") from e
        self._router.finish()
        if self._rid is not None:
            self._conn.unroute(self._rid)
        return self._router.check(proto.exec_result(r))

    def send_stdin(self, data: Bytes, *, cancel: Optional[CancelToken] = None) -> None:
        self._client._call("send_stdin", {"id": self.id, "pid": self.pid, **proto.data_params(data)}, cancel)

    def close_stdin(self, *, cancel: Optional[CancelToken] = None) -> None:
        self._client._call("close_stdin", {"id": self.id, "pid": self.pid}, cancel)

    def kill(self, *, cancel: Optional[CancelToken] = None) -> None:
        """Kill the command and its whole process tree."""
        self._client._call("kill_process", {"id": self.id, "pid": self.pid}, cancel)
