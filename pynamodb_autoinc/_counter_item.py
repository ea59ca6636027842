"""What a counter's item holds and how it is read: its key, value and recorded options, and the errors that name
its table as the user's code and the command line reach it. The base of :class:`~pynamodb_autoinc.counter.NextId`,
which changes counters (docs/architecture.md, "The counter")."""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Any, ClassVar, Dict, List, Optional, Tuple

from botocore.exceptions import NoRegionError
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import GetError, PynamoDBException
from pynamodb.models import Model

from . import _transport
from .exceptions import (
    AutoIncrementError,
    ConfigurationError,
    CounterError,
    CounterTableMissingError,
    CounterValueError,
    SequenceMismatchError,
    error_code,
)
from .sequence import SequenceOptions

if TYPE_CHECKING:
    _Model = Model
else:
    _Model = object


class CounterItem(_Model):
    """Reading a counter's item: a base of :class:`~pynamodb_autoinc.counter.NextId`, which declares the attributes
    and settings used here."""

    if TYPE_CHECKING:
        next_key: UnicodeAttribute
        next_id: NumberAttribute
        options: UnicodeAttribute
        _autoinc_prefix: str
        _autoinc_range: ClassVar[Optional[str]]
        _autoinc_model_spec: ClassVar[Optional[str]]

        @classmethod
        def _value_in(cls, key: str, item: Dict[str, Any]) -> Optional[int]:
            """The value the raw counter ``item`` holds, or None (NextId's: it is on the path of every save)."""

        @classmethod
        def _command(cls, command: str) -> str:
            """``pynamodb-autoinc COMMAND`` with the options that reach this table (NextId's, which knows its own)."""

    @classmethod
    def _item_key(cls, key: str) -> Tuple[str, Any]:
        """The hash and range key of counter ``key``'s item."""
        if not isinstance(key, str) or not key:
            raise ConfigurationError(f"a counter key must be a non-empty string, not {key!r}: a model's "
                                     "(Model.autoinc_options().key, or `pynamodb-autoinc list`) or a name of your own")
        return cls._autoinc_prefix + key, cls._autoinc_range

    @classmethod
    def _where(cls, key: str) -> Tuple[Any, ...]:
        """What tells counter ``key``'s item apart from every other counter item this process reaches."""
        region = getattr(cls.Meta, "region", None)
        if region is None:  # the region botocore resolves, as a model bound to that region names it
            with contextlib.suppress(NoRegionError):  # no request can be sent either; it reports the error
                region = cls._get_connection().connection.client.meta.region_name
        return (getattr(cls.Meta, "host", None), region, cls.Meta.table_name, *cls._item_key(key))

    @classmethod
    def keys(cls) -> List[str]:
        """The key of every counter in the table (a consistent scan)."""
        attr = cls.next_key
        only = attr.startswith(cls._autoinc_prefix) if cls._autoinc_prefix else None
        return [item[attr.attr_name]["S"][len(cls._autoinc_prefix):] for item in _transport.scan(
            cls._get_connection().connection, cls.Meta.table_name, only, [attr.attr_name])]

    @classmethod
    def currval(cls, key: str) -> Optional[int]:
        """The last value counter ``key`` handed out (a consistent read), or None, as ``pg_sequences.last_value``."""
        return cls._value_in(key, cls._item(key))

    @classmethod
    def stored_options(cls, key: str) -> Optional[SequenceOptions]:
        """The sequence options counter ``key`` records, or None (a new counter, or one never advanced by a model)."""
        return cls.read(key)[1]

    @classmethod
    def read(cls, key: str) -> Tuple[Optional[int], Optional[SequenceOptions]]:
        """Counter ``key``'s last value and recorded options (a consistent read); None for what it lacks."""
        item = cls._item(key)
        return cls._value_in(key, item), cls._recorded(item, key)

    @classmethod
    def _item(cls, key: str) -> Dict[str, Any]:
        """Counter ``key``'s raw item (a consistent read); empty if there is none."""
        try:
            return _transport.get(cls._get_connection().connection, cls.Meta.table_name, *cls._item_key(key)) or {}
        except GetError as exc:
            raise cls._request_failed("read", key, exc) from exc

    @classmethod
    def _recorded(cls, item: Dict[str, Any], key: Optional[str] = None) -> Optional[SequenceOptions]:
        """The sequence options a counter ``item`` records, or None; text that is none raises if ``key`` is given."""
        text = item.get(cls.options.attr_name, {}).get("S")
        found = None if text is None else SequenceOptions.decode(text)
        if key is not None and text is not None and found is None:
            raise CounterValueError(f"counter {key!r} records options {text!r}, which are no sequence options; "
                                    "record a model's with `pynamodb-autoinc alter --model package.module:Model`")
        return found

    @classmethod
    def check_options(cls, key: str, item: Dict[str, Any], sequence: SequenceOptions) -> None:
        """Raise :class:`SequenceMismatchError` if the raw counter ``item`` records other options than ``sequence``."""
        raw = item.get(cls.options.attr_name)
        if raw is not None and raw.get("S") != sequence.encode():  # a number put by hand is other options too
            raise cls._mismatch(key, sequence, raw.get("S", json.dumps(raw)))

    @classmethod
    def _refused_value(cls, key: str, item: Dict[str, Any], sequence: SequenceOptions) -> Optional[int]:
        """The value of a counter item that refused an update; raises if it records other options or no integer."""
        cls.check_options(key, item, sequence)
        return cls._value_in(key, item)

    @classmethod
    def kept_value(cls, key: str, item: Dict[str, Any], sequence: SequenceOptions) -> Optional[int]:
        """The value :meth:`alter` keeps on counter ``key`` (``item`` as read); raises if no int or out of bounds."""
        try:
            last = cls._value_in(key, item)
        except CounterValueError as exc:
            raise CounterValueError(
                f"counter {key!r} holds {item[cls.next_id.attr_name]!r}, not an integer, so alter cannot keep its "
                f"value; restart it with {cls._command('restart --model package.module:Model --with N')} (or "
                f"{cls._reached_as()}.restart({key!r}, sequence, N))", exc) from None
        if last is not None:
            sequence.check_counter(key, last)
        return last

    @classmethod
    def _not_a_number(cls, key: str, raw: Any) -> CounterValueError:
        return CounterValueError(
            f"counter {key!r} in table {cls.Meta.table_name!r} holds {raw!r}, not an integer; set it to the largest "
            f"ID in use with {cls._reached_as()}.setval({key!r}, N), or {cls._command(f'set N --key {key}')}")

    @classmethod
    def _mismatch(cls, key: str, sequence: SequenceOptions, recorded: str) -> SequenceMismatchError:
        other = SequenceOptions.decode(recorded)
        differs = ", ".join(sequence.differences(other)) if other is not None else f"{recorded!r}"
        return SequenceMismatchError(
            f"counter {key!r} in table {cls.Meta.table_name!r} runs under other sequence options: {differs}. Make "
            f"the Meta options of every model sharing it agree, or record new ones on purpose with "
            f"{cls._command('alter --model package.module:Model')} (or {cls._reached_as()}.alter(key, sequence))",
            recorded=recorded)

    @classmethod
    def _request_failed(cls, verb: str, key: str, exc: PynamoDBException) -> AutoIncrementError:
        table, model = cls.Meta.table_name, cls._autoinc_model_spec
        if error_code(exc) != "ResourceNotFoundException":
            return CounterError(f"could not {verb} counter {key!r} in table {table!r}: {exc}", exc)
        if model is not None:
            return CounterTableMissingError(f"table {table!r}, which keeps the counters of {model} "
                                            "(Meta.autoinc_counter_in_table), does not exist; create it", exc)
        reached = cls._reached_as()
        made = f"{reached}.create_table(billing_mode='PAY_PER_REQUEST', wait=True)" if reached == cls.__name__ \
            else "NextId.create_table_for(Model), Model being the model that uses it"
        return CounterTableMissingError(
            f"counter table {table!r} does not exist; create it with {made}, or {cls._command('create-table')}", exc)

    @classmethod
    def _reached_as(cls) -> str:
        """How code names this table: the user's class if it reaches the same one, else the model's option."""
        own: Any = next(c for c in cls.__mro__ if not c.__dict__.get("_autoinc_bound"))
        default = os.environ.get("AWS_DEFAULT_REGION")  # where a Meta without a region is reached
        same = getattr(own.Meta, "host", None) == getattr(cls.Meta, "host", None) and \
            (getattr(own.Meta, "region", None) or default) == (getattr(cls.Meta, "region", None) or default)
        return cls.__name__ if same and own.Meta.table_name == cls.Meta.table_name else \
            "Model.autoinc_options().counter"
