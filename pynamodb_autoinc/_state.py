"""Everything this process remembers between saves, in one object with one reset.

Reserved blocks, the counter values this process last wrote, its places in
gapless queues, the tables it has described: each part is made by the module
that owns it, on first use, through :meth:`ProcessState.part`. A forked child
starts with none of them (one ``os.register_at_fork`` hook), so it never
hands out a value from its parent's block or stands in its parent's place;
:func:`pynamodb_autoinc.testing.reset_state` forgets them all as well.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Dict, TypeVar

_T = TypeVar("_T")


class ProcessState:
    """This process's memory of counters and tables, made part by part on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.parts: Dict[str, Any] = {}
        """The parts made so far, by name: read ``parts.get(name) or part(name, make)`` on a hot path."""

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
        """Forget every part: the next use makes it afresh."""
        self._lock = threading.Lock()  # a fork may have copied it held
        self.parts = {}


state = ProcessState()
"""The one :class:`ProcessState` of this process."""

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=state.reset)
