"""What ``Sandbox`` and ``AsyncSandbox`` share, as E2B's SDK shares its
``SandboxBase`` (``e2b/sandbox/main.py``) between its two forms: the
sandbox's id and ``Client``, its ``repr``, ``get_host``, the parts
(``commands``, ``files``, ``pty``) and the paginator's state. Every step
they take is in ``_ops`` (blocking); a form only says how it calls it
(directly, or awaited on a thread) and what it hands back, so what differs
between the two files is what has to."""
from __future__ import annotations

from typing import Any, Dict, Optional

from ..client import Client
from . import _ops as ops
from . import exceptions as ex
from ._types import ApiParams, SandboxListOrder, SandboxQuery


class SandboxBase:
    """A sandbox by id over its engine ``Client``; the forms set the classes
    of their parts and the name their ``repr`` shows."""

    _Commands: Any
    _Filesystem: Any
    _Pty: Any
    _name = "Sandbox"

    def __init__(self, *, sandbox_id: str, client: Client) -> None:
        """Use ``create()`` or ``connect()``."""
        self._sandbox_id = sandbox_id
        self._client = client
        self._commands = self._Commands(self)
        self._filesystem = self._Filesystem(self)
        self._pty = self._Pty(self)

    @property
    def sandbox_id(self) -> str:
        return self._sandbox_id

    def __repr__(self) -> str:
        return f"{self._name}(sandbox_id={self._sandbox_id!r})"

    @staticmethod
    def _client_of(opts: Dict[str, Any]) -> Client:
        return ops.client_for(ApiParams(**opts))

    def get_host(self, port: int) -> str:
        """The host name that reaches ``port`` in the sandbox from outside (not
        a coroutine in either form, as in E2B; one short engine call)."""
        return ops.get_host(self._client, self._sandbox_id, port)


class SandboxPart:
    """``sbx.commands``, ``sbx.files``, ``sbx.pty`` of either form: the
    sandbox and its ``Client``."""

    def __init__(self, sandbox: Any) -> None:
        self._sbx = sandbox

    @property
    def _c(self) -> Client:
        return self._sbx._client


class PaginatorBase:
    """E2B's paginator state over ``ops.Pages``: the engine fetches the whole
    list (every E2B page) on the first ``next_items`` and pages it by
    ``limit`` (default 100)."""

    def __init__(self, client: Client, query: Optional[SandboxQuery], limit: Optional[int],
                 next_token: Optional[str], order: Optional[SandboxListOrder]) -> None:
        self._client, self.query, self.order = client, query, order
        self._pages = ops.Pages(limit, next_token)
        self.limit = limit

    @property
    def has_next(self) -> bool:
        return self._pages.has_next

    @property
    def next_token(self) -> Optional[str]:
        return self._pages.next_token

    def _check_next(self) -> None:
        if not self.has_next:
            raise ex.SandboxException("No more items to fetch")


def check_read_format(format: str) -> None:
    if format not in ("text", "bytes", "stream"):
        raise ex.InvalidArgumentException(f"format must be 'text', 'bytes' or 'stream', not {format!r}")


def read_as(data: bytes, format: str) -> Any:
    """``files.read``'s text (UTF-8, invalid bytes as U+FFFD) or ``bytearray``;
    None for ``"stream"``, which each form makes its own iterator of."""
    if format == "text":
        return data.decode("utf-8", "replace")
    if format == "bytes":
        return bytearray(data)
    return None
