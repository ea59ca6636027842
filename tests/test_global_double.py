"""The global-table double itself: two DynamoDB Local servers, replicated last-writer-wins (tests/global_double.py)."""

from __future__ import annotations

import threading
from typing import Any, Dict, List

import pytest

from tests.global_double import REGIONS

pytestmark = pytest.mark.engine

A, B = REGIONS


def _item(key: str, **values: int) -> Dict[str, Any]:
    return {"k": {"S": key}, **{name: {"N": str(v)} for name, v in values.items()}}


def _get(double: Any, region: str, table: str, key: str) -> Any:
    return double.client(region).get_item(TableName=table, Key={"k": {"S": key}}, ConsistentRead=True).get("Item")


@pytest.fixture
def table(global_tables: Any) -> str:
    """One replicated table keyed by the string ``k``."""
    name: str = global_tables.create("double", hash_key=("k", "S"))
    return name


def test_write_reaches_the_other_region(global_double, table):
    """An item put in one region is stored, the same, in the other once replication settles."""
    global_double.client(A).put_item(TableName=table, Item=_item("a", v=1))
    global_double.settle()
    assert _get(global_double, B, table, "a") == _item("a", v=1)


def test_update_reaches_the_other_region(global_double, table):
    """An UpdateItem in the second region replaces the item in the first."""
    global_double.client(A).put_item(TableName=table, Item=_item("a", v=1))
    global_double.settle()
    global_double.client(B).update_item(TableName=table, Key={"k": {"S": "a"}}, UpdateExpression="SET v = v + :one",
                                        ExpressionAttributeValues={":one": {"N": "1"}})
    global_double.settle()
    assert _get(global_double, A, table, "a") == _item("a", v=2)


def test_delete_reaches_the_other_region(global_double, table):
    """A delete in one region removes the item in the other."""
    global_double.client(A).put_item(TableName=table, Item=_item("a", v=1))
    global_double.settle()
    global_double.client(B).delete_item(TableName=table, Key={"k": {"S": "a"}})
    global_double.settle()
    assert _get(global_double, A, table, "a") is None
    assert global_double.items(B, table) == []


def test_no_echo(global_double, table):
    """A replicated write is not sent back: one write, one apply, one echo recognised."""
    applied, echoes = global_double.applied, global_double.echoes
    global_double.client(A).put_item(TableName=table, Item=_item("a", v=1))
    global_double.settle()
    assert (global_double.applied - applied, global_double.echoes - echoes) == (1, 1)


def test_nothing_applied_before_the_delay(global_double, table):
    """With a delay, the other region does not see a write until the delay has passed."""
    global_double.delay = 1.0
    global_double.client(A).put_item(TableName=table, Item=_item("a", v=1))
    assert _get(global_double, B, table, "a") is None
    global_double.settle()
    assert _get(global_double, B, table, "a") == _item("a", v=1)


def test_concurrent_writes_converge(global_double, table):
    """Writes of one key in both regions within the delay end as one item, the same in both (last writer wins)."""
    global_double.delay = 0.5
    global_double.client(A).put_item(TableName=table, Item=_item("a", v=1))
    global_double.client(B).put_item(TableName=table, Item=_item("a", v=2))
    global_double.settle()
    winner = _get(global_double, A, table, "a")
    assert winner in (_item("a", v=1), _item("a", v=2))
    assert _get(global_double, B, table, "a") == winner


def test_racing_writers_converge(global_double, table):
    """Two threads per region updating ten shared keys at once leave both regions with the same items."""
    global_double.delay = 0.05

    def write(region: str, tag: int) -> None:
        client = global_double.client(region)
        for i in range(40):
            key = f"k{i % 10}"
            if i % 13 == 12:
                client.delete_item(TableName=table, Key={"k": {"S": key}})
            else:
                client.update_item(TableName=table, Key={"k": {"S": key}},
                                   UpdateExpression="SET v = :v ADD n :one",
                                   ExpressionAttributeValues={":v": {"N": str(tag * 1000 + i)}, ":one": {"N": "1"}})

    threads = [threading.Thread(target=write, args=(region, tag)) for tag, region in enumerate(REGIONS * 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    global_double.settle()
    stored: List[Any] = [sorted(global_double.items(region, table), key=lambda item: item["k"]["S"])
                         for region in REGIONS]
    assert stored[0] == stored[1]
    assert stored[0], "every key deleted: the test wrote nothing"


def test_last_write_wins(global_double, table):
    """A write made after another region's write has replicated replaces it in both regions."""
    global_double.client(A).put_item(TableName=table, Item=_item("a", v=1))
    global_double.settle()
    global_double.client(B).put_item(TableName=table, Item=_item("a", v=2))
    global_double.settle()
    assert [_get(global_double, r, table, "a") for r in REGIONS] == [_item("a", v=2)] * 2


def test_local_conditions_pass_in_both_regions(global_double, table):
    """A condition is checked against the local replica only: a put-if-absent succeeds in both regions."""
    global_double.delay = 0.5
    for region, v in zip(REGIONS, (1, 2)):
        global_double.client(region).put_item(TableName=table, Item=_item("a", v=v),
                                              ConditionExpression="attribute_not_exists(k)")
    global_double.settle()
    assert len({str(_get(global_double, r, table, "a")) for r in REGIONS}) == 1
