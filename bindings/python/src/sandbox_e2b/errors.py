"""Exceptions of sandbox_e2b.

``SandboxGone``: the sandbox no longer exists (create a new one).
``SandboxError``: any other failure, with ``code`` (the library's name:
"invalid", "timeout", "http", "network", "aborted", ...), ``http_status`` and
``e2b_code`` when the server answered. ``BridgeError``: the ``sandbox-e2b
serve`` child died while the call was in flight (the next call starts a new
one). ``CallbackError``: an ``on_stdout``/``on_stderr`` handler raised; the
command ran to its end, its result is on ``.result``, the handler's exception
is ``__cause__``. Messages never contain the API key or an access token.
"""
from __future__ import annotations

from typing import Any, Optional


class SandboxError(Exception):
    """A failed call: ``code``, ``http_status``, ``e2b_code``, ``rpc_code``."""

    def __init__(
        self,
        message: str,
        code: Optional[str] = None,
        http_status: Optional[int] = None,
        e2b_code: Optional[str] = None,
        rpc_code: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.http_status = http_status
        self.e2b_code = e2b_code
        self.rpc_code = rpc_code


class SandboxGone(SandboxError):
    """The sandbox no longer exists (E2B answered 404, or gave no access token)."""


class BridgeError(SandboxError):
    """The sandbox-e2b serve child exited while the call was in flight."""


class CallbackError(SandboxError):
    """An output handler raised (code "callback"): ``result`` is the command's
    ``ExecResult`` (all its output), ``__cause__`` the handler's exception."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message, code="callback")
        self.result = result
