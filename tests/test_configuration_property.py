"""Property: a refused option combination raises ConfigurationError and writes nothing; any other one saves.

Options are drawn from values the README accepts and values it refuses
(bounds and start are valid alone; together they may cross), on
models with a string or number hash key, with or without a range key, and
attributes of every kind. ``tests.reference.configuration_problem`` says,
from the README, whether the combination is usable.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pynamodb.attributes import Attribute, BooleanAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import AutoIncrementMixin, NextId
from pynamodb_autoinc.exceptions import ConfigurationError
from pynamodb_autoinc.periods import clock
from pynamodb_autoinc.testing import reset_state
from tests.hypothesis_setup import budget, unique, worlds
from tests.reference import Schema, configuration_problem, configured_sequence, period_label, stored_id

NOW = datetime(2026, 11, 22, 12, 0, 0)

#: For each option: values the README accepts, and values it refuses.
VALUES: Dict[str, Tuple[List[Any], List[Any]]] = {
    "autoinc_attribute": ([None, "pk", "rk", "num", "txt"], ["strict", "flag", "ver", "nope"]),
    "autoinc_key": (["key"], ["", 7]),
    "autoinc_gapless": ([False, True], ["yes", 1]),
    "autoinc_counter_in_table": ([False, True], ["yes", 0]),
    "autoinc_counter": ([NextId], [dict]),
    "autoinc_start": ([None, 1, 0, -5, 100], [1.5, True, 10**40, "1"]),
    "autoinc_step": ([1, 3, -1, -2], [0, 1.0, False, -(10**38)]),
    "autoinc_min": ([None, -10, 0, 1, 5], [2.5, 10**38, "0"]),
    "autoinc_max": ([None, 0, 5, 100, -10], [2.5, 10**38, "9"]),
    "autoinc_cycle": ([False, True], ["yes", 1]),
    "autoinc_track_explicit": ([False, True], ["yes", 1]),
    "autoinc_block": ([1, 5], [0, -1, 1_000_001, 2.0, True]),
    "autoinc_retries": ([None, 16, 0], [-1, True, 1.5]),
    "autoinc_timeout": ([None, 0.5, 10], [0, -1, "1s", True, float("inf")]),
    "autoinc_backoff": ([0, 0.01, 1], [-1, "fast", True]),
    "autoinc_scope": ([None, "num", "txt", ("num", "txt")], ["nope", ("num", "nope"), 5]),
    "autoinc_period": ([None, "year", "month", "day"], ["week", "YEAR"]),
    "autoinc_format": ([None, "X{value}", "{period}-{value:04d}"],
                       ["{nope}", "{0}", "constant", "{period}", "{value", 5]),
    "autoinc_strategy": (["counter", "query"], ["random", "QUERY"]),
}
MISSPELLED = {"autoinc_gaples": True, "autoinc_zzz": 1, "autoinc_steps": 2}

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


@st.composite
def specs(draw: st.DrawFn) -> Tuple[str, Optional[str], Dict[str, Any]]:
    """A hash key kind, a range key kind (or none) and Meta options, a few of them drawn from refused values."""
    hash_kind = draw(st.sampled_from(["unicode", "number"]))
    range_kind = draw(st.sampled_from([None, "number", "unicode"]))
    broken = draw(st.sets(st.sampled_from(sorted(VALUES)), max_size=2))
    options: Dict[str, Any] = {}
    for name in sorted(VALUES):
        accepted, refused = VALUES[name]
        if name in broken:
            options[name] = draw(st.sampled_from(refused))
        elif draw(st.booleans()):
            options[name] = draw(st.sampled_from(accepted))
    if draw(st.integers(0, 9)) == 0:
        name = draw(st.sampled_from(sorted(MISSPELLED)))
        options[name] = MISSPELLED[name]
    return hash_kind, range_kind, options


def schema_of(hash_kind: str, range_kind: Optional[str]) -> Schema:
    kinds = {"pk": hash_kind, "num": "number", "txt": "unicode", "strict": "number", "flag": "boolean",
             "ver": "version"}
    if range_kind is not None:
        kinds["rk"] = range_kind
    return Schema(kinds=kinds, hash_key="pk", range_key="rk" if range_kind else None,
                  nullable=frozenset({"num", "txt", "flag"}))


KINDS = {"unicode": UnicodeAttribute, "number": NumberAttribute}


def test_options_are_refused_exactly_as_documented(backend_name: str, request: pytest.FixtureRequest) -> None:
    """A refused combination raises ConfigurationError when the class is created (or, for what only a request
    shows, on the save, writing nothing); a usable one saves its first value."""
    world = worlds(backend_name, request)

    @budget(backend_name, moto=150, local=20)
    @given(spec=specs())
    def check(spec: Tuple[str, Optional[str], Dict[str, Any]]) -> None:
        hash_kind, range_kind, options = spec
        schema = schema_of(hash_kind, range_kind)
        problem = configuration_problem(schema, options, counter_ok=options.get("autoinc_counter", NextId) is NextId)
        key = unique("cfg")
        meta_options = {**options, "autoinc_key": key} if options.get("autoinc_key") == "key" else options
        reset_state()
        with world() as backend:
            attrs: Dict[str, Attribute] = {
                "pk": KINDS[hash_kind](hash_key=True),
                "num": NumberAttribute(null=True),
                "txt": UnicodeAttribute(null=True),
                "strict": NumberAttribute(),
                "flag": BooleanAttribute(null=True),
                "ver": VersionAttribute(),
            }
            if range_kind is not None:
                attrs["rk"] = KINDS[range_kind](range_key=True)
            meta = type("Meta", (), {"table_name": backend.table_name("cfg"), **backend.meta, **meta_options})
            try:
                model: Any = type("Configured", (AutoIncrementMixin, Model), {"Meta": meta, **attrs})
            except ConfigurationError as exc:
                assert problem is not None, f"refused {options} ({exc}), which the README allows"
                return  # refused when the class is created: nothing could be sent
            backend.create(model)
            backend.counter(model=model)
            auto = options.get("autoinc_attribute") or "pk"
            values = {"pk": "p" if hash_kind == "unicode" else 1, "rk": "r" if range_kind == "unicode" else 1,
                      "num": 7, "txt": "t", "strict": 1}
            item = model(**{name: value for name, value in values.items()
                            if name != auto and (name != "rk" or range_kind is not None)})
            sent: List[str] = []

            def record(_: Any, operation_name: str, **__: Any) -> None:
                sent.append(operation_name)

            with clock.frozen(NOW), pre_dynamodb_send.connected_to(record):
                try:
                    item.save()
                except ConfigurationError as exc:
                    assert problem is not None, f"refused {options} ({exc}), which the README allows"
                    assert not WRITES & set(sent), f"refusing {options} still sent {sent}"
                    assert getattr(item, auto, None) is None
                    assert model._get_connection().scan(consistent_read=True)["Items"] == []
                    return
            assert problem is None, f"accepted {options}, which the README refuses: {problem}"
            fmt = options.get("autoinc_format")
            first = stored_id(configured_sequence(options).start, fmt=fmt,
                              as_string=schema.kinds[auto] == "unicode",
                              label=period_label(options.get("autoinc_period"), NOW))
            assert getattr(item, auto) == first, f"the first save of {options} got {getattr(item, auto)!r}"
        reset_state()

    check()
