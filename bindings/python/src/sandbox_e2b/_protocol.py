"""The wire of ``sandbox-e2b serve`` without I/O: encoding requests, decoding
lines, mapping errors and results (bindings/protocol/methods.md)."""
from __future__ import annotations

import base64
import codecs
import inspect
import json
import os
import re
import shutil
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from .errors import CallbackError, SandboxError, SandboxGone
from .types import DirEntry, ExecResult, FileContent, Limits, ProcessInfo, SandboxInfo, Stat

BIN_ENV = "SANDBOX_E2B_BIN"
# The engine scripts/package.sh puts in the wheel: _engine/bin/sandbox-e2b (its
# shared libraries in _engine/lib, found through the binary's $ORIGIN RUNPATH).
BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_engine", "bin", "sandbox-e2b")


def find_engine(env: Optional[Mapping[str, str]] = None,
                bundled: str = BUNDLED) -> "tuple[str, str]":
    """(path, where): SANDBOX_E2B_BIN, else ``sandbox-e2b`` on PATH, else the
    engine bundled in the package; where is "SANDBOX_E2B_BIN", "PATH" or
    "bundled"."""
    env = os.environ if env is None else env
    if env.get(BIN_ENV):
        return env[BIN_ENV], BIN_ENV
    found = shutil.which("sandbox-e2b", path=env.get("PATH"))
    if found:
        return found, "PATH"
    if os.access(bundled, os.X_OK):
        return bundled, "bundled"
    raise SandboxError(
        "sandbox-e2b not found: set SANDBOX_E2B_BIN to the path of the sandbox-e2b "
        "binary, or put it on PATH (this package has no bundled engine)",
        code="bridge",
    )


def find_binary(env: Optional[Mapping[str, str]] = None, bundled: str = BUNDLED) -> str:
    """SANDBOX_E2B_BIN, else ``sandbox-e2b`` on PATH, else the bundled engine."""
    return find_engine(env, bundled)[0]


def encode(msg: Dict[str, Any]) -> bytes:
    return (json.dumps(msg, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def request(id: int, method: str, params: Dict[str, Any]) -> bytes:
    clean = {k: v for k, v in params.items() if v is not None}
    return encode({"jsonrpc": "2.0", "id": id, "method": method, "params": clean})


def cancel(id: int) -> bytes:
    return encode({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}})


def decode(line: bytes) -> Optional[Dict[str, Any]]:
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


def not_configured_message(data: Mapping[str, Any], serve_message: str) -> str:
    """serve's -32001 says what a JSON-RPC client sends; say what a package user does, from its
    data (bindings/protocol/methods.md): config_error, why the config serve found in the
    environment was refused; config_vars, the variables behind that config, or those a config
    needs when there was none (the engine's rule: the package keeps no list of its own). An
    engine that sends no config_vars: its own message."""
    names = data.get("config_vars")
    if not isinstance(names, list) or not names or not all(isinstance(v, str) for v in names):
        return serve_message
    refused = data.get("config_error")
    if isinstance(refused, str) and refused:
        return ("no deployment config: the one from the environment was refused (" + refused + "); pass one "
                "to Client(config) or fix " + " / ".join(names) + " (README \"Configuration\")")
    return ("no deployment config: pass one to Client(config) ({\"apiKey\": ..., \"template\": ...}) "
            "or set " + " and ".join(names) + " (README \"Configuration\")")


def error_from(err: Any, error_codes: Optional[Mapping[str, Any]] = None) -> SandboxError:
    """A JSON-RPC error object as a SandboxError. An error without data is named by serve's
    own table, initialize's ``error_codes`` ({"-32602": "invalid_params", ...}). A
    not_configured error's ``e2b_code`` is the refused config's reason (config_template, ...)."""
    err = err if isinstance(err, dict) else {}
    data = err.get("data") if isinstance(err.get("data"), dict) else {}
    message = err.get("message") if isinstance(err.get("message"), str) else "sandbox-e2b serve failed"
    code = data.get("code")
    e2b_code = data.get("e2b_code")
    if code == "not_configured":
        message = not_configured_message(data, message)
        e2b_code = data.get("config_reason")
    if code == "gone":
        return SandboxGone(message, code="gone", http_status=data.get("http_status"),
                           e2b_code=data.get("e2b_code"), rpc_code=err.get("code"))
    if code is None:
        code = (error_codes or {}).get(str(err.get("code")), "internal")
    return SandboxError(message, code=code, http_status=data.get("http_status"),
                        e2b_code=e2b_code, rpc_code=err.get("code"))


def bytes_of(obj: Mapping[str, Any], key: str) -> bytes:
    b64 = obj.get(key + "_b64")
    if isinstance(b64, str):
        return base64.b64decode(b64)
    value = obj.get(key)
    return value.encode("utf-8") if isinstance(value, str) else b""


def initialize_params(config: Optional[Mapping[str, Any]], envd_url: Optional[str],
                      log_level: str = "info") -> Dict[str, Any]:
    """initialize's params. The keys ``config`` leaves out are serve's to fill from its E2B_*
    variables (README "Configuration"), as for every front end: the child gets the
    environment as it is (child_env)."""
    p: Dict[str, Any] = {"log": "notify", "log_level": log_level}
    if config is not None:
        p["config"] = dict(config)
    if envd_url is not None:
        p["envd_url"] = envd_url
    return p


def limits_params(limits: Optional[Union[Limits, Mapping[str, Any]]]) -> Optional[Dict[str, Any]]:
    if limits is None:
        return None
    if isinstance(limits, Limits):
        return {"cpu": limits.cpu, "memory_mb": limits.memory_mb, "disk_mb": limits.disk_mb,
                "egress": limits.egress, "allow_hosts": list(limits.allow_hosts)}
    return dict(limits)


def data_params(data: Union[bytes, bytearray, memoryview, str]) -> Dict[str, Any]:
    if isinstance(data, str):
        return {"data": data}
    return {"data_b64": base64.b64encode(bytes(data)).decode("ascii")}


def exec_params(id: str, command: str, cwd: Optional[str], env: Optional[Mapping[str, str]],
                timeout_ms: Optional[int], max_output_bytes: Optional[int], tag: Optional[str],
                stream: bool, stdin: Optional[Union[bytes, bytearray, memoryview, str]] = None
                ) -> Dict[str, Any]:
    p = {"id": id, "command": command, "cwd": cwd, "env": dict(env) if env is not None else None,
         "timeout_ms": timeout_ms, "max_output_bytes": max_output_bytes, "tag": tag,
         "stream": True if stream else None}
    if stdin is not None:
        d = data_params(stdin)
        p["stdin"], p["stdin_b64"] = d.get("data"), d.get("data_b64")
    return p


def exec_result(r: Mapping[str, Any]) -> ExecResult:
    out, err = bytes_of(r, "stdout"), bytes_of(r, "stderr")
    return ExecResult(exit_code=r.get("exit_code"), stdout=out.decode("utf-8", "replace"),
                      stderr=err.decode("utf-8", "replace"), truncated=bool(r.get("truncated")),
                      timed_out=bool(r.get("timed_out")), aborted=bool(r.get("aborted")),
                      stdout_bytes=out, stderr_bytes=err)


def file_result(r: Mapping[str, Any]) -> Optional[FileContent]:
    if not r.get("exists"):
        return None
    return FileContent(data=bytes_of(r, "content"), truncated=bool(r.get("truncated")))


def stat_result(r: Mapping[str, Any]) -> Optional[Stat]:
    if not r.get("exists"):
        return None
    return Stat(size=int(r["size"]), is_dir=bool(r["is_dir"]))


OutputCallback = Callable[[str], Any]


class OutputRouter:
    """Turns ``output`` notifications of one exec into text callbacks, never
    splitting a UTF-8 character between two calls. A callback that raises is
    not called again (neither is the other stream's); ``check`` then raises a
    ``CallbackError`` holding the result, the callback's exception as its cause.
    A sync client cannot await: a callback returning an awaitable is that error."""

    def __init__(self, on_stdout: Optional[OutputCallback], on_stderr: Optional[OutputCallback]):
        self.cbs = {"stdout": on_stdout, "stderr": on_stderr}
        self.decs = {k: codecs.getincrementaldecoder("utf-8")("replace") for k in self.cbs}
        self.error: Optional[BaseException] = None

    @property
    def wanted(self) -> bool:
        return any(self.cbs.values())

    def deliver(self, stream: str, cb: OutputCallback, text: str) -> None:
        if self.error is not None:
            return
        try:
            r = cb(text)
            if inspect.isawaitable(r):
                if inspect.iscoroutine(r):
                    r.close()  # never awaited: no RuntimeWarning
                raise TypeError(f"on_{stream} returned an awaitable: the sync Client cannot await "
                                "it; pass async handlers to AsyncClient")
        except Exception as e:  # surfaced by check(), after the command ended
            self.error = e

    def __call__(self, method: str, params: Mapping[str, Any]) -> None:
        if method != "output":
            return
        stream = "stderr" if params.get("stream") == "stderr" else "stdout"
        cb = self.cbs[stream]
        if cb:
            text = self.decs[stream].decode(bytes_of(params, "data"))
            if text:
                self.deliver(stream, cb, text)

    def finish(self) -> None:
        for k, cb in self.cbs.items():
            if cb:
                text = self.decs[k].decode(b"", final=True)
                if text:
                    self.deliver(k, cb, text)

    def check(self, result: ExecResult) -> ExecResult:
        if self.error is not None:
            raise CallbackError(f"an output callback raised {type(self.error).__name__}: {self.error} "
                                "(the command ran to its end; its result is on .result)",
                                result) from self.error
        return result


def paused_error(paused: "set", id: str, e: SandboxError, what: str) -> SandboxError:
    """A command stream of a sandbox this client suspended that broke (network /
    protocol) broke because of the pause: code "paused", not curl's words."""
    if e.code in ("network", "protocol") and id in paused:
        return SandboxError(f"sandbox {id} was paused while {what} ran; it goes on after a resume: "
                            "resume(id), then attach(id, pid) for the rest of its output and its "
                            "exit code", code="paused", rpc_code=e.rpc_code)
    return e


def wait_params(id: str, pid: int, max_output_bytes: Optional[int], stream: bool) -> Dict[str, Any]:
    p: Dict[str, Any] = {"id": id, "pid": pid, "max_output_bytes": max_output_bytes}
    if stream:
        p["stream"] = True  # a wait that attaches anew streams the rest
    return p


def check_pid(pid: Any) -> int:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        raise SandboxError("attach: pid must be a positive integer", code="invalid")
    return pid


_RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?"
                      r"(?:([Zz])|([+-])(\d\d):(\d\d))")


def parse_time(v: Any) -> Optional[datetime]:
    """An RFC 3339 time of a result as an aware ``datetime`` in UTC (fractions
    past microseconds cut, as E2B's SDK does); None stays None. Python 3.9's
    ``fromisoformat`` takes neither ``Z`` nor nine digits, hence the pattern."""
    if v is None:
        return None
    m = _RFC3339.fullmatch(v) if isinstance(v, str) else None
    if m is None:
        raise SandboxError(f"serve sent a time that is not RFC 3339: {str(v)[:64]!r}", code="protocol")
    y, mo, d, h, mi, sec = (int(x) for x in m.group(1, 2, 3, 4, 5, 6))
    us = int((m.group(7) or "0")[:6].ljust(6, "0"))
    off = timedelta(0)
    if m.group(9):
        off = timedelta(hours=int(m.group(10)), minutes=int(m.group(11)))
        if m.group(9) == "-":
            off = -off
    try:
        t = datetime(y, mo, d, h, mi, sec, us, tzinfo=timezone(off))
    except ValueError:
        raise SandboxError(f"serve sent a time that is not RFC 3339: {v[:64]!r}", code="protocol") from None
    return t.astimezone(timezone.utc)


def info_result(r: Mapping[str, Any]) -> SandboxInfo:
    return SandboxInfo(id=r["id"], name=r.get("name"), state=r.get("state", ""),
                       template_id=r.get("template_id", ""), started_at=parse_time(r.get("started_at")),
                       end_at=parse_time(r.get("end_at")))


def dir_result(r: Mapping[str, Any]) -> Optional[List[DirEntry]]:
    if r.get("exists") is False:
        return None
    return [DirEntry(name=bytes_of(e, "name").decode("utf-8", "replace"), type=e["type"],
                     size=int(e["size"])) for e in r.get("entries", [])]


def ps_result(r: Mapping[str, Any]) -> List[ProcessInfo]:
    return [ProcessInfo(pid=int(p["pid"]), tag=p.get("tag"), command=p.get("command"),
                        cmd=p.get("cmd", ""), args=list(p.get("args", [])), cwd=p.get("cwd"))
            for p in r.get("processes", [])]


def start_params(id: str, command: str, cwd: Optional[str], env: Optional[Mapping[str, str]],
                 timeout_ms: Optional[int], max_output_bytes: Optional[int], tag: Optional[str],
                 stream: bool, stdin_open: bool) -> Dict[str, Any]:
    p = exec_params(id, command, cwd, env, timeout_ms, max_output_bytes, tag, stream)
    p["background"] = True
    p["stdin_open"] = True if stdin_open else None
    return p


def child_env(env: Optional[Mapping[str, str]]) -> Optional[Dict[str, str]]:
    """The serve child's environment: ``env`` as it is (None: this process's)."""
    return dict(env) if env is not None else None


def serve_args(has_config: bool) -> List[str]:
    """serve's options: with a config of its own the child reads none of the CLI's config
    sources at start (initialize would replace them, after a warning if invalid)."""
    return ["--config-from-initialize"] if has_config else []
