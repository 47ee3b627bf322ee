"""The engine connection of the E2B shape: one shared ``Client`` (one ``sandbox-e2b serve``
child) per connection options, the defaults, and the argument checks and failure mapping
every step uses."""
from __future__ import annotations

import atexit
import os
import threading
from typing import Any, Dict, Mapping, NoReturn, Optional, Tuple

from ...client import Client
from ...errors import SandboxError
from .. import exceptions as ex
from .._types import ApiParams, Username


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
