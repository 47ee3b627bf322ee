"""The file steps (E2B's SDK: sandbox/filesystem): read, write, info, list and walk, remove,
make a directory, rename; and the watch of a directory (serve's watch: docs/watch.md)."""
from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterator, List, Mapping, Optional, Union

from ... import _protocol as proto
from ...client import CancelToken, Client
from ...errors import SandboxError
from .. import exceptions as ex
from .._types import EntryInfo, FilesystemEvent, FilesystemEventType, FileType, Username, WriteInfo
from .connection import READ_MAX_BYTES, _no_user, _user, fail


def _file_type(t: Any) -> Optional[FileType]:
    return {"file": FileType.FILE, "dir": FileType.DIR, "symlink": FileType.SYMLINK}.get(t)


def _entry(r: Mapping[str, Any]) -> EntryInfo:
    return EntryInfo(name=r["name"], type=_file_type(r.get("type")), path=r["path"], size=int(r.get("size") or 0),
                     mode=int(r.get("mode") or 0), permissions=r.get("permissions") or "",
                     owner=r.get("owner") or "", group=r.get("group") or "",
                     modified_time=proto.parse_time(r.get("mtime")), symlink_target=r.get("symlink_target"))


def read(c: Client, sid: str, path: str, user: Optional[Username], max_bytes: Optional[int],
         cancel: Optional[CancelToken] = None) -> bytes:
    _no_user(user, "files.read")
    cap = READ_MAX_BYTES if max_bytes is None else max_bytes
    try:
        f = c.read_file(sid, path, max_bytes=cap, cancel=cancel)
    except SandboxError as e:
        fail(e, path)
    if f is None:
        e = path_info(c, sid, path, None, cancel)
        if e is not None and e.type == FileType.DIR:
            raise ex.InvalidArgumentException(f"{path} is a directory")
        raise ex.FileNotFoundException(f"{path}: no such file")
    if f.truncated and max_bytes is None:
        raise ex.SandboxException(f"{path} is longer than {cap} bytes; pass max_bytes for its first bytes")
    return f.data


def data_of(data: Any) -> Union[str, bytes]:
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if hasattr(data, "read"):
        d = data.read()
        return d if isinstance(d, (str, bytes)) else bytes(d)
    raise ex.InvalidArgumentException(f"data must be str, bytes or a file object, not {type(data).__name__}")


def write_many(c: Client, sid: str, files: List[Any], user: Optional[Username],
               cancel: Optional[CancelToken] = None) -> List[WriteInfo]:
    """serve's write_files: every file in one upload, in order, as ``user``
    (docs/files.md "Many files in one call"); the first failure is raised, the
    files before it stay written."""
    if not files:
        return []
    entries = []
    for f in files:
        if not isinstance(f, Mapping) or not isinstance(f.get("path"), str) or "data" not in f:
            raise ex.InvalidArgumentException("each file must be a mapping with a path and data")
        entries.append({"path": f["path"], **proto.data_params(data_of(f["data"]))})
    try:
        c._call("write_files", {"id": sid, "files": entries, "user": _user(user)}, cancel)
    except SandboxError as e:
        fail(e, "write_files")
    return [WriteInfo(name=posixpath.basename(e["path"]), type=FileType.FILE, path=e["path"]) for e in entries]


def write(c: Client, sid: str, path: str, data: Any, user: Optional[Username],
          cancel: Optional[CancelToken] = None) -> WriteInfo:
    if _user(user) is not None:  # as root: the many-files upload takes a user
        return write_many(c, sid, [{"path": path, "data": data}], user, cancel)[0]
    try:
        r = c._call("write_file", {"id": sid, "path": path, **proto.data_params(data_of(data))}, cancel)
    except SandboxError as e:
        fail(e, path)
    p = r.get("path", path)
    return WriteInfo(name=posixpath.basename(p), type=FileType.FILE, path=p)


def path_info(c: Client, sid: str, path: str, user: Optional[Username],
              cancel: Optional[CancelToken] = None) -> Optional[EntryInfo]:
    try:
        r = c._call("path_info", {"id": sid, "path": path, "user": _user(user)}, cancel)
    except SandboxError as e:
        fail(e, path)
    return None if r.get("exists") is False else _entry(r)


def get_info(c: Client, sid: str, path: str, user: Optional[Username], cancel: Optional[CancelToken] = None) -> EntryInfo:
    e = path_info(c, sid, path, user, cancel)
    if e is None:
        raise ex.FileNotFoundException(f"{path}: no such file or directory")
    return e


def list_names(c: Client, sid: str, path: str, cancel: Optional[CancelToken] = None) -> List[str]:
    try:
        entries = c.list_dir(sid, path, cancel=cancel)
    except SandboxError as e:
        fail(e, path)
    if entries is None:
        raise ex.FileNotFoundException(f"{path}: no such directory")
    return [posixpath.join(path, e.name) for e in entries]


def walk(c: Client, sid: str, path: str, depth: Optional[int], user: Optional[Username],
         cancel: Optional[CancelToken] = None) -> Iterator[EntryInfo]:
    """The entries under ``path`` to ``depth`` levels (E2B's list), by name, a directory before its content."""
    if depth is None:
        depth = 1
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ex.InvalidArgumentException(f"depth must be an integer >= 1, not {depth!r}")
    for p in list_names(c, sid, path, cancel):
        e = path_info(c, sid, p, user, cancel)
        if e is None:  # removed meanwhile
            continue
        yield e
        if depth > 1 and e.type == FileType.DIR:
            yield from walk(c, sid, p, depth - 1, user, cancel)


def remove(c: Client, sid: str, path: str, user: Optional[Username], cancel: Optional[CancelToken] = None) -> None:
    try:
        c._call("remove", {"id": sid, "path": path, "user": _user(user)}, cancel)
    except SandboxError as e:
        fail(e, path)


def make_dir(c: Client, sid: str, path: str, user: Optional[Username], cancel: Optional[CancelToken] = None) -> bool:
    try:
        return bool(c._call("make_dir", {"id": sid, "path": path, "user": _user(user)}, cancel)["created"])
    except SandboxError as e:
        fail(e, path)


def rename(c: Client, sid: str, old: str, new: str, user: Optional[Username],
           cancel: Optional[CancelToken] = None) -> EntryInfo:
    try:
        r = c._call("rename", {"id": sid, "from": old, "to": new, "user": _user(user)}, cancel)
    except SandboxError as e:
        fail(e, old)
    if r.get("exists") is False:
        raise ex.FileNotFoundException(f"{old}: no such file or directory")
    return _entry(r)


# ---- watch (serve's watch: docs/watch.md) ----

def watch_params(sid: str, path: str, recursive: bool, user: Optional[Username]) -> Dict[str, Any]:
    return {"id": sid, "path": path, "recursive": True if recursive else None, "user": _user(user)}


def watch_notify(on_started: Any, on_event: Any) -> Any:
    """serve's watch notifications: ``watch_started`` once, then each ``watch_event``."""
    def notify(method: str, params: Mapping[str, Any]) -> None:
        if method == "watch_started":
            on_started()
        elif method == "watch_event":
            try:
                kind = FilesystemEventType(params.get("op"))
            except ValueError:  # an operation envd may add later
                return
            on_event(FilesystemEvent(name=proto.bytes_of(params, "name").decode("utf-8", "replace"), type=kind))
    return notify


def watch(c: Client, params: Dict[str, Any], notify: Any, cancel: Optional[CancelToken] = None) -> None:
    """The watch call: returns when it was cancelled (stopped); a stream that ended is its error."""
    try:
        c._call("watch", params, cancel, notify)
    except SandboxError as e:
        if e.code == "aborted":
            return
        if e.code == "sandbox" and e.e2b_code == "not_found":  # the check's data: docs/watch.md "Errors"
            raise ex.FileNotFoundException(f"{params['path']}: no such directory") from e
        fail(e, f"watch {params['path']}")
