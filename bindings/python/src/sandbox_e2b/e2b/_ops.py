"""The blocking steps of ``Sandbox`` and ``AsyncSandbox``: one engine call (or
a few) each, over a shared ``Client`` per connection options, results in
E2B's shapes and failures as E2B's exceptions. ``AsyncSandbox`` runs each
step on a thread of its own (``_aio.in_thread``), so both share this code."""
from __future__ import annotations

import atexit
import inspect
import os
import posixpath
import threading
import uuid
from datetime import datetime, timezone
from typing import Any, Dict, Iterator, List, Mapping, NoReturn, Optional, Tuple, Union

from .. import _protocol as proto
from ..client import CancelToken, Client, Process
from ..errors import CallbackError, SandboxError
from ..types import ExecResult
from . import exceptions as ex
from ._types import (ApiParams, EntryInfo, FileType, FilesystemEvent, FilesystemEventType, ProcessInfo, SandboxInfo,
                     SandboxMetrics, SandboxQuery, SandboxState, Username, WriteInfo)

# The engine's template (E2B's "base" lacks its user): bindings/MIGRATING.md "The template"
DEFAULT_TEMPLATE = "capybara-sandbox"
DEFAULT_TIMEOUT = 300  # E2B's default sandbox lifetime, seconds (the config's timeoutSeconds)
# E2B's "0: no limit" for a command's timeout: 100 years, in milliseconds.
NO_LIMIT_MS = 100 * 366 * 86400 * 1000
# The default caps, the Node package's too: a command's output (cut at a UTF-8
# boundary, result.truncated) and files.read (a longer file raises, never comes back cut).
OUTPUT_MAX_BYTES = 64 << 20
READ_MAX_BYTES = 64 << 20
# create's E2B options the engine does not have: refused by name, never ignored
CREATE_REFUSED = ("mcp", "volume_mounts", "iam", "lifecycle")

ParamKeys = ("api_key", "domain", "api_url", "sandbox_url", "request_timeout", "logger", "config", "bin",
             "env", "log_level")

_lock = threading.Lock()
_clients: Dict[Tuple[Any, ...], Client] = {}
# Sandboxes this process paused, shared by every Client (proto.paused_error):
# a Sandbox from connect() uses another Client than the one that created it.
_paused: "set[str]" = set()
# (sandbox, pid) of the background commands this process started: serve follows
# them itself, an attach to one gets no `attached` notification.
_started: "set[Tuple[str, int]]" = set()


def _close_all() -> None:
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for c in clients:
        c.close()


atexit.register(_close_all)


def check_opts(opts: Mapping[str, Any]) -> None:
    for k in opts:
        if k not in ParamKeys:
            raise TypeError(f"unexpected keyword argument {k!r} (sandbox_e2b takes {', '.join(ParamKeys)})")


def client_for(opts: ApiParams, template: Optional[str] = None) -> Client:
    """The shared Client of these options (one ``sandbox-e2b serve`` child per
    distinct options, closed at exit)."""
    check_opts(opts)
    env = opts.get("env")
    src = os.environ if env is None else env
    cfg: Dict[str, Any] = dict(opts.get("config") or {})
    for key, name in (("apiKey", "api_key"), ("domain", "domain"), ("apiUrl", "api_url")):
        if opts.get(name) is not None:
            cfg[key] = opts.get(name)
    if "timeoutSeconds" not in cfg:
        cfg["timeoutSeconds"] = DEFAULT_TIMEOUT
    if template:
        cfg["template"] = template
    elif "template" not in cfg and not src.get("E2B_TEMPLATE"):
        cfg["template"] = DEFAULT_TEMPLATE
    envd_url = opts.get("sandbox_url")
    log_level = opts.get("log_level") or "info"
    logger = opts.get("logger")
    key = (tuple(sorted((k, repr(v)) for k, v in cfg.items())), envd_url, opts.get("bin"),
           tuple(sorted(env.items())) if env is not None else None, log_level, id(logger) if logger else None)
    with _lock:
        c = _clients.get(key)
        if c is None:
            c = Client(cfg, envd_url=envd_url, bin=opts.get("bin"), env=env, logger=logger, log_level=log_level)
            c._paused = _paused
            _clients[key] = c
        return c


def fail(e: SandboxError, what: str = "") -> NoReturn:
    raise ex.from_error(e, what) from e


def _user(user: Optional[Username]) -> Optional[str]:
    if user is None or user == "user":
        return None
    if user == "root":
        return "root"
    raise ex.InvalidArgumentException(f"user must be \"user\" or \"root\", not {user!r}")


def _no_user(user: Optional[Username], what: str) -> None:
    if _user(user) is not None:
        raise ex.InvalidArgumentException(f"{what} runs as the sandbox user only (user=\"root\" is not supported)")


def timeout_ms(timeout: Optional[float]) -> Optional[int]:
    """E2B's command timeout in seconds (0: no limit) as the engine's milliseconds."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        raise ex.InvalidArgumentException(f"timeout must be a number of seconds >= 0, not {timeout!r}")
    return NO_LIMIT_MS if timeout == 0 else max(1, int(timeout * 1000))


def _seconds(timeout: Any, what: str = "timeout") -> int:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 86400:
        raise ex.InvalidArgumentException(f"{what} must be from 1 to 86400 seconds, not {timeout!r}")
    return int(timeout)


# ---- sandboxes ----

ALL_TRAFFIC = "0.0.0.0/0"


def _egress(allow_internet_access: Optional[bool], network: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """E2B's egress options as the engine's: ``network={"deny_out": ["0.0.0.0/0"]}`` is none,
    that with ``allow_out: [hosts]`` an allowlist (the Node package's rule)."""
    if network:
        unknown = [k for k in network if k not in ("allow_out", "deny_out")]
        if unknown:
            raise ex.InvalidArgumentException(f"network.{unknown[0]} is not supported by this engine "
                                              "(only deny_out: [\"0.0.0.0/0\"] and allow_out: [hosts])")
        if list(network.get("deny_out") or []) != [ALL_TRAFFIC]:
            raise ex.InvalidArgumentException("network.deny_out must be [\"0.0.0.0/0\"] (all traffic): "
                                              "the engine has no per-address deny rules")
        hosts = network.get("allow_out") or []
        if not isinstance(hosts, (list, tuple)) or not all(isinstance(h, str) for h in hosts):
            raise ex.InvalidArgumentException("network.allow_out must be a list of host names")
        if not hosts:
            return {"egress": "none"}
        return {"egress": "allowlist", "allow_hosts": list(hosts)}
    if allow_internet_access is None:
        return None
    return {"egress": "open" if allow_internet_access else "none"}


def create(opts: ApiParams, template: Optional[str], timeout: Optional[int], metadata: Optional[Mapping[str, str]],
           envs: Optional[Mapping[str, str]], allow_internet_access: Optional[bool],
           network: Optional[Mapping[str, Any]], limits: Any, cancel: Optional[CancelToken] = None) -> Tuple[Client, str]:
    for k in CREATE_REFUSED:
        if opts.get(k) is not None:  # type: ignore[misc]
            raise ex.InvalidArgumentException(f"{k} is not supported by this engine")
    opts = {k: v for k, v in opts.items() if k not in CREATE_REFUSED}  # type: ignore[assignment]
    c = client_for(opts, template)
    lim = proto.limits_params(limits) or {}
    lim.update(_egress(allow_internet_access, network) or {})
    params: Dict[str, Any] = {"name": "e2b-" + uuid.uuid4().hex, "limits": lim or None,
                              "timeout_seconds": _seconds(timeout) if timeout is not None else None,
                              "env": dict(envs) if envs is not None else None,
                              "metadata": dict(metadata) if metadata is not None else None}
    try:
        return c, c._call("create", params, cancel)["id"]
    except SandboxError as e:
        fail(e, "create")


def info(c: Client, sid: str, cancel: Optional[CancelToken] = None) -> SandboxInfo:
    try:
        i = c.info(sid, cancel=cancel)
    except SandboxError as e:
        fail(e, f"sandbox {sid}")
    return SandboxInfo(sandbox_id=i.id, template_id=i.template_id, started_at=i.started_at, end_at=i.end_at,
                       state=SandboxState(i.state), sandbox_name=i.name)


def connect(c: Client, sid: str, timeout: Optional[int], cancel: Optional[CancelToken] = None) -> None:
    """Resume a paused sandbox (E2B's connect); a timeout only ever extends the end."""
    try:
        if c.resume(sid, cancel=cancel) == "gone":
            raise ex.SandboxNotFoundException(f"sandbox {sid} not found")
        if timeout is not None:
            secs = _seconds(timeout)
            end = c.info(sid, cancel=cancel).end_at
            if end is None or end.timestamp() < datetime.now(timezone.utc).timestamp() + secs:
                c._call("set_timeout", {"id": sid, "timeout_seconds": secs}, cancel)
    except SandboxError as e:
        fail(e, f"sandbox {sid}")


def kill(c: Client, sid: str, cancel: Optional[CancelToken] = None) -> bool:
    """True: killed; False: there was no such sandbox."""
    try:
        c.info(sid, cancel=cancel)
    except SandboxError as e:
        if e.code == "gone":
            return False
        fail(e, f"sandbox {sid}")
    try:
        c.destroy(sid, cancel=cancel)
    except SandboxError as e:
        fail(e, f"sandbox {sid}")
    return True


def pause(c: Client, sid: str, cancel: Optional[CancelToken] = None) -> bool:
    """True: paused now; False: it was paused already."""
    if info(c, sid, cancel).state == SandboxState.PAUSED:
        return False
    try:
        c.suspend(sid, cancel=cancel)
    except SandboxError as e:
        fail(e, f"sandbox {sid}")
    return True


def set_timeout(c: Client, sid: str, timeout: int, cancel: Optional[CancelToken] = None) -> None:
    try:
        c._call("set_timeout", {"id": sid, "timeout_seconds": _seconds(timeout)}, cancel)
    except SandboxError as e:
        fail(e, f"sandbox {sid}")


def is_running(c: Client, sid: str, cancel: Optional[CancelToken] = None) -> bool:
    try:
        return c.info(sid, cancel=cancel).state == "running"
    except SandboxError as e:
        if e.code == "gone":
            return False
        fail(e, f"sandbox {sid}")


def get_host(c: Client, sid: str, port: int, cancel: Optional[CancelToken] = None) -> str:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ex.InvalidArgumentException(f"port must be from 1 to 65535, not {port!r}")
    try:
        return c._call("host", {"id": sid, "port": port}, cancel)["hostname"]
    except SandboxError as e:
        fail(e, f"sandbox {sid}")


def _unix(t: Optional[datetime], what: str) -> Optional[int]:
    if t is None:
        return None
    if not isinstance(t, datetime):
        raise ex.InvalidArgumentException(f"{what} must be a datetime")
    return int(t.timestamp())


def get_metrics(c: Client, sid: str, start: Optional[datetime], end: Optional[datetime],
                cancel: Optional[CancelToken] = None) -> List[SandboxMetrics]:
    try:
        r = c._call("metrics", {"id": sid, "start": _unix(start, "start"), "end": _unix(end, "end")}, cancel)
    except SandboxError as e:
        fail(e, f"sandbox {sid}")
    out = []
    for m in r.get("metrics", []):
        t = proto.parse_time(m.get("timestamp"))
        if t is None:
            t = datetime.fromtimestamp(int(m["timestamp_unix"]), timezone.utc)
        out.append(SandboxMetrics(cpu_count=int(m["cpu_count"]), cpu_used_pct=float(m["cpu_used_pct"]),
                                  disk_total=int(m["disk_total"]), disk_used=int(m["disk_used"]),
                                  mem_total=int(m["mem_total"]), mem_used=int(m["mem_used"]),
                                  mem_cache=int(m["mem_cache"]), timestamp=t))
    return out


def list_all(c: Client, query: Optional[SandboxQuery], order: Optional[str],
             cancel: Optional[CancelToken] = None) -> List[SandboxInfo]:
    """Every sandbox of the team the query keeps (E2B's list, one engine call: it follows E2B's pages)."""
    states = None
    if query is not None:
        if query.metadata:
            raise ex.InvalidArgumentException("SandboxQuery.metadata is not supported: the engine's list "
                                              "does not report metadata")
        if query.state:
            states = {SandboxState(s) for s in query.state}
    if order not in (None, "asc", "desc"):
        raise ex.InvalidArgumentException(f"Invalid order {order!r}, expected 'asc' or 'desc'")
    state = "any" if states is None or len(states) == 2 else next(iter(states)).value
    try:
        rows = c._call("list", {"state": state, "all": True}, cancel)
    except SandboxError as e:
        fail(e, "list")
    items = []
    for r in rows:
        i = proto.info_result(r)
        items.append(SandboxInfo(sandbox_id=i.id, template_id=i.template_id, started_at=i.started_at,
                                 end_at=i.end_at, state=SandboxState(i.state), sandbox_name=i.name))
    if query is not None and query.template:  # template IDs only: the list has no aliases
        items = [i for i in items if i.template_id == query.template]
    if query is not None and query.started_after is not None:
        after = query.started_after.astimezone(timezone.utc)
        items = [i for i in items if i.started_at is not None and i.started_at >= after]
    items.sort(key=lambda i: i.started_at or datetime.min.replace(tzinfo=timezone.utc),
               reverse=order != "asc")
    return items


class Pages:
    """The paging state of E2B's ``SandboxPaginator`` over one engine list:
    ``next_token`` is the offset of the next page."""

    def __init__(self, limit: Optional[int], next_token: Optional[str]) -> None:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ex.InvalidArgumentException(f"limit must be a positive integer, not {limit!r}")
        self.limit = limit or 100
        try:
            self.offset = int(next_token) if next_token else 0
        except ValueError:
            raise ex.InvalidArgumentException(f"invalid next_token {next_token!r}") from None
        self.items: Optional[List[SandboxInfo]] = None
        self.has_next = True
        self.next_token: Optional[str] = next_token

    def take(self) -> List[SandboxInfo]:
        assert self.items is not None
        page = self.items[self.offset:self.offset + self.limit]
        self.offset += len(page)
        self.has_next = self.offset < len(self.items)
        self.next_token = str(self.offset) if self.has_next else None
        return page


# ---- commands ----

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


# ---- files ----

def _file_type(t: Any) -> Optional[FileType]:
    return {"file": FileType.FILE, "dir": FileType.DIR, "symlink": FileType.SYMLINK}.get(t)


def _entry(r: Mapping[str, Any]) -> EntryInfo:
    return EntryInfo(name=r["name"], type=_file_type(r.get("type")), path=r["path"], size=int(r.get("size") or 0),
                     mode=int(r.get("mode") or 0), permissions=r.get("permissions") or "",
                     owner=r.get("owner") or "", group=r.get("group") or "",
                     modified_time=proto.parse_time(r.get("mtime")), symlink_target=r.get("symlink_target"))


def read(c: Client, sid: str, path: str, user: Optional[Username], max_bytes: Optional[int],
         cancel: Optional[CancelToken] = None) -> bytes:
    _no_user(user, "files.read")
    cap = READ_MAX_BYTES if max_bytes is None else max_bytes
    try:
        f = c.read_file(sid, path, max_bytes=cap, cancel=cancel)
    except SandboxError as e:
        fail(e, path)
    if f is None:
        e = path_info(c, sid, path, None, cancel)
        if e is not None and e.type == FileType.DIR:
            raise ex.InvalidArgumentException(f"{path} is a directory")
        raise ex.FileNotFoundException(f"{path}: no such file")
    if f.truncated and max_bytes is None:
        raise ex.SandboxException(f"{path} is longer than {cap} bytes; pass max_bytes for its first bytes")
    return f.data


def data_of(data: Any) -> Union[str, bytes]:
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if hasattr(data, "read"):
        d = data.read()
        return d if isinstance(d, (str, bytes)) else bytes(d)
    raise ex.InvalidArgumentException(f"data must be str, bytes or a file object, not {type(data).__name__}")


def write_many(c: Client, sid: str, files: List[Any], user: Optional[Username],
               cancel: Optional[CancelToken] = None) -> List[WriteInfo]:
    """serve's write_files: every file in one upload, in order, as ``user``
    (docs/files.md "Many files in one call"); the first failure is raised, the
    files before it stay written."""
    if not files:
        return []
    entries = []
    for f in files:
        if not isinstance(f, Mapping) or not isinstance(f.get("path"), str) or "data" not in f:
            raise ex.InvalidArgumentException("each file must be a mapping with a path and data")
        entries.append({"path": f["path"], **proto.data_params(data_of(f["data"]))})
    try:
        c._call("write_files", {"id": sid, "files": entries, "user": _user(user)}, cancel)
    except SandboxError as e:
        fail(e, "write_files")
    return [WriteInfo(name=posixpath.basename(e["path"]), type=FileType.FILE, path=e["path"]) for e in entries]


def write(c: Client, sid: str, path: str, data: Any, user: Optional[Username],
          cancel: Optional[CancelToken] = None) -> WriteInfo:
    if _user(user) is not None:  # as root: the many-files upload takes a user
        return write_many(c, sid, [{"path": path, "data": data}], user, cancel)[0]
    try:
        r = c._call("write_file", {"id": sid, "path": path, **proto.data_params(data_of(data))}, cancel)
    except SandboxError as e:
        fail(e, path)
    p = r.get("path", path)
    return WriteInfo(name=posixpath.basename(p), type=FileType.FILE, path=p)


def path_info(c: Client, sid: str, path: str, user: Optional[Username],
              cancel: Optional[CancelToken] = None) -> Optional[EntryInfo]:
    try:
        r = c._call("path_info", {"id": sid, "path": path, "user": _user(user)}, cancel)
    except SandboxError as e:
        fail(e, path)
    return None if r.get("exists") is False else _entry(r)


def get_info(c: Client, sid: str, path: str, user: Optional[Username], cancel: Optional[CancelToken] = None) -> EntryInfo:
    e = path_info(c, sid, path, user, cancel)
    if e is None:
        raise ex.FileNotFoundException(f"{path}: no such file or directory")
    return e


def list_names(c: Client, sid: str, path: str, cancel: Optional[CancelToken] = None) -> List[str]:
    try:
        entries = c.list_dir(sid, path, cancel=cancel)
    except SandboxError as e:
        fail(e, path)
    if entries is None:
        raise ex.FileNotFoundException(f"{path}: no such directory")
    return [posixpath.join(path, e.name) for e in entries]


def walk(c: Client, sid: str, path: str, depth: Optional[int], user: Optional[Username],
         cancel: Optional[CancelToken] = None) -> Iterator[EntryInfo]:
    """The entries under ``path`` to ``depth`` levels (E2B's list), by name, a directory before its content."""
    if depth is None:
        depth = 1
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ex.InvalidArgumentException(f"depth must be an integer >= 1, not {depth!r}")
    for p in list_names(c, sid, path, cancel):
        e = path_info(c, sid, p, user, cancel)
        if e is None:  # removed meanwhile
            continue
        yield e
        if depth > 1 and e.type == FileType.DIR:
            yield from walk(c, sid, p, depth - 1, user, cancel)


def remove(c: Client, sid: str, path: str, user: Optional[Username], cancel: Optional[CancelToken] = None) -> None:
    try:
        c._call("remove", {"id": sid, "path": path, "user": _user(user)}, cancel)
    except SandboxError as e:
        fail(e, path)


def make_dir(c: Client, sid: str, path: str, user: Optional[Username], cancel: Optional[CancelToken] = None) -> bool:
    try:
        return bool(c._call("make_dir", {"id": sid, "path": path, "user": _user(user)}, cancel)["created"])
    except SandboxError as e:
        fail(e, path)


def rename(c: Client, sid: str, old: str, new: str, user: Optional[Username],
           cancel: Optional[CancelToken] = None) -> EntryInfo:
    try:
        r = c._call("rename", {"id": sid, "from": old, "to": new, "user": _user(user)}, cancel)
    except SandboxError as e:
        fail(e, old)
    if r.get("exists") is False:
        raise ex.FileNotFoundException(f"{old}: no such file or directory")
    return _entry(r)


# ---- pty (serve's pty_* calls: docs/pty.md) ----

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


# ---- watch (serve's watch: docs/watch.md) ----

def watch_params(sid: str, path: str, recursive: bool, user: Optional[Username]) -> Dict[str, Any]:
    return {"id": sid, "path": path, "recursive": True if recursive else None, "user": _user(user)}


def watch_notify(on_started: Any, on_event: Any) -> Any:
    """serve's watch notifications: ``watch_started`` once, then each ``watch_event``."""
    def notify(method: str, params: Mapping[str, Any]) -> None:
        if method == "watch_started":
            on_started()
        elif method == "watch_event":
            try:
                kind = FilesystemEventType(params.get("op"))
            except ValueError:  # an operation envd may add later
                return
            on_event(FilesystemEvent(name=proto.bytes_of(params, "name").decode("utf-8", "replace"), type=kind))
    return notify


def watch(c: Client, params: Dict[str, Any], notify: Any, cancel: Optional[CancelToken] = None) -> None:
    """The watch call: returns when it was cancelled (stopped); a stream that ended is its error."""
    try:
        c._call("watch", params, cancel, notify)
    except SandboxError as e:
        if e.code == "aborted":
            return
        if "no such directory" in e.message:  # docs/watch.md "Errors"
            raise ex.FileNotFoundException(f"{params['path']}: no such directory") from e
        fail(e, f"watch {params['path']}")
