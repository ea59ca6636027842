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
from pynamodb.exceptions import PynamoDBException
from pynamodb.models import Model

from . import _transport
from ._options import options_for
from .counter import NextId, bind_counter
from .exceptions import ConfigurationError, CounterTableMissingError, error_code
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

    With ``host``, botocore's ``AWS_ENDPOINT_URL_DYNAMODB`` is set to it, so that a model (and ``NextId``)
    whose ``Meta.host`` is unset reaches ``host`` too. What the block set in the environment is unset after it.
    """
    settings = {"AWS_DEFAULT_REGION": region, "AWS_ACCESS_KEY_ID": "local" if host else "testing",
                "AWS_SECRET_ACCESS_KEY": "local" if host else "testing"}
    if host:
        settings[ENDPOINT_VARIABLE] = host
    added = [name for name in settings if name not in os.environ]
    os.environ.update({name: settings[name] for name in added})
    try:
        if host:
            yield
            return
        try:
            from moto import mock_aws
        except ImportError as exc:
            raise ConfigurationError(
                "testing.dynamodb() without a host runs on moto, which is not installed: install it with "
                "`pip install 'pynamodb-autoinc[demo]'`, or name a DynamoDB endpoint, such as "
                "dynamodb('http://127.0.0.1:8000') for DynamoDB Local") from exc
        with mock_aws():
            yield
    finally:
        for name in added:
            os.environ.pop(name, None)


#: botocore's variable for DynamoDB's endpoint: where a client goes when it is given no endpoint URL.
ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL_DYNAMODB"


def counter_for(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId) -> Type[NextId]:
    """The counter model ``model`` uses (or ``counter`` as it is, without a model)."""
    if model is not None and hasattr(model, "autoinc_options"):
        return options_for(model).counter
    return bind_counter(counter, model) if model is not None else counter


def create_counter_table(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId) -> Type[NextId]:
    """Create the counter table ``model`` uses (default: NextId) if it is missing, on the endpoint the model
    reaches it at; return its counter model.

    A model that keeps its counters in its own table (``Meta.autoinc_counter_in_table``) has that table
    created as ``model.create_table`` creates it, with its indexes (a table made from the counter's key
    alone would then stand in for it, and ``model.create_table`` would find it there and add nothing).
    """
    bound = counter_for(model, counter)
    table: Type[Model] = model if model is not None and bound._autoinc_model_spec is not None else bound
    if not table.exists():
        table.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
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

    Also forgets everything this process remembers about counters (:func:`reset_state`), even when a
    delete fails.

    :raises CounterTableMissingError: the counter table does not exist (this process's memory is reset all
        the same)
    """
    bound = counter_for(model, counter)
    removed, connection = 0, bound._get_connection()
    try:
        for key in bound.keys() if keys is None else keys:
            _transport.send(connection.connection, DELETE_ITEM,
                            connection.get_operation_kwargs(*bound._item_key(key)))
            removed += 1
    except PynamoDBException as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
        raise CounterTableMissingError(
            f"counter table {bound.Meta.table_name!r} does not exist, so it has no counters to reset; create it "
            "with create_counter_table(), or call reset_state() alone when the tables are gone", exc) from exc
    finally:
        reset_state()
    return removed
