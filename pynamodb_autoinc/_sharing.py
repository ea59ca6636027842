"""Models that share one counter: the live model classes by the counter item they draw from, so that a class whose
mode cannot share it (a gapless model beside a fast or block one) is refused when it is created."""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple, Type

from . import _state
from .exceptions import ConfigurationError

_lock = threading.Lock()

#: By counter (its table, endpoint and item key): the model classes drawing from it, and whether each is gapless.
Users = Dict[Tuple[Any, ...], List[Tuple["weakref.ref[type]", bool]]]


def refuse_mixed_modes(model: Type[Any], where: Tuple[Any, ...], key: str, gapless: bool) -> None:
    """Record that ``model`` draws from the counter at ``where`` (key ``key``); raise ConfigurationError if a live
    model of the other kind (gapless or not) draws from it too: a gapless sequence holds exactly 1, 2, 3, ... only
    if every value of its counter goes to its own items. A class defined again (same module and name) replaces the
    old one; classes no longer referenced do not count (collected first, when one seems to clash)."""
    other = _other_kind(model, where, gapless)
    if other is not None:
        gc.collect()  # a clash with a class that is garbage (a test's model) is none
        other = _other_kind(model, where, gapless)
    if other is None:
        return
    gapless_one, fast_one = (model, other) if gapless else (other, model)
    raise ConfigurationError(
        f"{model.__name__}: counter {key!r} is also used by {other.__name__}, and {gapless_one.__name__} is gapless "
        f"while {fast_one.__name__} is not: the values {fast_one.__name__} takes would be gaps in "
        f"{gapless_one.__name__}'s sequence. Give each its own Meta.autoinc_key, or the same "
        "Meta.autoinc_gapless")


def _other_kind(model: Type[Any], where: Tuple[Any, ...], gapless: bool) -> Optional[type]:
    """A live class of the other kind using the counter at ``where``; else None, and ``model`` is recorded."""
    state = _state.state
    users: Users = state.parts.get("counter users") or state.part("counter users", dict)
    name = (model.__module__, model.__qualname__)
    with _lock:
        alive = [(ref, flag) for ref, flag in users.get(where, [])
                 if (cls := ref()) is not None and (cls.__module__, cls.__qualname__) != name]
        other = next((cls for ref, flag in alive if flag != gapless and (cls := ref()) is not None
                      and cls.__dict__.get("_autoinc_accepted")), None)  # a class refused later is not in use
        users[where] = alive if other is not None else [*alive, (weakref.ref(model), gapless)]
    return other


def sharing(model: Type[Any], where: Tuple[Any, ...]) -> List[type]:
    """The other live model classes drawing from the counter at ``where`` (so that an audit of the counter counts
    their IDs too)."""
    users: Users = _state.state.parts.get("counter users") or {}
    with _lock:
        found = [ref() for ref, _ in users.get(where, [])]
    return [cls for cls in found if cls is not None and cls is not model]
