"""Global tables: detection, and the multi-region schemes.

On a DynamoDB global table in its default mode (multi-region eventual
consistency) every replica accepts writes, conditions are checked against the
local replica only, and the last writer wins when items replicate. A counter
item advanced from two regions hands out the same value twice. So, on a
model's first claim of an ID in a process, the model's table and its counter
table are described (one DescribeTable each, cached for the process), and a
model on an eventually consistent global table must choose one of:

Region-homed sequences (``Meta.autoinc_regions``)
    Region *i* of *R* allocates from its own counter item, ``key@region``,
    along ``start + (i + k*R) * step``: the values of the regions never meet,
    and each region's values increase (no gap within them in gapless mode).
A home region (``Meta.autoinc_home_region``)
    Every counter request goes to one region's endpoint (in gapless mode the
    whole transaction), wherever the process runs: one global sequence.
``Meta.autoinc_single_region_writes = True``
    The user routes every write to one region: nothing is described, nothing
    is refused.

A global table in multi-region strong consistency (MRSC) needs no scheme: its
conditional writes are checked across regions, and a concurrent write from
another region fails with ``ReplicatedWriteConflictException``, a lost race
that fast and block mode retry. Gapless mode writes TransactWriteItems, which
MRSC tables do not support, and is refused on them.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Type, cast
from weakref import WeakKeyDictionary

from pynamodb.connection import Connection, TableConnection
from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.models import Model

from . import _state, _transport
from .counter import CONNECTION_SETTINGS, NextId, rebind
from .exceptions import (
    ConfigurationError,
    CounterError,
    GlobalTableError,
    SequenceMismatchError,
    error_code,
)
from .sequence import SequenceOptions

SCHEMES = ("Meta.autoinc_regions = ('us-east-1', 'eu-west-1', ...) (each region numbers its own subsequence), "
           "Meta.autoinc_home_region = 'us-east-1' (every counter request goes to one region), or "
           "Meta.autoinc_single_region_writes = True (you route all writes to one region yourself)")


@dataclass(frozen=True)
class TableKind:
    """What DescribeTable says of a table: its replicas and its multi-region consistency."""

    table: str
    replicas: Tuple[str, ...] = ()
    """The regions of its replicas (empty: not a global table, or a legacy one)."""
    version: Optional[str] = None
    """``GlobalTableVersion``: ``"2019.11.21"`` (current) or ``"2017.11.29"`` (legacy), None if not global."""
    consistency: Optional[str] = None
    """``MultiRegionConsistency``: ``"EVENTUAL"``, ``"STRONG"`` or None (absent: eventual, if global)."""

    @classmethod
    def of(cls, table: str, description: Dict[str, Any]) -> TableKind:
        """The kind of ``table`` from its DescribeTable ``Table`` description."""
        replicas = tuple(str(r.get("RegionName", "?")) for r in description.get("Replicas") or ())
        return cls(table, replicas, description.get("GlobalTableVersion"), description.get("MultiRegionConsistency"))

    @property
    def is_global(self) -> bool:
        return bool(self.replicas) or self.version is not None

    @property
    def strong(self) -> bool:
        """A global table in multi-region strong consistency (MRSC)."""
        return self.is_global and self.consistency == "STRONG"

    @property
    def eventual(self) -> bool:
        """A global table in multi-region eventual consistency (the default mode)."""
        return self.is_global and not self.strong


# -- per-process state -------------------------------------------------------

class _Known:
    """What this process learned: table kinds by endpoint and table, and each model's verdict."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kinds: Dict[Tuple[Any, ...], TableKind] = {}
        self.checked: WeakKeyDictionary[type, Tuple[Any, Any, bool]] = WeakKeyDictionary()
        """Model -> (its options, the options its claims use in this process, its tables are MRSC)."""
        self.connections: Dict[Tuple[Any, ...], TableConnection] = {}
        self.ready: Set[Tuple[Any, ...]] = set()
        """Region counters (``NextId._where``) this process found in place, or created on the current layout."""



def _tables() -> _Known:
    """What this process learned about tables (a part of :mod:`pynamodb_autoinc._state`)."""
    state = _state.state
    return state.parts.get("tables") or state.part("tables", _Known)


def describe_table(connection: Connection, table: str) -> Dict[str, Any]:
    """One DescribeTable request: the table's description (its ``Table``)."""
    return cast(Dict[str, Any], _transport.send(connection, "DescribeTable", {"TableName": table}, raw=True)
                .get("Table", {}))


def table_kind(model: Type[Model]) -> Optional[TableKind]:
    """The kind of ``model``'s table, described once per process (None: the table does not exist)."""
    meta = model.Meta
    where = (getattr(meta, "host", None), getattr(meta, "region", None), meta.table_name)
    with _tables().lock:
        known = _tables().kinds.get(where)
    if known is not None:
        return known
    try:
        description = describe_table(model._get_connection().connection, meta.table_name)
    except BOTOCORE_EXCEPTIONS as exc:
        code = error_code(exc)
        if code == "ResourceNotFoundException":
            return None  # the save reports the missing table as it always has
        if code in ("AccessDeniedException", "UnauthorizedOperation"):
            raise GlobalTableError(
                f"{model.__name__}: DescribeTable on table {meta.table_name!r} was denied; the library asks once "
                "per process whether the table is a global table. Grant dynamodb:DescribeTable on it (see "
                "`pynamodb-autoinc policy`), or set Meta.autoinc_single_region_writes = True if every write of "
                "this model goes to one region", exc) from exc
        raise CounterError(f"{model.__name__}: could not describe table {meta.table_name!r} ({code or exc}); "
                           "nothing was written, try again", exc) from exc
    kind = TableKind.of(meta.table_name, description)
    with _tables().lock:
        _tables().kinds[where] = kind
    return kind


# -- the options -------------------------------------------------------------

def validate(model: Type[Model], opts: Dict[str, Any], strategy: str) -> Tuple[Tuple[str, ...], Optional[str],
                                                                             Optional[str], bool]:
    """Check the multi-region ``Meta`` options; returns (regions, home region, home host, single-region writes)."""
    name = model.__name__
    regions: Any = opts["autoinc_regions"]
    home: Any = opts["autoinc_home_region"]
    host: Any = opts["autoinc_home_host"]
    single: Any = opts["autoinc_single_region_writes"]
    if not isinstance(single, bool):
        raise ConfigurationError(f"{name}: Meta.autoinc_single_region_writes must be True or False, not {single!r}")
    if regions is not None:
        if isinstance(regions, str) or not isinstance(regions, Sequence) \
                or not all(isinstance(r, str) and r for r in regions):
            raise ConfigurationError(f"{name}: Meta.autoinc_regions must be a sequence of region names, e.g. "
                                     f"('us-east-1', 'eu-west-1'), not {regions!r}")
        regions = tuple(regions)
        if not regions:
            raise ConfigurationError(f"{name}: Meta.autoinc_regions is empty; list every region that writes, "
                                     "or leave it None")
        repeated = sorted({r for r in regions if regions.count(r) > 1})
        if repeated:
            raise ConfigurationError(f"{name}: Meta.autoinc_regions lists {repeated[0]!r} more than once; each "
                                     "region owns one place in the list")
    if home is not None and (not isinstance(home, str) or not home):
        raise ConfigurationError(f"{name}: Meta.autoinc_home_region must be a region name, not {home!r}")
    if host is not None and (not isinstance(host, str) or not host):
        raise ConfigurationError(f"{name}: Meta.autoinc_home_host must be an endpoint URL or None, not {host!r}")
    if host is not None and home is None:
        raise ConfigurationError(f"{name}: Meta.autoinc_home_host is the endpoint of the home region; set "
                                 "Meta.autoinc_home_region too")
    chosen = [n for n, v in (("autoinc_regions", regions), ("autoinc_home_region", home),
                             ("autoinc_single_region_writes", single)) if v]
    if len(chosen) > 1:
        raise ConfigurationError(f"{name}: Meta.{chosen[0]} and Meta.{chosen[1]} are two answers to one question "
                                 "(how IDs stay unique across the regions of a global table); choose one")
    if chosen and chosen[0] != "autoinc_single_region_writes" and strategy == "query":
        raise ConfigurationError(f"{name}: Meta.{chosen[0]} needs a counter, but the query strategy keeps none "
                                 "(it reads the largest key of the local replica); use autoinc_strategy = 'counter'")
    if regions is not None:
        for option, why in (("autoinc_cycle", "a wrap restarts at the bound, off the region's subsequence"),
                            ("autoinc_track_explicit", "an explicit ID lies on any region's subsequence")):
            if opts[option]:
                raise ConfigurationError(f"{name}: Meta.{option} cannot be combined with Meta.autoinc_regions: "
                                         f"{why}, so two regions could hand out one value")
    return regions or (), home, host, single


def home_counter(counter: Type[NextId], region: str, host: Optional[str]) -> Type[NextId]:
    """``counter`` reached at the home ``region`` (through ``host``, or the region's public endpoint)."""
    return rebind(counter, {"region": region, "host": host})


def write_connection(model: Type[Model], opts: Any = None) -> Connection:
    """The connection that stores ``model``'s new items: the home region's in gapless mode with a home region.

    ``opts``: the model's options, when the caller has them (else they are read).
    """
    opts = model.autoinc_options() if opts is None else opts  # type: ignore[attr-defined]
    if opts.home_region is None or not opts.gapless:
        return model._get_connection().connection
    return home_table(model, opts.home_region, opts.home_host).connection


def home_table(model: Type[Model], region: str, host: Optional[str]) -> TableConnection:
    """A connection to ``model``'s table in the home region, with the model's other settings."""
    key = (model.Meta.table_name, region, host,
           tuple(repr(getattr(model.Meta, s, None)) for s in CONNECTION_SETTINGS))
    with _tables().lock:
        found = _tables().connections.get(key)
        if found is None:
            local = model._get_connection()
            settings = {s: getattr(model.Meta, s, None) for s in CONNECTION_SETTINGS if s not in ("region", "host")}
            found = _tables().connections[key] = TableConnection(
                model.Meta.table_name, region=region, host=host, meta_table=local.get_meta_table(), **settings)
        return found


# -- the check on first claim --------------------------------------------------

def effective(opts: Any) -> Any:
    """The options a claim of ``opts.model`` uses in this process, after the global-table check.

    With ``Meta.autoinc_regions``, they number the region's own subsequence
    on its own counter item; otherwise they are ``opts``.
    """
    verdict = _tables().checked.get(opts.model)
    if verdict is None or verdict[0] is not opts:
        region, mrsc = _check(opts)
        claimed = opts
        if region is not None:
            index = opts.regions.index(region)
            claimed = dataclasses.replace(opts, region=region,
                                          sequence=opts.sequence.subsequence(index, len(opts.regions)))
        verdict = (opts, claimed, mrsc)
        with _tables().lock:
            _tables().checked[opts.model] = verdict
    return verdict[1]


def strong(opts: Any) -> bool:
    """Whether ``opts.model``'s tables are MRSC global tables, as this process found (after :func:`effective`)."""
    verdict = _tables().checked.get(opts.model)
    return verdict is not None and verdict[2]


def _check(opts: Any) -> Tuple[Optional[str], bool]:
    """Describe the tables; refuse what cannot keep IDs unique; (the region this process writes from, MRSC)."""
    model = opts.model
    region = process_region(model) if opts.regions else None
    if region is not None and region not in opts.regions:
        raise GlobalTableError(
            f"{model.__name__} writes from region {region!r}, which Meta.autoinc_regions {list(opts.regions)} does "
            f"not list, so it has no subsequence of its own; append {region!r} to the end of the list (never "
            "reorder it), then run `pynamodb-autoinc seed` for the model, which moves every region's counter onto its "
            "new subsequence")
    if opts.single_region_writes:
        return region, False
    kinds = [table_kind(model)]
    if opts.strategy == "counter" and not _same_table(opts.counter, model):
        kinds.append(table_kind(opts.counter))
    found = [k for k in kinds if k is not None]
    eventual = [k for k in found if k.eventual]
    if eventual and not (opts.regions or opts.home_region):
        tables = " and ".join(repr(k.table) for k in eventual)
        raise GlobalTableError(
            f"{model.__name__}: table {tables} is a global table in multi-region eventual consistency (replicas in "
            f"{', '.join(sorted({r for k in eventual for r in k.replicas})) or 'other regions'}): conditions are "
            "checked against the local replica only, so two regions would hand out the same ID and the items "
            f"would overwrite each other. Choose a multi-region scheme: {SCHEMES}")
    mrsc = any(k.strong for k in found)
    if mrsc and opts.gapless and opts.strategy == "counter":
        raise GlobalTableError(
            f"{model.__name__}: gapless mode writes the item and its counter in one TransactWriteItems, which "
            "global tables in multi-region strong consistency (MRSC) do not support; use fast or block mode "
            "(Meta.autoinc_gapless = False), whose conditional writes MRSC keeps consistent across regions")
    return region, mrsc


def _same_table(counter: Type[Model], model: Type[Model]) -> bool:
    return all(getattr(counter.Meta, s, None) == getattr(model.Meta, s, None) for s in ("host", "region")) \
        and counter.Meta.table_name == model.Meta.table_name


def process_region(model: Type[Model]) -> str:
    """The region ``model`` writes from: ``Meta.region``, or else the region botocore resolves."""
    region = getattr(model.Meta, "region", None)
    if not region:
        region = model._get_connection().connection.client.meta.region_name
    if not region:
        raise GlobalTableError(
            f"{model.__name__} numbers IDs per region (Meta.autoinc_regions), but its region is not known: set "
            "Meta.region (or AWS_DEFAULT_REGION) to the region this process writes to")
    return str(region)


def regions_of(opts: Any) -> List[Tuple[str, SequenceOptions]]:
    """Each region of ``Meta.autoinc_regions`` with its subsequence, in list order."""
    return [(r, opts.sequence.subsequence(i, len(opts.regions))) for i, r in enumerate(opts.regions)]


def sequence_of(opts: Any, key: str) -> SequenceOptions:
    """The sequence counter ``key`` of ``opts.model`` runs: its region's subsequence, with autoinc_regions."""
    if not opts.regions:
        return cast(SequenceOptions, opts.sequence)
    region = key.rpartition("@")[2]
    layout = dict(regions_of(opts))
    if "@" not in key or region not in layout:
        raise ConfigurationError(
            f"counter {key!r} is not one of {opts.model.__name__}'s: it numbers per region "
            f"(Meta.autoinc_regions = {list(opts.regions)}), so its counter keys end with '@' and a listed region, "
            f"such as {key.rpartition('@')[0] or key!r}@{opts.regions[0]}")
    return layout[region]


def check_region_counter(opts: Any, key: str) -> None:
    """Refuse the first claim on a region counter of a region appended to Meta.autoinc_regions before `seed`.

    ``opts``: the options of a claim (after :func:`effective`); ``key``: its
    counter key, ``base@region``. Once per counter and process, when the
    region's counter item does not exist yet while another listed region's
    counter records a different layout (or none), or the single-region
    counter ``base`` a table had before holds a value without any region
    counter on the current layout: the list changed and `seed` was not run.
    Numbering from the region's start then would hand out values the other
    regions handed out (or will, on their old subsequences).

    :raises SequenceMismatchError: naming `pynamodb-autoinc seed`; nothing was spent
    """
    if opts.region is None:
        return
    counter = opts.counter
    where = counter._where(key)
    with _tables().lock:
        if where in _tables().ready:
            return
    last, recorded = counter.read(key)
    if last is None and recorded is None:
        base = key.rpartition("@")[0]
        declared = opts.model.autoinc_options().sequence  # the sequence the regions share
        current = stale = None
        for index, region in enumerate(opts.regions):
            if region == opts.region:
                continue
            other_last, other_recorded = counter.read(f"{base}@{region}")
            if other_recorded == declared.subsequence(index, len(opts.regions)):
                current = region
            elif other_last is not None or other_recorded is not None:
                stale = stale or (region, other_recorded)
        single = counter.currval(base) if current is None and stale is None else None
        if stale is not None or single is not None:
            if stale is not None:
                region, options = stale
                found = (f"counter {base}@{region} records "
                         f"{options.encode() if options is not None else 'no sequence options'}, another layout "
                         f"than {list(opts.regions)} gives it")
            else:
                found = f"the single-region counter {base!r} has handed out values up to {single}"
            model = opts.model
            raise SequenceMismatchError(
                f"{model.__name__}: counter {key!r} of region {opts.region!r} does not exist yet, while {found}: "
                "Meta.autoinc_regions changed (a region was appended, or the table moved to region-homed "
                "sequences) and `seed` has not been run, so this region would hand out values other regions "
                f"handed out. Run `pynamodb-autoinc seed --model {model.__module__}:{model.__qualname__}`, which "
                "puts every region's counter past every stored ID on its new subsequence; nothing was spent",
                recorded=stale[1].encode() if stale is not None and stale[1] is not None else None)
    with _tables().lock:
        _tables().ready.add(where)


def seed(opts: Any, counter: Type[NextId], furthest: Dict[str, int], *, dry_run: bool = False) -> List[str]:
    """Put every region's counter past every ID handed out anywhere, on the region's subsequence.

    ``furthest``: the furthest stored ID per counter key, before the region
    (``key``, with its scope values). For each such key, and each key with a
    region counter, the bound is the furthest of: the stored IDs, the
    single-region counter ``key`` (a table moving to region-homed sequences),
    and every listed region's counter. A region counter whose recorded
    options are this model's is raised (never moved back); one recording
    another layout (a region appended) or none is restarted at the first
    value of its subsequence past the bound, recording the layout. A counter
    whose recorded start differs from its region's place in the list is
    refused before anything moves: the list was reordered. Returns one line
    per counter. With ``dry_run``, nothing is written: each line says what
    would change (the counter's value and options, before and after).
    """
    layout = regions_of(opts)
    keys = set(furthest)
    for key in counter.keys():  # noqa: SIM118 - NextId.keys(), a scan of the counter table
        if opts.owns(key, any_region=True):  # not another model's counter whose key starts with this one's
            keys.add(key.rpartition("@")[0])
    pick = max if opts.sequence.step > 0 else min
    report: List[str] = []
    for base in sorted(keys):
        states = {region: counter.read(f"{base}@{region}") for region, _ in layout}
        for region, sequence in layout:
            recorded = states[region][1]
            if recorded is not None and (recorded.start, recorded.minimum, recorded.maximum) != \
                    (sequence.start, sequence.minimum, sequence.maximum):
                raise GlobalTableError(
                    f"counter {base}@{region} records start {recorded.start}, bounds {recorded.minimum}.."
                    f"{recorded.maximum}, but region {region!r} in place {opts.regions.index(region)} of "
                    f"Meta.autoinc_regions starts at {sequence.start}, bounds {sequence.minimum}..{sequence.maximum}"
                    ": the list was reordered (or autoinc_start, _min, _max changed). Regions may only be appended;"
                    " restore the list's order. Nothing was changed")
        seen = [v for v in (furthest.get(base), counter.currval(base), *(s[0] for s in states.values()))
                if v is not None]
        bound = pick(seen) if seen else None
        for region, sequence in layout:
            key = f"{base}@{region}"
            last, recorded = states[region]
            following = sequence.first_beyond(bound)
            if dry_run:
                report.append(_would(key, last, recorded, sequence, following))
            elif recorded == sequence:
                moved = counter.raise_to(key, following - sequence.step, step=sequence.step)
                report.append(f"{key}: {'raised' if moved else 'already past every ID'}; the next value is "
                              f"{following if moved else sequence.first_beyond(last)}")
            else:
                counter.restart(key, sequence, following)
                report.append(f"{key}: restarted on {sequence.encode()}; the next value is {following}")
    return report


def _would(key: str, last: Optional[int], recorded: Optional[SequenceOptions], sequence: SequenceOptions,
           following: int) -> str:
    """What :func:`seed` would do to counter ``key``, said without doing it."""
    new = following - sequence.step
    if recorded == sequence:
        behind = last is None or (last < new if sequence.step > 0 else last > new)
        if not behind:
            return f"{key}: would stay at {last} (already past every ID); the next value is " \
                   f"{sequence.first_beyond(last)}"
        return f"{key}: would be raised from {last} to {new} on {sequence.encode()}; the next value would be " \
               f"{following}"
    was = recorded.encode() if recorded is not None else "no options"
    return (f"{key}: would be restarted from {last} ({was}) to {new} on {sequence.encode()}; the next value "
            f"would be {following}")
