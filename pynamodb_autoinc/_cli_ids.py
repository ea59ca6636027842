"""The command line's reading of stored IDs: which counter each one belongs to and which number it is
(:class:`IdReader`, the inverse of ``Options.to_python``), from a parallel scan of the model's table."""

from __future__ import annotations

import re
import string
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Pattern, Tuple, Type

from pynamodb.expressions.operand import Path
from pynamodb.models import Model

from ._calendar import is_label
from ._cli_progress import Progress
from ._options import Options, options_for
from .sequence import integer

#: At most this many threads scan at once, however many segments there are.
MAX_SCAN_THREADS = 16
#: What each period's label looks like, as ``periods.label`` writes it.
LABELS = {"year": r"\d{4}", "month": r"\d{4}-\d{2}", "day": r"\d{4}-\d{2}-\d{2}"}
#: The digits of each integer presentation type of a format's value field, and their base.
DIGITS = {"": (10, "0-9"), "d": (10, "0-9"), "n": (10, "0-9"), "x": (16, "0-9a-f"), "X": (16, "0-9A-F"),
          "o": (8, "0-7"), "b": (2, "01")}


class IdReader:
    """Reads a stored auto-increment value back as ``(period label or None, number)``: a plain ID as the integer
    it holds, a formatted one (``INV-2026-000001``) through the format's inverse. Text that does not format back
    to exactly itself (``"007"``, ``"1e3"``, ``INV-2026-1``) is none of the library's IDs: None."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.pattern: Optional[Pattern[str]] = None
        self.base, self.digits = DIGITS[""]
        if opts.fmt is not None:
            self.pattern, kind = inverse(opts.fmt, opts.period)
            self.base, self.digits = DIGITS.get(kind, DIGITS[""])

    def read(self, raw: Any) -> Optional[Tuple[Optional[str], int]]:
        if self.pattern is None:
            value = integer(raw)
            return None if value is None or self.opts.to_python(value) != raw else (None, value)
        match = self.pattern.fullmatch(raw) if isinstance(raw, str) else None
        if match is None:
            return None
        found = match.groupdict()
        label = re.search(LABELS[self.opts.period], found["period"]) if self.opts.period else None
        period = label.group() if label else None
        try:
            value = int(re.sub(f"[^{self.digits}-]", "", found["value"]), self.base)
        except ValueError:
            return None
        if self.opts.period and (period is None or not is_label(self.opts.period, period)):
            return None
        return (period, value) if self.opts.to_python(value, period) == raw else None


def inverse(fmt: str, period: Optional[str]) -> Tuple[Pattern[str], str]:
    """A pattern matching what ``fmt`` writes, with the groups ``value`` and ``period``, and the value's
    presentation type (``"d"``, ``"x"``, ...). A field given twice, or with an index or conversion, matches any
    text: what is read is checked by formatting it again."""
    parts, kind, named = [], "", set()
    for literal, name, spec, conversion in string.Formatter().parse(fmt):
        parts.append(re.escape(literal))
        if name is None:
            continue
        if name in ("value", "period") and name not in named and not conversion:
            named.add(name)
            plain = name == "period" and not spec
            if name == "value":
                kind = (spec or "")[-1:] if (spec or "")[-1:].isalpha() else ""
            parts.append(f"(?P<{name}>{LABELS[period] if plain and period else '' if plain else '.+?'})")
        else:
            parts.append(".*?")
    if "period" not in named:
        parts.append("(?P<period>)")
    return re.compile("".join(parts), re.S), kind


def unreadable(opts: Options) -> Optional[str]:
    """Why ``opts.model``'s stored IDs do not show their counter and number (``"numbers its IDs per period
    ..."``), or None when :class:`IdReader` reads them."""
    fields = {name for _, name, _, conversion in string.Formatter().parse(opts.fmt or "") if not conversion}
    if opts.fmt is not None:
        kind = inverse(opts.fmt, opts.period)[1]
        if "value" not in fields or kind not in DIGITS:
            return f"formats its IDs (Meta.autoinc_format = {opts.fmt!r}) in a way that cannot be read back"
    if opts.period and "period" not in fields:
        shown = f" and its format {opts.fmt!r} leaves the period out" if opts.fmt else ""
        return f"numbers its IDs per period (Meta.autoinc_period = {opts.period!r}){shown}"
    return None


class Scan:
    """A parallel scan of ``model``'s table: every stored auto-increment value by counter key, the items holding
    none counted apart (``skipped``)."""

    def __init__(self, model: Type[Model], segments: int, progress: Progress) -> None:
        self.model, self.opts, self.segments, self.progress = model, options_for(model), segments, progress
        self.reader = IdReader(self.opts)
        self.groups: Dict[str, List[int]] = {}
        self.skipped, self.lock = 0, threading.Lock()
        # a bounded pool, each thread scanning every workers-th segment, however many segments there are
        self.workers = min(segments, MAX_SCAN_THREADS)

    def wanted(self) -> List[Any]:
        """The stored names to read: each as one name (PynamoDB takes Paths too), since a dot is no path."""
        opts, model = self.opts, self.model
        names = [opts.attribute, *opts.scope, *([str(model._hash_keyname)] if opts.strategy == "query" else [])]
        attrs = model.get_attributes()
        return [Path([stored]) for stored in sorted({attrs[name].attr_name for name in names})]

    def key_and_value(self, item: Model) -> Optional[Tuple[str, int]]:
        """The counter key and number of ``item``'s ID; None for an ID the library does not write, or a scope
        value missing."""
        read = self.reader.read(getattr(item, self.opts.attribute))
        if read is None:
            return None
        period, value = read
        if self.opts.strategy == "query":
            return f"{self.model.Meta.table_name}#{getattr(item, str(self.model._hash_keyname))}", value
        try:
            return self.opts.counter_key(item, period), value
        except ValueError:
            return None  # a scope value is missing on this item

    def scan(self, first: int) -> None:
        wanted = self.wanted()
        for segment in range(first, self.segments, self.workers):
            for item in self.model.scan(segment=segment, total_segments=self.segments, attributes_to_get=wanted,
                                        consistent_read=True):
                found = self.key_and_value(item)
                with self.lock:
                    if found is None:
                        self.skipped += 1
                    else:
                        self.groups.setdefault(found[0], []).append(found[1])
                self.progress.item()
            self.progress.segment()

    def run(self) -> Dict[str, List[int]]:
        """Scan every segment (a PynamoDBException of any segment is raised), then note the items left out."""
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            try:
                list(pool.map(self.scan, range(self.workers)))
            finally:
                self.progress.close()
        if self.skipped:
            self.note()
        return self.groups

    def note(self) -> None:
        opts, skipped = self.opts, self.skipped
        items, holds, lack = ("item", "holds", "lacks") if skipped == 1 else ("items", "hold", "lack")
        lacks = f" or {lack} a value of {', '.join(opts.scope)}" if opts.scope else ""
        what = f"no {opts.attribute} of the form {opts.fmt!r}" if opts.fmt else f"no integer {opts.attribute}"
        print(f"note: {skipped} {items} of {self.model.__name__} {holds} {what}{lacks}; left out", file=sys.stderr)


def furthest(groups: Dict[str, List[int]], step: int) -> Dict[str, int]:
    """The furthest stored ID per counter key: the largest, or the smallest for a negative ``step``."""
    pick = max if step > 0 else min
    return {key: pick(values) for key, values in groups.items() if values}
