"""sandbox_e2b: sandbox@1 on E2B for Python, over the sandbox-e2b C engine
(``sandbox-e2b serve``, JSON-RPC over stdio). Standard library only.

    from sandbox_e2b import Client
    with Client({"apiKey": "e2b_...", "template": "capybara-sandbox"}) as c:
        sid = c.create("conv-42")
        print(c.exec(sid, "echo hi").stdout)

E2B's own shape, ``Sandbox`` / ``AsyncSandbox`` (``from e2b import Sandbox``
becomes ``from sandbox_e2b import Sandbox``; ``sandbox_e2b.e2b`` has every name):

    from sandbox_e2b import Sandbox
    with Sandbox.create() as sbx:
        print(sbx.commands.run("echo hi").stdout)
"""
from .aio import AsyncClient, AsyncProcess
from .client import CancelToken, Client, Process
from .errors import BridgeError, CallbackError, SandboxError, SandboxGone
from .types import DirEntry, ExecResult, FileContent, Limits, ProcessInfo, SandboxInfo, Stat
from .e2b import (AsyncCommandHandle, AsyncSandbox, AsyncSandboxPaginator, AuthenticationException,
                  CommandExitException, CommandHandle, CommandResult, EntryInfo, FileNotFoundException, FileType,
                  InvalidArgumentException, NotEnoughSpaceException, NotFoundException, RateLimitException, Sandbox,
                  SandboxException, SandboxMetrics, SandboxNotFoundException, SandboxPaginator,
                  SandboxPausedException, SandboxQuery, SandboxState, TemplateException, TimeoutException,
                  WriteInfo, PtySize)

__all__ = ["AsyncClient", "AsyncProcess", "BridgeError", "CallbackError", "CancelToken", "Client", "DirEntry",
           "ExecResult", "FileContent", "Limits", "Process", "ProcessInfo", "SandboxError",
           "SandboxGone", "SandboxInfo", "Stat",
           # E2B's shape (sandbox_e2b.e2b has every name, SandboxInfo and ProcessInfo included)
           "AsyncCommandHandle", "AsyncSandbox", "AsyncSandboxPaginator", "AuthenticationException",
           "CommandExitException", "CommandHandle", "CommandResult", "EntryInfo", "FileNotFoundException",
           "FileType", "InvalidArgumentException", "NotEnoughSpaceException", "NotFoundException",
           "RateLimitException", "Sandbox", "SandboxException", "SandboxMetrics", "SandboxNotFoundException",
           "SandboxPaginator", "SandboxPausedException", "SandboxQuery", "SandboxState", "TemplateException",
           "TimeoutException", "WriteInfo", "PtySize"]
__version__ = "0.1.0"
