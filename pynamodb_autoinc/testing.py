"""Helpers for testing your own models on moto or DynamoDB Local.

    from pynamodb_autoinc.testing import create_counter_table, reset_counters

    with mock_aws():
        create_counter_table()            # NextId, on the default endpoint
        User.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        ...
        reset_counters()                  # every counter starts again

With pytest, the fixtures ``autoinc_counter_table`` and ``autoinc_fresh_counters``
come with the package (see :mod:`pynamodb_autoinc.pytest_plugin`).
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterable, Iterator, Optional, Type

from pynamodb.constants import DELETE_ITEM
from pynamodb.models import Model

from . import _transport
from ._options import options_for
from .counter import NextId, bind_counter
from .strategies import _state


@contextlib.contextmanager
def dynamodb(host: Optional[str] = None, *, region: str = "us-east-1") -> Iterator[None]:
    """Run the block against DynamoDB at ``host`` (DynamoDB Local, say), or on moto's in-process
    ``mock_aws()`` when ``host`` is None (moto must be installed: ``pip install 'pynamodb-autoinc[demo]'``).

    AWS credentials and a default region are set in the environment where none are, since neither moto nor
    DynamoDB Local checks them::

        with dynamodb(os.environ.get("DYNAMODB_HOST")):
            create_counter_table()
            ...
    """
    os.environ.setdefault("AWS_DEFAULT_REGION", region)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "local" if host else "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local" if host else "testing")
    if host:
        yield
        return
    from moto import mock_aws

    with mock_aws():
        yield


def counter_for(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId) -> Type[NextId]:
    """The counter model ``model`` uses (or ``counter`` as it is, without a model)."""
    if model is not None and hasattr(model, "autoinc_options"):
        return options_for(model).counter
    return bind_counter(counter, model) if model is not None else counter


def create_counter_table(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId) -> Type[NextId]:
    """Create the counter table ``model`` uses (default: NextId) if it is missing; return its counter model."""
    bound = counter_for(model, counter)
    if not bound.exists():
        bound.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    return bound


def reset_state() -> None:
    """Forget everything this process remembers about counters and tables: reserved blocks, the values it
    last wrote, its places in gapless queues, the tables it has described.

    A forked child starts this way; call it between tests that recreate tables or delete counters.
    """
    _state.state.reset()


def reset_counters(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId,
                   keys: Optional[Iterable[str]] = None) -> int:
    """Delete counters (all of the table's, or ``keys``) so they start again; return how many.

    Also forgets everything this process remembers about counters (:func:`reset_state`).
    """
    bound = counter_for(model, counter)
    if keys is None:
        keys = bound.keys()
    removed, connection = 0, bound._get_connection()
    for key in keys:
        _transport.send(connection.connection, DELETE_ITEM, connection.get_operation_kwargs(*bound._item_key(key)))
        removed += 1
    reset_state()
    return removed
