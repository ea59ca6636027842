"""The least-privilege IAM policy a model's auto-increment saves need.

    >>> print(json.dumps(policy(User), indent=2))      # or: pynamodb-autoinc policy app.models:User

The actions are the ones the library sends for that model's configuration;
``tests/test_iam.py`` records every request in each mode and checks it
against this. Actions inside a TransactWriteItems are authorised as the
underlying PutItem and UpdateItem.
"""

from __future__ import annotations

from typing import Any, Dict, List, Set, Type

from pynamodb.models import Model

from ._options import options_for


def required_actions(model: Type[Model]) -> Dict[str, Set[str]]:
    """``{table name: {"dynamodb:Action", ...}}`` for saving ``model`` (new items included)."""
    opts = options_for(model)
    table = model.Meta.table_name
    # PutItem writes the items (alone or in a transaction); GetItem settles a write whose answer was lost.
    actions: Dict[str, Set[str]] = {table: {"dynamodb:PutItem", "dynamodb:GetItem"}}
    if opts.strategy == "query":
        actions[table].add("dynamodb:Query")
        return actions
    counter_table = opts.counter.Meta.table_name
    # UpdateItem advances or swaps the counter; GetItem reads it (gapless) or explains a refusal (fast).
    actions.setdefault(counter_table, set()).update({"dynamodb:UpdateItem", "dynamodb:GetItem"})
    return actions


def policy(model: Type[Model], *, region: str = "*", account: str = "*") -> Dict[str, Any]:
    """An IAM policy document granting exactly :func:`required_actions` on the model's tables."""
    statements: List[Dict[str, Any]] = [
        {
            "Effect": "Allow",
            "Action": sorted(actions),
            "Resource": f"arn:aws:dynamodb:{region}:{account}:table/{table}",
        }
        for table, actions in sorted(required_actions(model).items())
    ]
    return {"Version": "2012-10-17", "Statement": statements}
