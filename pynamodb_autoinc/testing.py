"""Helpers for testing your own models on moto or DynamoDB Local; with pytest, the package's fixtures
``autoinc_counter_table`` and ``autoinc_fresh_counters`` do the same. They write only where the test named: on moto
while it runs, at the host of a running :func:`dynamodb` block, or at a table's own ``Meta.host``; anywhere else
(``AWS_ENDPOINT_URL_DYNAMODB``, the AWS config file's ``endpoint_url``, or AWS) they raise
:class:`~pynamodb_autoinc.exceptions.ConfigurationError`. :func:`leave_counters_as_found` (which the fixtures use)
deletes only the counters its block created."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple, Type

from pynamodb.constants import BATCH_WRITE_ITEM, DELETE_ITEM, PUT_ITEM, TRANSACT_WRITE_ITEMS, UPDATE_ITEM
from pynamodb.exceptions import DeleteError, GetError, PynamoDBException, ScanError, TableError
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

from . import _endpoint, _state, _transport
from ._options import options_for
from .counter import NextId, bind_counter
from .exceptions import ConfigurationError, CounterError, CounterTableMissingError, error_code

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
    try:
        table.create_table(billing_mode="PAY_PER_REQUEST", wait=True)  # if missing
    except TableError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
        table.create_table(billing_mode="PAY_PER_REQUEST", wait=True)  # another process made it: wait till active
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


@dataclass
class CounterScope:
    """What a :func:`leave_counters_as_found` block knows of its counter table; ``removed`` and ``kept`` are filled
    after the block."""

    counter: Type[NextId]
    """The counter model whose table the block leaves as found."""
    url: str
    """The endpoint its requests go to (the writes of clients reaching another one are not the block's)."""
    found: FrozenSet[str] = frozenset()
    """The keys of the counters the table held when the block started."""
    written: Set[str] = field(default_factory=set)
    """The keys of the counters this process wrote (or tried to) during the block, in any thread."""
    removed: List[str] = field(default_factory=list)
    """After the block: the counters it created, deleted."""
    kept: List[str] = field(default_factory=list)
    """After the block: counters it created that changed between the read and the conditional delete (another
    writer moved them), left."""

    def created(self) -> List[str]:
        """The counters written during the block that the table did not hold when it started."""
        return sorted(self.written - self.found)

    def note(self, table: Optional[str], item: Any) -> None:
        """Record the counter of ``item`` (a written item or key, serialized) if it is in this scope's table."""
        if table != self.counter.Meta.table_name or not isinstance(item, dict):
            return
        value = item.get(self.counter.next_key.attr_name, {}).get("S")
        prefix = self.counter._autoinc_prefix
        if isinstance(value, str) and value.startswith(prefix):
            self.written.add(value[len(prefix):])


#: The :func:`leave_counters_as_found` blocks running now, in any thread of this process.
_scopes: List[CounterScope] = []
_scopes_lock = threading.Lock()
#: The botocore clients whose requests are read for writes (one handler registered on each).
_followed: weakref.WeakSet[Any] = weakref.WeakSet()
#: Where each write names the items it writes: one item, a transaction's entries, a batch's requests.
_ONE_ITEM = {PUT_ITEM: "Item", UPDATE_ITEM: "Key", DELETE_ITEM: "Key"}
_ENTRY_ITEM = {"Put": "Item", "Update": "Key", "Delete": "Key", "PutRequest": "Item", "DeleteRequest": "Key"}


def _follow(sender: Any, **_: Any) -> None:
    """PynamoDB's ``pre_dynamodb_send`` receiver: while a block runs, have the sending connection's botocore client
    report the items each request writes (registered once per client, before this request's parameters are built)."""
    if not _scopes:
        return
    try:
        client = sender.client
    except Exception:  # no client can be made (no region): the request fails the same way, writing nothing
        return
    if client not in _followed:
        client.meta.events.register("before-parameter-build.dynamodb",
                                    functools.partial(_written, str(client.meta.endpoint_url)),
                                    unique_id="pynamodb_autoinc.testing.written")
        _followed.add(client)


def _written(url: str, params: Optional[Dict[str, Any]] = None, model: Any = None, **_: Any) -> None:
    """botocore's ``before-parameter-build`` handler: note each item the request writes in the running scopes
    whose table is reached at ``url``."""
    scopes = [scope for scope in tuple(_scopes) if _endpoint.same(url, scope.url)]
    if scopes and params and model is not None:
        for table, item in _written_items(model.name, params):
            for scope in scopes:
                scope.note(table, item)


def _written_items(operation: str, params: Dict[str, Any]) -> List[Tuple[Optional[str], Any]]:
    """(table name, serialized item or key) of each item the request ``operation`` with ``params`` writes: PutItem,
    UpdateItem and DeleteItem, each entry of TransactWriteItems and each request of BatchWriteItem."""
    if operation in _ONE_ITEM:
        return [(params.get("TableName"), params.get(_ONE_ITEM[operation]))]
    if operation == TRANSACT_WRITE_ITEMS:
        entries = [(entry[kind].get("TableName"), entry[kind]) for entry in params.get("TransactItems", [])
                   for kind in entry if kind in _ENTRY_ITEM]
    elif operation == BATCH_WRITE_ITEM:
        entries = [(table, request[kind]) for table, requests in params.get("RequestItems", {}).items()
                   for request in requests for kind in request if kind in _ENTRY_ITEM]
    else:
        return []
    return [(table, entry.get("Item", entry.get("Key"))) for table, entry in entries]


@contextlib.contextmanager
def leave_counters_as_found(model: Optional[Type[Model]] = None, counter: Type[NextId] = NextId, *,
                            fixture: Optional[str] = None) -> Iterator[CounterScope]:
    """Run the block so that it leaves the counter table ``model`` uses (default: NextId) as it found it, as far as
    DynamoDB allows, and :func:`reset_state` after it. Deleted after the block: each counter this process wrote during
    it (through PynamoDB, in any thread) that the table did not hold when it started, on condition that it is still
    as read just before. Left: every other counter, also one the block advanced (never set back: another writer may
    have moved it too), and the table. Refused (:class:`ConfigurationError`, nothing sent) where the test named no
    endpoint, before the block and again after it if the counters are then reached elsewhere; ``fixture``: the
    pytest fixture using it, which a refusal names."""
    bound = counter_for(model, counter)
    action = fixture or "leave_counters_as_found()"
    _endpoint.check_test_endpoint(bound, action, fixture)
    scope = CounterScope(bound, str(_endpoint.client(bound).meta.endpoint_url))
    with _scopes_lock:
        if not _scopes:
            pre_dynamodb_send.connect(_follow)  # blinker keeps one connection per receiver
        _scopes.append(scope)
    try:
        scope.found = frozenset(_keys(bound))
        yield scope
    finally:
        with _scopes_lock:
            _scopes.remove(scope)
        try:
            _remove_created(scope, action, fixture)
        finally:
            reset_state()


def _keys(bound: Type[NextId]) -> List[str]:
    """The keys of the counters in ``bound``'s table (none when it does not exist)."""
    try:
        return bound.keys()
    except ScanError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return []
        raise CounterError(f"could not list the counters of table {bound.Meta.table_name!r}: {exc}", exc) from exc


def _remove_created(scope: CounterScope, action: str, fixture: Optional[str]) -> None:
    """Delete the counters ``scope``'s block created, each on condition that it is still as read just before."""
    created = scope.created()
    if not created:
        return
    bound = scope.counter
    _endpoint.check_test_endpoint(bound, f"{action} after its block", fixture)
    now = str(_endpoint.client(bound).meta.endpoint_url)
    if not _endpoint.same(now, scope.url):
        raise ConfigurationError(f"{action} refused to delete the counters {created} it created: table "
                                 f"{bound.Meta.table_name!r} is now reached at {now}, not at {scope.url} where the "
                                 "block started; nothing was sent. End a testing.dynamodb() block after it, not in it")
    connection = bound._get_connection()
    for key in created:
        try:
            item = _transport.get(connection.connection, bound.Meta.table_name, *bound._item_key(key))
            if item:
                _delete_if_unchanged(connection, bound, key, item)
                scope.removed.append(key)
        except (GetError, DeleteError) as exc:
            code = error_code(exc)
            if code == "ResourceNotFoundException":
                return  # the table is gone, and its counters with it
            if code != "ConditionalCheckFailedException":
                raise CounterError(f"could not delete counter {key!r}, which the block created, from table "
                                   f"{bound.Meta.table_name!r}: {exc}", exc) from exc
            scope.kept.append(key)


def _delete_if_unchanged(connection: Any, bound: Type[NextId], key: str, item: Dict[str, Any]) -> None:
    """Delete counter ``key`` on condition that each of its attributes is as in ``item`` (its value among them)."""
    names = {f"#a{n}": name for n, name in enumerate(item)}
    kwargs = connection.get_operation_kwargs(*bound._item_key(key))
    kwargs.update(ConditionExpression=" AND ".join(f"{name} = :v{name[2:]}" for name in names),
                  ExpressionAttributeNames=names,
                  ExpressionAttributeValues={f":v{n}": value for n, value in enumerate(item.values())})
    _transport.send(connection.connection, DELETE_ITEM, kwargs)
