"""One item of a write: its key as DynamoDB compares keys, and the checks and tracking of an ID set by hand
(shared by ``save()``, ``save_all()`` and ``TransactWrite``)."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from pynamodb.expressions.condition import Condition
from pynamodb.models import Model

from . import _engine, _judge, strategies
from ._options import Options
from .exceptions import AutoIncrementError, ConditionFailedError, InvalidIdError
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
    if not opts.numbered:
        return  # a model the mixin leaves to PynamoDB holds no ID
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


def explicit_failure(instance: Model, exc: Exception, condition: Optional[Condition],
                     add_version_condition: bool) -> AutoIncrementError:
    """The error for PynamoDB's failed save of an instance whose ID was given: the engine's, whose failed condition
    names the condition that was sent (the caller's, the version's, or either), never one the caller did not pass.
    As PynamoDB's own ``PutError``, it carries the answer (``cause``, ``cause_response_code``, ...)."""
    error = _engine.explicit_failure(instance, exc)
    name = type(instance)._version_attribute_name
    if not isinstance(error, ConditionFailedError) or not name or not add_version_condition:
        return error
    version = getattr(instance, name)
    held = (f"the stored item is not at version {version} (another writer saved or deleted it since this instance "
            "was read)" if version is not None else
            "the instance has no version, so it may only create the item, and an item is stored under its key")
    what = _engine.describe(instance)
    if condition is None:
        message = (f"{what}: its version condition ({name}) failed: {held}; nothing was written, and the local "
                   f"{name} stays {version}. Read the item again (refresh()) and make the change on it")
    else:
        message = (f"{what}: the condition passed to save(), or its version condition ({name}, {version}), failed; "
                   "nothing was written")
    return ConditionFailedError(message, exc)
