"""E2B's ``class_method_variant``: ``sbx.kill()`` on an instance, ``Sandbox.kill(sandbox_id)``
on the class (e2b-dev/E2B ``packages/python-sdk/e2b/sandbox/utils.py``, in our words)."""
from __future__ import annotations

import functools
from typing import Any, Callable, Generic, Optional, Type, TypeVar

R = TypeVar("R")


class class_method_variant(Generic[R]):
    """Decorates the instance method; ``name`` is the class method called when
    the method is read from the class (its first argument the sandbox id)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.method: Callable[..., R]

    def __call__(self, method: Callable[..., R]) -> "class_method_variant[R]":
        self.method = method
        return self

    def __get__(self, obj: Any, objtype: Optional[Type[Any]] = None) -> Callable[..., R]:
        @functools.wraps(self.method)
        def wrapper(*args: Any, **kwargs: Any) -> R:
            if obj is not None:
                return self.method(obj, *args, **kwargs)
            if args and objtype is not None and isinstance(args[0], objtype):
                return self.method(args[0], *args[1:], **kwargs)
            return getattr(objtype, self.name)(*args, **kwargs)

        return wrapper
