"""Reads and validates a model's ``Meta.autoinc_*`` options, once per model."""

from __future__ import annotations

import difflib
import re
import string
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence, Tuple, Type

from pynamodb.attributes import Attribute, JSONAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.models import Model

from . import _calendar as periods
from ._budget import Budget
from .counter import CONNECTION_SETTINGS, RESERVED_PREFIX, NextId, bind_counter, in_table_counter, rebind
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
    """A model's validated auto-increment options (read-only), as ``Model.autoinc_options()`` returns them, e.g.
    ``Order.autoinc_options().sequence.maximum``."""

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
    """``Meta.autoinc_regions``: the writing regions of a global table, each numbering its own subsequence."""
    home_region: Optional[str] = None
    """``Meta.autoinc_home_region``: every counter request (in gapless mode, the whole write) goes there."""
    home_host: Optional[str] = None
    """``Meta.autoinc_home_host``: the home region's endpoint URL (None: the region's public endpoint)."""
    single_region_writes: bool = False
    """``Meta.autoinc_single_region_writes``: the user routes every write to one region; nothing is checked."""
    region: Optional[str] = None
    """With ``regions``: the region these options number for (counter keys end ``@region``); None as declared."""
    # computed once (and again by dataclasses.replace for a region's options):
    fixed_key: Optional[str] = field(init=False, repr=False, compare=False)  # no scope, period or region: the key
    budget: Budget = field(init=False, repr=False, compare=False)
    step: int = field(init=False, repr=False, compare=False)
    start: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fixed = None if self.scope or self.period or self.region is not None else self.key
        object.__setattr__(self, "fixed_key", fixed)
        object.__setattr__(self, "budget", Budget(self.retries, self.timeout, self.backoff))
        object.__setattr__(self, "step", self.sequence.step)
        object.__setattr__(self, "start", self.sequence.start)

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
                raise UnassignedIdError(f"{type(instance).__name__}.{name} is None, but {self.attribute} is numbered "
                                        f"per {name} (Meta.autoinc_scope); set {name} before saving")
            # numbers as DynamoDB stores them (1, 1.0 and 1.00 agree)
            parts.append((number_text(value) or str(value)).replace("\\", "\\\\").replace("#", "\\#"))
        if period is not None:
            parts.append(period)
        key = "#".join(parts)
        return key if self.region is None else f"{key}@{self.region}"

    def owns(self, key: str, *, any_region: bool = False) -> bool:
        """Whether counter ``key`` is this model's (key, a ``#`` part per scope attribute and period, ``@region``
        listed or with ``any_region`` any); another model's ``orders#eu`` beside this ``orders`` is not."""
        if self.regions:
            key, at, region = key.rpartition("@")
            if not at or not (any_region or region in self.regions):
                return False
        if key == self.key:
            return not self.scope and not self.period
        if not key.startswith(self.key + "#"):
            return False
        # split at each # that no scope value escaped
        parts = re.sub(r"\\.", "\0", key[len(self.key) + 1:], flags=re.S).split("#")
        if len(parts) != len(self.scope) + (1 if self.period else 0):
            return False
        return self.period is None or periods.is_label(self.period, parts[-1])


Options = ModelOptions  # the name used inside the library


def options_for(model: Type[Model]) -> Options:
    """The validated options of ``model``, computed on first use and cached."""
    cached: Optional[Options] = model.__dict__.get(OPTIONS_CACHE)
    if cached is None:
        cached = check_options(model)
        setattr(model, OPTIONS_CACHE, cached)
    return cached


#: Where a model class keeps its options (in its own ``__dict__``: a WeakKeyDictionary's value keeps its class alive).
OPTIONS_CACHE = "_autoinc_options_cache"



def _fail(model: Type[Model], problem: str) -> ConfigurationError:
    return ConfigurationError(f"{model.__name__}: {problem}")


def check_options(model: Type[Model]) -> Options:  # noqa: C901 - one check per option, in order
    """Read and validate ``model``'s options (when its class is created, and on first use)."""
    meta = model.Meta
    given = {name: getattr(meta, name) for name in dir(meta) if name.startswith("autoinc_")}
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:  # compare what follows the shared prefix, so "autoinc_zzz" suggests nothing
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
        raise _fail(model, f"auto-increment attribute {name!r} has a default, which every new item would take; "
                           "remove default / default_for_new")
    if not attribute.is_hash_key and not attribute.is_range_key and not attribute.null:
        raise _fail(model, f"auto-increment attribute {name!r} is None until assigned; declare it with null=True")

    key = opts["autoinc_key"] if opts["autoinc_key"] is not None else meta.table_name
    if not isinstance(key, str) or not key:
        raise _fail(model, f"Meta.autoinc_key must be a non-empty string, not {key!r}")

    for flag in ("autoinc_gapless", "autoinc_counter_in_table", "autoinc_cycle", "autoinc_track_explicit",
                 "autoinc_single_region_writes"):
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
            hint = "; Meta.autoinc_max is the upper bound: the lowest value of a descending sequence is " \
                   "Meta.autoinc_min"
        raise _fail(model, f"{exc}{hint}") from None
    block = opts["autoinc_block"]
    if not 1 <= block <= 1_000_000:
        raise _fail(model, f"Meta.autoinc_block must be between 1 and 1000000, not {block}")
    if block > 1 and (opts["autoinc_gapless"] or opts["autoinc_strategy"] == "query"):
        raise _fail(model, "Meta.autoinc_block leaves gaps (a block per process); it cannot be combined with "
                           "autoinc_gapless or the query strategy")
    if opts["autoinc_retries"] is not None and opts["autoinc_retries"] < 0:
        raise _fail(model, f"Meta.autoinc_retries must be 0 or more (or None), not {opts['autoinc_retries']}")
    timeout = opts["autoinc_timeout"]
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout < float("inf")):
        raise _fail(model, "Meta.autoinc_timeout must be a number of seconds > 0, or None for no limit, "
                           f"not {timeout!r}")
    backoff = opts["autoinc_backoff"]
    if isinstance(backoff, bool) or not isinstance(backoff, (int, float)) or backoff < 0:
        raise _fail(model, f"Meta.autoinc_backoff must be a number of seconds >= 0, not {backoff!r}")

    scope: Any = opts["autoinc_scope"]
    scope = () if scope is None else (scope,) if isinstance(scope, str) else scope
    if not isinstance(scope, tuple) or not all(isinstance(s, str) and s in attributes for s in scope):
        raise _fail(model, "Meta.autoinc_scope must name attributes of the model (a name or a tuple of names), "
                           f"not {opts['autoinc_scope']!r}; choose from {sorted(attributes)}")
    if name in scope:
        raise _fail(model, f"Meta.autoinc_scope cannot contain the auto-increment attribute {name!r} itself")
    for part in scope:
        kind = attributes[part]
        if kind.attr_type in ("SS", "NS", "BS", "M", "L") or isinstance(kind, JSONAttribute):  # sets, maps, lists
            raise _fail(model, f"Meta.autoinc_scope names {part!r}, a {type(kind).__name__}, which has no single text "
                               "form, so IDs could repeat; scope by a string, number or binary attribute")
    if scope and (attribute.is_hash_key or attribute.is_range_key):
        other = model._range_keyname if attribute.is_hash_key else model._hash_keyname
        if other is None or set(scope) != {other}:
            where = (f"make {scope[0]!r} the model's {'range' if attribute.is_hash_key else 'hash'} key"
                     if other is None else f"number {name!r} per {other!r} (Meta.autoinc_scope = {other!r})")
            raise _fail(model, f"Meta.autoinc_scope restarts {name!r} for every {' and '.join(map(repr, scope))}, but "
                               f"the item's key does not hold {'them' if len(scope) > 1 else 'it'}, so keys would "
                               f"repeat; {where}, or drop autoinc_scope")

    period = opts["autoinc_period"]
    if period is not None and period not in periods.PERIODS:
        raise _fail(model, f"Meta.autoinc_period must be one of {', '.join(map(repr, periods.PERIODS))} or None, "
                           f"not {period!r}")

    fmt = opts["autoinc_format"]
    if fmt is not None:
        if not isinstance(attribute, UnicodeAttribute):
            raise _fail(model, f"Meta.autoinc_format needs a UnicodeAttribute, not a {type(attribute).__name__}")
        try:
            if not isinstance(fmt, str) or fmt.format(value=1, period="2026") == fmt.format(value=2, period="2026"):
                raise ValueError("the value does not appear in it")
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            raise _fail(model, f"Meta.autoinc_format {fmt!r} is not usable ({exc}); use a format string with "
                               "the fields value and period, e.g. 'INV-{period}-{value:06d}'") from None

    if period is not None and (attribute.is_hash_key or attribute.is_range_key):
        fields = {f for _, f, _, _ in string.Formatter().parse(fmt or "") if f is not None}
        if not any(f.split(".")[0].split("[")[0] == "period" for f in fields):
            what, more = ("key", "") if attribute.is_hash_key else ("range key", (
                f", or number {name!r} per hash key (Meta.autoinc_scope = {model._hash_keyname!r}, no autoinc_period)"
                f", or move {name!r} outside the key"))
            raise _fail(model, f"Meta.autoinc_period restarts the sequence each {period}, so the {what} {name!r} "
                               "repeats last period's values; put the period in the ID (Meta.autoinc_format = "
                               f"'{{period}}-{{value:06d}}'){more}")

    strategy = opts["autoinc_strategy"]
    if strategy not in STRATEGIES:
        raise _fail(model, f"Meta.autoinc_strategy must be one of {', '.join(map(repr, STRATEGIES))}, not {strategy!r}")
    if sequence.cycle and not attribute.is_hash_key and not attribute.is_range_key:
        raise _fail(model, f"Meta.autoinc_cycle hands out values again, and only a key stays unique; {name!r} is "
                           "outside the key. Make it the hash or range key, or leave autoinc_cycle off")
    if opts["autoinc_track_explicit"] and (fmt is not None or strategy == "query"):
        raise _fail(model, "Meta.autoinc_track_explicit needs plain integer IDs and a counter; it cannot be "
                           "combined with autoinc_format or the query strategy")
    if opts["autoinc_track_explicit"] and sequence.cycle:
        raise _fail(model, "Meta.autoinc_track_explicit cannot keep a cycling sequence (Meta.autoinc_cycle) off "
                           "explicit IDs; leave it off (move the counter with NextId.setval), or autoinc_cycle off")
    if strategy == "query":
        if not attribute.is_range_key or not isinstance(attribute, NumberAttribute):
            raise _fail(model, "Meta.autoinc_strategy = 'query' numbers the range key within each partition; "
                               f"make {name!r} the model's range key, a NumberAttribute")
        for option in ("autoinc_scope", "autoinc_period", "autoinc_counter_in_table", "autoinc_cycle"):
            if opts[option]:
                raise _fail(model, f"Meta.{option} does not apply to the query strategy (no counter; the partition "
                                   "is the scope)")
        for option, why in (("autoinc_key", "it names a counter item, and the query strategy keeps none"),
                            ("autoinc_counter", "it names the counter table, and the query strategy keeps none"),
                            ("autoinc_gapless", "the query strategy is always gapless")):  # it never reads them
            if given.get(option, DEFAULTS[option]) is not DEFAULTS[option]:
                raise _fail(model, f"Meta.{option} = {given[option]!r} has no effect with the query strategy: "
                                   f"{why}; remove it, or use autoinc_strategy = 'counter'")

    region_list, home, home_host = opts["autoinc_regions"], opts["autoinc_home_region"], opts["autoinc_home_host"]
    if region_list is not None:
        if isinstance(region_list, str) or not isinstance(region_list, Sequence) \
                or not all(isinstance(r, str) and r for r in region_list):
            raise _fail(model, "Meta.autoinc_regions must be a sequence of region names, e.g. ('us-east-1', "
                               f"'eu-west-1'), not {region_list!r}")
        region_list = tuple(region_list)
        if not region_list:
            raise _fail(model, "Meta.autoinc_regions is empty; list every region that writes, or None")
        repeated = sorted({r for r in region_list if region_list.count(r) > 1})
        if repeated:
            raise _fail(model, f"Meta.autoinc_regions lists {repeated[0]!r} more than once; list it once")
    if home is not None and (not isinstance(home, str) or not home):
        raise _fail(model, f"Meta.autoinc_home_region must be a region name, not {home!r}")
    if home_host is not None and (not isinstance(home_host, str) or not home_host):
        raise _fail(model, f"Meta.autoinc_home_host must be an endpoint URL or None, not {home_host!r}")
    if home_host is not None and home is None:
        raise _fail(model, "Meta.autoinc_home_host is the home region's endpoint; set Meta.autoinc_home_region too")
    chosen = [n for n in ("autoinc_regions", "autoinc_home_region", "autoinc_single_region_writes") if opts[n]]
    if len(chosen) > 1:
        raise _fail(model, f"Meta.{chosen[0]} and Meta.{chosen[1]} are two multi-region schemes; choose one")
    if chosen and chosen[0] != "autoinc_single_region_writes" and strategy == "query":
        raise _fail(model, f"Meta.{chosen[0]} needs a counter, which the query strategy does not keep; use "
                           "autoinc_strategy = 'counter'")
    if region_list:
        for option, why in (("autoinc_cycle", "a wrap restarts at the bound, off the region's subsequence"),
                            ("autoinc_track_explicit", "an explicit ID lies on any region's subsequence")):
            if opts[option]:
                raise _fail(model, f"Meta.{option} cannot be combined with Meta.autoinc_regions: {why}, so two "
                                   "regions could hand out one value")
        try:
            sequence.subsequence(len(region_list) - 1, len(region_list))
        except ConfigurationError as exc:
            raise _fail(model, f"Meta.autoinc_regions: {exc}") from None

    if opts["autoinc_counter_in_table"]:
        if given.get("autoinc_counter", NextId) is not NextId:
            raise _fail(model, "Meta.autoinc_counter and Meta.autoinc_counter_in_table both place the counter item; "
                               "choose one")
        counter: Type[NextId] = in_table_counter(model)
        if fmt is not None and attribute.is_hash_key \
                and fmt.format(value=1, period=periods.label(period or "year")).startswith(RESERVED_PREFIX):
            raise _fail(model, f"Meta.autoinc_format {fmt!r} makes every ID start with {RESERVED_PREFIX!r}, the "
                               "prefix of the in-table counter items; start the format with something else")
    else:
        counter = opts["autoinc_counter"]
        if not (isinstance(counter, type) and issubclass(counter, NextId)):
            raise _fail(model, f"Meta.autoinc_counter must be NextId or a subclass of it, not {counter!r}")
        counter = bind_counter(counter, model)
    if home is not None:
        counter = rebind(counter, {"region": home, "host": home_host})

    if opts["autoinc_gapless"] and strategy == "counter":
        # with a home region, the transaction goes to the home endpoint, as the counter requests do
        differing = [s for s in CONNECTION_SETTINGS if not (home is not None and s in ("region", "host"))
                     and getattr(counter.Meta, s, None) != getattr(meta, s, None)]
        if differing:
            raise _fail(model, "gapless mode writes the counter and the item in one transaction, so both tables must "
                               f"be on one connection (the counter's Meta differs in {differing}); use the same "
                               "endpoint or turn autoinc_gapless off")

    return Options(
        model=model, attribute=name, as_string=isinstance(attribute, UnicodeAttribute), key=key, counter=counter,
        gapless=opts["autoinc_gapless"] or strategy == "query", strategy=strategy, sequence=sequence,
        track_explicit=opts["autoinc_track_explicit"], scope=tuple(scope), period=period, fmt=fmt, block=block,
        retries=opts["autoinc_retries"], backoff=float(backoff), timeout=None if timeout is None else float(timeout),
        regions=region_list or (), home_region=home, home_host=home_host,
        single_region_writes=opts["autoinc_single_region_writes"])
