"""``NextId.reserve``'s requests (:class:`Reserve`): advance a counter by a count of values in one UpdateItem, or wrap
a cycling sequence at its end; and :class:`Refused`, how a counter request's refused condition reaches the exchange
that reads it."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Type

from pynamodb.constants import UPDATE_ITEM, UPDATED_NEW

from . import _transport
from ._budget import Budget
from .exceptions import REPLICATED_WRITE_CONFLICT, ContentionError, CounterError, OutOfBoundsError, error_code
from .sequence import NUMBER_LIMIT, SequenceOptions, storable

if TYPE_CHECKING:
    from .counter import NextId


class Refused(Exception):
    """An update's condition failed on ``item`` (as it was) with ``cause``."""

    def __init__(self, item: Dict[str, Any], cause: Optional[Exception]) -> None:
        super().__init__()
        self.item, self.cause = item, cause


#: How many requests one reserve() may send before giving up on a counter that keeps moving under it.
_MOVES = 100
_MOVING = Budget(attempts=_MOVES - 1, seconds=None, backoff=None)


class Reserve(_transport.Exchange[List[int]]):
    """:meth:`NextId.reserve`'s requests: advance, or wrap a cycle; resend a region conflict within ``conflicts``."""

    errors = (Refused, CounterError)

    def __init__(self, counter: Type[NextId], key: str, count: int, seq: SequenceOptions, partial: bool,
                 conflicts: Optional[Budget] = None, *, marked: bool = True) -> None:
        if count > seq.size:
            if not partial:
                raise seq.too_many(key, count)  # more than the whole sequence holds: nothing is sent
            count = seq.size
        if abs(seq.step * count) >= NUMBER_LIMIT:
            raise OutOfBoundsError(f"reserve({key!r}, {count}): {count} values of step {seq.step} span more than "
                                   "the 38 digits of a DynamoDB number; nothing was taken. Take fewer at once")
        self.counter, self.key, self.count, self.seq, self.partial = counter, key, count, seq, partial
        self.conflicted = None if conflicts is None else conflicts.tries()
        (self.records, self.follows), self.tries = counter._following(seq), _MOVING.tries()
        self.tail: List[int] = []  # a cycle's values before its end, taken by the wrap
        self.fresh = False  # the counter holds no value (when no DynamoDB number holds start - step)
        # this call's token (NextClaim): a resend of its applied update is refused on it, and the item shows its values
        self.token = secrets.randbits(62) if marked else None
        self.probes = 0

    def request(self) -> Tuple[str, Dict[str, Any]]:
        seq, step, attr, count = self.seq, self.seq.step, self.counter.next_id, self.count
        span = step * (count - 1)
        # room for count values within both bounds; a bound past 38 digits is none (DynamoDB refuses to compare)
        low = max(seq.minimum - (step if step > 0 else step * count), -NUMBER_LIMIT)
        high = min(seq.maximum - (step * count if step > 0 else step), NUMBER_LIMIT)
        condition = attr.is_type() & (attr >= low) & (attr <= high)  # not BETWEEN: moto's refuses a 0
        fresh = seq.contains(seq.start + span)
        if storable(seq.start - step):
            value = (attr | (seq.start - step)) + step * count
            condition = attr.does_not_exist() | condition if fresh else condition
        elif self.fresh and fresh:
            value, condition = seq.start + span, attr.does_not_exist()
        else:
            value = attr + step * count
        actions = [attr.set(value), self.follows]
        if self.token is not None:
            claimed = self.counter.claimed
            actions.append(claimed.set(self.token))
            condition &= claimed.does_not_exist() | (claimed != self.token)
        return UPDATE_ITEM, self.counter._update_kwargs(self.key, actions, condition & self.records, UPDATED_NEW)

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        return self.counter._send_update("advance", self.key, kwargs)

    def failed(self, refused: Exception) -> Optional[Dict[str, Any]]:
        """Take fewer values, raise at the end bound or wrap the counter; resend a region conflict within the budget."""
        if not isinstance(refused, Refused):
            self.probes += 1
            if self.token is not None and _transport.probe(refused, self.probes):
                return None  # the same request, its token: applied, it is refused on the token, showing the values
            self._conflict(refused)  # raises unless a region conflict may be resent
            return None
        key, seq = self.key, self.seq
        if self._own(refused):
            return {"Attributes": refused.item}  # an earlier try of this very call applied: its values are the item's
        last = self.counter._refused_value(key, refused.item, seq)
        if (last is None) != self.fresh and not storable(seq.start - seq.step):
            self.fresh = last is None  # sent for a counter with(out) a value, and it was not so: send the other
            if self.tries.lost():
                return None
        left = seq.remaining(last)
        if left < self.count:
            if left > 0 and self.partial:
                self.count = left
            elif left and not seq.cycle:
                raise seq.exhausted(key, last) from None
            else:
                wrapped = self._wrap(last, left)
                if wrapped is not None:
                    return wrapped
        # else: moved between the condition and the answer's item: cannot be, but try again
        if not self.tries.lost():
            raise ContentionError(f"counter {key!r} in table {self.counter.Meta.table_name!r} moved under {_MOVES} "
                                  "requests in a row while wrapping; nothing was spent, try again") from None
        return None

    def _own(self, refused: Refused) -> bool:
        """Whether the refusal met this call's own applied try (its token). Without a token, a refusal after a try
        that may have applied raises: that try may have moved the counter, and wrapping or taking fewer now could
        move it twice."""
        if self.token is not None and refused.item.get(self.counter.claimed.attr_name) == {"N": str(self.token)}:
            return True
        if refused.cause is not None and _transport.read_answer(refused.cause).earlier_may_have_applied:
            raise CounterError(f"counter {self.key!r} in table {self.counter.Meta.table_name!r}: a try of the "
                               "request may have applied (its answer was lost) and the next was refused; no value "
                               "was handed out, and the counter may have moved. Read it (currval) before trying "
                               "again", refused.cause) from None
        return False

    def _conflict(self, refused: Exception) -> None:
        """A failure that is not a refused condition: resend a region conflict within the budget, else raise."""
        conflicts = self.conflicted
        if conflicts is None or error_code(refused) != REPLICATED_WRITE_CONFLICT:
            raise refused
        if not conflicts.lost():
            raise ContentionError(f"counter {self.key!r}: {REPLICATED_WRITE_CONFLICT} (another region wrote it too) "
                                  f"{conflicts.losses} times in a row in {conflicts.elapsed:.2f} s; nothing was "
                                  "spent. Retry later, or raise Meta.autoinc_timeout (and autoinc_retries)",
                                  refused) from refused

    def _wrap(self, last: Optional[int], left: int) -> Optional[Dict[str, Any]]:
        """A cycle at its end: take the ``left`` values before the end and start again from the restart value, in
        one compare-and-set; None if the counter moved meanwhile."""
        counter, key, seq = self.counter, self.key, self.seq
        if not left:
            seq.following(key, last)  # raises behind the start bound, or at the end without a cycle
        tail = seq.values(seq.start if last is None else last + seq.step, left)
        count = min(self.count, seq.size) - left
        top = seq.restart_value + seq.step * (count - 1)
        try:
            swapped = counter.compare_and_set(key, last, top, seq)
        except CounterError as exc:
            return self.failed(exc)
        if not swapped:
            return None
        self.tail, self.count = tail, count
        return {"Attributes": {counter.next_id.attr_name: {"N": str(top)}}}

    def applied(self, data: Dict[str, Any]) -> List[int]:
        top = self.counter._count_in(self.key, data["Attributes"])
        return self.tail + self.seq.values(top - self.seq.step * (self.count - 1), self.count)
