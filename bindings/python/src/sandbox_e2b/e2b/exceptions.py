"""E2B's exception classes (the names and hierarchy of the ``e2b`` Python
SDK's ``e2b.exceptions``), raised by ``Sandbox`` and ``AsyncSandbox``.

Each carries the engine's failure as ``__cause__`` (a ``SandboxError`` with
its ``code``) and as ``.code``. ``SandboxPausedException`` is ours: E2B has
no name for a command stream that a pause ended.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import SandboxError


class SandboxException(Exception):
    """Base class of every sandbox error (E2B's ``SandboxException``)."""

    code: Optional[str] = None
    """The engine's code name of the failure (``invalid``, ``gone``, ``http``, ...), when known."""


class TimeoutException(SandboxException):
    """A timeout: a command ran past its ``timeout`` (its process tree was
    killed), or a call to E2B or envd took too long."""


class InvalidArgumentException(SandboxException):
    """An invalid argument (a value out of range, an option this engine does not have)."""


class NotEnoughSpaceException(SandboxException):
    """The sandbox's disk is full."""


class NotFoundException(SandboxException):
    """A resource was not found (E2B deprecates it for the two below)."""


class FileNotFoundException(NotFoundException):
    """A file or directory is not in the sandbox."""


class SandboxNotFoundException(NotFoundException):
    """The sandbox does not exist (killed, timed out, or never was)."""


class AuthenticationException(Exception):
    """The API key was refused (as in E2B, not a ``SandboxException``)."""


class RateLimitException(SandboxException):
    """E2B's rate limit was hit (HTTP 429)."""


class TemplateException(SandboxException):
    """The template is not usable."""


class SandboxPausedException(SandboxException):
    """Ours: the sandbox was paused (by this process) while a command's stream
    was open. The command is frozen, not killed; after ``Sandbox.connect(id)``
    resumes it, ``handle.wait()`` (or ``commands.connect(pid).wait()``) gets the
    rest of its output and its exit code. ``code`` is ``"paused"`` (the Node
    package's ``SandboxError`` code for the same case)."""

    code: Optional[str] = "paused"


@dataclass
class CommandResult:
    """What a command did (E2B's ``CommandResult``); ``truncated`` is ours: the
    output went past ``max_output_bytes`` and was cut at a UTF-8 boundary."""

    stderr: str
    stdout: str
    exit_code: int
    error: Optional[str]
    truncated: bool = False


@dataclass
class CommandExitException(SandboxException, CommandResult):
    """A command exited with a non-zero code (or was killed: ``exit_code`` -1)."""

    def __str__(self) -> str:
        return f"Command exited with code {self.exit_code} and error:\n{self.stderr}"


def from_error(e: SandboxError, what: str = "") -> BaseException:
    """The E2B exception of an engine failure (its ``__cause__`` set by the caller's ``from``)."""
    status = e.http_status
    cls: type
    if e.code == "gone":
        cls = SandboxNotFoundException
    elif e.code == "paused":
        cls = SandboxPausedException
    elif e.code == "timeout":
        cls = TimeoutException
    elif e.code in ("invalid", "invalid_params"):
        cls = InvalidArgumentException
    elif status in (401, 403):
        cls = AuthenticationException
    elif status == 429:
        cls = RateLimitException
    elif status == 507:
        cls = NotEnoughSpaceException
    else:
        cls = SandboxException
    msg = f"{what}: {e.message}" if what else e.message
    err = cls(msg)
    err.code = e.code  # type: ignore[attr-defined]
    return err
