"""Everything this process remembers between saves (blocks, counter values, queue places, tables), in one
object with one reset: each part is made by its owning module on first use; a forked child starts empty."""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Dict, TypeVar

_T = TypeVar("_T")


class ProcessState:
    """This process's memory of counters and tables, made part by part on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.parts: Dict[str, Any] = {}  # on a hot path read ``parts.get(name) or part(name, make)``

    def part(self, name: str, make: Callable[[], _T]) -> _T:
        """The part called ``name``, made with ``make()`` if this process has none yet."""
        try:
            return self.parts[name]
        except KeyError:
            with self._lock:
                if name not in self.parts:
                    self.parts[name] = make()
                return self.parts[name]

    def reset(self) -> None:
        self._lock = threading.Lock()  # a fork may have copied it held
        self.parts = {}


state = ProcessState()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=state.reset)
