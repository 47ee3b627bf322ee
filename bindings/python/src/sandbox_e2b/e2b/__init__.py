"""E2B's Python SDK shape over the sandbox-e2b engine: ``from sandbox_e2b.e2b
import ...`` takes every name of ``from e2b import ...`` that this package has
(``Sandbox``, ``AsyncSandbox``, their handles, data and exceptions).
``sandbox_e2b`` itself exports them too, except ``SandboxInfo`` and
``ProcessInfo``, which there are the ``Client`` API's. What differs from E2B:
bindings/MIGRATING.md, "Python"."""
from ._types import (ApiParams, EntryInfo, FilesystemEvent, FilesystemEventType, FileType, OutputHandler, ProcessInfo, PtyOutput, PtySize, SandboxInfo,
                     SandboxListOrder,
                     SandboxMetrics, SandboxQuery, SandboxState, Username, WriteEntry, WriteInfo)
from .exceptions import (AuthenticationException, CommandExitException, CommandResult, FileNotFoundException,
                         InvalidArgumentException, NotEnoughSpaceException, NotFoundException, RateLimitException,
                         SandboxException, SandboxNotFoundException, SandboxPausedException, TemplateException,
                         TimeoutException)
from .sandbox_async import AsyncCommandHandle, AsyncSandbox, AsyncSandboxPaginator, AsyncWatchHandle
from .sandbox_sync import CommandHandle, Sandbox, SandboxPaginator, WatchHandle

Stdout = str
Stderr = str

__all__ = ["ApiParams", "AsyncCommandHandle", "AsyncSandbox", "AsyncSandboxPaginator", "AsyncWatchHandle", "AuthenticationException",
           "CommandExitException", "CommandHandle", "CommandResult", "EntryInfo", "FileNotFoundException",
           "FileType", "FilesystemEvent", "FilesystemEventType", "InvalidArgumentException", "NotEnoughSpaceException", "NotFoundException", "OutputHandler",
           "ProcessInfo", "PtyOutput", "PtySize", "RateLimitException", "Sandbox", "SandboxException", "SandboxInfo", "SandboxListOrder",
           "SandboxMetrics", "SandboxNotFoundException", "SandboxPaginator", "SandboxPausedException",
           "SandboxQuery", "SandboxState", "Stderr", "Stdout", "TemplateException", "TimeoutException", "Username",
           "WatchHandle", "WriteEntry", "WriteInfo"]
