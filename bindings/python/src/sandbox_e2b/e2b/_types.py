"""The data of E2B's Python SDK (``e2b``) that ``Sandbox`` and ``AsyncSandbox``
return, under E2B's names, with what this engine knows. Fields E2B has and the
engine does not report are left out, not filled with made-up values
(bindings/MIGRATING.md, "Python")."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Callable, Dict, List, Literal, Optional, TypedDict, Union

Username = Literal["root", "user"]
"""The user a command or a file call runs as: ``"user"`` (the default: the
sandbox user, named ``sandbox`` here) or ``"root"``."""

OutputHandler = Callable[[str], Any]
"""An ``on_stdout`` / ``on_stderr`` handler: gets text, never a split UTF-8
character. ``AsyncSandbox`` awaits one that returns an awaitable."""


PtyOutput = bytes
"""A terminal's output: bytes, as the terminal wrote them."""


@dataclass
class PtySize:
    """A terminal's size (E2B's ``PtySize``)."""

    rows: int
    cols: int


class SandboxState(str, Enum):
    """A sandbox's state (E2B's ``SandboxState``)."""

    PAUSED = "paused"
    RUNNING = "running"

    def __str__(self) -> str:
        return str(self.value)


@dataclass
class SandboxInfo:
    """A sandbox (E2B's ``SandboxInfo``, with what the engine reports: no
    ``metadata``, ``sandbox_domain``, ``cpu_count``, ``memory_mb``,
    ``envd_version``). ``sandbox_name``: the name the engine tags its
    sandboxes with (``Sandbox.create`` gives each a unique one), None for a
    sandbox made elsewhere. Times are aware ``datetime`` objects in UTC."""

    sandbox_id: str
    template_id: str
    started_at: Optional[datetime]
    end_at: Optional[datetime]
    state: SandboxState
    sandbox_name: Optional[str] = None


@dataclass
class SandboxQuery:
    """Query of ``Sandbox.list`` (E2B's ``SandboxQuery``). ``state`` and
    ``started_after`` are applied; ``metadata`` and ``template`` are refused
    (``InvalidArgumentException``): the engine's list does not report them."""

    metadata: Optional[Dict[str, str]] = None
    state: Optional[List[SandboxState]] = None
    started_after: Optional[datetime] = None
    template: Optional[str] = None


SandboxListOrder = Literal["asc", "desc"]


@dataclass
class SandboxMetrics:
    """One sample of a sandbox's usage (E2B's ``SandboxMetrics``)."""

    cpu_count: int
    cpu_used_pct: float
    disk_total: int
    disk_used: int
    mem_total: int
    mem_used: int
    mem_cache: int
    timestamp: datetime


class FileType(Enum):
    """The type of a filesystem entry (E2B's ``FileType``)."""

    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"


@dataclass
class WriteInfo:
    """A written file (E2B's ``WriteInfo``, without ``metadata``: no xattrs here)."""

    name: str
    type: Optional[FileType]
    path: str


@dataclass
class EntryInfo(WriteInfo):
    """A filesystem entry (E2B's ``EntryInfo``); ``type`` None for a device,
    FIFO or socket. ``modified_time`` is an aware ``datetime`` in UTC."""

    size: int
    mode: int
    permissions: str
    owner: str
    group: str
    modified_time: Optional[datetime]
    symlink_target: Optional[str] = None


class FilesystemEventType(Enum):
    """What happened to an entry of a watched directory (E2B's ``FilesystemEventType``)."""

    CHMOD = "chmod"
    CREATE = "create"
    REMOVE = "remove"
    RENAME = "rename"
    WRITE = "write"


@dataclass
class FilesystemEvent:
    """One event of ``files.watch_dir`` (E2B's ``FilesystemEvent``, without
    ``entry``): ``name`` is the entry's path relative to the watched directory."""

    name: str
    type: FilesystemEventType


class WriteEntry(TypedDict):
    """One file of ``files.write_files``."""

    path: str
    data: Union[str, bytes, Any]


@dataclass
class ProcessInfo:
    """A running command (E2B's ``ProcessInfo``, without ``envs``: envd's list
    is not read for them). ``command``: ours, the shell text of a command this
    engine started, else None."""

    pid: int
    tag: Optional[str]
    cmd: str
    args: List[str]
    cwd: Optional[str]
    command: Optional[str] = None


class ApiParams(TypedDict, total=False):
    """Connection options of every ``Sandbox`` class method (E2B's
    ``ApiParams``, the ones this engine takes) and the engine's own."""

    api_key: Optional[str]
    """E2B API key; default ``E2B_API_KEY``."""
    domain: Optional[str]
    """E2B domain; default ``E2B_DOMAIN``, else ``e2b.app``."""
    api_url: Optional[str]
    """API URL; default ``E2B_API_URL``, else ``https://api.<domain>``."""
    sandbox_url: Optional[str]
    """envd address for every sandbox (fake-e2b, self-hosted); default
    ``SANDBOX_E2B_ENVD_URL``, else ``E2B_SANDBOX_URL``."""
    request_timeout: Optional[float]
    """Accepted for E2B's signatures and NOT applied: the engine bounds each
    request itself (60 s per call to E2B, per-call timeouts to envd)."""
    logger: Optional[Any]
    """The ``logging.Logger`` of the engine's log lines (default ``sandbox_e2b``)."""
    config: Optional[Dict[str, Any]]
    """Ours: the deployment config (``timeoutSeconds``, ``domainAllowlist``,
    ``allowOpenEgress``, ...), the keys above win over it."""
    bin: Optional[str]
    """Ours: the sandbox-e2b binary (default ``SANDBOX_E2B_BIN``, PATH, the bundled one)."""
    env: Optional[Dict[str, str]]
    """Ours: the environment of the engine child (default ``os.environ``)."""
    log_level: str
    """Ours: the lowest level of the engine's log lines (``"debug"`` .. ``"error"``)."""
