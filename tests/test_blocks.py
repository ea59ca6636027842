"""Block allocation: one counter request reserves Meta.autoinc_block values for this process."""

from __future__ import annotations

from typing import Any

import pytest

from pynamodb_autoinc import (
    NextId,
)
from pynamodb_autoinc.exceptions import (
    ConfigurationError,
    SequenceExhaustedError,
)
from pynamodb_autoinc.testing import reset_state


def new_process() -> None:
    """What a new process starts with: no reserved block."""
    reset_state()


def ids_of(model, n):
    out = []
    for _ in range(n):
        item = model()
        item.save()
        out.append(item.id)
    return out


@pytest.mark.modes()  # its models set their own mode
def test_one_counter_request_per_block(make_model, requests):
    """Ten saves from a block of ten send one UpdateItem; the counter holds the block's top."""
    Item = make_model("Item", autoinc_gapless=False, autoinc_block=10)
    requests.clear()
    assert ids_of(Item, 10) == list(range(1, 11))
    assert [op for op, _ in requests].count("UpdateItem") == 1
    opts = Item.autoinc_options()
    assert opts.counter.currval(opts.key) == 10


@pytest.mark.modes()  # its models set their own mode
def test_processes_get_disjoint_blocks(make_model):
    """Another process reserves the next block; IDs are unique, ordered only within a process."""
    Item = make_model("Item", autoinc_gapless=False, autoinc_block=5)
    first = ids_of(Item, 2)
    new_process()
    second = ids_of(Item, 2)
    assert first == [1, 2]
    assert second == [6, 7]


@pytest.mark.modes()  # its models set their own mode
def test_block_keeps_step(make_model):
    """Inside a block values advance by autoinc_step."""
    Item = make_model("Item", autoinc_gapless=False, autoinc_block=3, autoinc_start=100, autoinc_step=5)
    assert ids_of(Item, 4) == [100, 105, 110, 115]


@pytest.mark.modes()  # its models set their own mode
def test_block_keeps_max(make_model):
    """Near autoinc_max the last values are reserved one at a time, up to the max and no further."""
    Item = make_model("Item", autoinc_gapless=False, autoinc_block=4, autoinc_max=6)
    assert ids_of(Item, 2) == [1, 2]
    new_process()
    assert ids_of(Item, 2) == [5, 6]
    new_process()
    with pytest.raises(SequenceExhaustedError):
        Item().save()


@pytest.mark.modes()  # its models set their own mode
def test_block_with_negative_step(make_model):
    """A counting-down sequence reserves its blocks downwards."""
    Item = make_model("Item", autoinc_gapless=False, autoinc_block=3, autoinc_start=0, autoinc_step=-1,
                      autoinc_max=0)
    assert ids_of(Item, 4) == [0, -1, -2, -3]


@pytest.mark.modes()  # its models set their own mode
def test_block_leaves_unused_values_as_gaps(make_model):
    """Values a process reserved but never used are gaps, never handed out twice."""
    Item = make_model("Item", autoinc_gapless=False, autoinc_block=10)
    ids_of(Item, 1)
    new_process()
    assert ids_of(Item, 1) == [11]


@pytest.mark.modes()  # its models set their own mode
def test_reserve_on_the_counter_keeps_the_process_block(make_model):
    """NextId.reserve() takes values past this process's block, which stays: the next save() takes the block's
    next value, never one reserve() returned (only setval, restart, alter and save_all() drop a block)."""
    Item = make_model("Item", autoinc_gapless=False, autoinc_block=3)
    assert ids_of(Item, 1) == [1]  # reserves 1..3
    opts = Item.autoinc_options()
    assert opts.counter.reserve(opts.key, 3, opts.sequence) == [4, 5, 6]
    assert ids_of(Item, 3) == [2, 3, 7]


@pytest.mark.parametrize("options", [{"autoinc_gapless": True}, {"autoinc_block": 0}])
@pytest.mark.modes()  # its models set their own mode
def test_block_misconfiguration(make_model, options):
    """Blocks with gapless mode, or a block size below 1, are refused."""
    with pytest.raises(ConfigurationError, match="Meta.autoinc_block"):
        make_model("Broken", create=False, **{"autoinc_block": 10, **options})


@pytest.mark.modes("block")
def test_restart_drops_the_block_of_a_model_with_a_region(make_model):
    """Block mode with Meta.region: restart() through the model's counter drops this process's block."""
    Item = make_model("Item", autoinc_block=10, region="us-east-1")
    Item().save()
    opts = Item.autoinc_options()
    opts.counter.restart(opts.key, opts.sequence, 50)
    item = Item()
    item.save()
    assert item.id == 50


@pytest.mark.modes("block")
@pytest.mark.backends("moto")  # the plain NextId reaches the default endpoint, which only moto serves here
def test_plain_next_id_setval_drops_the_block_of_a_model_with_a_region(make_model):
    """Block mode with Meta.region: plain NextId.setval drops the model's block."""
    Item = make_model("Item", autoinc_block=10, region="us-east-1")
    Item().save()
    NextId.setval(Item.autoinc_options().key, 40)
    item = Item()
    item.save()
    assert item.id == 41


@pytest.mark.modes("block")
@pytest.mark.parametrize("how", ["setval", "restart"])
def test_next_id_setval_drops_the_block_of_a_model_with_a_region(make_model, backend, how):
    """After NextId.setval/restart, a block model with Meta.region takes its next value from the new counter."""
    if backend.name != "moto":
        pytest.skip("the plain NextId class reaches the default endpoint, which only moto serves here")
    User = make_model("User")
    assert User.Meta.region == "us-east-1"
    User().save()  # reserves 1..3
    opts = User.autoinc_options()
    if how == "setval":
        NextId.setval(opts.key, 100)
    else:
        NextId.restart(opts.key, opts.sequence, 101)
    user = User()
    user.save()
    assert user.id == 101


@pytest.mark.modes()  # its models set their own mode
def test_ids_increase_within_a_process_across_save_all(make_model):
    """Block mode: IDs a process hands out increase in the order it hands them out, through save(), save_all()
    and save() again (save_all's values come after the block in use, and the block they pass is dropped)."""
    Item = make_model("Item", autoinc_block=10)
    first = Item()
    first.save()
    bulk = [Item() for _ in range(3)]
    Item.save_all(bulk)
    last = Item()
    last.save()
    handed = [first.id, *(item.id for item in bulk), last.id]
    assert handed == sorted(handed) and len(set(handed)) == len(handed)


@pytest.mark.modes()  # its models set their own mode
def test_block_save_all_keeps_list_order(make_model):
    """Block mode: save_all() gives its new items increasing IDs in the order of the list."""
    Item = make_model("Item", autoinc_block=4)
    Item().save()
    bulk = [Item() for _ in range(9)]
    Item.save_all(bulk)
    ids = [item.id for item in bulk]
    assert ids == sorted(ids)


@pytest.mark.modes()  # its models set their own mode
def test_a_block_reserve_in_flight_holds_up_no_other_counter(make_model):
    """While one thread's block reserve is in flight (its request slow to answer), another thread saves on another
    counter: no lock of the process's memory is held across the request."""
    import threading

    Slow = make_model("Slow", autoinc_block=5)
    Other = make_model("Other", autoinc_block=5)
    client = Slow.autoinc_options().counter._get_connection().connection.client
    entered, release = threading.Event(), threading.Event()
    slow_key = Slow.autoinc_options().key

    def hold(request: Any = None, **_: Any) -> None:
        if slow_key.encode() in (request.body or b"") and not entered.is_set():
            entered.set()
            release.wait(10)

    client.meta.events.register_first("before-send.dynamodb.UpdateItem", hold)
    try:
        slow = threading.Thread(target=lambda: Slow().save())
        slow.start()
        assert entered.wait(10)
        other = Other()
        done = threading.Thread(target=other.save)
        done.start()
        done.join(5)
        finished = not done.is_alive()
        release.set()
        slow.join(10)
    finally:
        release.set()
        client.meta.events.unregister("before-send.dynamodb.UpdateItem", hold)
    assert finished and other.id == 1
