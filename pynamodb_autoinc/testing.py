"""Helpers for testing your own models on moto or DynamoDB Local; with pytest, the package's fixtures
``autoinc_counter_table`` and ``autoinc_fresh_counters`` do the same."""

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

#: botocore's variable for DynamoDB's endpoint: where a client goes when it is given no endpoint URL.
ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL_DYNAMODB"


@contextlib.contextmanager
def dynamodb(host: Optional[str] = None, *, region: str = "us-east-1") -> Iterator[None]:
    """Run the block against DynamoDB at ``host`` (DynamoDB Local, say), or on moto's in-process ``mock_aws()`` when
    ``host`` is None (moto comes with ``pip install 'pynamodb-autoinc[demo]'``). Where unset, it sets test AWS
    credentials, ``AWS_DEFAULT_REGION`` and, with ``host``, botocore's ``AWS_ENDPOINT_URL_DYNAMODB`` (so that
    ``NextId`` and a model without ``Meta.host`` reach ``host`` too), and unsets them after the block."""
    secret = "local" if host else "testing"
    settings = {"AWS_DEFAULT_REGION": region, "AWS_ACCESS_KEY_ID": secret, "AWS_SECRET_ACCESS_KEY": secret,
                **({ENDPOINT_VARIABLE: host} if host else {})}
    added = [name for name in settings if name not in os.environ]
    os.environ.update({name: settings[name] for name in added})
    try:
        if not host:
            try:
                from moto import mock_aws
            except ImportError as exc:
                raise ConfigurationError("testing.dynamodb() without a host runs on moto, which is not installed: "
                                         "`pip install 'pynamodb-autoinc[demo]'`, or give a host, such as "
                                         "dynamodb('http://127.0.0.1:8000') for DynamoDB Local") from exc
        with contextlib.nullcontext() if host else mock_aws():
            yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def counter_for(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId) -> Type[NextId]:
    """The counter model ``model`` uses (or ``counter`` as it is, without a model)."""
    if model is not None and hasattr(model, "autoinc_options"):
        return options_for(model).counter
    return bind_counter(counter, model) if model is not None else counter


def create_counter_table(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId) -> Type[NextId]:
    """Create the counter table ``model`` uses (default: NextId) if missing, where the model reaches it, and return its
    counter model; with ``Meta.autoinc_counter_in_table`` that is the model's table, made by ``model.create_table``."""
    bound = counter_for(model, counter)
    table: Type[Model] = model if model is not None and bound._autoinc_model_spec is not None else bound
    if not table.exists():
        table.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    return bound


def reset_state() -> None:
    """Forget this process's memory of counters and tables (blocks, last values, queue places, tables described)."""
    _state.state.reset()


def reset_counters(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId,
                   keys: Optional[Iterable[str]] = None) -> int:
    """Delete counters (all of the table's, or ``keys``) so they start again, and :func:`reset_state` (even when a
    delete fails); return how many. Raises :class:`~pynamodb_autoinc.exceptions.CounterTableMissingError` when the
    counter table does not exist."""
    bound = counter_for(model, counter)
    removed, connection = 0, bound._get_connection()
    try:
        for key in bound.keys() if keys is None else keys:
            _transport.send(connection.connection, DELETE_ITEM, connection.get_operation_kwargs(*bound._item_key(key)))
            removed += 1
    except PynamoDBException as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
        raise CounterTableMissingError(f"counter table {bound.Meta.table_name!r} does not exist, so it has no counters "
                                       "to reset; create it with create_counter_table(), or call reset_state() alone "
                                       "when the tables are gone", exc) from exc
    finally:
        reset_state()
    return removed
