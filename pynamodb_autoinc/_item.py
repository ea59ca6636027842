"""One item of a write: its key as DynamoDB compares keys, and the checks and tracking of an ID set by hand
(shared by ``save()``, ``save_all()`` and ``TransactWrite``)."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from pynamodb.models import Model

from . import _judge, strategies
from ._options import Options
from .exceptions import InvalidIdError
from .sequence import is_int

STORED = "_autoinc_stored_id"
"""The instance attribute holding the ID it was read or last saved with."""


def item_key(item: Model) -> Optional[Tuple[Any, ...]]:
    """The item's key as DynamoDB compares keys (numbers by value), or None while a key attribute is None."""
    model, attributes = type(item), type(item).get_attributes()
    values = {name: getattr(item, name) for name in (model._hash_keyname, model._range_keyname) if name}
    if None in values.values():
        return None
    return tuple(_judge.stored_form({attributes[n].attr_type: attributes[n].serialize(v)}) for n, v in values.items())


def check_explicit(instance: Model, opts: Options) -> None:
    """Raise InvalidIdError for an ID set by hand that is not an int, or not a str for a UnicodeAttribute."""
    value = getattr(instance, opts.attribute)
    if not (isinstance(value, str) if opts.as_string else is_int(value)):
        kind = (f"a string, and the attribute is a UnicodeAttribute; set a str (such as {str(value)!r})"
                if opts.as_string else "an integer; set an int")
        raise InvalidIdError(f"{type(instance).__name__}.{opts.attribute} = {value!r} is not {kind}, or leave it "
                             "None to have the next value assigned")


def track(instances: Sequence[Model], opts: Options) -> None:
    """``Meta.autoinc_track_explicit``: move the counter past the IDs set by hand (not those read or saved)."""
    if not opts.track_explicit:
        return
    explicit = [i for i in instances if getattr(i, opts.attribute) != i.__dict__.get(STORED)]
    if explicit:
        strategies.track(explicit, opts)


