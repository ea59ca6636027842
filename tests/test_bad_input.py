"""Bad input and misconfiguration: each gets the exact error, a message naming the fix, and nothing is written.

The table below is the one in the README's "Bad input" section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Type

import pytest
from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import PutError, PynamoDBException
from pynamodb.models import BatchWrite

import pynamodb_autoinc
from pynamodb_autoinc import (
    NextId,
    TransactWrite,
    before_save,
)
from pynamodb_autoinc.exceptions import (
    AutoIncrementError,
    ConfigurationError,
    CounterTableMissingError,
    CounterValueError,
    InvalidIdError,
    InvalidKeyError,
    ItemWriteError,
    UnassignedIdError,
)
from tests.conftest import PINNING
from tests.helpers import auto_model, stored_names

pytestmark = pytest.mark.modes('fast', 'gapless')


class Remote(NextId):
    """A counter on another endpoint (never contacted: the model is refused first)."""

    class Meta:
        table_name = "NextId"
        host = "http://127.0.0.1:9"


class MissingCounter(NextId):
    class Meta:
        table_name = "no-such-counter-table"


def save_new(model: Any) -> None:
    model().save()


def put_counter(raw: Dict[str, Any]) -> Callable[[Any], None]:
    def corrupt(model: Any) -> None:
        opts = model.autoinc_options()
        opts.counter._get_connection().put_item(opts.key, attributes={"NextId": raw})

    return corrupt


def batch_new(model: Any) -> None:
    with model.batch_write() as batch:
        batch.save(model())


def plain_batch_new(model: Any) -> None:
    batch = BatchWrite(model)
    batch.save(model())
    batch.commit()


def muted_save(model: Any) -> None:
    with before_save.muted():
        model().save()


def scoped(tenant: Any = None) -> Dict[str, Any]:
    """The options of a model numbering ``seq`` per ``tenant`` (a string attribute unless given), fresh
    attributes each time."""
    return {"key": UnicodeAttribute(hash_key=True), "seq": NumberAttribute(null=True),
            "tenant": tenant or UnicodeAttribute(null=True), "autoinc_attribute": "seq", "autoinc_scope": "tenant"}


@dataclass
class Bad:
    options: Dict[str, Any]
    error: Type[Exception]
    message: str
    action: Callable[[Any], None] = save_new
    setup: Optional[Callable[[Any], None]] = None
    create_item_table: bool = True
    fast_moves_counter: bool = False
    """Fast mode advances the counter before it can tell (the value is spent; gapless spends nothing)."""


BAD_INPUTS = {
    "misspelled option": Bad({"autoinc_gaples": True}, ConfigurationError,
                             "unknown Meta option 'autoinc_gaples'; did you mean 'autoinc_gapless'?"),
    "unknown option": Bad({"autoinc_zzz": "red"}, ConfigurationError,
                          "unknown Meta option 'autoinc_zzz'; known options: autoinc_attribute"),
    "attribute not on the model": Bad({"autoinc_attribute": "nope"}, ConfigurationError,
                                      "Meta.autoinc_attribute names 'nope', which is not an attribute of the model"),
    "boolean auto attribute": Bad({"flag": BooleanAttribute(null=True), "autoinc_attribute": "flag"},
                                  ConfigurationError, "auto-increment attribute 'flag' is a BooleanAttribute; "
                                                      "make it a NumberAttribute"),
    "version attribute": Bad({"version": VersionAttribute(null=True), "autoinc_attribute": "version"},
                             ConfigurationError, "auto-increment attribute 'version' is a VersionAttribute"),
    "non-nullable attribute outside the key": Bad({"seq": NumberAttribute(), "autoinc_attribute": "seq"},
                                                  ConfigurationError, "declare it with null=True"),
    "empty counter key": Bad({"autoinc_key": ""}, ConfigurationError,
                             "Meta.autoinc_key must be a non-empty string, not ''"),
    "counter key not a string": Bad({"autoinc_key": 7}, ConfigurationError,
                                    "Meta.autoinc_key must be a non-empty string, not 7"),
    "counter not a NextId model": Bad({"autoinc_counter": dict}, ConfigurationError,
                                      "Meta.autoinc_counter must be NextId or a subclass of it"),
    "gapless flag not a bool": Bad({"autoinc_gapless": "yes"}, ConfigurationError,
                                   "Meta.autoinc_gapless must be True or False, not 'yes'"),
    "zero step": Bad({"autoinc_step": 0}, ConfigurationError, "Meta.autoinc_step must not be 0"),
    "fractional start": Bad({"autoinc_start": 1.5}, ConfigurationError,
                            "Meta.autoinc_start must be an int or None, not 1.5"),
    "huge start": Bad({"autoinc_start": 10**40}, ConfigurationError,
                      "has more digits than a DynamoDB number holds exactly (38)"),
    "negative retries": Bad({"autoinc_retries": -1}, ConfigurationError,
                            "Meta.autoinc_retries must be 0 or more (or None), not -1"),
    "retries given as a bool": Bad({"autoinc_retries": True}, ConfigurationError,
                                   "Meta.autoinc_retries must be an int, not True"),
    "timeout of zero": Bad({"autoinc_timeout": 0}, ConfigurationError,
                           "Meta.autoinc_timeout must be a number of seconds > 0, or None for no limit, not 0"),
    "backoff not a number": Bad({"autoinc_backoff": "fast"}, ConfigurationError,
                                "Meta.autoinc_backoff must be a number of seconds >= 0, not 'fast'"),
    "gapless across two endpoints": Bad({"autoinc_counter": Remote, "autoinc_gapless": True}, ConfigurationError,
                                        "both tables must be on one connection"),
    "counter table missing": Bad({"autoinc_counter": MissingCounter}, CounterTableMissingError,
                                 "counter table 'no-such-counter-table' does not exist; create it with "),
    "string in the counter": Bad({}, CounterValueError, "holds {'S': 'seven'}, not an integer; set it to the "
                                                        "largest ID in use with ",
                                 setup=put_counter({"S": "seven"})),
    "fraction in the counter": Bad({}, CounterValueError, "not an integer", setup=put_counter({"N": "1.5"}),
                                   fast_moves_counter=True),
    "item table missing": Bad({}, ItemWriteError, "does not exist; create it with", create_item_table=False,
                              fast_moves_counter=True),
    "explicit fractional ID": Bad({}, InvalidIdError, "Item.id = 2.5 is not an integer; set an int",
                                  action=lambda m: m(id=2.5).save()),
    "explicit bool ID": Bad({}, InvalidIdError, "Item.id = True is not an integer", action=lambda m: m(id=True).save()),
    "new instance in a batch write": Bad({}, UnassignedIdError, "a batch write cannot carry the condition",
                                         action=batch_new),
    "new instance in pynamodb's BatchWrite": Bad({}, UnassignedIdError, "Item has no id yet",
                                                 action=plain_batch_new),
    "before_save muted": Bad({}, UnassignedIdError, "Item.id is still None after before_save", action=muted_save),
    "format that cuts the number": Bad({"id": UnicodeAttribute(hash_key=True), "autoinc_format": "{value!s:.3}"},
                                       ConfigurationError, "an ID of its own: 100 and 1000 both give '100'"),
    "format naming {period} without a period": Bad(
        {"id": UnicodeAttribute(hash_key=True), "autoinc_format": "{period}-{value}"}, ConfigurationError,
        "shows {period}, but the model sets no Meta.autoinc_period"),
    "format that shows only part of the period on a key": Bad(
        {"id": UnicodeAttribute(hash_key=True), "autoinc_period": "month", "autoinc_format": "INV-{period:.4}-{value}"},
        ConfigurationError, "shows only part of the period: the months '2026-11' and '2026-12' both give 'INV-2026-1'"),
    "scope on a JSON attribute": Bad(scoped(JSONAttribute(null=True)), ConfigurationError,
                                     "Meta.autoinc_scope names 'tenant', a JSONAttribute, whose text follows the "
                                     "order of its keys"),
    "boolean scope given a string": Bad(scoped(BooleanAttribute(null=True)), InvalidKeyError,
                                        "Item.tenant is 'no', a str, which cannot go into the counter key "
                                        "(Meta.autoinc_scope): a BooleanAttribute holds True or False",
                                        action=lambda m: m(key="k", tenant="no").save()),
    "scope value past the counter key's 2,048 bytes": Bad(
        scoped(), InvalidKeyError, "Item: the counter key 'item",
        action=lambda m: m(key="k", tenant="t" * 2045).save()),
}


BAD_CONFIGS = {case: bad for case, bad in BAD_INPUTS.items() if issubclass(bad.error, ConfigurationError)}
BAD_INPUTS = {case: bad for case, bad in BAD_INPUTS.items() if case not in BAD_CONFIGS}


def _cases(table):
    """The cases of ``table``; one whose options set the mode runs once (conftest: modes)."""
    return [pytest.param(case, marks=[pytest.mark.modes()] if PINNING & set(bad.options) else [])
            for case, bad in table.items()]


@pytest.mark.parametrize("case", _cases(BAD_CONFIGS), ids=list(BAD_CONFIGS))
def test_bad_configuration_is_refused_when_the_class_is_created(case, make_model, backend):
    """Each bad Meta option raises exactly the documented error when the model class is created, before any
    request."""
    bad = BAD_CONFIGS[case]
    counters_before = counters(backend)
    with pytest.raises(AutoIncrementError) as info:
        make_model("Item", create=False, **bad.options)
    assert type(info.value) is bad.error
    assert bad.message in str(info.value)
    assert counters(backend) == counters_before


@pytest.mark.parametrize("case", _cases(BAD_INPUTS), ids=list(BAD_INPUTS))
def test_bad_input(case, make_model, backend):
    """Each bad input raises exactly the documented error with its message, and writes nothing."""
    bad = BAD_INPUTS[case]
    model = make_model("Item", create=False, **bad.options)
    if bad.options.get("autoinc_counter") is None:
        backend.counter(model=model)
    if bad.create_item_table:
        backend.create(model)
    if bad.setup:
        bad.setup(model)
    counters_before = counters(backend)
    with pytest.raises(AutoIncrementError) as info:
        bad.action(model)
    assert type(info.value) is bad.error
    assert bad.message in str(info.value)
    if bad.create_item_table:
        assert list(model.scan(consistent_read=True)) == []
    if model.Meta.autoinc_gapless or not bad.fast_moves_counter:
        assert counters(backend) == counters_before
    else:
        assert counters(backend) != counters_before


def counters(backend) -> Dict[str, Any]:
    counter = backend.counter()
    raw = counter._get_connection().scan(consistent_read=True)["Items"]
    return {item["NextKey"]["S"]: item.get("NextId") for item in raw}


def test_bad_input_table_is_large_enough():
    """The tables cover at least fifteen bad options and inputs."""
    assert len(BAD_INPUTS) + len(BAD_CONFIGS) >= 15


def test_errors_share_one_root():
    """Every library error is an AutoIncrementError, which is a PynamoDBException."""
    errors = [getattr(pynamodb_autoinc.exceptions, n) for n in pynamodb_autoinc.exceptions.__all__]
    assert len(errors) >= 10
    assert all(issubclass(e, AutoIncrementError) and issubclass(e, PynamoDBException) for e in errors)
    assert issubclass(ItemWriteError, PutError)


@pytest.mark.modes()  # its models set their own mode
def test_gapless_instance_outside_save_is_refused(make_model):
    """Building save kwargs for a new gapless instance outside TransactWrite is refused, no ID kept."""
    Item = make_model("Item", name=UnicodeAttribute(null=True), autoinc_gapless=True)
    item = Item(name="x")
    with pytest.raises(UnassignedIdError, match="can only be saved with save"):
        item.get_save_kwargs_from_instance()
    assert item.id is None


@pytest.mark.modes()
@pytest.mark.parametrize("operation", ["update", "delete", "refresh"])
def test_keyed_operation_on_a_new_instance_names_the_fix(backend, operation):
    """``update()``, ``delete()`` and ``refresh()`` of a new instance (its auto-increment key still None) are
    refused with the library's ``UnassignedIdError`` saying to save it first, not a ``decimal`` error from
    serialising a None key; nothing is written and the ID stays None."""
    User = auto_model(backend, "User", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True)})
    user = User(name="Ada")
    calls = {"update": lambda: user.update(actions=[User.name.set("Bob")]), "delete": user.delete,
             "refresh": user.refresh}
    with pytest.raises(UnassignedIdError, match=r"has no id yet.*save\(\) it first"):
        calls[operation]()
    assert user.id is None and stored_names(User) == []


@pytest.mark.modes()
@pytest.mark.parametrize("key", ["", 5, None])
@pytest.mark.parametrize("call", ["nextval", "currval", "setval"])
def test_counter_key_that_is_not_a_non_empty_string_is_refused(backend, key, call):
    """``NextId.nextval``, ``currval`` and ``setval`` given a counter key that is not a non-empty string raise
    the library's ``ConfigurationError`` naming what to pass, not a bare ``TypeError`` (``5``, ``None``) or a
    ``CounterError`` wrapping DynamoDB's validation message (``""``); the table holds no counter after."""
    counter = backend.counter()
    calls = {"nextval": lambda: counter.nextval(key), "currval": lambda: counter.currval(key),
             "setval": lambda: counter.setval(key, 3)}
    with pytest.raises(ConfigurationError, match="a counter key must be a non-empty string"):
        calls[call]()
    assert counter.keys() == []


@pytest.mark.modes("fast", "gapless")
@pytest.mark.parametrize("path", ["save", "save_all", "transaction", "batch"])
def test_string_id_set_by_hand_to_a_number_is_refused_on_every_path(make_model, mode, path):
    """An ID stored as a string (a UnicodeAttribute) set by hand to something that is not a string (the int 5)
    is refused with InvalidIdError naming the fix on every write path, before anything is sent, as a
    NumberAttribute ID set to 2.5 is; not PynamoDB's PutError or a cancelled transaction from DynamoDB."""
    Code = make_model("Code", id=UnicodeAttribute(hash_key=True), autoinc_gapless=mode == "gapless")
    code = Code(id=5)
    with pytest.raises(InvalidIdError, match="Code.id = 5 is not a string"):
        if path == "save":
            code.save()
        elif path == "save_all":
            Code.save_all([code])
        elif path == "transaction":
            with TransactWrite(connection=Code._get_connection().connection) as tx:
                tx.save(code)
        else:
            with Code.batch_write() as batch:
                batch.save(code)
    assert list(Code.scan(consistent_read=True)) == []


@pytest.mark.modes()
def test_an_option_on_a_model_without_a_hash_key_is_refused():
    """A model without a hash key is PynamoDB's to refuse on save, but an ``autoinc_*`` option on it numbers
    nothing: the class is refused when it is created, naming the fix."""
    meta = type("Meta", (), {"table_name": "keyless", "autoinc_gapless": True})
    with pytest.raises(ConfigurationError) as info:
        type("Keyless", (pynamodb_autoinc.AutoIncrementMixin, pynamodb_autoinc.mixin.Model),
             {"Meta": meta, "name": UnicodeAttribute(null=True)})
    assert str(info.value) == ("Keyless: Meta.autoinc_gapless is set, but the model has no hash key, so there is no "
                               "item to number (PynamoDB stores none without one); declare one, e.g. id = "
                               "NumberAttribute(hash_key=True), or drop the autoinc_* options")
