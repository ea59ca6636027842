"""Helpers for testing your own models on moto or DynamoDB Local; with pytest, the package's fixtures
``autoinc_counter_table`` and ``autoinc_fresh_counters`` do the same. They write only where the test named: on moto
while it runs, at the host of a running :func:`dynamodb` block, or at a table's own ``Meta.host``; anywhere else
(``AWS_ENDPOINT_URL_DYNAMODB`` or AWS) they raise :class:`~pynamodb_autoinc.exceptions.ConfigurationError`."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Dict, Iterable, Iterator, Optional, Set, Type

from pynamodb.constants import DELETE_ITEM
from pynamodb.exceptions import PynamoDBException
from pynamodb.models import Model

from . import _endpoint, _state, _transport
from ._options import options_for
from .counter import NextId, bind_counter
from .exceptions import ConfigurationError, CounterTableMissingError, error_code

#: botocore's variable for DynamoDB's endpoint: where a client goes when it is given no endpoint URL.
ENDPOINT_VARIABLE = _endpoint.ENDPOINT_VARIABLE


@contextlib.contextmanager
def dynamodb(host: Optional[str] = None, *, region: str = "us-east-1") -> Iterator[None]:
    """Run the block against DynamoDB at ``host`` (DynamoDB Local, say), or on moto's in-process ``mock_aws()`` when
    ``host`` is None (moto comes with ``pip install 'pynamodb-autoinc[demo]'``). Where unset, it sets test AWS
    credentials and ``AWS_DEFAULT_REGION``; with ``host`` it sets botocore's ``AWS_ENDPOINT_URL_DYNAMODB`` to it (so
    that ``NextId`` and a model without ``Meta.host`` reach ``host`` too), on moto it unsets the endpoint variables and
    has botocore ignore the AWS config file's ``endpoint_url``; FIPS and dual-stack endpoints are off in both.
    Models and counters start the block with no cached connection and this process's memory of counters empty; the
    block's are dropped after it, and everything is put back as it was."""
    mock: Any = contextlib.nullcontext()
    if not host:
        try:
            from moto import mock_aws
        except ImportError as exc:
            raise ConfigurationError("testing.dynamodb() without a host runs on moto, which is not installed: "
                                     "`pip install 'pynamodb-autoinc[demo]'`, or give a host, such as "
                                     "dynamodb('http://127.0.0.1:8000') for DynamoDB Local") from exc
        mock = mock_aws()
    secret = "local" if host else "testing"
    defaults = {"AWS_DEFAULT_REGION": region, "AWS_ACCESS_KEY_ID": secret, "AWS_SECRET_ACCESS_KEY": secret}
    forced = _endpoint.block_variables(host)
    before = {name: os.environ.get(name) for name in (*defaults, *forced)}
    _set_environment({**{name: value for name, value in defaults.items() if name not in os.environ}, **forced})
    connections, parts = _forget_connections({}), _state.state.parts
    _state.state.parts = {}
    _endpoint.named.append(host)
    try:
        with mock:
            yield
    finally:
        _endpoint.named.pop()
        _state.state.parts = parts
        _forget_connections(connections)
        _set_environment(before)


def _set_environment(values: Dict[str, Optional[str]]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _forget_connections(restore: Dict[Type[Model], Any]) -> Dict[Type[Model], Any]:
    """Drop the connection every model class (counters too) has cached, and give back those of ``restore``;
    return the ones dropped. PynamoDB keeps a class's connection, endpoint and all, until the class is gone."""
    dropped = {}
    for cls in _subclasses(Model):
        if vars(cls).get("_connection") is not None:
            dropped[cls] = vars(cls)["_connection"]
            cls._connection = None
    for cls, connection in restore.items():
        cls._connection = connection
    return dropped


def _subclasses(cls: Type[Model]) -> Set[Type[Model]]:
    """Every class below ``cls``, however deep."""
    found: Set[Type[Model]] = set()
    sub: Type[Model]
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def counter_for(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId) -> Type[NextId]:
    """The counter model ``model`` uses (or ``counter`` as it is, without a model)."""
    if model is not None and hasattr(model, "autoinc_options"):
        return options_for(model).counter
    return bind_counter(counter, model) if model is not None else counter


def create_counter_table(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId) -> Type[NextId]:
    """Create the counter table ``model`` uses (default: NextId) if missing, where the model reaches it, and return its
    counter model; with ``Meta.autoinc_counter_in_table`` that is the model's table, made by ``model.create_table``.
    Refused (:class:`ConfigurationError`, nothing sent) where the test named no endpoint (the module's rule)."""
    bound = counter_for(model, counter)
    table: Type[Model] = model if model is not None and bound._autoinc_model_spec is not None else bound
    _endpoint.check_test_endpoint(table, "create_counter_table()")
    table.create_table(billing_mode="PAY_PER_REQUEST", wait=True)  # if missing
    return bound


def reset_state() -> None:
    """Forget this process's memory of counters and tables (blocks, last values, queue places, tables described)."""
    _state.state.reset()


def reset_counters(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId,
                   keys: Optional[Iterable[str]] = None) -> int:
    """Delete counters (all of the table's, or ``keys``) so they start again, and :func:`reset_state` (even when a
    delete fails); return how many. Raises :class:`~pynamodb_autoinc.exceptions.CounterTableMissingError` when the
    counter table does not exist, and :class:`ConfigurationError` (nothing sent) where the test named no endpoint."""
    bound = counter_for(model, counter)
    _endpoint.check_test_endpoint(bound, "reset_counters()")
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
