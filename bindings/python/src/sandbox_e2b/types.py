"""Plain data of sandbox_e2b: limits in, results out."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import List, Optional


@dataclass
class Limits:
    """Sandbox limits (validated; E2B fixes cpu and memory in the template)."""

    cpu: float = 1
    memory_mb: float = 2048
    disk_mb: float = 10240
    egress: str = "none"  # "none", "allowlist" or "open" (needs allowOpenEgress)
    allow_hosts: List[str] = field(default_factory=list)


@dataclass
class ExecResult:
    """What a command did. ``exit_code`` is None when it timed out, was
    aborted or was killed by an unnamed signal. ``stdout``/``stderr`` are text
    (invalid UTF-8 replaced by U+FFFD); ``stdout_bytes``/``stderr_bytes`` are
    the exact bytes."""

    exit_code: Optional[int]
    stdout: str
    stderr: str
    truncated: bool
    timed_out: bool
    aborted: bool
    stdout_bytes: bytes = b""
    stderr_bytes: bytes = b""


@dataclass
class FileContent:
    """The first bytes of a file; ``truncated`` when it is longer than max_bytes."""

    data: bytes
    truncated: bool


@dataclass
class Stat:
    size: int
    is_dir: bool


@dataclass
class SandboxInfo:
    """A sandbox of this deployment (list, info). Times are aware ``datetime``
    objects in UTC (as E2B's SDK gives), or None when unknown."""

    id: str
    name: Optional[str]
    state: str  # "running" or "paused"
    template_id: str
    started_at: Optional[datetime]
    end_at: Optional[datetime]


@dataclass
class DirEntry:
    name: str
    type: str  # "file", "dir", "symlink", "other"
    size: int


@dataclass
class ProcessInfo:
    """A running command (ps). ``command``: the shell text of a command this
    library started, else None."""

    pid: int
    tag: Optional[str]
    command: Optional[str]
    cmd: str
    args: List[str]
    cwd: Optional[str]
