"""Models that share one counter: the live model classes by the counter item they draw from, so that a class whose
mode cannot share it (a gapless model beside a fast, block or query one) is refused when it is created."""

from __future__ import annotations

import threading
import weakref
from typing import Any, Dict, List, Tuple, Type

from .exceptions import ConfigurationError

_lock = threading.Lock()
#: By counter (its table, endpoint and base key): the model classes drawing from it, and whether each is gapless.
_users: Dict[Tuple[Any, ...], List[Tuple[weakref.ref[type], bool]]] = {}


def refuse_mixed_modes(model: Type[Any], where: Tuple[Any, ...], key: str, gapless: bool) -> None:
    """Record that ``model`` draws from the counter at ``where`` (key ``key``); raise ConfigurationError if a live
    model of the other kind (gapless or not) draws from it too: a gapless sequence holds exactly 1, 2, 3, ... only
    if every value of its counter goes to its own items."""
    name = f"{model.__module__}.{model.__qualname__}"
    with _lock:
        users = [(ref, flag) for ref, flag in _users.get(where, []) if ref() is not None
                 and f"{ref().__module__}.{ref().__qualname__}" != name]  # type: ignore[union-attr]
        other = next((ref() for ref, flag in users if flag != gapless), None)
        if other is None:
            _users[where] = [*users, (weakref.ref(model), gapless)]
            return
    gapless_one, fast_one = (model, other) if gapless else (other, model)
    raise ConfigurationError(
        f"{model.__name__}: counter {key!r} is also used by {other.__name__}, and {gapless_one.__name__} is gapless "
        f"while {fast_one.__name__} is not: the values {fast_one.__name__} takes would be gaps in "
        f"{gapless_one.__name__}'s sequence. Give each its own Meta.autoinc_key, or the same "
        "Meta.autoinc_gapless")
