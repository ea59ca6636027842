"""``--model`` given several times, or naming a module: check, seed, describe and policy take each model; a
command that takes one model refuses several (exit 2) rather than silently using the last, and any other option
that takes one value, given twice, is refused too."""

from __future__ import annotations

import json
import sys
import types
import uuid
from typing import Any, Callable, Dict, List, Tuple

import pytest
from pynamodb.attributes import NumberAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin
from tests.helpers import closed_port
from tests.test_cli import reach, run


def module_of(monkeypatch: pytest.MonkeyPatch, names: List[str], meta: Dict[str, Any],
              table: Callable[[str], str] = str) -> Tuple[str, List[Any]]:
    """A module (importable by its name) defining gapless models ``names`` (``meta`` in their Meta; ``table`` names
    each one's table from its name, which is also its counter key), and importing a class it does not define;
    returns its name and its models."""
    name = f"cli_models_{uuid.uuid4().hex[:8]}"
    module = types.ModuleType(name)
    models = []
    for model_name in names:
        settings = {"table_name": table(model_name.lower()), "autoinc_gapless": True, **meta}
        model = type(model_name, (AutoIncrementMixin, Model), {"__module__": name, "id": NumberAttribute(hash_key=True),
                                                              "Meta": type("Meta", (), settings)})
        setattr(module, model_name, model)
        models.append(model)
    module.Model = Model  # type: ignore[attr-defined]  # imported, not defined here: not one of its models
    monkeypatch.setitem(sys.modules, name, module)
    return name, models


#: Where the models of the tests that send nothing are declared: nobody answers there.
NOWHERE = {"host": f"http://127.0.0.1:{closed_port()}", "region": "us-east-1"}


def created(backend: Any, models: List[Any]) -> None:
    for model in models:
        backend.counter(model=model)
        backend.create(model)


def rows(out: str) -> Dict[str, Tuple[int, int]]:
    return {row["key"]: (row["items"], row["holes"]) for row in json.loads(out)}


@pytest.mark.modes()
def test_check_checks_every_model_named(monkeypatch, capsys, backend, credentials):
    """check --model Holes --model Clean: both are checked, and the hole in the first (gapless) exits 3, whichever
    comes last."""
    name, (holes, clean) = module_of(monkeypatch, ["Holes", "Clean"], backend.meta, backend.table_name)
    created(backend, [holes, clean])
    for model in (holes, clean):
        for _ in range(3):
            model().save()
    holes.get(2).delete()
    for order in ([holes, clean], [clean, holes]):
        argv = [arg for model in order for arg in ("--model", f"{name}:{model.__name__}")]
        code, out, err = run(capsys, *reach(backend), "check", *argv, "--json")
        assert code == 3, (order, err)
        assert rows(out) == {holes.autoinc_options().key: (2, 1), clean.autoinc_options().key: (3, 0)}


@pytest.mark.modes()
def test_check_of_a_module_checks_each_model_it_defines(monkeypatch, capsys, backend, credentials):
    """check --model package.module checks every model the module defines that uses AutoIncrementMixin (not a
    class it imports): a row for each, exit 0."""
    name, models = module_of(monkeypatch, ["Orders", "Invoices"], backend.meta, backend.table_name)
    created(backend, models)
    for model in models:
        model().save()
    code, out, err = run(capsys, *reach(backend), "check", "--model", name, "--json")
    assert code == 0, err
    assert rows(out) == {model.autoinc_options().key: (1, 0) for model in models}


@pytest.mark.modes()
def test_seed_seeds_every_model_named(monkeypatch, capsys, backend, credentials):
    """seed --model A --model B moves both counters to their furthest IDs."""
    name, models = module_of(monkeypatch, ["First", "Second"], backend.meta, backend.table_name)
    created(backend, models)
    for model, furthest in zip(models, (4, 9)):
        model(id=furthest).save()
    argv = [arg for model in models for arg in ("--model", f"{name}:{model.__name__}")]
    code, out, err = run(capsys, *reach(backend), "seed", *argv)
    assert code == 0, err
    assert [model.autoinc_options().counter.currval(model.autoinc_options().key) for model in models] == [4, 9]


@pytest.mark.modes()
def test_describe_of_a_module_shows_each_models_counter(monkeypatch, capsys, backend, credentials):
    """describe --model package.module shows the counter of each model the module defines."""
    name, models = module_of(monkeypatch, ["Orders", "Invoices"], {**backend.meta, "autoinc_gapless": False},
                            backend.table_name)
    created(backend, models)
    for model in models:
        model().save()
    code, out, err = run(capsys, *reach(backend), "describe", "--model", name, "--json")
    assert code == 0, err
    assert sorted(row["models"][0] for row in json.loads(out)) == ["Invoices", "Orders"]


@pytest.mark.backends()  # refused before any request
@pytest.mark.parametrize("argv", [["get"], ["set", "5"], ["restart"], ["alter"]], ids=lambda argv: argv[0])
def test_a_command_of_one_model_refuses_several(monkeypatch, capsys, argv):
    """get, set, restart and alter take one model: --model given twice is bad usage (exit 2) naming both, not the
    last one used silently."""
    name, _ = module_of(monkeypatch, ["First", "Second"], NOWHERE)
    code, _, err = run(capsys, *argv, "--model", f"{name}:First", "--model", f"{name}:Second")
    assert code == 2
    assert f"{argv[0]}: takes one model, but --model was given 2 times ({name}:First, {name}:Second)" in err


@pytest.mark.backends()  # refused before any request
def test_a_module_of_several_models_is_refused_where_one_is_wanted(monkeypatch, capsys):
    """get --model package.module, whose module defines two models, is bad usage (exit 2) naming them."""
    name, _ = module_of(monkeypatch, ["First", "Second"], NOWHERE)
    code, _, err = run(capsys, "get", "--model", name)
    assert code == 2
    assert f"names 2 ({name}:First, {name}:Second); name one as package.module:Model" in err


@pytest.mark.backends()  # nothing is sent
def test_policy_of_several_models_is_one_policy(monkeypatch, capsys):
    """policy --model A --model B prints one policy granting both models' tables and their counter table once."""
    name, _ = module_of(monkeypatch, ["First", "Second"], {"region": "us-east-1"})
    code, out, err = run(capsys, "policy", "--model", f"{name}:First", "--model", f"{name}:Second", "--account", "1")
    assert code == 0, err
    resources = [statement["Resource"] for statement in json.loads(out)["Statement"]]
    assert resources == [f"arn:aws:dynamodb:us-east-1:1:table/{table}" for table in ("NextId", "first", "second")]


@pytest.mark.backends()  # refused before any request
@pytest.mark.parametrize("argv", [["--host", "http://a", "list", "--host", "http://b"],
                                  ["list", "--table", "a", "--table", "b"], ["set", "3", "--key", "a", "--key", "b"],
                                  ["check", "--model", "a:A", "--segments", "2", "--segments", "3"],
                                  ["policy", "--model", "a:A", "--account", "1", "--account", "2"]],
                         ids=["--host", "--table", "--key", "--segments", "--account"])
def test_an_option_of_one_value_given_twice_is_bad_usage(capsys, argv):
    """An option that takes one value, given twice (also once before the command and once after it), is bad
    usage (exit 2) naming both values, not the first one dropped."""
    code, _, err = run(capsys, *argv)
    option = next(arg for arg in argv if argv.count(arg) == 2)
    assert code == 2 and f"error: {option} given twice" in err
