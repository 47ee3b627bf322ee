"""The sync transport: one ``sandbox-e2b serve`` child, a reader thread that
matches responses to calls by id, and a lock around writes. Blocking calls may
come from many threads at once (the server runs them concurrently)."""
from __future__ import annotations

import logging
import subprocess
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from . import _protocol as proto
from .errors import BridgeError

Notify = Callable[[str, Mapping[str, Any]], None]


class CancelToken:
    """Cancels the calls it is passed to, from any thread: ``token.cancel()``
    sends ``$/cancelRequest`` for each (an exec then returns ``aborted`` with
    its output so far, other calls raise SandboxError code "aborted")."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._hooks: List[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            hooks, self._hooks = self._hooks, []
        for h in hooks:
            h()

    def _attach(self, hook: Callable[[], None]) -> Callable[[], None]:
        with self._lock:
            if not self._cancelled:
                self._hooks.append(hook)
                return lambda: self._detach(hook)
        hook()
        return lambda: None

    def _detach(self, hook: Callable[[], None]) -> None:
        with self._lock:
            if hook in self._hooks:
                self._hooks.remove(hook)


class _Pending:
    __slots__ = ("event", "result", "error", "notify")

    def __init__(self, notify: Optional[Notify]) -> None:
        self.event = threading.Event()
        self.result: Any = None
        self.error: Optional[BaseException] = None
        self.notify = notify


class SyncConnection:
    def __init__(self, bin: str, env: Optional[Mapping[str, str]], logger: logging.Logger,
                 args: Sequence[str] = ()) -> None:
        self.logger = logger
        self.bin = bin
        try:
            self.proc = subprocess.Popen(
                [bin, "serve", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=dict(env) if env is not None else None)
        except OSError as e:
            raise BridgeError(f"sandbox-e2b serve ({bin}) could not be started: {e.strerror}",
                              code="bridge") from None
        self.lock = threading.Lock()
        self.pending: Dict[int, _Pending] = {}
        self.routes: Dict[int, Notify] = {}  # notifications that outlive a response
        self.next_id = 1
        # serve's names of errors without data (initialize's error_codes), once it answered
        self.error_codes: Dict[str, str] = {}
        self.closed: Optional[BaseException] = None
        self.threads = [threading.Thread(target=self._read, name="sandbox-e2b-reader", daemon=True),
                        threading.Thread(target=self._read_stderr, name="sandbox-e2b-stderr",
                                         daemon=True)]
        for t in self.threads:
            t.start()

    @property
    def alive(self) -> bool:
        return self.closed is None

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def call(self, method: str, params: Dict[str, Any], cancel: Optional[CancelToken] = None,
             notify: Optional[Notify] = None, route: Optional[List[int]] = None) -> Any:
        """route: a list that receives the request id; its notifications keep
        flowing to notify after the response until unroute(id)."""
        p = _Pending(notify)
        with self.lock:
            if self.closed is not None:
                raise self.closed
            id = self.next_id
            self.next_id += 1
            self.pending[id] = p
            if route is not None and notify is not None:
                route.append(id)
                self.routes[id] = notify
            try:
                self._write(proto.request(id, method, params))
            except OSError:
                self.pending.pop(id, None)
                raise BridgeError(f"sandbox-e2b serve ({self.bin}) is gone; the next call "
                                  "starts a new one", code="bridge") from None
        detach = cancel._attach(lambda: self._cancel(id)) if cancel is not None else None
        try:
            p.event.wait()
        except BaseException:  # KeyboardInterrupt: abort the call on the server too
            self._cancel(id)
            raise
        finally:
            if detach:
                detach()
        if p.error is not None:
            raise p.error
        return p.result

    def unroute(self, id: int) -> None:
        with self.lock:
            self.routes.pop(id, None)

    def _cancel(self, id: int) -> None:
        with self.lock:
            if id in self.pending and self.closed is None:
                try:
                    self._write(proto.cancel(id))
                except OSError:
                    pass

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = proto.decode(line)
            if msg is None:
                continue
            if "method" in msg and "id" not in msg:
                params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
                if msg["method"] == "log":
                    self._log(params)
                    continue
                with self.lock:
                    p = self.pending.get(params.get("id"))  # type: ignore[arg-type]
                    fn = p.notify if p is not None else self.routes.get(params.get("id"))  # type: ignore[arg-type]
                if fn is not None:
                    try:
                        fn(msg["method"], params)
                    except Exception:  # a callback's failure must not stop the reader
                        self.logger.exception("sandbox-e2b: output callback failed")
                continue
            with self.lock:
                p = self.pending.pop(msg.get("id"), None)  # type: ignore[arg-type]
            if p is None:
                continue
            if "error" in msg:
                p.error = proto.error_from(msg["error"], self.error_codes)
            else:
                p.result = msg.get("result")
            p.event.set()
        code = self.proc.wait()
        self.proc.stdout.close()
        why = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        err = BridgeError(f"sandbox-e2b serve ({self.bin}) {why} while the call was in flight; "
                          "the next call starts a new one", code="bridge")
        with self.lock:
            self.closed = err
            pending, self.pending = self.pending, {}
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
            except OSError:
                pass
        for p in pending.values():
            p.error = err
            p.event.set()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            text = line.decode("utf-8", "replace").rstrip("\n")
            if text:
                self.logger.warning("%s", text)
        self.proc.stderr.close()

    def _log(self, params: Mapping[str, Any]) -> None:
        level = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
                 "error": logging.ERROR}.get(str(params.get("level")), logging.INFO)
        fields = params.get("fields") or {}
        extra = " ".join(f"{k}={v}" for k, v in fields.items()) if isinstance(fields, dict) else ""
        self.logger.log(level, "%s%s", params.get("message", ""), f" ({extra})" if extra else "")

    def close(self, timeout: float = 30) -> None:
        """EOF on the child's stdin: it aborts calls in flight (killing their remote
        commands) and exits; wait for that."""
        with self.lock:
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for t in self.threads:
            if t is not threading.current_thread():
                t.join(timeout)


