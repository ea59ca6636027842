"""The ``NextId`` counter model and its requests (docs/architecture.md, "The counter")."""

from __future__ import annotations

import functools
import logging
import secrets
import threading
from datetime import datetime
from typing import Any, Callable, ClassVar, Dict, List, Optional, Set, Tuple, Type, TypeVar, cast

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.constants import ALL_NEW, UPDATE_ITEM, UPDATED_NEW
from pynamodb.exceptions import UpdateError
from pynamodb.expressions.operand import Path
from pynamodb.models import Model

from . import _bridge, _budget, _endpoint, _state, _transport
from . import _calendar as periods
from ._aio import AsyncCounter
from ._budget import Budget
from ._counter_item import CounterItem
from ._reserve import Refused, Reserve
from .exceptions import (
    ConfigurationError,
    CounterError,
    CounterValueError,
    OutOfBoundsError,
    error_code,
    returned_item,
)
from .sequence import (
    DEFAULT,
    NUMBER_LIMIT,
    SequenceOptions,
    check_int,
    check_sequence,
    integer,
    is_int,
    setval_value,
    storable,
)

_C = TypeVar("_C", bound="NextId")
log = logging.getLogger(__name__)

#: The most values one :meth:`NextId.reserve` takes: its list is built after the counter moved, and must fit.
RESERVE_LIMIT = 1_000_000

#: Called with a counter's :meth:`NextId._where` when it is set by hand, to drop what this process holds of it.
SET_BY_HAND: List[Callable[[Tuple[Any, ...]], None]] = []


class NextId(AsyncCounter, CounterItem, Model):
    """The shared counter table, one item per key. Subclass it for another table or endpoint (a model's
    ``Meta.autoinc_counter``); connection settings its ``Meta`` leaves out come from the model."""

    class Meta:
        table_name = "NextId"

    next_key = UnicodeAttribute(hash_key=True, attr_name="NextKey")
    next_id = NumberAttribute(null=True, attr_name="NextId")
    ticket = NumberAttribute(null=True, attr_name="NextTicket")
    """Gapless mode: the last ticket handed to a writer queued on this counter."""
    served = NumberAttribute(null=True, attr_name="NextServed")
    """The last ticket served: the queue is empty when it equals ``ticket``."""
    options = UnicodeAttribute(null=True, attr_name="NextOptions")
    """The sequence options the counter runs under (:meth:`SequenceOptions.encode`), recorded by every advance."""
    claimed = NumberAttribute(null=True, attr_name="NextClaim")
    """The token of the last reserve (a block's, ``reserve()``): botocore's resend of an applied one is refused on
    it, and its answer, the item, shows the values it took, so that a counter is never moved twice by one call."""

    _autoinc_own_settings: frozenset = frozenset()
    #: What precedes a counter key in its item's hash key, and its range key (counters in a model's own table).
    _autoinc_prefix = ""
    _autoinc_range: ClassVar[Optional[str]] = None
    #: ``package.module:Model`` of the model whose own table keeps these counters (None: a counter table).
    _autoinc_model_spec: ClassVar[Optional[str]] = None
    _advance_templates: ClassVar[Dict[Any, SwapTemplate]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        meta = cls.__dict__.get("Meta")
        if meta is not None and not getattr(cls, "_autoinc_bound", False):
            # before PynamoDB's metaclass fills in defaults: what is on Meta now is what the user wrote
            cls._autoinc_own_settings = frozenset(s for s in _endpoint.CONNECTION_SETTINGS if s in vars(meta))

    @classmethod
    def create_table_for(cls, model: Type[Model], *, billing_mode: Optional[str] = "PAY_PER_REQUEST",
                         wait: bool = True, **kwargs: Any) -> Type[NextId]:
        """Create the table keeping ``model``'s counters (its ``Meta.autoinc_counter``, or its own table) where the
        model reaches it (docs/testing.md, "Where requests go"); return its counter model."""
        counter = model.autoinc_options().counter if hasattr(model, "autoinc_options") else bind_counter(cls, model)
        table = model if counter._autoinc_model_spec is not None else counter
        _endpoint.client(table)  # no region: an error naming Meta.region and AWS_DEFAULT_REGION, before PynamoDB's
        table.create_table(billing_mode=billing_mode, wait=wait, **kwargs)
        return cast(Type[NextId], counter)

    @classmethod
    def nextval(cls, key: str, sequence: Optional[SequenceOptions] = None) -> int:
        """Advance counter ``key`` along ``sequence`` (default: its recorded options); return the new value. Raises
        SequenceExhaustedError at the end bound (nothing spent) unless it cycles, SequenceMismatchError on others."""
        return cls._advance(key, sequence, None)

    @classmethod
    def _advance(cls, key: str, sequence: Optional[SequenceOptions], conflicts: Optional[Budget]) -> int:
        """:meth:`nextval`, resending a conflict with another region within ``conflicts`` (a model's budget)."""
        if not isinstance(sequence, SequenceOptions) or not isinstance(key, str):
            return cls.reserve(key, 1, sequence)[0]  # which checks them
        templates = cls.__dict__.get("_advance_templates")
        template = templates.get((key, sequence)) if templates is not None else None
        if template is None:
            if not storable(sequence.start - sequence.step):
                return cls.reserve(key, 1, sequence)[0]
            if templates is None or len(templates) >= TEMPLATE_LIMIT:
                templates = cls._advance_templates = {}  # on this class only: a subclass has its own table
            unmarked = Reserve(cls, key, 1, sequence, False, marked=False)  # a fast save's value: a lost answer's
            template = templates[key, sequence] = SwapTemplate(unmarked.request()[1])  # resend spends one more
        try:
            data = cls._send_update("advance", key, template.fill((None, 0, None)))
        except Reserve.errors as failure:
            return _transport.drive(Reserve(cls, key, 1, sequence, False, conflicts), failure)[0]
        return cls._count_in(key, data["Attributes"])

    @classmethod
    def reserve(cls, key: str, count: int, sequence: Optional[SequenceOptions] = None, *,
                partial: bool = False) -> List[int]:
        """Take ``count`` consecutive values of counter ``key`` in one UpdateItem, all or nothing (``partial``: fewer
        when fewer are left); a cycle wraps as PostgreSQL's ``CYCLE`` (``[49, 50, 1, 2]`` of 1..50). Without
        ``sequence``, the recorded options. :class:`OutOfBoundsError` (nothing sent) for a ``count`` no int above 0."""
        if not is_int(count) or count < 1:
            raise OutOfBoundsError(f"reserve({key!r}, {count!r}): count must be an int of 1 or more; nothing taken")
        check_sequence(f"reserve({key!r}, ...)", sequence, optional=True)
        if not isinstance(partial, bool):
            raise ConfigurationError(f"reserve({key!r}, {count}, partial={partial!r}): partial must be True or False; "
                                     "nothing was taken")
        seq = sequence if sequence is not None else cls.stored_options(key) or DEFAULT
        if count > RESERVE_LIMIT and abs(seq.step * count) < NUMBER_LIMIT:  # (past 38 digits: Reserve says so)
            raise OutOfBoundsError(f"reserve({key!r}, {count}): at most {RESERVE_LIMIT:,} values at once, as their "
                                   "list is built once the counter has moved; nothing taken. Reserve in parts")
        return _transport.drive(Reserve(cls, key, count, seq, partial))

    @classmethod
    def compare_and_set(cls, key: str, expected: Optional[int], value: int,
                        sequence: Optional[SequenceOptions] = None) -> bool:
        """Set counter ``key`` to int ``value`` if it holds ``expected`` (None: none), and ``sequence`` or no options;
        return whether it did."""
        call = f"compare_and_set({key!r}, {expected!r}, {value!r})"
        check_int(call, expected, optional=True, rule="the values must be ints (expected may be None)")
        check_int(call, value, rule="the values must be ints")
        check_sequence(call, sequence, optional=True)
        if sequence is not None and not (sequence.contains(value) or sequence.contains(value + sequence.step)):
            raise OutOfBoundsError(  # every save would refuse such a counter
                f"{call}: {value} lies outside sequence {key!r} ({sequence.minimum}..{sequence.maximum}), and so "
                "does the value after it; nothing was changed. Set a value within the bounds (or one step before "
                "the first)")
        try:  # marked (Once): a resend of an applied set is known for this call's own, not refused as another's
            cls._once("advance", key, *cls._swap(expected, value, sequence))
        except Refused as refused:
            if sequence is not None:
                cls._refused_value(key, refused.item, sequence)  # raises on other options or no integer
            return False
        return True

    @classmethod
    def setval(cls, key: str, value: int, *, is_called: bool = True, sequence: Optional[SequenceOptions] = None) -> int:
        """PostgreSQL's ``setval``: counter ``key``'s next value is ``value + step`` (``value`` if not ``is_called``);
        returns ``value``. Raises :class:`OutOfBoundsError` for a ``value`` no int, out of the bounds (of ``sequence``
        or the recorded options, else :class:`SequenceMismatchError`) or off a region counter's subsequence, and
        :class:`ConfigurationError` for arguments of another type."""
        call = f"setval({key!r}, {value!r})"
        check_int(call, value)
        if not isinstance(is_called, bool):
            raise ConfigurationError(f"{call}: is_called must be True or False, not {is_called!r} (False: the next "
                                     "value is value itself); nothing was changed")
        check_sequence(call, sequence, optional=True)
        item = cls._item(key)  # whatever value it holds (1.5, a string) is replaced
        recorded = cls._recorded(item)
        if sequence is not None and recorded is not None and recorded != sequence:
            raise cls._mismatch(key, sequence, recorded.encode())
        seq = sequence or recorded
        cls._set(key, setval_value(key, value, is_called, seq), seq, item)
        return value

    @classmethod
    def restart(cls, key: str, sequence: SequenceOptions, value: Optional[int] = None) -> None:
        """``ALTER SEQUENCE ... RESTART [WITH value]`` (default: the start) and record ``sequence``."""
        call = f"restart({key!r}, ..., {value!r})"
        check_sequence(call, sequence, optional=False)
        check_int(call, value, optional=True, rule="the value must be an int or None (the start)")
        start = sequence.start if value is None else value
        cls._set(key, setval_value(key, start, False, sequence), sequence, cls._item(key))

    @classmethod
    def alter(cls, key: str, sequence: SequenceOptions) -> Optional[SequenceOptions]:
        """``ALTER SEQUENCE``: record ``sequence`` on counter ``key``, keeping its value; returns the options recorded
        before (or None). A value outside the new bounds raises :class:`OutOfBoundsError`: :meth:`restart` instead."""
        check_sequence(f"alter({key!r}, ...)", sequence, optional=False)
        item = cls._item(key)
        last = cls.kept_value(key, item, sequence)
        if item.get(cls.options.attr_name) != {"S": sequence.encode()}:
            cls._set(key, last, sequence, item)
        return cls._recorded(item)

    @classmethod
    def _set(cls, key: str, value: Optional[int], sequence: Optional[SequenceOptions], item: Dict[str, Any]) -> None:
        """Write value and options if the options are still as in ``item`` (``start - step`` past 38 digits: none)."""
        if value is not None and not storable(value):
            if sequence is None or value != sequence.start - sequence.step:
                raise OutOfBoundsError(f"counter {key!r} would hold {value} (the value before the next), over 38 "
                                       "digits; nothing was changed. Choose a next value further from the bound")
            value = None
        attr, options = cls.next_id, cls.options
        actions: List[Any] = [attr.set(value) if value is not None else attr.remove()]
        if sequence is not None:
            actions.append(options.set(sequence.encode()))
        seen = item.get(options.attr_name)
        condition = options.does_not_exist() if seen is None else options == seen
        for queue in (cls.ticket, cls.served):  # a gapless queue's numbers, put by hand as something else
            held = item.get(queue.attr_name)
            if held is not None and "N" not in held:
                actions.append(queue.remove())
                condition &= queue == held
        try:
            cls._once("set", key, actions, condition)  # a resend must not move back a counter advanced since
        except Refused:
            raise CounterError(f"counter {key!r} had its options changed by another process while being set; "
                               "run the command again") from None
        finally:
            for forget in SET_BY_HAND:
                forget(cls._where(key))
        log.info("counter %r in table %r set to %s%s", key, cls.Meta.table_name, value,
                 "" if sequence is None else f", options {sequence.encode()}")

    @classmethod
    def raise_to(cls, key: str, value: int, *, step: int = 1) -> bool:
        """Move counter ``key`` forward (``step``'s way) to ``value`` if behind or unset, never back, so safe while
        others allocate; returns whether it moved. :class:`OutOfBoundsError` for no ints or ``step`` 0."""
        call = f"raise_to({key!r}, {value!r}, step={step!r})"
        check_int(call, value)
        check_int(call, step, rule="step must be an int, the sequence's step")
        if step == 0:
            raise OutOfBoundsError(f"{call}: step must not be 0; pass the sequence's step "
                                   "(Model.autoinc_options().step); nothing was changed")
        attr = cls.next_id
        # is_type(): a counter holding no number is not behind (moto would compare a bool with a number)
        behind = attr.is_type() & ((attr < value) if step > 0 else (attr > value))
        try:
            cls._send_update("raise", key, cls._update_kwargs(key, [attr.set(value)], attr.does_not_exist() | behind))
        except Refused as refused:
            cls._value_in(key, refused.item)  # raises if the counter holds no integer
            return False
        for forget in SET_BY_HAND:
            forget(cls._where(key))
        log.info("counter %r in table %r moved to %s", key, cls.Meta.table_name, value)
        return True

    @classmethod
    def _send_update(cls, verb: str, key: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        """:func:`send_update`, raising the library's error on any failure but a failed condition."""
        try:
            return send_update(cls._get_connection().connection, kwargs)
        except UpdateError as exc:
            if error_code(exc) == "ValidationException":
                cls.currval(key)  # raises if the counter holds no number
            raise cls._request_failed(verb, key, exc) from exc

    @classmethod
    def _once(cls, verb: str, key: str, actions: List[Any], condition: Any,
              return_values: Optional[str] = None) -> Dict[str, Any]:
        """Send an update of counter ``key`` once however often it is resent (:class:`Once`); the answer or item."""
        once = Once(cls._where(key), f"counter {key!r} in table {cls.Meta.table_name!r}",
                    functools.partial(cls._update_kwargs, key), lambda _, kwargs: cls._send_update(verb, key, kwargs))
        once.aim(actions, condition, return_values)
        return _transport.drive(once)

    @classmethod
    def _value_in(cls, key: str, item: Dict[str, Any]) -> Optional[int]:
        """The value the raw counter ``item`` holds, or None; raises if it holds no integer."""
        raw = item.get(cls.next_id.attr_name)
        value = None if raw is None else integer(raw.get("N"))
        if value is None and raw is not None:
            raise cls._not_a_number(key, raw)
        return value

    @classmethod
    def _count_in(cls, key: str, item: Dict[str, Any]) -> int:
        """The value the raw counter ``item`` holds; raises if it holds none or no integer."""
        if (count := cls._value_in(key, item)) is None:
            raise cls._not_a_number(key, None)
        return count

    @classmethod
    def _swap(cls, expected: Optional[int], value: int, sequence: Optional[SequenceOptions]) -> Tuple[List[Any], Any]:
        """The actions and condition moving the counter from ``expected`` to ``value``, recording ``sequence``."""
        attr = cls.next_id
        condition = attr.does_not_exist() if expected is None else attr == expected
        actions = [attr.set(value)]
        if sequence is not None:
            records, follows = cls._following(sequence)
            condition &= records
            actions.append(follows)
        return actions, condition

    @classmethod
    def _following(cls, sequence: SequenceOptions) -> Tuple[Any, Any]:
        """The condition that the counter records ``sequence`` or nothing, and the action recording it."""
        recorded = sequence.encode()
        return cls.options.does_not_exist() | (cls.options == recorded), cls.options.set(recorded)

    @classmethod
    def _update_kwargs(cls, key: str, actions: List[Any], condition: Any,
                       return_values: Optional[str] = None) -> Dict[str, Any]:
        return cast(Dict[str, Any], cls._get_connection().get_operation_kwargs(
            *cls._item_key(key), actions=actions, condition=condition, return_values=return_values,
            return_values_on_condition_failure="ALL_OLD"))

    @classmethod
    def increment(cls, name: str, *, period: Optional[str] = "month", by: int = 1,
                  now: Optional[datetime] = None) -> int:
        """Count ``by`` (an int, else :class:`CounterValueError`) events on counter ``name`` within the current
        ``period`` (``"year"``, ``"month"``, ``"day"`` in UTC; None: forever) in one UpdateItem; return the count
        so far. Exact when botocore resends a request whose answer was lost."""
        check_int(f"{cls.__name__}.increment({name!r}, by={by!r})", by, rule="by must be an int",
                  error=CounterValueError)
        key = name if period is None else f"{name}#{periods.label(period, now)}"
        # moto leaves a count that an ADD of 0 did not change out of UPDATED_NEW; DynamoDB names it
        data = cls._once("increment", key, [cls.next_id.add(by)], None, ALL_NEW if by == 0 else UPDATED_NEW)
        return cls._count_in(key, data.get("Attributes", {}))

    @classmethod
    def current(cls, name: str, *, period: Optional[str] = "month", now: Optional[datetime] = None) -> Optional[int]:
        """The count of counter ``name`` within ``period`` (as given to :meth:`increment`), or None."""
        return cls.currval(name if period is None else f"{name}#{periods.label(period, now)}")

    @classmethod
    def _command(cls, command: str) -> str:
        """``pynamodb-autoinc COMMAND`` in backticks, with the options that reach this counter table."""
        model = cls._autoinc_model_spec
        if model is not None:  # counters in a model's table: the command line finds them through the model
            command = command.replace("package.module:Model", model)
            return f"`pynamodb-autoinc {command}{'' if '--model' in command else f' --model {model}'}`"
        options = [f"{option} {value}" for option, value in (("--host", getattr(cls.Meta, "host", None)),
                                                             ("--region", getattr(cls.Meta, "region", None))) if value]
        if cls.Meta.table_name != NextId.Meta.table_name:
            options.append(f"--table {cls.Meta.table_name}")
        return f"`pynamodb-autoinc {command}`" + (f" (with {' '.join(options)})" if options else "")


def bind_counter(counter: Type[_C], model: Type[Model]) -> Type[_C]:
    """``counter`` reached with ``model``'s connection settings where its own ``Meta`` sets none."""
    overrides = _endpoint.inherited(counter._autoinc_own_settings, counter.Meta, model.Meta)
    return rebind(counter, overrides) if overrides else counter


def rebind(counter: Type[_C], settings: Dict[str, Any]) -> Type[_C]:
    """The one subclass of ``counter`` (with a connection of its own) whose ``Meta`` sets ``settings``."""
    key = (counter, tuple(sorted((k, repr(v)) for k, v in settings.items())))
    if key not in _BOUND:
        meta = type("Meta", (counter.Meta,), {"table_name": counter.Meta.table_name, **settings})
        _BOUND[key] = _bound(counter, counter.__name__, meta, __module__=counter.__module__,
                             __qualname__=counter.__qualname__)
    return cast(Type[_C], _BOUND[key])


_BOUND: Dict[Any, Any] = {}


def _bound(base: Type[_C], name: str, meta: type, **attrs: Any) -> Type[_C]:
    """A subclass of ``base`` reached through ``meta``, with a connection of its own (not one ``base`` cached)."""
    return cast(Type[_C], type(name, (base,), {"Meta": meta, "_autoinc_bound": True, "_connection": None, **attrs}))


#: The hash key prefix of the counter items kept in a model's own table.
RESERVED_PREFIX = "__autoinc__#"


def in_table_counter(model: Type[Model]) -> Type[NextId]:
    """A counter model keeping counter ``key`` in ``model``'s table, at hash key ``"__autoinc__#" + key``."""
    hash_attr, range_attr = model._hash_key_attribute(), model._range_key_attribute()
    ranges = (type(None), UnicodeAttribute, NumberAttribute)  # no range key, or one a reserved key fits in
    for needed, name, attr, fits in (("string hash key", model._hash_keyname, hash_attr, (UnicodeAttribute,)),
                                     ("string or number range key", model._range_keyname, range_attr, ranges)):
        if not isinstance(attr, fits):
            raise ConfigurationError(f"{model.__name__}: Meta.autoinc_counter_in_table needs a {needed}, but {name!r} "
                                     f"is a {type(attr).__name__}; use the NextId table instead")
    attrs: Dict[str, Any] = {"next_key": UnicodeAttribute(hash_key=True, attr_name=hash_attr.attr_name)}
    if range_attr is not None:
        attrs["next_range"] = type(range_attr)(range_key=True, attr_name=range_attr.attr_name)
        attrs["_autoinc_range"] = "0" if isinstance(range_attr, NumberAttribute) else "__autoinc__"  # serialized
    named = ("table_name", *_endpoint.CONNECTION_SETTINGS)
    settings = {s: getattr(model.Meta, s) for s in named if hasattr(model.Meta, s)}
    return _bound(NextId, f"{model.__name__}Counter", type("Meta", (), settings), __module__=model.__module__,
                  _autoinc_model_spec=f"{model.__module__}:{model.__qualname__}", _autoinc_prefix=RESERVED_PREFIX,
                  **attrs)


def send_update(connection: Connection, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Send one UpdateItem; a failed condition raises :class:`Refused` with the old item, others ``UpdateError``."""
    try:
        return _transport.send(connection, UPDATE_ITEM, kwargs)
    except UpdateError as exc:
        if error_code(exc) != "ConditionalCheckFailedException":
            raise
        raise Refused(returned_item(exc) or {}, exc) from None


# Once's writer attributes (docs/architecture.md, "The counter"), pruned when idle, seen every PRUNE_EVERY calls.
WRITER_PREFIX = "NextW_"
WRITER_IDLE_MS = 3_600_000
PRUNE_EVERY = 64
PRUNE_MAX = 20


class _Writer:
    """One caller's writer (a thread's, or an awaited call's): its attribute, the last number it wrote, and how
    often it counted. A writer counts for one caller at a time: its numbers tell its own tries from others'."""

    def __init__(self) -> None:
        self.attr = WRITER_PREFIX + secrets.token_hex(6)
        self.last = self.calls = 0


class _Writers:
    """This process's writers (one per thread, and one per awaited call running, from a pool the calls hand them
    back to) and the idle writers its counts have seen, by counter: any later count of the process, in any thread,
    removes them, so an item keeps one attribute per writer active in the last hour, even when each thread counts
    once (a thread per request)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.free: List[_Writer] = []  # the writers of awaited calls that ended
        self.mine = _bridge.Local(self._lend, self.free.append)
        self.idle: Dict[Tuple[Any, ...], List[Tuple[str, Dict[str, str]]]] = {}
        self.more: Set[Tuple[Any, ...]] = set()  # counters holding more idle writers than one update removes

    def _lend(self) -> _Writer:
        with self.lock:
            return self.free.pop() if self.free else _Writer()

    def take_idle(self, where: Tuple[Any, ...]) -> Tuple[List[Tuple[str, Dict[str, str]]], bool]:
        """The idle writers seen on counter ``where`` (each removed by one count), and whether to read it whole."""
        with self.lock:
            return self.idle.pop(where, []), where in self.more

    def keep_idle(self, where: Tuple[Any, ...], idle: List[Tuple[str, Dict[str, str]]], more: bool) -> None:
        with self.lock:
            if idle:
                if len(self.idle) >= 64:  # a few counters at a time is plenty (it grows by one at most)
                    self.idle.pop(next(iter(self.idle)))
                self.idle[where] = idle
            (self.more.add if more else self.more.discard)(where)


def _writers() -> _Writers:
    """This process's writers (a part of :mod:`._state`: a forked child's are new)."""
    return _state.state.part("writers", _Writers)


def _this_writer() -> _Writer:
    """This caller's writer, made (or lent) on its first count."""
    return _writers().mine.get()


class Once(_transport.Exchange[Dict[str, Any]]):
    """One counting call, applied once however often resent: a resend finds its writer number set, and the item.
    A failure whose outcome is unknown (a 5xx, a lost answer) is probed: the same request, sent again."""

    errors = (Refused, CounterError)

    def __init__(self, where: Tuple[Any, ...], what: str, build: Callable[[List[Any], Any, Optional[str]], Dict],
                 send: Callable[[str, Dict[str, Any]], Dict[str, Any]]) -> None:
        self.writer = _this_writer()
        self.now_ms = int(_budget.clock.now().timestamp() * 1000)
        self.seq = self.writer.last = max(self.writer.last + 1, self.now_ms)  # above every earlier one
        self.where, self.what, self.build, self.transmit = where, what, build, send
        self.idle, more = _writers().take_idle(where)
        self.whole = more or self.writer.calls % PRUNE_EVERY == 0
        self.writer.calls += 1
        self.probes = 0

    def aim(self, actions: List[Any], condition: Any, return_values: Optional[str]) -> None:
        self.actions, self.condition, self.return_values = actions, condition, return_values

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        return self.transmit(operation, kwargs)

    def request(self) -> Tuple[str, Dict[str, Any]]:
        mine = Path([self.writer.attr])
        sent = list(self.actions) + [mine.set(self.seq)]
        marked = mine.does_not_exist() | (mine < self.seq)
        full = marked if self.condition is None else self.condition & marked
        for name, seen in self.idle:
            if name == self.writer.attr:
                continue
            other = Path([name])
            sent.append(other.remove())
            full &= other.does_not_exist() | (other == seen)
        return UPDATE_ITEM, self.build(sent, full, ALL_NEW if self.whole else self.return_values)

    def failed(self, refused: Exception) -> Optional[Dict[str, Any]]:
        """Resent: answer with the item as it is now; refused: once more without idle writers' attributes, or raise."""
        if not isinstance(refused, Refused):
            self.probes += 1
            if _transport.probe(refused, self.probes):
                return None
            raise refused
        held_seq = integer(held := refused.item.get(self.writer.attr, {}).get("N"))
        if held_seq == self.seq:
            return {"Attributes": refused.item}  # an earlier send of this very call was applied
        if self.idle:  # an idle writer may have counted again since it was seen: once more, keeping its attribute
            self.idle = []
            return None
        if held_seq is not None and held_seq > self.seq or self.condition is None:
            raise CounterError(f"could not increment {self.what}: its writer attribute {self.writer.attr!r} holds "
                               f"{held}, not below {self.seq}; does another process count as this writer?",
                               refused.cause) from refused.cause
        raise refused

    def applied(self, data: Dict[str, Any]) -> Dict[str, Any]:
        """The answer; from a whole item, remember up to PRUNE_MAX other writers' attributes idle for WRITER_IDLE_MS."""
        if not self.whole:
            return data
        item, mine = data.get("Attributes", {}), self.writer.attr
        idle = [(name, raw) for name, raw in item.items() if name.startswith(WRITER_PREFIX) and name != mine
                and (seen := integer(raw.get("N"))) is not None and seen < self.now_ms - WRITER_IDLE_MS]
        _writers().keep_idle(self.where, idle[:PRUNE_MAX], len(idle) > PRUNE_MAX)
        return data


#: The (expected, value, ticket) a swap template is built with: far from each other and any counter value.
STAND_IN = (7 * 10**40, 8 * 10**40, 9 * 10**40)
TEMPLATE_LIMIT = 256


class SwapTemplate:
    """A swap request built with :data:`STAND_IN` numbers, and where each stands in it."""

    def __init__(self, kwargs: Dict[str, Any]) -> None:
        self.kwargs = kwargs
        self.slots: Dict[str, Tuple[int, int]] = {}
        for name, value in kwargs.get("ExpressionAttributeValues", {}).items():
            whole = integer(value.get("N")) if isinstance(value, dict) and len(value) == 1 else None
            for which, stand_in in enumerate(STAND_IN):
                if whole is not None and abs(whole - stand_in) < 10**6:
                    self.slots[name] = (which, whole - stand_in)

    def fill(self, numbers: Tuple[Optional[int], int, Optional[int]]) -> Dict[str, Any]:
        """The request with ``numbers``, a new dict at every level a caller or botocore hook might change."""
        kwargs = dict(self.kwargs)
        values = dict(kwargs.get("ExpressionAttributeValues", {}))
        for name, (which, offset) in self.slots.items():
            values[name] = {"N": str(numbers[which] + offset)}  # type: ignore[operator]
        if values:
            kwargs["ExpressionAttributeValues"] = values
        if "ExpressionAttributeNames" in kwargs:
            kwargs["ExpressionAttributeNames"] = dict(kwargs["ExpressionAttributeNames"])
        kwargs["Key"] = {name: dict(part) for name, part in self.kwargs["Key"].items()}
        return kwargs
