"""The command line's reading of stored IDs: which counter each one belongs to and which number it is
(:class:`IdReader`, the inverse of ``Options.to_python``), from one parallel scan per table (:func:`tables`), each
item read by its own model class."""

from __future__ import annotations

import re
import string
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Pattern, Sequence, Set, Tuple, Type

from pynamodb.exceptions import AttributeDeserializationError
from pynamodb.expressions.operand import Path
from pynamodb.models import Model
from pynamodb.pagination import ResultIterator

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
        try:
            value = int(re.sub(f"[^{self.digits}-]", "", found["value"]), self.base)
        except ValueError:
            return None
        for period in self.periods(found):
            if self.opts.to_python(value, period) == raw:
                return period, value
        return None

    def periods(self, found: Dict[str, str]) -> List[Optional[str]]:
        """The period labels the period fields matched (a field may show the label padded, or only part of it:
        ``{period:.4}``, whose text names no month); ``[None]`` for a model numbering no periods."""
        period = self.opts.period
        if not period:
            return [None]
        labels = [re.search(LABELS[period], text) for name, text in found.items() if name.startswith("period")]
        return [label for label in dict.fromkeys(m.group() for m in labels if m) if is_label(period, label)]


def inverse(fmt: str, period: Optional[str]) -> Tuple[Pattern[str], str]:
    """A pattern matching what ``fmt`` writes, with the group ``value`` and one group per period field
    (``period0``, ``period1``, ...), and the value's presentation type (``"d"``, ``"x"``, ...). A value field given
    twice, or a field with an index or conversion, matches any text: what is read is checked by formatting it again."""
    parts, kind, fields, valued = [], "", 0, False
    for literal, name, spec, conversion in string.Formatter().parse(fmt):
        parts.append(re.escape(literal))
        if name is None:
            continue
        if name == "value" and not valued and not conversion:
            valued, kind = True, (spec or "")[-1:] if (spec or "")[-1:].isalpha() else ""
            parts.append("(?P<value>.+?)")
        elif name == "period" and not conversion:
            label = ".+?" if spec else LABELS[period] if period else ""
            parts.append(f"(?P<period{fields}>{label})")
            fields += 1
        else:
            parts.append(".*?")
    return re.compile("".join(parts), re.S), kind


#: Labels of periods that differ only in a part of their label, to tell whether a format shows the whole of it.
SAMPLE_LABELS = {"year": ("2026", "2027"), "month": ("2026-01", "2026-11", "2027-11"),
                 "day": ("2026-11-01", "2026-11-22", "2026-01-22", "2027-11-22")}


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
    if opts.period and opts.fmt is not None:
        reader, value = IdReader(opts), opts.sequence.start
        for label in SAMPLE_LABELS[opts.period]:
            if reader.read(opts.to_python(value, label)) != (label, value):
                return (f"numbers its IDs per {opts.period} (Meta.autoinc_period = {opts.period!r}), but its format "
                        f"{opts.fmt!r} shows only part of the period: {label!r}'s ID {value} is "
                        f"{opts.to_python(value, label)!r}, which does not name its {opts.period}")
    return None


def tables(models: Sequence[Type[Model]]) -> List[List[Type[Model]]]:
    """``models`` by the table holding their items (endpoint, region and name), in order: each table is scanned
    once, whatever model classes share it (a subclass, polymorphic models), so that no item is counted twice."""
    found: Dict[Tuple[Any, ...], List[Type[Model]]] = {}
    for model in models:
        meta = model.Meta
        where = (getattr(meta, "host", None), getattr(meta, "region", None), meta.table_name)
        if model not in found.setdefault(where, []):
            found[where].append(model)
    return list(found.values())


class Scan:
    """A parallel scan of one table holding the items of ``models`` (the first reads the items the others do not
    claim): every stored auto-increment value by counter key, the items holding none counted apart (``skipped``).
    On a table of polymorphic models (a DiscriminatorAttribute) each item is read by its own class, and an item of
    a class not among ``models`` is another model's: not counted."""

    def __init__(self, models: Sequence[Type[Model]], segments: int, progress: Progress) -> None:
        self.model, self.models, self.segments, self.progress = models[0], list(models), segments, progress
        self.opts = options_for(self.model)
        self.readers = {model: IdReader(options_for(model)) for model in models}
        self.discriminator = self.model._get_discriminator_attribute()
        self.groups: Dict[str, List[int]] = {}
        self.skipped, self.lock = 0, threading.Lock()
        # a bounded pool, each thread scanning every workers-th segment, however many segments there are
        self.workers = min(segments, MAX_SCAN_THREADS)

    def wanted(self) -> List[Any]:
        """The stored names to read: each as one name (PynamoDB takes Paths too), since a dot is no path."""
        stored: Set[str] = set()
        for model in self.models:
            opts, attrs = options_for(model), model.get_attributes()
            names = [opts.attribute, *opts.scope, *([str(model._hash_keyname)] if opts.strategy == "query" else [])]
            stored.update(attrs[name].attr_name for name in names)
        if self.discriminator is not None:
            stored.add(self.discriminator.attr_name)
        return [Path([name]) for name in sorted(stored)]

    def owner(self, raw: Dict[str, Any]) -> Optional[Type[Model]]:
        """The class of the stored item ``raw``: by its discriminator value, else the first model; None for an
        item of another class."""
        discriminator = self.discriminator
        if discriminator is None or discriminator.attr_name not in raw:
            return self.model
        try:
            stored = discriminator.deserialize(discriminator.get_value(raw[discriminator.attr_name]))
        except (ValueError, TypeError, AttributeDeserializationError):
            return None  # a discriminator value no class registered
        return stored if stored in self.readers else None

    def key_and_value(self, model: Type[Model], raw: Dict[str, Any]) -> Optional[Tuple[str, int]]:
        """The counter key and number of the ID of ``raw``, an item of ``model``; None for an ID the library does
        not write (or one stored as another type), or a scope value missing."""
        opts = options_for(model)
        try:
            item = model.from_raw_data(raw)
        except AttributeDeserializationError:
            return None
        read = self.readers[model].read(getattr(item, opts.attribute))
        if read is None:
            return None
        period, value = read
        if opts.strategy == "query":
            return f"{model.Meta.table_name}#{getattr(item, str(model._hash_keyname))}", value
        try:
            return opts.counter_key(item, period), value
        except ValueError:
            return None  # a scope value is missing on this item

    def scan(self, first: int) -> None:
        wanted, connection = self.wanted(), self.model._get_connection()
        for segment in range(first, self.segments, self.workers):
            kwargs = {"segment": segment, "total_segments": self.segments, "attributes_to_get": wanted,
                      "consistent_read": True}
            raw: Dict[str, Any]
            for raw in ResultIterator(connection.scan, (), kwargs):
                model = self.owner(raw)
                if model is not None:
                    self.count(self.key_and_value(model, raw))
                self.progress.item()
            self.progress.segment()

    def count(self, found: Optional[Tuple[str, int]]) -> None:
        with self.lock:
            if found is None:
                self.skipped += 1
            else:
                self.groups.setdefault(found[0], []).append(found[1])

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
        items, holds, lack = ("item", "holds", "lack") if skipped == 1 else ("items", "hold", "lack")
        lacks = f" or {lack} a value of {', '.join(opts.scope)}" if opts.scope else ""
        what = f"no {opts.attribute} of the form {opts.fmt!r}" if opts.fmt else f"no integer {opts.attribute}"
        print(f"note: {skipped} {items} of {self.model.__name__} {holds} {what}{lacks}; left out", file=sys.stderr)


def furthest(groups: Dict[str, List[int]], step: int) -> Dict[str, int]:
    """The furthest stored ID per counter key: the largest, or the smallest for a negative ``step``."""
    pick = max if step > 0 else min
    return {key: pick(values) for key, values in groups.items() if values}
