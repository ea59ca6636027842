"""Reads and validates a model's ``Meta.autoinc_*`` options, once per model."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Dict, Type
from weakref import WeakKeyDictionary

from pynamodb.attributes import Attribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.models import Model

from .counter import CONNECTION_SETTINGS, NextId, bind_counter
from .exceptions import ConfigurationError

#: Every option a model's ``Meta`` may set, with its default.
DEFAULTS: Dict[str, Any] = {
    "autoinc_attribute": None,  # the hash key
    "autoinc_key": None,  # Meta.table_name
    "autoinc_counter": NextId,
    "autoinc_gapless": False,
    "autoinc_start": 1,
    "autoinc_step": 1,
    "autoinc_retries": 16,
    "autoinc_backoff": 0.01,
}


#: Integers up to 38 digits are stored exactly by DynamoDB.
NUMBER_LIMIT = 10**38


@dataclass(frozen=True)
class Options:
    """A model's validated auto-increment options."""

    model: Type[Model]
    attribute: str
    """The Python name of the auto-increment attribute."""
    as_string: bool
    """The attribute is a ``UnicodeAttribute``: store the decimal string."""
    key: str
    """The counter's data-type key (``NextKey``)."""
    counter: Type[NextId]
    """The counter model, bound to the model's connection settings."""
    gapless: bool
    start: int
    step: int
    retries: int
    """How many times a gapless save retries after losing the counter race."""
    backoff: float
    """The first retry's largest delay in seconds; it doubles each retry, up to one second."""

    def to_python(self, value: int) -> Any:
        return str(value) if self.as_string else value

    def from_python(self, value: Any) -> int:
        return int(value)


def options_for(model: Type[Model]) -> Options:
    """The validated options of ``model``, computed on first use and cached."""
    cached = _CACHE.get(model)
    if cached is None:
        cached = _CACHE[model] = _read(model)
    return cached


_CACHE: WeakKeyDictionary[type, Options] = WeakKeyDictionary()


def _fail(model: Type[Model], problem: str) -> ConfigurationError:
    return ConfigurationError(f"{model.__name__}: {problem}")


def _read(model: Type[Model]) -> Options:
    meta = model.Meta
    given = {name: getattr(meta, name) for name in dir(meta) if name.startswith("autoinc_")}
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        # compare what follows the shared prefix, so "autoinc_zzz" suggests nothing
        suffixes = {name[len("autoinc_"):]: name for name in DEFAULTS}
        close = [suffixes[m] for m in difflib.get_close_matches(unknown[0][len("autoinc_"):], suffixes, n=1)]
        hint = f"did you mean {close[0]!r}?" if close else f"known options: {', '.join(sorted(DEFAULTS))}"
        raise _fail(model, f"unknown Meta option {unknown[0]!r}; {hint}")
    opts = {**DEFAULTS, **given}

    attributes: Dict[str, Attribute] = model.get_attributes()
    name: Any = opts["autoinc_attribute"] or model._hash_keyname
    if not isinstance(name, str) or name not in attributes:
        raise _fail(model, f"Meta.autoinc_attribute names {name!r}, which is not an attribute of the model; "
                           f"choose one of {sorted(attributes)}")
    attribute = attributes[name]
    if isinstance(attribute, VersionAttribute) or not isinstance(attribute, (NumberAttribute, UnicodeAttribute)):
        raise _fail(model, f"auto-increment attribute {name!r} is a {type(attribute).__name__}; "
                           "make it a NumberAttribute (or a UnicodeAttribute for decimal strings)")
    if not attribute.is_hash_key and not attribute.is_range_key and not attribute.null:
        raise _fail(model, f"auto-increment attribute {name!r} must allow None until the ID is assigned; "
                           "declare it with null=True")

    key = opts["autoinc_key"] if opts["autoinc_key"] is not None else meta.table_name
    if not isinstance(key, str) or not key:
        raise _fail(model, f"Meta.autoinc_key must be a non-empty string, not {key!r}")

    counter = opts["autoinc_counter"]
    if not (isinstance(counter, type) and issubclass(counter, NextId)):
        raise _fail(model, f"Meta.autoinc_counter must be NextId or a subclass of it, not {counter!r}")
    counter = bind_counter(counter, model)

    for flag in ("autoinc_gapless",):
        if not isinstance(opts[flag], bool):
            raise _fail(model, f"Meta.{flag} must be True or False, not {opts[flag]!r}")
    for number in ("autoinc_start", "autoinc_step", "autoinc_retries"):
        if isinstance(opts[number], bool) or not isinstance(opts[number], int):
            raise _fail(model, f"Meta.{number} must be an int, not {opts[number]!r}")
    for number in ("autoinc_start", "autoinc_step"):
        if abs(opts[number]) >= NUMBER_LIMIT:
            raise _fail(model, f"Meta.{number} = {opts[number]} has more digits than a DynamoDB number holds "
                               "exactly (38); choose a smaller value")
    if opts["autoinc_step"] == 0:
        raise _fail(model, "Meta.autoinc_step must not be 0")
    if opts["autoinc_retries"] < 0:
        raise _fail(model, f"Meta.autoinc_retries must be 0 or more, not {opts['autoinc_retries']}")
    backoff = opts["autoinc_backoff"]
    if isinstance(backoff, bool) or not isinstance(backoff, (int, float)) or backoff < 0:
        raise _fail(model, f"Meta.autoinc_backoff must be a number of seconds >= 0, not {backoff!r}")

    if opts["autoinc_gapless"]:
        differing = [s for s in CONNECTION_SETTINGS
                     if getattr(counter.Meta, s, None) != getattr(meta, s, None)]
        if differing:
            raise _fail(model, "gapless mode writes the counter and the item in one transaction, so both "
                               f"tables must be on one connection, but the counter's Meta sets {differing} "
                               "differently; use the same endpoint or turn autoinc_gapless off")

    return Options(
        model=model,
        attribute=name,
        as_string=isinstance(attribute, UnicodeAttribute),
        key=key,
        counter=counter,
        gapless=opts["autoinc_gapless"],
        start=opts["autoinc_start"],
        step=opts["autoinc_step"],
        retries=opts["autoinc_retries"],
        backoff=float(backoff),
    )
