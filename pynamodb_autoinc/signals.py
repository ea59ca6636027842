"""Signals (in the library's own :class:`blinker.Namespace`) sent by models that use
:class:`~pynamodb_autoinc.AutoIncrementMixin`; a receiver gets ``sender``, the model class. A receiver may be a
coroutine function (``async def``): it is awaited on the event loop of the awaited call that sent the signal
(``await instance.asave()``, docs/async.md); a sync receiver runs where the save runs, as always."""

from __future__ import annotations

import collections.abc as c
import inspect
import logging
import warnings
from typing import Any, TypeVar

from blinker import ANY, NamedSignal, Namespace

from . import _bridge

log = logging.getLogger(__name__)

_F = TypeVar("_F", bound=c.Callable[..., Any])


class _Signal(NamedSignal):
    """A signal whose receivers may be coroutine functions: each is awaited on the event loop of the awaited call
    (``asave()`` and the others) that sent it; sync receivers run as they always do. Until a coroutine receiver is
    connected, sending costs what blinker's own costs."""

    def connect(self, receiver: _F, sender: Any = ANY, weak: bool = True) -> _F:
        if inspect.iscoroutinefunction(receiver) and "receivers_for" not in self.__dict__:
            self.receivers_for = self._awaiting  # type: ignore[method-assign, assignment]
        return super().connect(receiver, sender, weak)

    def _awaiting(self, sender: Any) -> c.Iterator[c.Callable[..., Any]]:
        """The receivers, in their order, a coroutine function among them as a sync call that awaits it."""
        found = type(self).receivers_for(self, sender)
        return iter([awaited(r) if inspect.iscoroutinefunction(r) else r for r in found])


def awaited(receiver: c.Callable[..., c.Coroutine[Any, Any, Any]]) -> c.Callable[..., Any]:
    """``receiver`` as a sync callable: in an awaited call it awaits the coroutine (on the call's event loop) and
    returns (or raises) what it returned; a save called directly cannot await it, and is refused."""

    def call(sender: Any, **kwargs: Any) -> Any:
        if not _bridge.awaiting():
            raise RuntimeError(
                f"{getattr(receiver, '__qualname__', receiver)} is a coroutine function: it is awaited only for a save "
                "that is awaited (await instance.asave(), await Model.asave_all(...), await tx.asave(...) in a "
                "TransactWrite); a save() called directly cannot await it. Await the save, or connect a plain function")
        return _bridge.wait(receiver(sender, **kwargs))

    return call


class _AllocatingSignal(_Signal):
    """A signal whose library receivers (``_autoinc_runs_last``) run after every user receiver."""

    def receivers_for(self, sender: Any) -> c.Iterator[c.Callable[..., Any]]:  # type: ignore[override]
        first: list[c.Callable[..., Any]] = []
        last: list[c.Callable[..., Any]] = []
        for receiver in super().receivers_for(sender):
            (last if getattr(receiver, "_autoinc_runs_last", False) else first).append(receiver)
        return iter(first + last)  # not a generator: a save steps into this module once, not per receiver


signals = Namespace()
"""The :class:`blinker.Namespace` of pynamodb-autoinc's signals.

:meta hide-value:"""

before_save: NamedSignal = signals.setdefault("before_save", _AllocatingSignal("before_save", doc="Sent before saves."))
"""Sent before every write of an :class:`~pynamodb_autoinc.AutoIncrementMixin` instance; what a receiver sets
on it is stored, and one that raises aborts the save. The library's receiver, which assigns a new ID, runs last.
Keywords: ``instance``, ``is_new`` (its ID was ``None``) and ``operation``: ``"save"``, ``"transaction"``,
``"bulk"`` (``save_all()``, which sends every ``before_save`` first) or ``"batch"`` (``batch_write()``)::

    @before_save.connect_via(User)
    def stamp(sender, instance, is_new, **kwargs):
        instance.created_by = current_user()

:meta hide-value:"""

after_save: NamedSignal = signals.setdefault("after_save", _Signal("after_save", doc="Sent after a write committed."))
"""Sent once the write of an :class:`~pynamodb_autoinc.AutoIncrementMixin` instance has committed, with the
keywords of :data:`before_save`. A receiver that raises is logged and ignored.

:meta hide-value:"""

race_lost: NamedSignal = signals.setdefault(
    "race_lost", _Signal("race_lost", doc="Sent when a write lost a race and tries again."))
"""Sent each time a write lost a race for its counter (or query partition) and will try another value, with
``instance`` (its first new instance), ``attempts`` and ``elapsed`` (seconds). A receiver that raises is logged.

:meta hide-value:"""

contention_failed: NamedSignal = signals.setdefault(
    "contention_failed", _Signal("contention_failed", doc="Sent when a write gave up losing races."))
"""Sent when a write used up ``Meta.autoinc_timeout`` (or ``autoinc_retries``) losing races, just before
:class:`~pynamodb_autoinc.exceptions.ContentionError`; keywords of :data:`race_lost`. A receiver that raises is logged.

:meta hide-value:"""


def notify(signal: NamedSignal, sender: type, **kwargs: Any) -> None:
    """Send ``signal`` for the library's own reporting, logging (never raising) a receiver's failure."""
    try:
        signal.send(sender, **kwargs)
    except Exception:
        log.exception("a %s receiver of %s failed", signal.name, sender.__name__)


def send_after_save(sender: type, **kwargs: Any) -> None:
    """Send :data:`after_save`, logging (never raising) a receiver's failure.

    .. deprecated:: 0.3.0 The library sends :data:`after_save` itself. Goes in 0.4.0."""
    warnings.warn("pynamodb_autoinc.signals.send_after_save is deprecated and goes in 0.4.0; call "
                  "after_save.send(sender, ...) instead", DeprecationWarning, stacklevel=2)
    notify(after_save, sender, **kwargs)
