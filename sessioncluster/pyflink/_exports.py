"""The mirror modules re-export names of sessioncluster's own modules, resolved on first use
(PEP 562), so that a module of the mirror imports even while a name it lists is not there
yet; using such a name fails with a message saying where it was expected."""

from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_exports(module_name: str, namespace: dict[str, Any], names: dict[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` for ``names`` (name -> the module defining it)."""

    def __getattr__(name: str) -> Any:
        source = names.get(name)
        if source is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(source), name)
        except (ImportError, AttributeError) as exc:
            raise AttributeError(
                f"{module_name}.{name} is not available: sessioncluster has no {source}.{name} "
                f"({type(exc).__name__}: {exc})") from None
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
