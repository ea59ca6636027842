"""Reads and validates a model's ``Meta.autoinc_*`` options, once per model."""

from __future__ import annotations

import difflib
import string
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple, Type

from pynamodb.attributes import Attribute, JSONAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.models import Model

from . import _calendar as periods
from . import regions
from ._budget import Budget
from .counter import CONNECTION_SETTINGS, RESERVED_PREFIX, NextId, bind_counter, in_table_counter
from .exceptions import ConfigurationError, UnassignedIdError
from .sequence import SequenceOptions, is_int, number_text

#: Every option a model's ``Meta`` may set, with its default.
DEFAULTS: Dict[str, Any] = {
    "autoinc_attribute": None,  # the hash key
    "autoinc_key": None,  # Meta.table_name
    "autoinc_counter": NextId,
    "autoinc_counter_in_table": False,
    "autoinc_gapless": False,
    "autoinc_strategy": "counter",
    "autoinc_start": None,  # autoinc_min going up, autoinc_max going down
    "autoinc_step": 1,
    "autoinc_min": None,  # 1 going up, -2**63 going down
    "autoinc_max": None,  # 2**63 - 1 going up, -1 going down
    "autoinc_cycle": False,
    "autoinc_track_explicit": False,
    "autoinc_scope": None,
    "autoinc_period": None,
    "autoinc_format": None,
    "autoinc_block": 1,
    "autoinc_retries": None,  # no count: autoinc_timeout bounds the retries
    "autoinc_backoff": 0.01,
    "autoinc_timeout": 10.0,
    "autoinc_regions": None,  # a global table's writing regions, each numbering its own subsequence
    "autoinc_home_region": None,  # a global table's region that every counter request goes to
    "autoinc_home_host": None,  # the home region's endpoint URL (None: its public endpoint)
    "autoinc_single_region_writes": False,  # the user routes every write to one region
}

STRATEGIES = ("counter", "query")


@dataclass(frozen=True)
class ModelOptions:
    """A model's validated auto-increment options, as ``Model.autoinc_options()`` returns them.

    Read-only; it is built from the model's ``Meta.autoinc_*`` options when
    the class is created. Annotate with it::

        opts: ModelOptions = Order.autoinc_options()
        opts.sequence.max
    """

    model: Type[Model]
    attribute: str
    """The Python name of the auto-increment attribute."""
    as_string: bool
    """The attribute is a ``UnicodeAttribute``: store the decimal string (or ``fmt``)."""
    key: str
    """The counter's data-type key (``NextKey``), before scope and period."""
    counter: Type[NextId]
    """The counter model, bound to the model's connection settings (or to its own table)."""
    gapless: bool
    strategy: str
    """``"counter"`` (a counter item) or ``"query"`` (the largest range key in the partition)."""
    sequence: SequenceOptions
    """Start, step, bounds and cycling (``Meta.autoinc_start``, ``_step``, ``_min``, ``_max``, ``_cycle``)."""
    track_explicit: bool
    """``Meta.autoinc_track_explicit``: saving an explicit ID moves the counter past it."""
    scope: Tuple[str, ...]
    """Attributes whose values extend the counter key: one sequence per parent."""
    period: Optional[str]
    fmt: Optional[str]
    block: int
    """How many values one counter request reserves for this process (fast mode)."""
    retries: Optional[int]
    """How many times a save may retry after losing a race (None: as often as ``timeout`` allows)."""
    backoff: float
    """The first retry's largest delay in seconds; it doubles each retry, up to one second."""
    timeout: Optional[float]
    """How long, in seconds, a save may keep retrying lost races (None: no limit), like ``lock_timeout``."""
    regions: Tuple[str, ...] = ()
    """``Meta.autoinc_regions``: the regions of a global table that write, each numbering its own
    subsequence on its own counter item (see :mod:`pynamodb_autoinc.regions`)."""
    home_region: Optional[str] = None
    """``Meta.autoinc_home_region``: every counter request (in gapless mode, the whole write) goes there."""
    home_host: Optional[str] = None
    """``Meta.autoinc_home_host``: the home region's endpoint URL (None: the region's public endpoint)."""
    single_region_writes: bool = False
    """``Meta.autoinc_single_region_writes``: the user routes every write to one region; tables are not
    described and nothing is refused."""
    region: Optional[str] = None
    """With ``regions``: the region these options number for (its counter key ends ``@region``, and
    ``sequence`` is its subsequence); None on the options a model declares."""
    fixed_key: Optional[str] = field(init=False, repr=False, compare=False)
    """The counter key when it depends on neither the instance nor the clock (no scope, period or region), so
    that a save reads it as it is; None otherwise (:meth:`counter_key` makes it)."""
    budget: Budget = field(init=False, repr=False, compare=False)
    """How long and how often a write of this model retries lost races (``Meta.autoinc_retries``,
    ``Meta.autoinc_timeout``, ``Meta.autoinc_backoff``)."""
    step: int = field(init=False, repr=False, compare=False)
    start: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # the fields a save reads, computed once (and again by dataclasses.replace, for a region's options)
        fixed = None if self.scope or self.period or self.region is not None else self.key
        for name, value in (("fixed_key", fixed), ("budget", Budget(self.retries, self.timeout, self.backoff)),
                            ("step", self.sequence.step), ("start", self.sequence.start)):
            object.__setattr__(self, name, value)

    def to_python(self, value: int, period: Optional[str] = None) -> Any:
        """``value`` as the auto attribute holds it."""
        if self.fmt is not None:
            return self.fmt.format(value=value, period=period or "")
        return str(value) if self.as_string else value

    def current_period(self) -> Optional[str]:
        """The label of the current period, or None when the sequence never restarts."""
        return periods.label(self.period) if self.period else None

    def counter_key(self, instance: Model, period: Optional[str]) -> str:
        """The counter key for ``instance``: the data-type key, its scope values, its period."""
        parts = [self.key]
        for name in self.scope:
            value = getattr(instance, name)
            if value is None:
                raise UnassignedIdError(
                    f"{type(instance).__name__}.{name} is None, but {self.attribute} is numbered per {name} "
                    f"(Meta.autoinc_scope); set {name} before saving"
                )
            parts.append(_scope_part(value).replace("\\", "\\\\").replace("#", "\\#"))
        if period is not None:
            parts.append(period)
        key = "#".join(parts)
        return key if self.region is None else f"{key}@{self.region}"

    def owns(self, key: str, *, any_region: bool = False) -> bool:
        """Whether counter ``key`` is one this model keeps: its data-type key, then one ``#`` part per scope
        attribute and one for the period (a period's label), then ``@region`` with ``autoinc_regions`` (a
        listed region, or with ``any_region`` any). A key that merely starts with the model's (another model's
        ``orders#eu`` beside this ``orders``) is not."""
        if self.regions:
            key, at, region = key.rpartition("@")
            if not at or not (any_region or region in self.regions):
                return False
        if key == self.key:
            return not self.scope and not self.period
        if not key.startswith(self.key + "#"):
            return False
        parts, part, escaped = [], "", False
        for char in key[len(self.key) + 1:]:  # split at each # that is no scope value's (those are escaped)
            if escaped or char not in "\\#":
                part, escaped = part + char, False
            elif char == "\\":
                part, escaped = part + char, True
            else:
                parts.append(part)
                part = ""
        parts.append(part)
        if len(parts) != len(self.scope) + (1 if self.period else 0):
            return False
        return self.period is None or periods.is_label(self.period, parts[-1])


Options = ModelOptions
"""The name used inside the library."""


def _scope_part(value: Any) -> str:
    """A scope value as it appears in a counter key: numbers as DynamoDB stores them (1, 1.0 and 1.00 agree)."""
    return number_text(value) or str(value)


def options_for(model: Type[Model]) -> Options:
    """The validated options of ``model``, computed on first use and cached."""
    cached: Optional[Options] = model.__dict__.get(OPTIONS_CACHE)
    if cached is None:
        cached = _read(model)
        setattr(model, OPTIONS_CACHE, cached)
    return cached


#: The attribute a model class keeps its options under, read from its own ``__dict__`` (a subclass has its own).
#: Not a WeakKeyDictionary: the options refer to the class, so such a cache would keep every class alive.
OPTIONS_CACHE = "_autoinc_options_cache"


def check_options(model: Type[Model]) -> None:
    """Validate ``model``'s options when its class is created (read again, and cached, on first use: a test
    may still change ``Meta`` between the two)."""
    _read(model)


#: Options that the query strategy never reads (it keeps no counter item, and is always gapless), with why;
#: a model setting one of them to anything but its default is refused rather than silently ignored.
_IGNORED_BY_QUERY: Dict[str, str] = {
    "autoinc_key": "it names a counter item, and the query strategy keeps none (it reads the partition's "
                   "largest range key)",
    "autoinc_counter": "it names the counter table, and the query strategy keeps no counter item",
    "autoinc_gapless": "the query strategy is always gapless (a failed put spends nothing, as there is no counter)",
}

#: Attribute types whose values have no single text form for a counter key: sets, maps, lists.
_UNORDERED = frozenset({"SS", "NS", "BS", "M", "L"})


def _fail(model: Type[Model], problem: str) -> ConfigurationError:
    return ConfigurationError(f"{model.__name__}: {problem}")


def _read(model: Type[Model]) -> Options:  # noqa: C901 - one check per option, in order
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
    if attribute.default is not None or attribute.default_for_new is not None:
        raise _fail(model, f"auto-increment attribute {name!r} has a default, so every new instance would be "
                           "saved with that value instead of the next one; remove default / default_for_new")
    if not attribute.is_hash_key and not attribute.is_range_key and not attribute.null:
        raise _fail(model, f"auto-increment attribute {name!r} must allow None until the ID is assigned; "
                           "declare it with null=True")

    key = opts["autoinc_key"] if opts["autoinc_key"] is not None else meta.table_name
    if not isinstance(key, str) or not key:
        raise _fail(model, f"Meta.autoinc_key must be a non-empty string, not {key!r}")

    for flag in ("autoinc_gapless", "autoinc_counter_in_table", "autoinc_cycle", "autoinc_track_explicit"):
        if not isinstance(opts[flag], bool):
            raise _fail(model, f"Meta.{flag} must be True or False, not {opts[flag]!r}")
    for number in ("autoinc_retries", "autoinc_block"):
        if not is_int(opts[number]) and not (number == "autoinc_retries" and opts[number] is None):
            raise _fail(model, f"Meta.{number} must be an int, not {opts[number]!r}")
    try:
        sequence = SequenceOptions.of(opts["autoinc_start"], opts["autoinc_step"], opts["autoinc_min"],
                                      opts["autoinc_max"], opts["autoinc_cycle"])
    except ConfigurationError as exc:
        hint = ""
        if is_int(opts["autoinc_step"]) and opts["autoinc_step"] < 0 and opts["autoinc_max"] is not None \
                and opts["autoinc_min"] is None:
            hint = ("; note that Meta.autoinc_max is the upper bound whatever the direction (since 0.2.0): "
                    "the lowest value of a descending sequence is Meta.autoinc_min")
        raise _fail(model, f"{exc}{hint}") from None
    block = opts["autoinc_block"]
    if not 1 <= block <= 1_000_000:
        raise _fail(model, f"Meta.autoinc_block must be between 1 and 1000000, not {block}")
    if block > 1 and (opts["autoinc_gapless"] or opts["autoinc_strategy"] == "query"):
        raise _fail(model, "Meta.autoinc_block hands out values from a block reserved per process, which leaves "
                           "gaps; it cannot be combined with autoinc_gapless or the query strategy")
    if opts["autoinc_retries"] is not None and opts["autoinc_retries"] < 0:
        raise _fail(model, f"Meta.autoinc_retries must be 0 or more (or None), not {opts['autoinc_retries']}")
    timeout = opts["autoinc_timeout"]
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout < float("inf")):
        raise _fail(model, f"Meta.autoinc_timeout must be a number of seconds > 0, or None for no limit, "
                           f"not {timeout!r}")
    backoff = opts["autoinc_backoff"]
    if isinstance(backoff, bool) or not isinstance(backoff, (int, float)) or backoff < 0:
        raise _fail(model, f"Meta.autoinc_backoff must be a number of seconds >= 0, not {backoff!r}")

    scope: Any = opts["autoinc_scope"]
    scope = () if scope is None else (scope,) if isinstance(scope, str) else scope
    if not isinstance(scope, tuple) or not all(isinstance(s, str) and s in attributes for s in scope):
        raise _fail(model, f"Meta.autoinc_scope must name attributes of the model (a name or a tuple of names), "
                           f"not {opts['autoinc_scope']!r}; choose from {sorted(attributes)}")
    if name in scope:
        raise _fail(model, f"Meta.autoinc_scope cannot contain the auto-increment attribute {name!r} itself")
    for part in scope:
        kind = attributes[part]
        if kind.attr_type in _UNORDERED or isinstance(kind, JSONAttribute):
            raise _fail(model, f"Meta.autoinc_scope names {part!r}, a {type(kind).__name__}: a set, map, list or JSON "
                               "value has no single text form to name its counter (a set's order differs between "
                               "processes), so one scope could get several counters and its IDs would repeat; "
                               "scope by a string, number or binary attribute")
    if scope and (attribute.is_hash_key or attribute.is_range_key):
        other = model._range_keyname if attribute.is_hash_key else model._hash_keyname
        if other is None or set(scope) != {other}:
            where = (f"make {scope[0]!r} the model's {'range' if attribute.is_hash_key else 'hash'} key"
                     if other is None else f"number {name!r} per {other!r} (Meta.autoinc_scope = {other!r})")
            raise _fail(model, f"Meta.autoinc_scope starts {name!r} again at its start value for every "
                               f"{' and '.join(map(repr, scope))}, but the item's key does not hold "
                               f"{'them' if len(scope) > 1 else 'it'}, so the second scope's first item would "
                               f"take the key of the first scope's; {where}, or drop autoinc_scope")

    period = opts["autoinc_period"]
    if period is not None and period not in periods.PERIODS:
        raise _fail(model, f"Meta.autoinc_period must be one of {', '.join(map(repr, periods.PERIODS))} or None, "
                           f"not {period!r}")

    fmt = opts["autoinc_format"]
    if fmt is not None:
        if not isinstance(attribute, UnicodeAttribute):
            raise _fail(model, f"Meta.autoinc_format needs a UnicodeAttribute, but {name!r} is a "
                               f"{type(attribute).__name__}")
        try:
            if not isinstance(fmt, str) or fmt.format(value=1, period="2026") == fmt.format(value=2, period="2026"):
                raise ValueError("the value does not appear in it")
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            raise _fail(model, f"Meta.autoinc_format {fmt!r} is not usable ({exc}); use a format string with "
                               "the fields value and period, e.g. 'INV-{period}-{value:06d}'") from None

    if period is not None and (attribute.is_hash_key or attribute.is_range_key):
        fields = {f for _, f, _, _ in string.Formatter().parse(fmt or "") if f is not None}
        if not any(f.split(".")[0].split("[")[0] == "period" for f in fields):
            if attribute.is_hash_key:
                raise _fail(model, f"Meta.autoinc_period restarts the sequence each {period}, so the key {name!r} "
                                   "would repeat the last period's values; put the period in the ID with "
                                   "Meta.autoinc_format, e.g. '{period}-{value:06d}'")
            # a range key: the item's key repeats whenever its hash key does not change with the clock's period
            # (a receipt of last year saved this year takes the key of last year's first receipt)
            raise _fail(model, f"Meta.autoinc_period restarts the sequence each {period}, so the range key "
                               f"{name!r} repeats last period's values, and an item whose hash key is not this "
                               "period's would take the key of an item stored before; put the period in the ID "
                               "(a UnicodeAttribute with Meta.autoinc_format = '{period}-{value:06d}'), or keep "
                               f"the period in the hash key and number {name!r} per it with Meta.autoinc_scope = "
                               f"{model._hash_keyname!r} (no autoinc_period), or move {name!r} outside the key")

    strategy = opts["autoinc_strategy"]
    if strategy not in STRATEGIES:
        raise _fail(model, f"Meta.autoinc_strategy must be one of {', '.join(map(repr, STRATEGIES))}, "
                           f"not {strategy!r}")
    if sequence.cycle and not attribute.is_hash_key and not attribute.is_range_key:
        raise _fail(model, f"Meta.autoinc_cycle hands out values again after a wrap, and only a key is kept "
                           f"unique by the put's attribute_not_exists; {name!r} is outside the key, so two live "
                           "items could share an ID. Make it the hash or range key, or leave autoinc_cycle off")
    if opts["autoinc_track_explicit"] and (fmt is not None or strategy == "query"):
        raise _fail(model, "Meta.autoinc_track_explicit moves a counter past an explicit integer ID, so it "
                           "needs plain integer IDs and a counter; it cannot be combined with autoinc_format "
                           "or the query strategy")
    if opts["autoinc_track_explicit"] and sequence.cycle:
        raise _fail(model, "Meta.autoinc_track_explicit moves the counter past an explicit ID, but a cycling "
                           "sequence (Meta.autoinc_cycle) comes round to every value again, so no move keeps a "
                           "new ID off an explicit one, and an ID behind the counter may be from the last pass "
                           "or the next; leave autoinc_track_explicit off (after an import, move the counter "
                           "with NextId.setval), or leave autoinc_cycle off")
    if strategy == "query":
        if not attribute.is_range_key or not isinstance(attribute, NumberAttribute):
            raise _fail(model, "Meta.autoinc_strategy = 'query' numbers the range key within each partition; "
                               f"make {name!r} the model's range key, a NumberAttribute")
        for option in ("autoinc_scope", "autoinc_period", "autoinc_counter_in_table", "autoinc_cycle"):
            if opts[option]:
                raise _fail(model, f"Meta.{option} does not apply to the query strategy (it keeps no counter; "
                                   "the partition is the scope)")
        for option, why in _IGNORED_BY_QUERY.items():
            if given.get(option, DEFAULTS[option]) is not DEFAULTS[option]:
                raise _fail(model, f"Meta.{option} = {given[option]!r} has no effect with the query strategy: "
                                   f"{why}; remove it, or use autoinc_strategy = 'counter'")

    region_list, home, home_host, single = regions.validate(model, opts, strategy)
    if region_list:
        try:
            sequence.subsequence(len(region_list) - 1, len(region_list))
        except ConfigurationError as exc:
            raise _fail(model, f"Meta.autoinc_regions: {exc}") from None

    if opts["autoinc_counter_in_table"]:
        if given.get("autoinc_counter", NextId) is not NextId:
            raise _fail(model, "Meta.autoinc_counter and Meta.autoinc_counter_in_table are two answers to one "
                               "question (where the counter item lives: a counter table, or the model's own "
                               "table); choose one")
        counter: Type[NextId] = in_table_counter(model)
        if fmt is not None and attribute.is_hash_key \
                and fmt.format(value=1, period=periods.label(period or "year")).startswith(RESERVED_PREFIX):
            raise _fail(model, f"Meta.autoinc_format {fmt!r} makes every ID start with {RESERVED_PREFIX!r}, the "
                               "prefix of the counter items Meta.autoinc_counter_in_table keeps in the table, so "
                               "scan() would leave out every item (and an ID could take a counter's key); "
                               f"start the format with something else")
    else:
        counter = opts["autoinc_counter"]
        if not (isinstance(counter, type) and issubclass(counter, NextId)):
            raise _fail(model, f"Meta.autoinc_counter must be NextId or a subclass of it, not {counter!r}")
        counter = bind_counter(counter, model)
    if home is not None:
        counter = regions.home_counter(counter, home, home_host)

    if opts["autoinc_gapless"] and strategy == "counter":
        # with a home region, the transaction goes to the home endpoint, as the counter requests do
        differing = [s for s in CONNECTION_SETTINGS if not (home is not None and s in ("region", "host"))
                     and getattr(counter.Meta, s, None) != getattr(meta, s, None)]
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
        gapless=opts["autoinc_gapless"] or strategy == "query",
        strategy=strategy,
        sequence=sequence,
        track_explicit=opts["autoinc_track_explicit"],
        scope=tuple(scope),
        period=period,
        fmt=fmt,
        block=block,
        retries=opts["autoinc_retries"],
        backoff=float(backoff),
        timeout=None if timeout is None else float(timeout),
        regions=region_list,
        home_region=home,
        home_host=home_host,
        single_region_writes=single,
    )
