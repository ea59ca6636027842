"""The least-privilege IAM policy a model's auto-increment saves need.

    >>> print(json.dumps(policy(User), indent=2))      # or: pynamodb-autoinc policy --model app.models:User

The actions are the ones the library sends for that model's configuration;
``tests/test_iam.py`` records every request in each mode and checks it
against this. Actions inside a TransactWriteItems are authorised as the
underlying PutItem and UpdateItem.
"""

from __future__ import annotations

from typing import Any, Dict, List, Set, Type

from pynamodb.models import Model

from ._options import options_for
from .attributes import CounterMixin, counters
from .history import HistoryMixin
from .mixin import AutoIncrementMixin


def required_actions(model: Type[Model]) -> Dict[str, Set[str]]:
    """``{table name: {"dynamodb:Action", ...}}`` for saving ``model`` (new items included).

    A model with counter attributes (:class:`~pynamodb_autoinc.CounterMixin`)
    saves existing items, and raises its counters, with UpdateItem.
    """
    table = model.Meta.table_name
    if issubclass(model, HistoryMixin):
        return _history_actions(model)
    updates = issubclass(model, CounterMixin) and bool(counters(model))
    if not issubclass(model, AutoIncrementMixin):
        return {table: {"dynamodb:UpdateItem"}} if updates else {table: {"dynamodb:PutItem"}}
    actions = _autoinc_actions(model)
    if updates:
        actions[table].add("dynamodb:UpdateItem")
    return actions


def _history_actions(model: Type[Model]) -> Dict[str, Set[str]]:
    # A transaction puts (or deletes) the item and puts its version; GetItem reads the item for merge=,
    # GetItem and Query read versions.
    table, history = model.Meta.table_name, model.Meta.history_model  # type: ignore[attr-defined]
    actions = _autoinc_actions(model) if issubclass(model, AutoIncrementMixin) else {table: set()}
    actions[table].update({"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:GetItem"})
    actions.setdefault(history.Meta.table_name, set()).update(
        {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:Query"})
    return actions


def _autoinc_actions(model: Type[Model]) -> Dict[str, Set[str]]:
    opts = options_for(model)
    table = model.Meta.table_name
    # PutItem writes the items (alone or in a transaction); GetItem settles a write whose answer was lost.
    actions: Dict[str, Set[str]] = {table: {"dynamodb:PutItem", "dynamodb:GetItem"}}
    # DescribeTable: once per process, whether the tables are global tables (not with single-region writes)
    described = set() if opts.single_region_writes else {"dynamodb:DescribeTable"}
    actions[table].update(described)
    if opts.strategy == "query":
        actions[table].add("dynamodb:Query")
        return actions
    counter_table = opts.counter.Meta.table_name
    # UpdateItem advances or swaps the counter; GetItem reads it (gapless) or explains a refusal (fast).
    actions.setdefault(counter_table, set()).update({"dynamodb:UpdateItem", "dynamodb:GetItem", *described})
    return actions


def table_regions(model: Type[Model], region: str = "*") -> Dict[str, List[str]]:
    """``{table name: [region, ...]}``: where the requests of :func:`required_actions` go, for a process in
    ``region``.

    ``region`` stands for the model's ``Meta.region`` (as the command line's ``--region`` does); ``"*"``
    leaves the model in its ``Meta.region``, or in every region when it sets none or writes a global table
    from several regions (``autoinc_regions``, ``autoinc_home_region``). A table whose model sets
    a region of its own, apart from the model's (a counter class with its own ``Meta.region``, a history
    model in another region), stays there. With a home region (``Meta.autoinc_home_region``) every counter
    request goes to the home region's counter table, and in gapless mode the transaction (the item put with
    it) to the home region's model table too. ``"*"`` stands for every region, the home one included.
    """
    own = getattr(model.Meta, "region", None)
    opts = options_for(model) if issubclass(model, AutoIncrementMixin) else None
    spread = opts is not None and bool(opts.regions or opts.home_region)
    # a global table's model runs in several regions, one Meta.region each: "*" stays every region
    local = region if region != "*" else "*" if spread else own or "*"
    found = {table: [local] for table in required_actions(model)}
    for table, pinned in _pinned_regions(model, own).items():
        found[table] = [pinned]
    if local == "*" or opts is None:
        return found
    home = opts.home_region
    if home is None or home == local:
        return found
    if opts.strategy == "counter":
        counter_table = opts.counter.Meta.table_name
        found[counter_table] = [local, home] if counter_table == model.Meta.table_name else [home]
    if opts.gapless:
        found[model.Meta.table_name] = [local, home]
    return found


def _pinned_regions(model: Type[Model], own: Any) -> Dict[str, str]:
    """The tables of ``model``'s requests that are reached in a region of their own, not the model's: a counter
    class whose ``Meta`` sets its region, a history model whose region differs from the model's."""
    pinned: Dict[str, str] = {}
    if issubclass(model, HistoryMixin):
        history = model.Meta.history_model  # type: ignore[attr-defined]
        theirs = getattr(history.Meta, "region", None)
        if theirs and theirs != own:
            pinned[history.Meta.table_name] = theirs
    if issubclass(model, AutoIncrementMixin) and options_for(model).strategy == "counter":
        counter = options_for(model).counter
        if "region" in counter._autoinc_own_settings and counter.Meta.table_name != model.Meta.table_name:
            pinned[counter.Meta.table_name] = str(getattr(counter.Meta, "region", None))
    return pinned


def policy(model: Type[Model], *, region: str = "*", account: str = "*") -> Dict[str, Any]:
    """An IAM policy document granting exactly :func:`required_actions` on the model's tables, in the regions
    :func:`table_regions` names (a process in ``region``; with a home region, the home region's tables too)."""
    where = table_regions(model, region)
    statements: List[Dict[str, Any]] = []
    for table, actions in sorted(required_actions(model).items()):
        arns = [f"arn:aws:dynamodb:{r}:{account}:table/{table}" for r in where[table]]
        statements.append({"Effect": "Allow", "Action": sorted(actions),
                           "Resource": arns[0] if len(arns) == 1 else arns})
    return {"Version": "2012-10-17", "Statement": statements}
