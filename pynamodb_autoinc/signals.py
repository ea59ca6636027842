"""Signals sent by models that use :class:`~pynamodb_autoinc.AutoIncrementMixin`.

The signals live in this library's own :class:`blinker.Namespace`. Receivers
are called with ``sender`` (the model class) and these keywords:

``instance``
    the model instance being saved;
``is_new``
    ``True`` when the instance's auto-increment attribute was ``None`` when
    the save started, i.e. the save will allocate an ID;
``operation``
    how the instance is being written: ``"save"`` (``Model.save()``),
    ``"transaction"`` (``TransactWrite.save()``), ``"bulk"``
    (``Model.save_all()``) or ``"batch"`` (``Model.batch_write()``). With
    ``"bulk"``, :data:`before_save` is sent for every instance before any ID
    is claimed (``save_all()`` claims the IDs of the whole call at once), so
    a new instance's ID is still ``None`` in its receivers; :data:`after_save`
    is sent for each instance that was stored.

Connect with a sender to hear one model only::

    @before_save.connect_via(User)
    def stamp(sender, instance, is_new, **kwargs):
        instance.created_by = current_user()
"""

from __future__ import annotations

import collections.abc as c
import logging
import warnings
from typing import Any, Optional

from blinker import NamedSignal, Namespace

log = logging.getLogger(__name__)


class _AllocatingSignal(NamedSignal):
    """A signal whose library receivers run after every user receiver.

    The library assigns IDs from a receiver of :data:`before_save`; running it
    last lets user receivers set scope values or an explicit ID first.
    """

    def receivers_for(self, sender: Any) -> c.Iterator[c.Callable[..., Any]]:  # type: ignore[override]
        # a list, not a generator, so that a save steps into this module once rather than once per receiver
        first: list[c.Callable[..., Any]] = []
        last: list[c.Callable[..., Any]] = []
        for receiver in super().receivers_for(sender):
            (last if getattr(receiver, "_autoinc_runs_last", False) else first).append(receiver)
        return iter(first + last)


class _Namespace(Namespace):
    def allocating_signal(self, name: str, doc: Optional[str] = None) -> NamedSignal:
        if name not in self:
            self[name] = _AllocatingSignal(name, doc)
        return self[name]


signals: Namespace = _Namespace()
"""The :class:`blinker.Namespace` of pynamodb-autoinc's signals.

:meta hide-value:
"""

before_save: NamedSignal = signals.allocating_signal(  # type: ignore[attr-defined]
    "before_save",
    doc="Sent before an auto-increment model instance is written.",
)
"""Sent before every write of an :class:`~pynamodb_autoinc.AutoIncrementMixin`
model instance; what a receiver sets on the instance is stored. The library's
own receiver (:func:`pynamodb_autoinc.mixin.assign_id`) runs after all others
and assigns the ID of a new instance. A receiver that raises aborts the save
before anything is written.

:meta hide-value:
"""

after_save: NamedSignal = signals.signal(
    "after_save",
    doc="Sent after an auto-increment model instance was written.",
)
"""Sent once the write of an :class:`~pynamodb_autoinc.AutoIncrementMixin`
model instance has committed, with the same keywords as :data:`before_save`.
A receiver that raises is logged and ignored: the write has committed and the
save still returns normally.

:meta hide-value:
"""


race_lost: NamedSignal = signals.signal(
    "race_lost",
    doc="Sent when a write of an auto-increment model lost a race and is tried again.",
)
"""Sent each time a write lost a race for its counter (or, with the query strategy, its partition) and
is about to be tried again with another value. Keywords: ``instance`` (the first new instance of the
write), ``attempts`` (races lost so far by this write) and ``elapsed`` (seconds since it began). Count it
to see contention before it turns into :data:`contention_failed`. A receiver that raises is logged
(on the ``pynamodb_autoinc`` logger, at ERROR) and ignored: the write goes on with its next try.

:meta hide-value:
"""

contention_failed: NamedSignal = signals.signal(
    "contention_failed",
    doc="Sent when a write of an auto-increment model gave up after losing races.",
)
"""Sent when a write used up ``Meta.autoinc_timeout`` (or ``Meta.autoinc_retries``) losing races, just
before :class:`~pynamodb_autoinc.exceptions.ContentionError` is raised; same keywords as
:data:`race_lost`. A receiver that raises is logged and ignored: the write still raises
:class:`~pynamodb_autoinc.exceptions.ContentionError`, not the receiver's exception.

:meta hide-value:
"""


def notify(signal: NamedSignal, sender: type, **kwargs: Any) -> None:
    """Send ``signal`` for the library's own reporting, logging (never raising) a receiver's failure."""
    try:
        signal.send(sender, **kwargs)
    except Exception:
        log.exception("a %s receiver of %s failed", signal.name, sender.__name__)


def send_after_save(sender: type, **kwargs: Any) -> None:
    """Send :data:`after_save`, logging (never raising) a receiver's failure.

    .. deprecated:: 0.3.0
       The library sends :data:`after_save` itself; to send it by hand, call ``after_save.send(sender, ...)``.
       This function goes in 0.4.0.
    """
    warnings.warn("pynamodb_autoinc.signals.send_after_save is deprecated and goes in 0.4.0; call "
                  "after_save.send(sender, ...) instead", DeprecationWarning, stacklevel=2)
    notify(after_save, sender, **kwargs)
