"""Reads and validates a model's ``Meta.autoinc_*`` options, once per model."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Type

from pynamodb.attributes import Attribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.models import Model

from . import _calendar as periods
from ._budget import Budget
from ._endpoint import CONNECTION_SETTINGS
from ._keys import check_length, format_refusal, period_fields, scope_refusal, text_in
from ._sharing import refuse_mixed_modes
from .counter import RESERVED_PREFIX, NextId, bind_counter, in_table_counter, rebind
from .exceptions import ConfigurationError, UnassignedIdError
from .sequence import SequenceOptions, is_int

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
    numbered: bool = field(init=False, repr=False, compare=False)
    """Whether the mixin numbers this model; False for one it leaves to PynamoDB (a base class without a table, a
    model without a hash key), whose every write is PynamoDB's own."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "numbered", self.attribute != UNNUMBERED)
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
        """The counter key for ``instance``: the data-type key, its scope values, its period (see :mod:`._keys`);
        :class:`InvalidKeyError` for a scope value its attribute would not store, or a key past 2,048 bytes."""
        if self.fixed_key is not None:
            return self.fixed_key
        parts, model = [self.key], type(instance)
        for name in self.scope:
            value = getattr(instance, name)
            if value is None:
                raise UnassignedIdError(f"{model.__name__}.{name} is None, but {self.attribute} is numbered "
                                        f"per {name} (Meta.autoinc_scope); set {name} before saving")
            text = text_in(model, name, value, "the counter key (Meta.autoinc_scope)")
            parts.append(text.replace("\\", "\\\\").replace("#", "\\#"))
        if period is not None:
            parts.append(period)
        key = "#".join(parts)
        key = key if self.region is None else f"{key}@{self.region}"
        if self.scope:
            check_length(self.counter._autoinc_prefix + key, f"{model.__name__}: the counter key",
                         f"it holds Meta.autoinc_key and the values of {', '.join(self.scope)} (Meta.autoinc_scope), "
                         "so it can pass the limit where the item's own key does not; shorten the scope values, or "
                         "scope by a shorter attribute")
        return key

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


def _in_key(attribute: Attribute) -> bool:
    return bool(attribute.is_hash_key or attribute.is_range_key)


def _is_seconds(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_region_list(value: Any) -> bool:
    return not isinstance(value, str) and isinstance(value, Sequence) and all(isinstance(r, str) and r for r in value)


def _is_name(value: Any) -> bool:
    """A non-empty string, or None."""
    return value is None or (isinstance(value, str) and value != "")


@dataclass(frozen=True)
class _Rule:
    """What one option's value must be: ``accepts`` tells, ``must`` ends the error (``{value}`` is the value)."""

    accepts: Callable[[Any], bool]
    must: str


_FLAG = _Rule(lambda value: isinstance(value, bool), "must be True or False, not {value!r}")

#: What each option's own value must be, whatever the other options say.
_VALUES: Dict[str, _Rule] = {
    "autoinc_key": _Rule(lambda value: isinstance(value, str) and value != "",
                         "must be a non-empty string, not {value!r}"),
    "autoinc_gapless": _FLAG,
    "autoinc_counter_in_table": _FLAG,
    "autoinc_cycle": _FLAG,
    "autoinc_track_explicit": _FLAG,
    "autoinc_single_region_writes": _FLAG,
    "autoinc_retries": _Rule(lambda value: value is None or is_int(value), "must be an int, not {value!r}"),
    "autoinc_block": _Rule(is_int, "must be an int, not {value!r}"),
    "autoinc_timeout": _Rule(lambda value: value is None or (_is_seconds(value) and 0 < value < float("inf")),
                             "must be a number of seconds > 0, or None for no limit, not {value!r}"),
    "autoinc_backoff": _Rule(lambda value: _is_seconds(value) and not value < 0,
                             "must be a number of seconds >= 0, not {value!r}"),
    "autoinc_period": _Rule(lambda value: value is None or value in periods.PERIODS,
                            "must be one of " + ", ".join(map(repr, periods.PERIODS)) + " or None, not {value!r}"),
    "autoinc_strategy": _Rule(lambda value: value in STRATEGIES,
                              "must be one of " + ", ".join(map(repr, STRATEGIES)) + ", not {value!r}"),
    "autoinc_regions": _Rule(lambda value: value is None or _is_region_list(value),
                             "must be a sequence of region names, e.g. ('us-east-1', 'eu-west-1'), not {value!r}"),
    "autoinc_home_region": _Rule(_is_name, "must be a region name, not {value!r}"),
    "autoinc_home_host": _Rule(_is_name, "must be an endpoint URL or None, not {value!r}"),
    "autoinc_counter": _Rule(lambda value: isinstance(value, type) and issubclass(value, NextId),
                             "must be NextId or a subclass of it, not {value!r}"),
}

#: The bounds of the two counts, once they are known to be ints.
_BOUNDS: Dict[str, _Rule] = {
    "autoinc_block": _Rule(lambda value: 1 <= value <= 1_000_000, "must be between 1 and 1000000, not {value}"),
    "autoinc_retries": _Rule(lambda value: value is None or not value < 0, "must be 0 or more (or None), not {value}"),
}

#: The options whose type is checked before the sequence is read: the flags, then the counts.
_TYPED = ("autoinc_gapless", "autoinc_counter_in_table", "autoinc_cycle", "autoinc_track_explicit",
          "autoinc_single_region_writes", "autoinc_retries", "autoinc_block")


def _check(model: Type[Model], option: str, value: Any, rules: Dict[str, _Rule] = _VALUES) -> None:
    """Refuse ``value`` for ``Meta.option`` unless its rule accepts it."""
    rule = rules[option]
    if not rule.accepts(value):
        raise _fail(model, f"Meta.{option} " + rule.must.format(value=value))


def check_options(model: Type[Model]) -> Options:
    """Read and validate ``model``'s options (when its class is created, and on first use); for a model the mixin
    leaves to PynamoDB (see :func:`left_to_pynamodb`) the options that number nothing."""
    if left_to_pynamodb(model):
        return _unnumbered(model)
    given = _given(model)
    opts = {**DEFAULTS, **given}
    name, attribute = _auto_attribute(model, opts["autoinc_attribute"])
    key = opts["autoinc_key"] if opts["autoinc_key"] is not None else model.Meta.table_name
    _check(model, "autoinc_key", key)
    for option in _TYPED:
        _check(model, option, opts[option])
    sequence = _sequence(model, opts)
    _check_budget(model, opts)
    scope = _scope(model, opts["autoinc_scope"], name, attribute)
    period, fmt, strategy = opts["autoinc_period"], opts["autoinc_format"], opts["autoinc_strategy"]
    _check(model, "autoinc_period", period)
    _check_format(model, fmt, attribute, sequence, period)
    _check_period_in_key(model, period, fmt, name, attribute, sequence.start)
    _check(model, "autoinc_strategy", strategy)
    _check_combinations(model, opts, name, attribute, sequence)
    if strategy == "query":
        _check_query(model, opts, given, name, attribute)
    region_list = _region_list(model, opts["autoinc_regions"])
    home, home_host = opts["autoinc_home_region"], opts["autoinc_home_host"]
    _check_home(model, home, home_host)
    _check_region_scheme(model, opts, region_list, sequence)
    counter = _counter(model, opts, given, attribute)
    _check_one_connection(model, opts, counter)
    if strategy != "query":  # a query model numbers its partitions, with no counter to share
        refuse_mixed_modes(model, counter._where(key), key, bool(opts["autoinc_gapless"]))
    return Options(
        model=model, attribute=name, as_string=isinstance(attribute, UnicodeAttribute), key=key, counter=counter,
        gapless=opts["autoinc_gapless"] or strategy == "query", strategy=strategy, sequence=sequence,
        track_explicit=opts["autoinc_track_explicit"], scope=scope, period=period, fmt=fmt,
        block=opts["autoinc_block"], retries=opts["autoinc_retries"], backoff=float(opts["autoinc_backoff"]),
        timeout=None if opts["autoinc_timeout"] is None else float(opts["autoinc_timeout"]),
        regions=region_list or (), home_region=home, home_host=home_host,
        single_region_writes=opts["autoinc_single_region_writes"])


#: The ``attribute`` of a model the mixin numbers nothing of: a name every instance holds, never None, so that no
#: instance is taken for a new one and every write is PynamoDB's own.
UNNUMBERED = "__class__"


def left_to_pynamodb(model: Type[Model]) -> bool:
    """Whether the mixin leaves ``model`` to PynamoDB, as if it were a plain ``Model``: a base class without
    ``Meta.table_name`` (its subclasses with a table are numbered), or a model without a hash key that sets no
    ``autoinc_*`` option (PynamoDB accepts the class, and its own errors follow). Such a model with an option is
    refused: the option would number nothing."""
    if getattr(getattr(model, "Meta", None), "table_name", None) is None:
        return True
    if model._hash_keyname is not None:
        return False
    given = _given(model)
    if given:
        raise _fail(model, f"Meta.{sorted(given)[0]} is set, but the model has no hash key, so there is no item "
                           "to number (PynamoDB stores none without one); declare one, e.g. id = "
                           "NumberAttribute(hash_key=True), or drop the autoinc_* options")
    return True


def _unnumbered(model: Type[Model]) -> Options:
    """The options of a model the mixin leaves to PynamoDB: no counter is ever read, nothing is numbered."""
    return Options(model=model, attribute=UNNUMBERED, as_string=False, key="", counter=NextId, gapless=False,
                   strategy="counter", sequence=SequenceOptions.of(None, 1, None, None, False), track_explicit=False,
                   scope=(), period=None, fmt=None, block=1, retries=None, backoff=DEFAULTS["autoinc_backoff"],
                   timeout=DEFAULTS["autoinc_timeout"])


def _given(model: Type[Model]) -> Dict[str, Any]:
    """The options ``model``'s ``Meta`` sets; an unknown ``autoinc_*`` name, or a name that looks like an option
    but is none (``gapless``, ``auto_inc_gapless``, ``AUTOINC_GAPLESS``), is refused."""
    meta = model.Meta
    given = {name: getattr(meta, name) for name in dir(meta) if name.startswith("autoinc_")}
    unknown = [name for name in dir(meta) if name not in DEFAULTS and (name.startswith("autoinc_") or _meant(name))]
    if unknown:
        raise _unknown(model, unknown[0], getattr(meta, unknown[0]))
    return given


def _unknown(model: Type[Model], name: str, value: Any) -> ConfigurationError:
    """The error for ``Meta.name``, no option: it names the option ``name`` probably means and how to set it."""
    if name.startswith("autoinc_"):  # compare what follows the shared prefix, so "autoinc_zzz" suggests nothing
        suffixes = {option[len("autoinc_"):]: option for option in DEFAULTS}
        close = [suffixes[m] for m in difflib.get_close_matches(name[len("autoinc_"):], suffixes, n=1)]
        meant = close[0] if close else None
    else:
        meant = _meant(name)
    if meant is None:
        return _fail(model, f"unknown Meta option {name!r}; known options: {', '.join(sorted(DEFAULTS))}")
    shown = value.__name__ if isinstance(value, type) else repr(value)
    return _fail(model, f"unknown Meta option {name!r}; did you mean {meant!r}? Write Meta.{meant} = {shown} "
                        "in its place")


#: PynamoDB's own ``Meta`` options (``pynamodb.models.MetaProtocol``, older releases' ``base_backoff_ms``, and
#: ``session_cls`` and ``request_timeout_seconds``, which it warns are gone): never taken for one of ours.
PYNAMODB_OPTIONS = frozenset({
    "table_name", "host", "region", "billing_mode", "read_capacity_units", "write_capacity_units",
    "connect_timeout_seconds", "read_timeout_seconds", "max_retry_attempts", "max_pool_connections", "extra_headers",
    "aws_access_key_id", "aws_secret_access_key", "aws_session_token", "stream_view_type", "tags", "base_backoff_ms",
    "session_cls", "request_timeout_seconds",
})

#: What a prefix meant as ``autoinc_`` may look like, in lower case without underscores (``AutoInc_``).
_PREFIXES = ("auto", "autoinc", "autoincr", "autoincrement", "inc", "incr", "increment")

#: Each option by its name after the prefix, in lower case without underscores: ``counterintable``.
_SUFFIXES = {option[len("autoinc_"):].replace("_", ""): option for option in DEFAULTS}

#: The options whose name without the prefix is no common word (``gapless``, unlike ``step`` or ``attribute``).
_TERMS = {suffix: option for suffix, option in _SUFFIXES.items() if option in (
    "autoinc_gapless", "autoinc_counter_in_table", "autoinc_track_explicit", "autoinc_home_region", "autoinc_home_host",
    "autoinc_single_region_writes")}

#: How close (``difflib`` ratio) a name must come to an option's to be taken for it.
_CLOSE = 0.85


def _meant(name: str) -> Optional[str]:
    """The option that ``Meta.name`` looks like, in any case, with or without underscores, or None for any other
    name (``my_setting``) and PynamoDB's own: an option's name without its prefix (``step``), a name close to one
    that is no common word (``gaples``), or after a prefix like ``autoinc_`` (``auto_increment_``, ``autonc_``) a
    name close to any option's (``auto_inc_gaples``)."""
    if name.startswith("_") or name in PYNAMODB_OPTIONS:
        return None
    flat = name.lower().replace("_", "")
    if flat in _SUFFIXES:
        return _SUFFIXES[flat]
    candidates = [(flat, _TERMS)] + [(flat[cut:], _SUFFIXES) for cut in range(3, min(len(flat), 16))
                                     if difflib.get_close_matches(flat[:cut], _PREFIXES, n=1, cutoff=0.75)]
    ratio, meant = max((difflib.SequenceMatcher(None, rest, suffix).ratio(), option)
                       for rest, options in candidates for suffix, option in options.items())
    return meant if ratio >= _CLOSE else None


def _auto_attribute(model: Type[Model], option: Any) -> Tuple[str, Attribute]:
    """The auto-increment attribute's name and attribute: ``Meta.autoinc_attribute`` or the hash key."""
    attributes: Dict[str, Attribute] = model.get_attributes()
    name: Any = option or model._hash_keyname
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
    if not _in_key(attribute) and not attribute.null:
        raise _fail(model, f"auto-increment attribute {name!r} is None until assigned; declare it with null=True")
    return name, attribute


def _sequence(model: Type[Model], opts: Dict[str, Any]) -> SequenceOptions:
    """The sequence of ``Meta.autoinc_start``, ``_step``, ``_min``, ``_max`` and ``_cycle``."""
    step, minimum, maximum = opts["autoinc_step"], opts["autoinc_min"], opts["autoinc_max"]
    try:
        return SequenceOptions.of(opts["autoinc_start"], step, minimum, maximum, opts["autoinc_cycle"])
    except ConfigurationError as exc:
        hint = ""
        if is_int(step) and step < 0 and maximum is not None and minimum is None:
            hint = "; Meta.autoinc_max is the upper bound: the lowest value of a descending sequence is " \
                   "Meta.autoinc_min"
        raise _fail(model, f"{exc}{hint}") from None


def _check_budget(model: Type[Model], opts: Dict[str, Any]) -> None:
    """``Meta.autoinc_block``, ``_retries``, ``_timeout`` and ``_backoff``: how a save takes and retries."""
    _check(model, "autoinc_block", opts["autoinc_block"], _BOUNDS)
    if opts["autoinc_block"] > 1 and (opts["autoinc_gapless"] or opts["autoinc_strategy"] == "query"):
        raise _fail(model, "Meta.autoinc_block leaves gaps (a block per process); it cannot be combined with "
                           "autoinc_gapless or the query strategy")
    _check(model, "autoinc_retries", opts["autoinc_retries"], _BOUNDS)
    _check(model, "autoinc_timeout", opts["autoinc_timeout"])
    _check(model, "autoinc_backoff", opts["autoinc_backoff"])


def _scope(model: Type[Model], option: Any, name: str, attribute: Attribute) -> Tuple[str, ...]:
    """The attributes of ``Meta.autoinc_scope``, whose values extend the counter key."""
    attributes: Dict[str, Attribute] = model.get_attributes()
    scope = () if option is None else (option,) if isinstance(option, str) else option
    if not isinstance(scope, tuple) or not all(isinstance(s, str) and s in attributes for s in scope):
        raise _fail(model, "Meta.autoinc_scope must name attributes of the model (a name or a tuple of names), "
                           f"not {option!r}; choose from {sorted(attributes)}")
    if name in scope:
        raise _fail(model, f"Meta.autoinc_scope cannot contain the auto-increment attribute {name!r} itself")
    for part in scope:
        refusal = scope_refusal(attributes[part])
        if refusal is not None:  # sets, maps, lists, JSON, a version
            raise _fail(model, f"Meta.autoinc_scope names {part!r}, a {type(attributes[part]).__name__}, {refusal}, "
                               "so IDs could repeat; scope by a string, number, binary, boolean or date attribute")
    if scope and _in_key(attribute):
        _check_scope_in_key(model, scope, name, attribute)
    return scope


def _check_scope_in_key(model: Type[Model], scope: Tuple[str, ...], name: str, attribute: Attribute) -> None:
    """A scoped ID in the key needs the scope in the key too: the other key attribute, alone."""
    other = model._range_keyname if attribute.is_hash_key else model._hash_keyname
    if other is None or set(scope) != {other}:
        where = (f"make {scope[0]!r} the model's {'range' if attribute.is_hash_key else 'hash'} key"
                 if other is None else f"number {name!r} per {other!r} (Meta.autoinc_scope = {other!r})")
        raise _fail(model, f"Meta.autoinc_scope restarts {name!r} for every {' and '.join(map(repr, scope))}, but "
                           f"the item's key does not hold {'them' if len(scope) > 1 else 'it'}, so keys would "
                           f"repeat; {where}, or drop autoinc_scope")


def _check_format(model: Type[Model], fmt: Any, attribute: Attribute, sequence: SequenceOptions,
                  period: Optional[str]) -> None:
    """``Meta.autoinc_format``, for a string ID: a format string that writes each value of the sequence as an ID
    of its own, which reads back as the value; ``{period}`` only with ``Meta.autoinc_period``."""
    if fmt is None:
        return
    if not isinstance(attribute, UnicodeAttribute):
        raise _fail(model, f"Meta.autoinc_format needs a UnicodeAttribute, not a {type(attribute).__name__}")
    problem = format_refusal(fmt, sequence, period, periods.label(period) if period else "")
    if problem is not None:
        raise _fail(model, problem)


def _check_period_in_key(model: Type[Model], period: Optional[str], fmt: Optional[str], name: str,
                         attribute: Attribute, start: int) -> None:
    """A sequence restarting each period in the key needs the whole period in the ID, or keys repeat: a format
    that shows part of it (``{period:.4}`` of a month, ``{period[2]}``) gives two periods' first items one key."""
    if period is None or not _in_key(attribute):
        return
    what, more = ("key", "") if attribute.is_hash_key else ("range key", (
        f", or number {name!r} per hash key (Meta.autoinc_scope = {model._hash_keyname!r}, no autoinc_period)"
        f", or move {name!r} outside the key"))
    if not period_fields(fmt or ""):
        raise _fail(model, f"Meta.autoinc_period restarts the sequence each {period}, so the {what} {name!r} "
                           "repeats last period's values; put the period in the ID (Meta.autoinc_format = "
                           f"'{{period}}-{{value:06d}}'){more}")
    shown: Dict[str, str] = {}
    for label in periods.apart(period):
        text = str(fmt).format(value=start, period=label)
        if text in shown:
            raise _fail(model, f"Meta.autoinc_format {fmt!r} shows only part of the period: the {period}s "
                               f"{shown[text]!r} and {label!r} both give {text!r}, and Meta.autoinc_period restarts "
                               f"the sequence each {period}, so the {what} {name!r} would repeat; show the whole "
                               f"period with {{period}} (e.g. 'INV-{{period}}-{{value:06d}}'){more}")
        shown[text] = label


def _check_combinations(model: Type[Model], opts: Dict[str, Any], name: str, attribute: Attribute,
                        sequence: SequenceOptions) -> None:
    """Cycling and tracking explicit IDs, with what they cannot be combined with."""
    if sequence.cycle and not _in_key(attribute):
        raise _fail(model, f"Meta.autoinc_cycle hands out values again, and only a key stays unique; {name!r} is "
                           "outside the key. Make it the hash or range key, or leave autoinc_cycle off")
    if opts["autoinc_track_explicit"] and (opts["autoinc_format"] is not None
                                           or opts["autoinc_strategy"] == "query"):
        raise _fail(model, "Meta.autoinc_track_explicit needs plain integer IDs and a counter; it cannot be "
                           "combined with autoinc_format or the query strategy")
    if opts["autoinc_track_explicit"] and sequence.cycle:
        raise _fail(model, "Meta.autoinc_track_explicit cannot keep a cycling sequence (Meta.autoinc_cycle) off "
                           "explicit IDs; leave it off (move the counter with NextId.setval), or autoinc_cycle off")


#: Options that need a counter, which the query strategy keeps none of.
_NOT_FOR_QUERY = ("autoinc_scope", "autoinc_period", "autoinc_counter_in_table", "autoinc_cycle")

#: Options the query strategy never reads, and why: set to anything but their default, they are refused.
_IGNORED_BY_QUERY = {
    "autoinc_key": "it names a counter item, and the query strategy keeps none",
    "autoinc_counter": "it names the counter table, and the query strategy keeps none",
    "autoinc_gapless": "the query strategy is always gapless",
}


def _check_query(model: Type[Model], opts: Dict[str, Any], given: Dict[str, Any], name: str,
                 attribute: Attribute) -> None:
    """The query strategy numbers a number range key in its partition, with no counter."""
    if not attribute.is_range_key or not isinstance(attribute, NumberAttribute):
        raise _fail(model, "Meta.autoinc_strategy = 'query' numbers the range key within each partition; "
                           f"make {name!r} the model's range key, a NumberAttribute")
    for option in _NOT_FOR_QUERY:
        if opts[option]:
            raise _fail(model, f"Meta.{option} does not apply to the query strategy (no counter; the partition "
                               "is the scope)")
    for option, why in _IGNORED_BY_QUERY.items():
        if given.get(option, DEFAULTS[option]) is not DEFAULTS[option]:
            raise _fail(model, f"Meta.{option} = {given[option]!r} has no effect with the query strategy: "
                               f"{why}; remove it, or use autoinc_strategy = 'counter'")


def _region_list(model: Type[Model], option: Any) -> Optional[Tuple[str, ...]]:
    """``Meta.autoinc_regions``: each writing region once, or None."""
    _check(model, "autoinc_regions", option)
    if option is None:
        return None
    region_list = tuple(option)
    if not region_list:
        raise _fail(model, "Meta.autoinc_regions is empty; list every region that writes, or None")
    repeated = sorted({r for r in region_list if region_list.count(r) > 1})
    if repeated:
        raise _fail(model, f"Meta.autoinc_regions lists {repeated[0]!r} more than once; list it once")
    return region_list


def _check_home(model: Type[Model], home: Any, home_host: Any) -> None:
    """``Meta.autoinc_home_region`` and its endpoint, ``Meta.autoinc_home_host``."""
    _check(model, "autoinc_home_region", home)
    _check(model, "autoinc_home_host", home_host)
    if home_host is not None and home is None:
        raise _fail(model, "Meta.autoinc_home_host is the home region's endpoint; set Meta.autoinc_home_region too")


#: The multi-region schemes, of which a model chooses at most one.
_SCHEMES = ("autoinc_regions", "autoinc_home_region", "autoinc_single_region_writes")

#: What cannot be combined with ``Meta.autoinc_regions``, and why.
_NOT_WITH_REGIONS = {
    "autoinc_cycle": "a wrap restarts at the bound, off the region's subsequence",
    "autoinc_track_explicit": "an explicit ID lies on any region's subsequence",
}


def _check_region_scheme(model: Type[Model], opts: Dict[str, Any], region_list: Optional[Tuple[str, ...]],
                         sequence: SequenceOptions) -> None:
    """One multi-region scheme at most, each with what it needs."""
    chosen = [n for n in _SCHEMES if opts[n]]
    if len(chosen) > 1:
        raise _fail(model, f"Meta.{chosen[0]} and Meta.{chosen[1]} are two multi-region schemes; choose one")
    if chosen and chosen[0] != "autoinc_single_region_writes" and opts["autoinc_strategy"] == "query":
        raise _fail(model, f"Meta.{chosen[0]} needs a counter, which the query strategy does not keep; use "
                           "autoinc_strategy = 'counter'")
    if not region_list:
        return
    for option, why in _NOT_WITH_REGIONS.items():
        if opts[option]:
            raise _fail(model, f"Meta.{option} cannot be combined with Meta.autoinc_regions: {why}, so two "
                               "regions could hand out one value")
    try:
        sequence.subsequence(len(region_list) - 1, len(region_list))
    except ConfigurationError as exc:
        raise _fail(model, f"Meta.autoinc_regions: {exc}") from None


def _counter(model: Type[Model], opts: Dict[str, Any], given: Dict[str, Any], attribute: Attribute) -> Type[NextId]:
    """The counter model, bound to ``model``'s connection (or its home region's)."""
    if opts["autoinc_counter_in_table"]:
        counter = _in_table(model, given, attribute, opts["autoinc_format"], opts["autoinc_period"])
    else:
        _check(model, "autoinc_counter", opts["autoinc_counter"])
        counter = bind_counter(opts["autoinc_counter"], model)
    if opts["autoinc_home_region"] is not None:
        counter = rebind(counter, {"region": opts["autoinc_home_region"], "host": opts["autoinc_home_host"]})
    return counter


def _in_table(model: Type[Model], given: Dict[str, Any], attribute: Attribute, fmt: Optional[str],
              period: Optional[str]) -> Type[NextId]:
    """The counter kept in ``model``'s own table, whose IDs must not look like its counter items' keys."""
    if given.get("autoinc_counter", NextId) is not NextId:
        raise _fail(model, "Meta.autoinc_counter and Meta.autoinc_counter_in_table both place the counter item; "
                           "choose one")
    counter = in_table_counter(model)
    if fmt is not None and attribute.is_hash_key \
            and fmt.format(value=1, period=periods.label(period or "year")).startswith(RESERVED_PREFIX):
        raise _fail(model, f"Meta.autoinc_format {fmt!r} makes every ID start with {RESERVED_PREFIX!r}, the "
                           "prefix of the in-table counter items; start the format with something else")
    return counter


def _check_one_connection(model: Type[Model], opts: Dict[str, Any], counter: Type[NextId]) -> None:
    """Gapless mode writes the counter and the item in one transaction: one connection for both."""
    if not opts["autoinc_gapless"] or opts["autoinc_strategy"] != "counter":
        return
    home = opts["autoinc_home_region"]
    # with a home region, the transaction goes to the home endpoint, as the counter requests do
    differing = [s for s in CONNECTION_SETTINGS if not (home is not None and s in ("region", "host"))
                 and getattr(counter.Meta, s, None) != getattr(model.Meta, s, None)]
    if differing:
        raise _fail(model, "gapless mode writes the counter and the item in one transaction, so both tables must "
                           f"be on one connection (the counter's Meta differs in {differing}); use the same "
                           "endpoint or turn autoinc_gapless off")
