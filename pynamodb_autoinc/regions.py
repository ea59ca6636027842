"""Global tables: the check on a model's first claim in a process (one DescribeTable per table), and the multi-region
schemes (``Meta.autoinc_regions``, ``_home_region``, ``_single_region_writes``); see docs/global-tables.md."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Dict, List, Optional, Set, Tuple, Type, cast
from weakref import WeakKeyDictionary

from pynamodb.connection import Connection, TableConnection
from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.models import Model

from . import _state, _transport
from ._endpoint import CONNECTION_SETTINGS
from .counter import NextId
from .exceptions import ConfigurationError, CounterError, GlobalTableError, SequenceMismatchError, error_code
from .sequence import SequenceOptions

SCHEMES = ("Meta.autoinc_regions = ('us-east-1', 'eu-west-1', ...) (each region numbers its own subsequence), "
           "Meta.autoinc_home_region = 'us-east-1' (every counter request goes to one region), or "
           "Meta.autoinc_single_region_writes = True (you route all writes to one region yourself)")

#: What DescribeTable says of a table: (its name, its replicas' regions, "STRONG" or "EVENTUAL"; None: not global).
TableKind = Tuple[str, Tuple[str, ...], Optional[str]]


class _Known:
    """What this process learned: table kinds by endpoint and table, and each model's verdict."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # one connection per home endpoint (a single dict or set operation is atomic)
        self.kinds: Dict[Tuple[Any, ...], TableKind] = {}
        # model -> (its options, the options its claims use here, its tables are MRSC)
        self.checked: WeakKeyDictionary[type, Tuple[Any, Any, bool]] = WeakKeyDictionary()
        self.connections: Dict[Tuple[Any, ...], TableConnection] = {}
        self.ready: Set[Tuple[Any, ...]] = set()  # region counters (NextId._where) found on the current layout


def _tables() -> _Known:
    state = _state.state
    return state.parts.get("tables") or state.part("tables", _Known)


def describe_table(connection: Connection, table: str) -> Dict[str, Any]:
    return cast(Dict[str, Any], _transport.send(connection, "DescribeTable", {"TableName": table}, raw=True)
                .get("Table", {}))


def table_kind(model: Type[Model]) -> Optional[TableKind]:
    """The kind of ``model``'s table, described once per process (None: the table does not exist)."""
    meta = model.Meta
    where = (getattr(meta, "host", None), getattr(meta, "region", None), meta.table_name)
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
                f"{model.__name__}: DescribeTable on table {meta.table_name!r} (is it a global table?) was denied; "
                "grant dynamodb:DescribeTable (see `pynamodb-autoinc policy`), or set "
                "Meta.autoinc_single_region_writes = True if every write goes to one region", exc) from exc
        raise CounterError(f"{model.__name__}: could not describe table {meta.table_name!r} ({code or exc}); "
                           "nothing was written, try again", exc) from exc
    replicas = tuple(str(r.get("RegionName", "?")) for r in description.get("Replicas") or ())
    strong = description.get("MultiRegionConsistency") == "STRONG"
    is_global = bool(replicas) or description.get("GlobalTableVersion") is not None
    kind = (meta.table_name, replicas, ("STRONG" if strong else "EVENTUAL") if is_global else None)
    _tables().kinds[where] = kind
    return kind


def write_connection(model: Type[Model], opts: Any = None) -> Connection:
    """The connection storing ``model``'s new items: the home region's in gapless mode with a home region."""
    opts = model.autoinc_options() if opts is None else opts  # type: ignore[attr-defined]
    if opts.home_region is None or not opts.gapless:
        return model._get_connection().connection
    region, host = opts.home_region, opts.home_host  # the model's table there, with its other settings
    key = (model.Meta.table_name, region, host, tuple(repr(getattr(model.Meta, s, None)) for s in CONNECTION_SETTINGS))
    tables = _tables()
    with tables.lock:
        found = tables.connections.get(key)
    if found is None:  # described with no lock held: DescribeTable is a request
        local = model._get_connection()
        settings = {s: getattr(model.Meta, s, None) for s in CONNECTION_SETTINGS if s not in ("region", "host")}
        made = TableConnection(model.Meta.table_name, region=region, host=host, meta_table=local.get_meta_table(),
                               **settings)
        with tables.lock:
            found = tables.connections.setdefault(key, made)
    return found.connection


def effective(opts: Any) -> Any:
    """The options a claim of ``opts.model`` uses after the global-table check (with regions, its region's)."""
    verdict = _tables().checked.get(opts.model)
    if verdict is None or verdict[0] is not opts:
        region, mrsc = _check(opts)
        claimed = opts if region is None else dataclasses.replace(
            opts, region=region, sequence=opts.sequence.subsequence(opts.regions.index(region), len(opts.regions)))
        verdict = _tables().checked[opts.model] = (opts, claimed, mrsc)
    return verdict[1]


def refuse_transactions(opts: Any, what: str, fix: str) -> None:
    """Refuse a transaction of ``opts.model``, before a value is spent, on MRSC global tables, which support none."""
    effective(opts)  # describes the tables once per process
    if _tables().checked[opts.model][2]:
        raise GlobalTableError(f"{what} writes in TransactWriteItems, which global tables in multi-region strong "
                               f"consistency (MRSC) do not support; {fix}")


def _check(opts: Any) -> Tuple[Optional[str], bool]:
    """Refuse tables that cannot keep IDs unique; returns (the region this process writes from, MRSC)."""
    model, region = opts.model, _writing_region(opts)
    if opts.single_region_writes:
        return region, False
    kinds = _kinds(opts)
    _refuse_eventual(opts, kinds)
    mrsc = any(k is not None and k[2] == "STRONG" for k in kinds)
    if mrsc and opts.gapless and opts.strategy == "counter":
        raise GlobalTableError(
            f"{model.__name__}: gapless mode needs TransactWriteItems, which multi-region strong consistency (MRSC) "
            "tables do not support; use fast or block mode (Meta.autoinc_gapless = False)")
    return region, mrsc


def _writing_region(opts: Any) -> Optional[str]:
    """With ``Meta.autoinc_regions``, the region this process writes from (``Meta.region``, or else the region
    botocore resolves), refused when unknown or not listed; None without."""
    model, region = opts.model, None
    if opts.regions:
        region = getattr(model.Meta, "region", None) or model._get_connection().connection.client.meta.region_name
        if not region:
            raise GlobalTableError(f"{model.__name__} numbers IDs per region (Meta.autoinc_regions), but its region "
                                   "is not known: set Meta.region (or AWS_DEFAULT_REGION)")
    if region is not None and region not in opts.regions:
        raise GlobalTableError(f"{model.__name__} writes from region {region!r}, not in Meta.autoinc_regions "
                               f"{list(opts.regions)}; append it (never reorder), then run `pynamodb-autoinc seed`")
    return region


def _kinds(opts: Any) -> List[Optional[TableKind]]:
    """The kind of the model's table and, in counter strategy, of its counter table where that is another one."""
    model, kinds = opts.model, [table_kind(opts.model)]
    if opts.strategy == "counter" and [getattr(opts.counter.Meta, s, None) for s in ("host", "region", "table_name")] \
            != [getattr(model.Meta, s, None) for s in ("host", "region", "table_name")]:
        kinds.append(table_kind(opts.counter))
    return kinds


def _refuse_eventual(opts: Any, kinds: List[Optional[TableKind]]) -> None:
    """Refuse an eventually consistent global table among ``kinds`` unless a multi-region scheme is set."""
    eventual = [k for k in kinds if k is not None and k[2] == "EVENTUAL"]
    if eventual and not (opts.regions or opts.home_region):
        replicas = ", ".join(sorted({r for k in eventual for r in k[1]})) or "other regions"
        raise GlobalTableError(f"{opts.model.__name__}: table {' and '.join(repr(k[0]) for k in eventual)} is an "
                               f"eventually consistent global table ({replicas}): regions could hand out one ID. Use "
                               f"{SCHEMES}")


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
            f"counter {key!r} is not one of {opts.model.__name__}'s: its keys end with '@' and a region of "
            f"Meta.autoinc_regions = {list(opts.regions)}, such as {key.rpartition('@')[0] or key!r}@{opts.regions[0]}")
    return layout[region]


def check_region_counter(opts: Any, key: str) -> None:
    """Raise SequenceMismatchError on the first claim on ``key`` (``base@region``) when Meta.autoinc_regions changed
    and `seed` did not run: that counter is missing while another region's or ``base`` holds a layout or value."""
    if opts.region is None:
        return
    counter = opts.counter
    where = counter._where(key)
    if where in _tables().ready:
        return
    last, recorded = counter.read(key)
    if last is None and recorded is None:
        _refuse_unseeded(opts, key)
    _tables().ready.add(where)


def _refuse_unseeded(opts: Any, key: str) -> None:
    """Raise SequenceMismatchError when the missing counter ``key`` should have been seeded: another region's counter
    records another layout, or none runs this layout while the single-region counter ``base`` holds a value."""
    counter, base = opts.counter, key.rpartition("@")[0]
    # each other region's counter, with the subsequence it runs as declared
    others = [(region, *counter.read(f"{base}@{region}"), own)
              for region, own in regions_of(opts.model.autoinc_options()) if region != opts.region]
    stale = next(((r, rec) for r, other, rec, own in others if rec != own and (other, rec) != (None, None)), None)
    current = any(rec == own for _, _, rec, own in others)
    single = counter.currval(base) if not current and stale is None else None
    if stale is None and single is None:
        return
    found = (f"the single-region counter {base!r} has handed out values up to {single}" if stale is None else
             f"counter {base}@{stale[0]} records {stale[1].encode() if stale[1] else 'no sequence options'}, "
             f"not the layout of {list(opts.regions)}")
    model = opts.model
    raise SequenceMismatchError(
        f"{model.__name__}: counter {key!r} of region {opts.region!r} does not exist yet, while {found}: "
        "Meta.autoinc_regions changed and `seed` has not run. Run `pynamodb-autoinc seed --model "
        f"{model.__module__}:{model.__qualname__}`; nothing was spent",
        recorded=stale[1].encode() if stale and stale[1] else None)


def seed(opts: Any, counter: Type[NextId], furthest: Dict[str, int], *, dry_run: bool = False) -> List[str]:
    """Put every region's counter past every ID handed out (``furthest``: stored IDs by base key), raised or
    restarted on its subsequence; a reordered list is refused first. Returns one line per counter (``dry_run``)."""
    layout = regions_of(opts)
    keys = set(furthest)
    for key in counter.keys():  # noqa: SIM118 - NextId.keys(), a scan of the counter table
        if opts.owns(key, any_region=True):  # not another model's key that starts with this one's
            keys.add(key.rpartition("@")[0])
    pick = max if opts.sequence.step > 0 else min
    report: List[str] = []
    for base in sorted(keys):
        states = {region: counter.read(f"{base}@{region}") for region, _ in layout}
        _refuse_reordered(opts, base, layout, states)
        bound = pick((v for v in (furthest.get(base), counter.currval(base), *(s[0] for s in states.values()))
                      if v is not None), default=None)
        for region, sequence in layout:
            report.append(_seed_counter(counter, f"{base}@{region}", states[region], sequence, bound, dry_run))
    return report


def _refuse_reordered(opts: Any, base: str, layout: List[Tuple[str, SequenceOptions]],
                      states: Dict[str, Tuple[Optional[int], Optional[SequenceOptions]]]) -> None:
    """Raise GlobalTableError if a region's counter of ``base`` records another place in the list than its own."""
    for region, sequence in layout:
        recorded = states[region][1]
        if recorded is not None and (recorded.start, recorded.minimum, recorded.maximum) != \
                (sequence.start, sequence.minimum, sequence.maximum):
            raise GlobalTableError(
                f"counter {base}@{region} records {recorded.encode()}, but region {region!r} (place "
                f"{opts.regions.index(region)}) runs {sequence.encode()}: Meta.autoinc_regions was reordered (or "
                "autoinc_start, _min, _max changed); restore its order. Nothing was changed")


def _seed_counter(counter: Type[NextId], key: str, state: Tuple[Optional[int], Optional[SequenceOptions]],
                  sequence: SequenceOptions, bound: Optional[int], dry_run: bool) -> str:
    """Raise region counter ``key`` (``state``: its value and options as read) past ``bound`` on ``sequence``, or
    restart it there; its report line (``dry_run``: what it would do)."""
    last, recorded = state
    following = sequence.first_beyond(bound)
    if dry_run:
        return _would(key, last, recorded, sequence, following)
    if recorded == sequence:
        moved = counter.raise_to(key, following - sequence.step, step=sequence.step)
        return (f"{key}: {'raised' if moved else 'already past every ID'}; the next value is "
                f"{following if moved else sequence.first_beyond(last)}")
    counter.restart(key, sequence, following)
    return f"{key}: restarted on {sequence.encode()}; the next value is {following}"


def _would(key: str, last: Optional[int], recorded: Optional[SequenceOptions], sequence: SequenceOptions,
           following: int) -> str:
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
