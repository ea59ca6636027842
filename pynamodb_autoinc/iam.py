"""The least-privilege IAM policy a model's saves need: ``policy(User)`` (several models: one policy), or
``pynamodb-autoinc policy --model app.models:User`` (inside a TransactWriteItems, DynamoDB authorises PutItem and
UpdateItem)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Set, Tuple, Type

from pynamodb.models import Model

from ._options import ModelOptions, options_for
from .attributes import CounterMixin, counters
from .exceptions import ConfigurationError
from .history import HistoryMixin
from .mixin import AutoIncrementMixin


def required_actions(model: Type[Model]) -> Dict[str, Set[str]]:
    """``{table name: {"dynamodb:Action", ...}}`` for saving ``model`` (new items included); a model with counter
    attributes (:class:`~pynamodb_autoinc.CounterMixin`) saves existing items and raises counters with UpdateItem."""
    table = model.Meta.table_name
    actions: Dict[str, Set[str]] = {table: set()}
    if issubclass(model, AutoIncrementMixin):
        opts = options_for(model)
        # PutItem writes the items (alone or in a transaction); GetItem settles a write whose answer was lost;
        # DescribeTable asks once per process whether the tables are global tables (not with single-region writes)
        described = set() if opts.single_region_writes else {"dynamodb:DescribeTable"}
        actions[table] = {"dynamodb:PutItem", "dynamodb:GetItem", *described}
        if opts.strategy == "query":
            actions[table].add("dynamodb:Query")
        else:  # UpdateItem advances or swaps the counter; GetItem reads it (gapless) or explains a refusal (fast)
            actions.setdefault(opts.counter.Meta.table_name, set()).update(
                {"dynamodb:UpdateItem", "dynamodb:GetItem", *described})
    if issubclass(model, HistoryMixin):
        # a transaction puts (or deletes) the item and puts its version; GetItem reads the item for merge=, and
        # GetItem and Query read versions
        actions[table].update({"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:GetItem"})
        history = model.Meta.history_model.Meta.table_name  # type: ignore[attr-defined]
        actions.setdefault(history, set()).update({"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:Query"})
    elif issubclass(model, CounterMixin) and counters(model):
        actions[table].add("dynamodb:UpdateItem")
    else:
        actions[table].add("dynamodb:PutItem")
    return actions


def table_regions(model: Type[Model], region: str = "*") -> Dict[str, List[str]]:
    """``{table name: [region, ...]}``: where the requests of :func:`required_actions` go, for a process in
    ``region`` (the model's ``Meta.region``, as the command line's ``--region``). ``"*"`` leaves the model in its
    ``Meta.region``, or in every region when it sets none or writes a global table from several regions; a counter
    class or history model with a ``Meta.region`` of its own stays there. With ``Meta.autoinc_home_region``, counter
    requests (and in gapless mode the transaction) go to the home region's tables too."""
    own = getattr(model.Meta, "region", None)
    opts = options_for(model) if issubclass(model, AutoIncrementMixin) else None
    spread = opts is not None and bool(opts.regions or opts.home_region)
    # a global table's model runs in several regions, one Meta.region each: "*" stays every region
    local = region if region != "*" else "*" if spread else own or "*"
    found = {table: [local] for table in required_actions(model)}
    found.update(_own_regions(model, opts))
    if local == "*" or opts is None or opts.home_region in (None, local):
        return found
    found.update(_home_regions(model, opts, local))
    return found


def _own_regions(model: Type[Model], opts: Optional[ModelOptions]) -> Dict[str, List[str]]:
    """The tables reached in a region of their own: a counter class that sets one, a history model in another."""
    own, found = getattr(model.Meta, "region", None), {}
    if issubclass(model, HistoryMixin):
        history = model.Meta.history_model  # type: ignore[attr-defined]
        theirs = getattr(history.Meta, "region", None)
        if theirs and theirs != own:
            found[history.Meta.table_name] = [theirs]
    if opts is not None and opts.strategy == "counter":
        meta = opts.counter.Meta
        if "region" in opts.counter._autoinc_own_settings and meta.table_name != model.Meta.table_name:
            found[meta.table_name] = [str(getattr(meta, "region", None))]
    return found


def _home_regions(model: Type[Model], opts: ModelOptions, local: str) -> Dict[str, List[str]]:
    """With ``Meta.autoinc_home_region``, for a process in region ``local``: counter requests go to the home region's
    table, and in gapless mode the transaction too (its model's table, both here and there)."""
    home, found = str(opts.home_region), {}
    if opts.strategy == "counter":
        counter_table = opts.counter.Meta.table_name
        found[counter_table] = [local, home] if counter_table == model.Meta.table_name else [home]
    if opts.gapless:
        found[model.Meta.table_name] = [local, home]
    return found


def counter_keys(model: Type[Model]) -> Optional[List[str]]:
    """The counter keys of ``model`` as ``dynamodb:LeadingKeys`` patterns (``StringLike``: ``orders``,
    ``issues#*``, ``orders@eu-west-1``), or None when it keeps no counter table (the query strategy); a model
    keeping its counters in its own table is refused: its counter keys are no keys of a table of their own."""
    if not issubclass(model, AutoIncrementMixin):
        return None
    opts = options_for(model)
    if opts.strategy == "query":
        return None
    if opts.counter.Meta.table_name == model.Meta.table_name:
        raise ConfigurationError(
            f"{model.__name__} keeps its counters in its own table (Meta.autoinc_counter_in_table), beside its items, "
            "so dynamodb:LeadingKeys cannot keep it to its counters; leave own_counters_only (--own-counters-only) "
            "off for it, or keep its counters in a counter table")
    key = opts.key.replace("*", "${*}").replace("?", "${?}")  # StringLike's wildcards, written as literals
    base = key if not (opts.scope or opts.period) else f"{key}#*"
    # with Meta.autoinc_regions, each region's counter, and the single-region one that seed and saves read
    return [base, *(f"{base}@{region}" for region in opts.regions)]


def policy(*models: Type[Model], region: str = "*", account: str = "*",
           own_counters_only: bool = False) -> Dict[str, Any]:
    """An IAM policy document granting exactly :func:`required_actions` on the tables of ``models`` (one or more,
    merged), in the regions :func:`table_regions` names (a process in ``region``; with a home region, the home
    region's tables too). ``own_counters_only`` grants the counter table for the models' own counter keys only
    (a ``dynamodb:LeadingKeys`` condition, :func:`counter_keys`)."""
    if not models:
        raise ConfigurationError("policy() needs at least one model: policy(User) or policy(User, Order)")
    grants: Dict[str, Dict[str, _Grant]] = {}
    for model in models:
        where, keys = table_regions(model, region), counter_keys(model) if own_counters_only else None
        counter = options_for(model).counter.Meta.table_name if keys is not None else None
        for table, actions in required_actions(model).items():
            for arn in (f"arn:aws:dynamodb:{r}:{account}:table/{table}" for r in where[table]):
                grant = grants.setdefault(table, {}).setdefault(arn, _Grant(set(), set()))
                grant.add(actions, keys if table == counter else None)
    statements: List[Dict[str, Any]] = []
    for table in sorted(grants):
        alike: Dict[Tuple[Any, ...], List[str]] = {}  # the ARNs of one table granted alike share a statement
        for arn, grant in grants[table].items():
            alike.setdefault(grant.shape(), []).append(arn)
        for (actions, keys), arns in alike.items():
            statement: Dict[str, Any] = {"Effect": "Allow", "Action": list(actions),
                                         "Resource": arns if arns[1:] else arns[0]}
            if keys is not None:
                statement["Condition"] = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(keys)}}
            statements.append(statement)
    return {"Version": "2012-10-17", "Statement": statements}


@dataclass
class _Grant:
    """What one table ARN is granted: its actions, and the leading keys they are kept to (None: any key)."""

    actions: Set[str]
    keys: Optional[Set[str]]

    def add(self, actions: Set[str], keys: Optional[List[str]]) -> None:
        self.actions |= actions
        self.keys = None if keys is None or self.keys is None else self.keys | set(keys)

    def shape(self) -> Tuple[Tuple[str, ...], Optional[Tuple[str, ...]]]:
        return tuple(sorted(self.actions)), None if self.keys is None else tuple(sorted(self.keys))
