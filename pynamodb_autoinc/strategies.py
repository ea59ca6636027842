"""Where an ID is born: a :class:`Claim` on the next value of a sequence, set on its instance at once; it ends
committed or released (back to None). See docs/architecture.md, "Where an ID is born"."""

from __future__ import annotations

import functools
import logging
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, cast
from weakref import WeakKeyDictionary

from pynamodb.constants import QUERY
from pynamodb.exceptions import PynamoDBException
from pynamodb.models import Model

from . import _bridge, _state, _transport, regions
from ._options import Options
from .counter import SET_BY_HAND, Reserve
from .exceptions import CounterError, SequenceExhaustedError, UnassignedIdError, WriteOutcomeUnknownError, error_code
from .sequence import number, number_text

log = logging.getLogger(__name__)

UNREAD: Any = object()  # "the counter's value is not known here"

ChainId = Tuple[Any, ...]


@dataclass(eq=False)
class Claim:
    """A value of a sequence taken for one new instance, until it is committed or released."""
    instance: Model
    opts: Options
    kind: str  # "counter" (fast, block), "swap" (gapless: moved in the item's transaction) or "query"
    key: str  # the counter key (the query strategy: the table and partition)
    period: Optional[str] = None
    value: int = 0
    expected: Optional[int] = None  # a chain's head swap: the counter value the swap requires (None: no value yet)
    state: str = field(default="held")  # "held", "committed" or "released"

    @functools.cached_property
    def chain(self) -> ChainId:
        """The counter (or partition) this claim's value comes from (its options and key never change)."""
        if self.kind == "query":
            meta = self.opts.model.Meta
            return "query", getattr(meta, "host", None), getattr(meta, "region", None), self.key
        return (self.kind, *counter_id(self.opts, self.key))

    def assign(self, value: int) -> None:
        self.value = value
        opts = self.opts
        setattr(self.instance, opts.attribute,
                value if opts.fmt is None and not opts.as_string else opts.to_python(value, self.period))

    def release(self) -> None:
        """The item will not be stored: put the attribute back to None."""
        if self.state != "held":
            return
        self.state = "released"
        setattr(self.instance, self.opts.attribute, None)
        if self.kind == "swap":
            forget(self)


def commit(claims: Sequence[Claim]) -> None:
    """The items carrying ``claims`` are stored: commit them; remember each chain of swaps' last value."""
    last: Dict[ChainId, Claim] = {}
    for claim in claims:
        claim.state = "committed"
        if claim.kind == "swap":
            last[claim.chain] = claim
    if last:
        memory = _memory()
        with memory.lock:
            for chain, claim in last.items():
                memory.seen.pop(chain[1:], None)  # the newest last, so the oldest goes first
                memory.seen[chain[1:]] = claim.value
            if len(memory.seen) > REMEMBERED:
                _bound(memory.seen)


@contextmanager
def held(claims: Sequence[Claim]) -> Iterator[None]:
    """Release ``claims`` not committed when the block is left by an exception (see :func:`abandoned`)."""
    try:
        yield
    except BaseException as exc:
        abandoned(claims, exc)
        raise


def abandoned(claims: Sequence[Claim], exc: BaseException) -> None:
    """Release ``claims``, unless the item may be stored under them: ``exc`` is a WriteOutcomeUnknownError, or an
    interrupt (Ctrl-C) that stopped a request which may have applied."""
    if not isinstance(exc, WriteOutcomeUnknownError) and not _transport.may_have_applied(exc):
        for claim in claims:
            claim.release()


class _Memory:
    """What this process remembers about counters."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.blocks: Dict[Tuple[Any, ...], List[int]] = {}  # sequence -> [next value, last value]
        self.refills: Dict[Tuple[Any, ...], _bridge.Lock] = {}  # sequence -> held while its block is reserved
        self.seen: Dict[Tuple[Any, ...], int] = {}  # counter -> its value after our last write
        self.ids: WeakKeyDictionary[type, Dict[str, Tuple[Any, ...]]] = WeakKeyDictionary()  # counter_id()s


#: The most counters this process remembers a value or keeps a block of; past it the longest unused is forgotten.
REMEMBERED = 1024


def _bound(memory: Dict[Any, Any]) -> None:
    while len(memory) > REMEMBERED:
        del memory[next(iter(memory))]


def _memory() -> _Memory:
    state = _state.state
    return state.parts.get("memory") or state.part("memory", _Memory)


def counter_id(opts: Options, key: str) -> Tuple[Any, ...]:
    """Identifies one counter item across models: endpoint, table, item key."""
    memory = _memory()
    ids = memory.ids.get(opts.counter)
    ident = ids.get(key) if ids is not None else None
    if ident is None:
        ident = opts.counter._where(key)
        with memory.lock:
            ids = memory.ids.setdefault(opts.counter, {})
            ids[key] = ident
            _bound(ids)
    return ident


def forget(claim: Claim) -> None:
    """Forget the value this process last wrote to a swap claim's counter: it may be stale, read it afresh."""
    ident, memory = claim.chain[1:], _memory()  # the chain first: computing it may take the lock
    with memory.lock:
        memory.seen.pop(ident, None)


def forget_counter(ident: Tuple[Any, ...]) -> None:
    """Drop this process's reserved values and remembered value of a counter (it was set by hand)."""
    memory = _memory()
    with memory.lock:
        memory.blocks = {s: block for s, block in memory.blocks.items() if s[0] != ident}
        memory.seen.pop(ident, None)


SET_BY_HAND.append(forget_counter)


def _described(instance: Model, opts: Options) -> Options:
    """The options after the global-table check (``DescribeTable``, once per process), which a scope value that
    no counter key can hold is refused before (:class:`InvalidKeyError`: nothing sent)."""
    if opts.scope:
        opts.counter_key(instance, opts.current_period())
    return cast(Options, regions.effective(opts))


def take(instance: Model, opts: Options, pending: Sequence[Claim] = (), *, fresh: bool = False) -> Claim:
    """Claim the next value for ``instance``; ``pending``: the request's earlier claims; ``fresh``: read the
    counter, not the value this process remembers."""
    known = _state.state.parts.get("tables")  # the check's verdict, as this process left it
    verdict = known.checked.get(opts.model) if known is not None else None
    opts = verdict[1] if verdict is not None and verdict[0] is opts else _described(instance, opts)
    claim = Claim(instance, opts, *_source(instance, opts))
    if claim.kind == "counter":
        claim.assign(_from_block(opts, claim.key) if opts.block > 1
                     else opts.counter._advance(claim.key, opts.sequence, opts.budget))
    else:
        _claim_in_chain(claim, pending, fresh)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s claims %s=%r (%s, %r)", type(instance).__name__, opts.attribute, claim.value, claim.kind,
                  claim.key)
    return claim


def _source(instance: Model, opts: Options) -> Tuple[str, str, Optional[str]]:
    """Where ``instance``'s value comes from: the claim's kind, its counter key (or partition), and its period."""
    if opts.strategy == "query":
        return "query", partition_key(instance, opts), None
    kind = "swap" if opts.gapless else "counter"
    if opts.fixed_key is not None:
        return kind, opts.fixed_key, None
    period = opts.current_period()  # a scope, a period or a region in the key
    key = opts.counter_key(instance, period)
    if opts.region is not None:
        regions.check_region_counter(opts, key)  # a region appended to Meta.autoinc_regions waits for seed
    return kind, key, period


def _claim_in_chain(claim: Claim, pending: Sequence[Claim], fresh: bool) -> None:
    """A swap or query claim: the value after the request's earlier claim on its chain, or after the counter's."""
    sequence = claim.opts.sequence
    chain = [c for c in pending if c.chain == claim.chain] if pending else []
    if chain:
        if len(chain) >= sequence.size:
            raise sequence.too_many(claim.key, len(chain) + 1)
        claim.assign(sequence.following(claim.key, chain[-1].value))
    else:
        _head(claim, UNREAD if fresh or claim.kind != "swap" else remembered(claim))


def take_spent(instances: Sequence[Model], opts: Options) -> List[Claim]:
    """Fast mode: one counter request per key for exactly the values needed; a batch that does not fit spends
    nothing."""
    opts = regions.effective(opts)
    period = opts.current_period()
    groups: Dict[str, List[Model]] = {}
    for instance in instances:
        groups.setdefault(opts.counter_key(instance, period), []).append(instance)
    claims: List[Claim] = []
    for key in groups:
        regions.check_region_counter(opts, key)  # before anything is reserved
    for key, group in groups.items():
        try:
            values = _reserve(opts, key, len(group), partial=False)
        except SequenceExhaustedError as exc:
            if len(group) > opts.sequence.size:
                raise  # more than the whole sequence holds
            raise too_few(opts, key, len(group), opts.sequence.remaining(exc.last), exc) from exc
        if opts.block > 1:  # the values reserved lie past this process's block: drop it, so that IDs keep increasing
            _drop_block(opts, key)
        for instance, value in zip(group, values):
            claim = Claim(instance, opts, "counter", key, period)
            claim.assign(value)
            claims.append(claim)
    return claims


def too_few(opts: Options, key: str, asked: int, left: int, exc: SequenceExhaustedError) -> SequenceExhaustedError:
    """The error for ``save_all()`` asking sequence ``key`` for ``asked`` values when only ``left`` are left."""
    seq = opts.sequence
    bound = "maximum (Meta.autoinc_max)" if seq.step > 0 else "minimum (Meta.autoinc_min)"
    return SequenceExhaustedError(
        f"save_all() asked for {asked} values of sequence {key!r}; only {left} {'is' if left == 1 else 'are'} left "
        f"before its {bound} {seq.end}, none spent. Save at most {left} at once, or move the bound (then "
        "`pynamodb-autoinc alter`)", exc.cause, last=exc.last)


def retake(claims: Sequence[Claim], current: Dict[ChainId, Any]) -> None:
    """After a lost race, claim again from what the race showed (``current``: counter values by chain)."""
    done: List[Claim] = []
    for claim in claims:
        if claim.kind != "counter" and claim.state == "held":
            before = next((c for c in reversed(done) if c.chain == claim.chain), None)
            if before is not None:
                claim.assign(claim.opts.sequence.following(claim.key, before.value))
            else:
                if claim.kind == "swap":
                    forget(claim)
                _head(claim, current.get(claim.chain, UNREAD))
            done.append(claim)


def remembered(claim: Claim) -> Any:
    """The value this process last wrote to a swap claim's counter, or unknown."""
    ident = claim.chain[1:]  # counter_id(), as the claim's chain holds it (read outside the lock it takes)
    memory = _memory()
    with memory.lock:
        return memory.seen.get(ident, UNREAD)


def _head(claim: Claim, last: Any) -> None:
    """Give the first claim of a chain the value after ``last`` (read it when unknown)."""
    opts = claim.opts
    if last is UNREAD:
        last = _query_last(claim.instance, opts) if claim.kind == "query" else opts.counter.currval(claim.key)
    if claim.kind == "swap":
        claim.expected = last
    sequence = opts.sequence
    value = sequence.start if last is None else last + sequence.step
    if last is not None and not sequence.minimum <= value <= sequence.maximum:
        value = sequence.following(claim.key, last)  # the end bound: wrap, or raise
    claim.assign(value)


def _reserve(opts: Options, key: str, count: int, *, partial: bool) -> List[int]:
    """Reserve ``count`` values of ``key``: without ``partial`` all or nothing (unless cycling), with it fewer."""
    if count > opts.sequence.size and not partial:
        raise opts.sequence.too_many(key, count)  # a cycling sequence is asked for what is left, pass by pass
    values: List[int] = []
    while len(values) < count:
        values += _transport.drive(Reserve(opts.counter, key, count - len(values), opts.sequence,
                                           partial or opts.sequence.cycle, opts.budget))
        if partial:
            break
    return values


def _drop_block(opts: Options, key: str) -> None:
    """Forget this process's block of sequence ``key`` (its values left unused are gaps)."""
    sequence, memory = (counter_id(opts, key), opts.sequence), _memory()
    with memory.lock:
        memory.blocks.pop(sequence, None)


def _from_block(opts: Options, key: str) -> int:
    """The next value of this process's block, reserving a new one when it is used up. The reserve goes out with
    no lock of the process's memory held: only the threads waiting for the same block wait for it."""
    sequence, memory = (counter_id(opts, key), opts.sequence), _memory()
    with memory.lock:
        value = _next_in_block(memory, sequence, opts.step)
        if value is not None:
            return value
        refill = memory.refills.setdefault(sequence, _bridge.Lock())  # threads block on it, awaited calls await it
    with refill:
        with memory.lock:  # another thread may have refilled it while this one waited
            value = _next_in_block(memory, sequence, opts.step)
        if value is not None:
            return value
        values = _reserve(opts, key, opts.block, partial=True)
        with memory.lock:
            memory.blocks[sequence] = [values[0], values[-1]]
            _bound(memory.blocks)
            _bound(memory.refills)
            return _next_in_block(memory, sequence, opts.step)  # type: ignore[return-value]


def _next_in_block(memory: _Memory, sequence: Tuple[Any, ...], step: int) -> Optional[int]:
    """Take the next value of the block of ``sequence`` (the memory's lock held), or None if there is none."""
    block = memory.blocks.get(sequence)
    if block is None:
        return None
    value = block[0]
    if value == block[1]:
        del memory.blocks[sequence]
    else:
        block[0] = value + step
    return value


def track(instances: Sequence[Model], opts: Options) -> None:
    """``Meta.autoinc_track_explicit``: raise each counter past the furthest explicit ID within its bounds, and
    drop this process's block when it holds such an ID."""
    period, pick = opts.current_period(), max if opts.step > 0 else min
    furthest: Dict[str, int] = {}
    for instance in instances:
        try:
            value = int(getattr(instance, opts.attribute))
        except (TypeError, ValueError):
            continue  # not an integer ID (a string one that is not a number): nothing to track
        if opts.sequence.contains(value):
            key = opts.counter_key(instance, period)
            furthest[key] = pick(furthest.get(key, value), value)
    for key, value in furthest.items():
        if not opts.counter.raise_to(key, value, step=opts.step):  # when it moves, raise_to forgets the counter
            ident = counter_id(opts, key)
            memory = _memory()
            with memory.lock:
                holds = any(sequence[0] == ident and min(block) <= value <= max(block)
                            for sequence, block in memory.blocks.items())
            if holds:
                forget_counter(ident)


def partition_key(instance: Model, opts: Options) -> str:
    """The query strategy's chain key: the table and the instance's partition."""
    model = type(instance)
    hash_value = getattr(instance, str(model._hash_keyname))
    if hash_value is None:
        raise UnassignedIdError(f"{model.__name__}.{model._hash_keyname} is None: the query strategy numbers "
                                f"{opts.attribute} within each {model._hash_keyname}; set it before saving")
    attribute = model.get_attributes()[str(model._hash_keyname)]
    if attribute.attr_type == "N":  # 1 and 1.0 are one DynamoDB number, so one partition
        hash_value = number_text(number(attribute.serialize(hash_value)))
    return f"{model.Meta.table_name}#{hash_value}"


def _query_last(instance: Model, opts: Options) -> Optional[int]:
    """The partition's last value: its largest range key (smallest, going down) within the bounds."""
    model = type(instance)
    hash_value = getattr(instance, str(model._hash_keyname))
    range_key = model._range_key_attribute()
    # the end bound in the key condition (moto's BETWEEN mishandles 0); the start bound after
    sequence = opts.sequence
    within = range_key <= sequence.maximum if sequence.step > 0 else range_key >= sequence.minimum
    kwargs = {"TableName": model.Meta.table_name, "ConsistentRead": True, "Limit": 1, "ScanIndexForward": opts.step < 0,
              **_transport.expressions([range_key.attr_name],
                                       KeyConditionExpression=(model._hash_key_attribute() == hash_value) & within)}
    try:
        items = _transport.send(model._get_connection().connection, QUERY, kwargs).get("Items", [])
    except PynamoDBException as exc:
        raise CounterError(f"{model.__name__}: could not read the last {opts.attribute} in partition {hash_value!r} "
                           f"({error_code(exc) or exc}); nothing was written", exc) from exc
    value = int(range_key.deserialize(range_key.get_value(items[0][range_key.attr_name]))) if items else None
    return value if value is not None and sequence.minimum <= value <= sequence.maximum else None
