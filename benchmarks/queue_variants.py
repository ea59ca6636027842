"""The gapless queue with one feature turned off, for paired benchmark rows (issue 31: the queue keeps only
what pays).

Each variant is a patch applied in a benchmark writer process after the library is imported
(``throughput.py --without NAME``, and ``queue_pairs.py``): a module constant set to the value that turns the
feature off, a method replaced, or one method's source rewritten (the text replaced must be there, so that a
variant fails loudly once the code it turns off has changed). The library itself has no benchmark hooks.

They patch the queue as it was before issue 31 removed what did not pay (commit 2e42080; the pairs are in
``benchmarks/results.md``). On the code after it only ``standing``, ``standing_turn``, ``turn`` and ``slow``
still apply; the others raise, since what they turn off is gone (run them from a checkout of that commit).
"""

from __future__ import annotations

import inspect
import textwrap
from typing import Any, Callable, Dict, Optional

INF = float("inf")


def _contention() -> Any:
    from pynamodb_autoinc import _contention

    return _contention


def _set(owner: Any, name: str, value: Any) -> None:
    """Set ``owner.name`` (a module constant or a method), which must exist."""
    if not hasattr(owner, name):
        raise RuntimeError(f"variant patch: {name} is gone from the library")
    setattr(owner, name, value)


def _rewrite(owner: Any, name: str, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the source of ``owner.name`` (a method or a module function) and install
    the result, compiled in the library module's globals."""
    module = _contention()
    function = getattr(owner, name)
    source = inspect.getsource(function)  # indented as in the file, as ``old`` is
    if old not in source:
        raise RuntimeError(f"variant patch: {name} no longer contains {old!r}")
    namespace: Dict[str, Any] = {}
    exec(compile(textwrap.dedent(source.replace(old, new)), module.__file__, "exec"), module.__dict__, namespace)
    setattr(owner, name, namespace[name])


def standing() -> None:
    """Standing tickets off: a save never keeps its place (HOT = -inf), so no standing ticket, no come-back
    lead, no give-back of a standing ticket, STANDING_TURN unused."""
    _set(_contention(), "HOT", -INF)


def lead() -> None:
    """The learned come-back lead off: it stays 1.0 (LEAD_EARLY/ON_TIME/LATE, LEAD_MIN/MAX unused)."""
    _set(_contention()._Process, "judge", lambda self, chain, factor: None)


def intervals() -> None:
    """Learned commit intervals off: a counter's interval is the transaction round trip."""
    _set(_contention()._Process, "saw", lambda self, chain, value, step, at: None)


def busy() -> None:
    """BUSY = 0: never a ticket before the first request (a queue seen busy is forgotten at once)."""
    _set(_contention(), "BUSY", 0.0)


def standing_turn() -> None:
    """STANDING_TURN off: a standing ticket gets TURN, like any ticket."""
    _set(_contention(), "STANDING_TURN", _contention().TURN)


def turn() -> None:
    """One patience for every ticket, from the round trip: max(0.05, 4 round trips) instead of TURN = 0.25 s
    (a standing ticket's too; a slow writer's ticket: that plus four of its requests)."""
    _rewrite(_contention(), "patience",
             "        return min(TURN + 4 * pace / 1000, SLOW_TURN_LIMIT)\n"
             "    if owner is not None:\n"
             "        return min(max(STANDING_TURN, 4 * _queue().round_trip), TURN)\n"
             "    return TURN\n",
             "        return min(max(0.05, 4 * _queue().round_trip) + 4 * pace / 1000, SLOW_TURN_LIMIT)\n"
             "    return max(0.05, 4 * _queue().round_trip)\n")


def slow() -> None:
    """Slow writers off (SLOW = inf): no pace recorded, SLOW_TURN_LIMIT unused."""
    _set(_contention(), "SLOW", INF)


def blind() -> None:
    """BLIND_LIMIT = 1: a new ticket at the first answer that shows nothing of the queue."""
    _set(_contention(), "BLIND_LIMIT", 1)


def first_loss() -> None:
    """The first loss with nobody queued does not try again at once: it takes a ticket."""
    _rewrite(_contention().Contest, "lost",
             "            return current  # a first loss",
             "            return self._queue()  # a first loss")


def jitter() -> None:
    """No jitter in ``_until``: waiters wait exactly their share."""
    _rewrite(_contention().Contest, "_until", " * random.uniform(0.95, 1.1)", "")


def look_again() -> None:
    """No look-again after passing over a ticket: the passer sleeps as before the pass (commit 6f27fea)."""
    _rewrite(_contention().Contest, "_wait",
             """            after = self._skip(served, owner)
            following = _number(after, "NextServed")
            if following == self.ticket - 1:
                shown = item_value(after, head.opts.counter)
                if shown is not _UNKNOWN:
                    return {self.chain: shown}  # its turn, at once
            if following is not None and following < self.ticket - 1:
                # the next ticket's patience counts from now; if it is a standing ticket too (writers that
                # stopped saving leave theirs behind), look again once it is spent rather than a turn later
                self.waited = (following, now)
                standing = _standing_owner(after, following)
                if standing is not None:
                    longest = patience(after, standing)
""", "            self._skip(served, owner)\n")


VARIANTS: Dict[str, Callable[[], None]] = {
    "standing": standing,
    "lead": lead,
    "intervals": intervals,
    "busy": busy,
    "standing_turn": standing_turn,
    "turn": turn,
    "slow": slow,
    "blind": blind,
    "first_loss": first_loss,
    "jitter": jitter,
    "look_again": look_again,
}

#: The variants that concern slow writers: they also get the ``--slow`` row shape.
SLOW_VARIANTS = ("standing_turn", "turn", "slow")


def known(name: str) -> bool:
    """Whether ``name`` is a variant, or several joined by ``+`` (every one of those features off)."""
    return all(part in VARIANTS for part in name.split("+"))


def apply(name: Optional[str]) -> None:
    """Turn off the queue feature ``name`` (or each of ``a+b+...``) in this process (nothing for None or "")."""
    for part in (name or "").split("+"):
        if part:
            VARIANTS[part]()
