"""The sandbox steps: create, info, connect, kill, pause, timeout, host, metrics, and the
list with its pages (E2B's SDK: sandbox/sandbox_api)."""
from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ... import _protocol as proto
from ...client import CancelToken, Client
from ...errors import SandboxError
from .. import exceptions as ex
from .._types import ApiParams, SandboxInfo, SandboxMetrics, SandboxQuery, SandboxState
from .connection import CREATE_REFUSED, _seconds, client_for, fail


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
