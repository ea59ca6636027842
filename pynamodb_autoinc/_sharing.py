"""Models that share one counter: the live model classes by the counter item they draw from, so that a class whose
mode cannot share it (a gapless model beside a fast or block one) is refused when it is created.

The classes are a part of the process state (``testing.reset_state()`` forgets them), but unlike the rest of it they
survive a fork: a forked child (a gunicorn worker, ``multiprocessing`` with ``fork``) holds every class its parent
defined, so a class it defines in the other mode on their counter is refused there too."""

from __future__ import annotations

import gc
import os
import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple, Type

from . import _state
from .exceptions import ConfigurationError

_lock = threading.Lock()
_PART = "counter users"
_forking: List[Any] = []  # the parent's registry, from just before a fork until its child has it back


def _before_fork() -> None:
    _forking[:] = [_state.state.parts.get(_PART)]


def _after_fork_in_child() -> None:
    """Give the child its parent's registry back (``_state`` empties the state at fork, before this runs), with a
    lock of its own: the fork may have copied the parent's held by another thread."""
    global _lock
    _lock = threading.Lock()
    users = _forking[0] if _forking else None
    _forking.clear()
    if users is not None:
        _state.state.parts.setdefault(_PART, users)


def _after_fork_in_parent() -> None:
    _forking.clear()


if hasattr(os, "register_at_fork"):  # registered after _state's reset, so that it runs after it in the child
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child,
                        after_in_parent=_after_fork_in_parent)

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
    users: Users = state.parts.get(_PART) or state.part(_PART, dict)
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
    users: Users = _state.state.parts.get(_PART) or {}
    with _lock:
        found = [ref() for ref, _ in users.get(where, [])]
    return [cls for cls in found if cls is not None and cls is not model]
