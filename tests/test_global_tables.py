"""Global tables: detection from DescribeTable, and the multi-region schemes.

Neither moto nor DynamoDB Local creates replicas, so detection is tested
against constructed DescribeTable answers: :func:`regions.describe_table` is
replaced by a function answering, for each table, a ``Table`` description as
DynamoDB returns it for a single-region table, a global table in eventual
consistency (MREC), one in strong consistency (MRSC), or a legacy global
table. The schemes run on moto, whose tables in two regions are two separate
tables, as two replicas are before replication.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, Dict, List, Optional

import pytest
from botocore.exceptions import ClientError
from pynamodb.attributes import (
    VersionAttribute,
)

from pynamodb_autoinc import (
    HistoryMixin,
    NextId,
    SequenceOptions,
    TransactWrite,
    regions,
)
from pynamodb_autoinc.counter import bind_counter
from pynamodb_autoinc.exceptions import (
    BulkSaveError,
    ConfigurationError,
    ContentionError,
    GlobalTableError,
    OutOfBoundsError,
    SequenceMismatchError,
)
from pynamodb_autoinc.testing import reset_state
from tests.helpers import REGIONS, auto_history_doc, region_model
from tests.test_history import history_model

pytestmark = pytest.mark.modes("fast", "block", "gapless")

#: DescribeTable ``Table`` descriptions of each kind, as DynamoDB answers them (keys and sizes left out).
SINGLE: Dict[str, Any] = {"TableStatus": "ACTIVE"}
MREC: Dict[str, Any] = {"TableStatus": "ACTIVE", "GlobalTableVersion": "2019.11.21",
                        "Replicas": [{"RegionName": "eu-west-1", "ReplicaStatus": "ACTIVE"}]}
MREC_NAMED: Dict[str, Any] = {**MREC, "MultiRegionConsistency": "EVENTUAL"}
MRSC: Dict[str, Any] = {"TableStatus": "ACTIVE", "GlobalTableVersion": "2019.11.21",
                        "MultiRegionConsistency": "STRONG",
                        "Replicas": [{"RegionName": "us-east-2", "ReplicaStatus": "ACTIVE"},
                                     {"RegionName": "us-west-2", "ReplicaStatus": "ACTIVE"}]}
LEGACY: Dict[str, Any] = {"TableStatus": "ACTIVE", "GlobalTableVersion": "2017.11.29"}


@pytest.fixture
def described(monkeypatch: pytest.MonkeyPatch) -> Callable[..., List[str]]:
    """``described(model=MREC, counter=SINGLE)``: answer DescribeTable with these descriptions; returns the
    list of tables described so far."""
    calls: List[str] = []

    def install(model: Dict[str, Any] = SINGLE, counter: Dict[str, Any] = SINGLE) -> List[str]:
        def describe(connection: Any, table: str) -> Dict[str, Any]:
            calls.append(table)
            return dict(counter if table == NextId.Meta.table_name else model, TableName=table)

        monkeypatch.setattr(regions, "describe_table", describe)
        return calls

    return install


def counter_of(model: Any, key: Optional[str] = None) -> Any:
    opts = model.autoinc_options()
    return opts.counter.read(key or opts.key)


# -- detection ------------------------------------------------------------------------------------------------


def test_a_single_region_table_is_allowed(make_model, described):
    """A table without replicas needs no scheme: the save goes on as always."""
    described()
    User = make_model("User")
    user = User()
    user.save()
    assert user.id == 1


@pytest.mark.parametrize("description", [MREC, MREC_NAMED, LEGACY], ids=["replicas", "eventual", "legacy"])
def test_an_eventually_consistent_global_table_is_refused(make_model, described, description):
    """A model on a global table in eventual consistency, with no scheme, is refused before anything is spent."""
    described(model=description)
    User = make_model("User")
    user = User()
    with pytest.raises(GlobalTableError) as info:
        user.save()
    assert "autoinc_regions" in str(info.value) and "autoinc_home_region" in str(info.value)
    assert "autoinc_single_region_writes" in str(info.value)
    assert user.id is None
    assert counter_of(User) == (None, None)


def test_a_global_counter_table_is_refused(make_model, described):
    """The counter table being global is enough to refuse: its item is what two regions would both advance."""
    described(counter=MREC)
    User = make_model("User")
    with pytest.raises(GlobalTableError, match="'NextId'"):
        User().save()


def test_the_refusal_is_a_configuration_error(make_model, described):
    """GlobalTableError is a ConfigurationError, so existing handlers of bad options catch it."""
    described(model=MREC)
    User = make_model("User")
    with pytest.raises(ConfigurationError):
        User().save()


def test_each_table_is_described_once_per_process(make_model, described):
    """The first claim describes the model's table and the counter table; later saves describe nothing."""
    calls = described()
    User = make_model("User")
    User().save()
    User().save()
    User.save_all([User(), User()])
    assert sorted(calls) == sorted([User.Meta.table_name, "NextId"])


def test_a_reset_describes_again(make_model, described):
    """reset_state() (run in a forked child) forgets what was described: the next claim asks again."""
    calls = described()
    User = make_model("User")
    User().save()
    reset_state()
    User().save()
    assert len(calls) == 4


@pytest.mark.modes("fast", "gapless")
def test_single_region_writes_describes_nothing(make_model, described):
    """Meta.autoinc_single_region_writes skips detection: no DescribeTable, no refusal."""
    calls = described(model=MREC, counter=MREC)
    User = make_model("User", autoinc_single_region_writes=True)
    User().save()
    assert calls == []
    assert counter_of(User)[0] == 1


def test_describe_table_denied_names_the_permission_and_the_opt_out(make_model, monkeypatch):
    """An AccessDeniedException on DescribeTable raises an error naming the permission and the opt-out."""

    def denied(connection: Any, table: str) -> Dict[str, Any]:
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "DescribeTable")

    monkeypatch.setattr(regions, "describe_table", denied)
    User = make_model("User")
    with pytest.raises(GlobalTableError) as info:
        User().save()
    assert "dynamodb:DescribeTable" in str(info.value) and "autoinc_single_region_writes" in str(info.value)


def test_the_real_describe_table_answers_a_single_region_table(make_model, requests):
    """Unpatched, the first save sends one DescribeTable per table (moto answers), then saves as always."""
    User = make_model("User")
    requests.clear()
    User().save()
    described = sorted(table for op, table in requests if op == "DescribeTable")
    assert described == sorted([User.Meta.table_name, "NextId"])


@pytest.mark.modes("fast", "block")
def test_strong_consistency_needs_no_scheme_in_fast_and_block_mode(make_model, described):
    """On an MRSC global table, fast and block mode save without a scheme."""
    described(model=MRSC, counter=MRSC)
    User = make_model("User")
    user = User()
    user.save()
    assert user.id == 1


@pytest.mark.modes("gapless")
def test_strong_consistency_refuses_gapless_mode(make_model, described):
    """Gapless mode needs TransactWriteItems, which MRSC tables do not support: refused, naming the fix."""
    described(model=MRSC, counter=MRSC)
    User = make_model("User")
    with pytest.raises(GlobalTableError, match="autoinc_gapless = False"):
        User().save()


@pytest.mark.modes("fast")
def test_strong_consistency_refuses_save_all(make_model, described):
    """save_all() of several new items writes TransactWriteItems: refused on MRSC before anything is spent."""
    described(model=MRSC, counter=MRSC)
    User = make_model("User")
    users = [User(), User()]
    with pytest.raises(GlobalTableError, match="one by one"):
        User.save_all(users)
    assert counter_of(User) == (None, None)


class _Conflicts:
    """Answer the next requests of one operation with ReplicatedWriteConflictException, in DynamoDB's place.

    The connections' ``dispatch`` raises botocore's ClientError as DynamoDB's answer would; the request
    never reaches moto, as a refused request is never applied.
    """

    def __init__(self, model: Any, operation: str, times: int) -> None:
        self.operation, self.left, self.sent = operation, times, 0
        self.patched = list({id(c): c for c in (model._get_connection().connection,
                                                model.autoinc_options().counter._get_connection().connection)
                             }.values())
        for connection in self.patched:
            connection.dispatch = self.wrap(connection.dispatch)

    def wrap(self, dispatch: Callable[..., Any]) -> Callable[..., Any]:
        def conflicting(operation: str, kwargs: Dict[str, Any]) -> Any:
            if operation == self.operation:
                self.sent += 1
                if self.left:
                    self.left -= 1
                    raise ClientError({"Error": {"Code": "ReplicatedWriteConflictException",
                                                 "Message": "being modified by a request in another Region"}},
                                      operation)
            return dispatch(operation, kwargs)

        return conflicting

    def __enter__(self) -> _Conflicts:
        return self

    def __exit__(self, *exc: Any) -> None:
        for connection in self.patched:
            del connection.dispatch


@pytest.mark.modes("fast", "block")
def test_a_replicated_write_conflict_on_the_counter_is_retried(make_model, described):
    """A counter update refused with ReplicatedWriteConflictException is sent again; the save gets the value."""
    described(model=MRSC, counter=MRSC)
    User = make_model("User", autoinc_backoff=0)
    with _Conflicts(User, "UpdateItem", times=2) as conflicts:
        user = User()
        user.save()
    assert user.id == 1 and conflicts.sent >= 3


@pytest.mark.modes("fast")
def test_a_replicated_write_conflict_on_the_item_is_retried(make_model, described):
    """An item put refused with ReplicatedWriteConflictException is sent again with the value it holds."""
    described(model=MRSC, counter=MRSC)
    User = make_model("User", autoinc_backoff=0)
    with _Conflicts(User, "PutItem", times=1):
        user = User()
        user.save()
    assert user.id == 1 and User.get(1).id == 1 and counter_of(User)[0] == 1


@pytest.mark.modes("fast")
def test_replicated_write_conflicts_use_up_the_retry_budget(make_model, described):
    """Conflicts beyond Meta.autoinc_retries raise ContentionError, with nothing spent."""
    described(model=MRSC, counter=MRSC)
    User = make_model("User", autoinc_backoff=0, autoinc_retries=2)
    with _Conflicts(User, "UpdateItem", times=10), pytest.raises(ContentionError, match="another region"):
        User().save()
    assert counter_of(User) == (None, None)


# -- scheme 1: region-homed sequences -------------------------------------------------------------------------

def separate_regions(backend: Any) -> None:
    """Skip on DynamoDB Local: with ``-sharedDb`` it keeps one database for every region."""
    if backend.name == "local":
        pytest.skip("DynamoDB Local (-sharedDb) keeps one table for every region; moto keeps one per region")


def in_region(make_model: Any, backend: Any, region: str, table: str, **options: Any) -> Any:
    """The model of ``table`` as a process in ``region`` sees it, its tables there created."""
    model = make_model("User", create=False, region=region, table_name=table, **options)
    backend.counter(model=model)
    backend.create(model)
    return model


@pytest.mark.parametrize("global_", [SINGLE, MREC], ids=["single", "global"])
def test_each_region_numbers_its_own_subsequence(make_model, backend, described, mode, global_):
    """Region i of R hands out start + (i + k*R)*step: unique across regions, increasing within one."""
    described(model=global_, counter=global_)
    table = backend.table_name("user")
    ids = {}
    for region in REGIONS:
        User = in_region(make_model, backend, region, table, autoinc_regions=REGIONS)
        users = [User() for _ in range(4)]
        for user in users:
            user.save()
        ids[region] = [u.id for u in users]
    assert ids == {"us-east-1": [1, 4, 7, 10], "eu-west-1": [2, 5, 8, 11], "ap-south-1": [3, 6, 9, 12]}


@pytest.mark.modes("fast", "gapless")
def test_the_region_subsequence_follows_start_and_step(make_model, backend, described, mode):
    """With start 100 and step 10, region 1 of 2 hands out 110, 130, 150."""
    described()
    table = backend.table_name("user")
    User = in_region(make_model, backend, "eu-west-1", table, autoinc_regions=("us-east-1", "eu-west-1"),
                     autoinc_start=100, autoinc_step=10)
    users = [User() for _ in range(3)]
    for user in users:
        user.save()
    assert [u.id for u in users] == [110, 130, 150]


@pytest.mark.modes("fast", "gapless")
def test_the_region_counter_key_and_options(make_model, backend, described):
    """Each region's counter is the item ``key@region``, recording the region's own subsequence."""
    described()
    table = backend.table_name("user")
    User = in_region(make_model, backend, "eu-west-1", table, autoinc_regions=("us-east-1", "eu-west-1"))
    User().save()
    value, recorded = counter_of(User, f"{table}@eu-west-1")
    assert value == 2
    assert recorded == SequenceOptions(2, 2, 1, 2**63 - 1, False)
    assert counter_of(User) == (None, None)


@pytest.mark.modes("fast", "gapless")
def test_save_all_numbers_the_region_subsequence(make_model, backend, described, mode):
    """save_all() in a region takes its values from the region's subsequence."""
    described()
    table = backend.table_name("user")
    User = in_region(make_model, backend, "eu-west-1", table, autoinc_regions=("us-east-1", "eu-west-1"))
    users = [User() for _ in range(3)]
    User.save_all(users)
    assert [u.id for u in users] == [2, 4, 6]


def test_a_region_missing_from_the_list_is_refused(make_model, backend, described):
    """A process writing from a region the list does not name is refused, naming the region and the list."""
    described()
    User = in_region(make_model, backend, "sa-east-1", backend.table_name("user"),
                     autoinc_regions=("us-east-1", "eu-west-1"))
    user = User()
    with pytest.raises(GlobalTableError) as info:
        user.save()
    assert "'sa-east-1'" in str(info.value) and "['us-east-1', 'eu-west-1']" in str(info.value)
    assert "append" in str(info.value)
    assert user.id is None


def test_changing_the_number_of_regions_is_refused_by_the_counter(make_model, backend, described):
    """A counter numbered under two regions refuses a process listing three: the layout changed."""
    described()
    table = backend.table_name("user")
    Two = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    Two().save()
    Three = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS)
    with pytest.raises(SequenceMismatchError, match="step 2 \\(here 3\\)"):
        Three().save()


# -- scheme 2: a home region --------------------------------------------------------------------------------------


@pytest.mark.modes("fast")
def test_a_home_region_takes_every_counter_request(make_model, backend, described):
    """Fast mode: the counter advances in the home region; the item is stored in the local one."""
    separate_regions(backend)
    described(model=MREC, counter=MREC)
    table = backend.table_name("user")
    Home = in_region(make_model, backend, "us-east-1", table)  # the home region's tables
    Local = in_region(make_model, backend, "eu-west-1", table, autoinc_home_region="us-east-1",
                      autoinc_home_host=backend.meta.get("host"))
    user = Local()
    user.save()
    assert user.id == 1
    assert bind_counter(NextId, Home).currval(table) == 1
    assert bind_counter(NextId, Local).currval(table) is None
    assert Local.get(1).id == 1 and list(Home.scan()) == []


@pytest.mark.modes("gapless")
def test_a_home_region_takes_the_whole_gapless_transaction(make_model, backend, described):
    """Gapless mode: the transaction (counter swap and item put) goes to the home region's endpoint."""
    separate_regions(backend)
    described(model=MREC, counter=MREC)
    table = backend.table_name("user")
    Home = in_region(make_model, backend, "us-east-1", table)
    Local = in_region(make_model, backend, "eu-west-1", table, autoinc_home_region="us-east-1",
                      autoinc_home_host=backend.meta.get("host"))
    first, second = Local(), Local()
    first.save()
    second.save()
    assert (first.id, second.id) == (1, 2)
    assert bind_counter(NextId, Home).currval(table) == 2
    assert sorted(u.id for u in Home.scan()) == [1, 2] and list(Local.scan()) == []


@pytest.mark.modes("fast", "gapless")
def test_two_regions_with_one_home_share_one_sequence(make_model, backend, described):
    """Processes in two regions homed on one region hand out one sequence between them."""
    described(model=MREC, counter=MREC)
    table = backend.table_name("user")
    in_region(make_model, backend, "us-east-1", table)
    East = in_region(make_model, backend, "us-east-1", table, autoinc_home_region="us-east-1",
                     autoinc_home_host=backend.meta.get("host"))
    West = in_region(make_model, backend, "eu-west-1", table, autoinc_home_region="us-east-1",
                     autoinc_home_host=backend.meta.get("host"))
    ids = []
    for model in (East, West, East, West):
        user = model()
        user.save()
        ids.append(user.id)
    assert ids == [1, 2, 3, 4]


# -- validation ---------------------------------------------------------------------------------------------------


@pytest.mark.modes("fast")
@pytest.mark.parametrize("options, message", [
    ({"autoinc_regions": ()}, "is empty"),
    ({"autoinc_regions": "us-east-1"}, "sequence of region names"),
    ({"autoinc_regions": ("us-east-1", "us-east-1")}, "more than once"),
    ({"autoinc_regions": ("us-east-1",), "autoinc_home_region": "us-east-1"}, "choose one"),
    ({"autoinc_home_region": "us-east-1", "autoinc_single_region_writes": True}, "choose one"),
    ({"autoinc_regions": ("us-east-1",), "autoinc_cycle": True}, "autoinc_cycle"),
    ({"autoinc_regions": ("us-east-1",), "autoinc_track_explicit": True}, "autoinc_track_explicit"),
    ({"autoinc_home_host": "http://localhost:8000"}, "autoinc_home_region too"),
    ({"autoinc_home_region": ""}, "region name"),
    ({"autoinc_single_region_writes": "yes"}, "True or False"),
    ({"autoinc_regions": ("a", "b", "c"), "autoinc_min": 1, "autoinc_max": 2}, "outside the bounds"),
])
def test_options_that_cannot_keep_the_promise_are_refused(make_model, options, message):
    """Combinations of the multi-region options that cannot keep IDs unique are refused with the fix."""
    with pytest.raises(ConfigurationError, match=message):
        make_model("User", create=False, **options)


@pytest.mark.modes("query")
@pytest.mark.parametrize("options", [{"autoinc_regions": ("us-east-1",)}, {"autoinc_home_region": "us-east-1"}])
def test_the_query_strategy_has_no_multi_region_scheme(make_model, options):
    """The query strategy keeps no counter, so neither scheme applies: refused, naming the counter strategy."""
    with pytest.raises(ConfigurationError, match="autoinc_strategy = 'counter'"):
        make_model("User", create=False, **options)


# -- the command line: seed and describe per region -------------------------------------------------------------


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, model: Any, *argv: str) -> Any:
    """Run ``pynamodb-autoinc`` in this process with ``model`` importable as ``<this module>:Named``."""
    from pynamodb_autoinc.cli import main

    monkeypatch.setattr(sys.modules[__name__], "Named", model, raising=False)
    code = main([argv[0], *[a.replace("MODEL", f"{__name__}:Named") for a in argv[1:]]])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.modes("fast")
def test_seed_moves_a_single_region_table_to_region_homed_sequences(make_model, backend, monkeypatch, capsys):
    """seed starts each region's counter past the IDs the single-region counter handed out, on its subsequence."""
    table = backend.table_name("user")
    Before = in_region(make_model, backend, "us-east-1", table)
    for _ in range(5):
        Before().save()
    After = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    code, out, err = run_cli(monkeypatch, capsys, After, "seed", "--model", "MODEL")
    assert code == 0, err
    assert f"{table}@us-east-1: restarted on start=1 step=2" in out and "the next value is 7" in out
    assert f"{table}@eu-west-1: restarted on start=2 step=2" in out and "the next value is 6" in out
    user = After()
    user.save()
    assert user.id == 7


@pytest.mark.modes("fast")
def test_seed_after_appending_a_region_restarts_every_region_on_the_new_layout(make_model, backend, monkeypatch,
                                                                                capsys):
    """Appending a region changes every region's step: seed restarts each past every ID, on its new subsequence."""
    table = backend.table_name("user")
    Two = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    for _ in range(3):
        Two().save()  # 1, 3, 5
    Three = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS)
    code, out, err = run_cli(monkeypatch, capsys, Three, "seed", "--model", "MODEL")
    assert code == 0, err
    nexts = {line.split(":")[0]: int(line.rsplit(" ", 1)[1]) for line in out.splitlines()}
    assert nexts == {f"{table}@us-east-1": 7, f"{table}@eu-west-1": 8, f"{table}@ap-south-1": 6}
    user = Three()
    user.save()
    assert user.id == 7


@pytest.mark.modes("fast")
def test_seed_refuses_a_reordered_list(make_model, backend, monkeypatch, capsys):
    """A list whose regions changed places is refused by seed, naming the reorder, and nothing moves."""
    table = backend.table_name("user")
    Ordered = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    Ordered().save()
    Swapped = in_region(make_model, backend, "us-east-1", table, autoinc_regions=tuple(reversed(REGIONS[:2])))
    code, out, err = run_cli(monkeypatch, capsys, Swapped, "seed", "--model", "MODEL")
    assert code == 1
    assert "reordered" in err
    assert counter_of(Ordered, f"{table}@us-east-1") == (1, SequenceOptions(1, 2, 1, 2**63 - 1, False))


@pytest.mark.modes("fast")
def test_seed_raises_region_counters_past_stored_ids_once(make_model, backend, monkeypatch, capsys):
    """seed raises every region's counter past the largest stored ID, and leaves it on a re-run."""
    table = backend.table_name("user")
    User = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    User().save()  # records the layout on us-east-1's counter
    User(id=20).save()
    code, out, _ = run_cli(monkeypatch, capsys, User, "seed", "--model", "MODEL")
    assert code == 0
    assert f"{table}@us-east-1: raised; the next value is 21" in out
    assert f"{table}@eu-west-1: restarted on start=2 step=2" in out and "the next value is 22" in out
    code, again, _ = run_cli(monkeypatch, capsys, User, "seed", "--model", "MODEL")
    assert f"{table}@us-east-1: already past every ID; the next value is 21" in again
    assert f"{table}@eu-west-1: already past every ID; the next value is 22" in again


@pytest.mark.modes("fast")
def test_describe_shows_each_region_counter(make_model, backend, monkeypatch, capsys):
    """describe --model lists each region's counter with its subsequence."""
    table = backend.table_name("user")
    East = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    East().save()
    code, out, err = run_cli(monkeypatch, capsys, East, "seed", "--model", "MODEL")
    code, out, err = run_cli(monkeypatch, capsys, East, "describe", "--model", "MODEL", "--json")
    assert code == 0, err
    rows = {row["key"]: (row["start"], row["step"], row["last_value"]) for row in json.loads(out)}
    assert rows == {f"{table}@us-east-1": (1, 2, 1), f"{table}@eu-west-1": (2, 2, 0)}


@pytest.mark.modes("fast")
def test_commands_on_one_counter_need_the_region_key(make_model, backend, monkeypatch, capsys):
    """restart of a region-homed model without --key is refused, naming a region key; with one, it uses the
    region's subsequence."""
    table = backend.table_name("user")
    User = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    code, _, err = run_cli(monkeypatch, capsys, User, "restart", "--model", "MODEL")
    assert code == 1 and f"'{table}@us-east-1'" in err
    code, out, err = run_cli(monkeypatch, capsys, User, "restart", "--model", "MODEL", "--key",
                             f"{table}@eu-west-1")
    assert code == 0, err
    assert counter_of(User, f"{table}@eu-west-1") == (0, SequenceOptions(2, 2, 1, 2**63 - 1, False))


# -- the IAM policy -------------------------------------------------------------------------------------------------


@pytest.mark.modes("fast")
@pytest.mark.parametrize("single", [False, True])
def test_the_policy_grants_describe_table_unless_writes_stay_in_one_region(make_model, single):
    """required_actions() grants DescribeTable on both tables, except with Meta.autoinc_single_region_writes."""
    from pynamodb_autoinc.iam import required_actions

    User = make_model("User", create=False, autoinc_single_region_writes=single)
    actions = required_actions(User)
    assert [("dynamodb:DescribeTable" in actions[t]) for t in (User.Meta.table_name, "NextId")] == [not single] * 2


@pytest.mark.modes("gapless")
def test_the_home_host_is_the_endpoint_of_every_home_request(make_model):
    """With Meta.autoinc_home_host, the counter and (gapless) the transaction use that endpoint and region."""
    User = make_model("User", create=False, region="eu-west-1", autoinc_home_region="us-east-1",
                      autoinc_home_host="http://home.invalid:8000")
    counter = User.autoinc_options().counter
    connection = regions.write_connection(User)
    assert (counter.Meta.region, counter.Meta.host) == ("us-east-1", "http://home.invalid:8000")
    assert (connection.region, connection.host) == ("us-east-1", "http://home.invalid:8000")
    assert User._get_connection().connection.region == "eu-west-1"


@pytest.mark.modes("fast")
def test_without_meta_region_the_region_botocore_resolves_is_used(make_model, backend, described):
    """A model with no Meta.region numbers for the region botocore resolves (here AWS_DEFAULT_REGION)."""
    described()
    User = make_model("User", region=None, autoinc_regions=("eu-west-1", "us-east-1"))
    user = User()
    user.save()
    assert user.id == 2
    assert counter_of(User, f"{User.Meta.table_name}@us-east-1")[0] == 2


@pytest.mark.modes("gapless")
def test_a_transact_write_of_a_home_gapless_item_goes_to_the_home_region(make_model, backend, described):
    """A user's TransactWrite holding a new gapless item of a home-region model is sent to the home region."""
    from pynamodb_autoinc import TransactWrite

    separate_regions(backend)
    described(model=MREC, counter=MREC)
    table = backend.table_name("user")
    Home = in_region(make_model, backend, "us-east-1", table)
    Local = in_region(make_model, backend, "eu-west-1", table, autoinc_home_region="us-east-1",
                      autoinc_home_host=backend.meta.get("host"))
    user = Local()
    with TransactWrite(connection=Local._get_connection().connection) as tx:
        tx.save(user)
    assert user.id == 1
    assert [u.id for u in Home.scan()] == [1] and list(Local.scan()) == []


# -- region-homed counters: values on the region's subsequence, appended regions, check per region ---------------


def replicate_counters(source: Any, target: Any) -> None:
    """Copy every counter item of ``source``'s region into ``target``'s, as a global table's replication would
    (moto keeps one table per region; on DynamoDB Local, which shares them, this rewrites the same items)."""
    src = source.autoinc_options().counter._get_connection()
    dst = target.autoinc_options().counter
    items = src.scan(consistent_read=True).get("Items", [])
    for item in items:
        dst._get_connection().connection.dispatch("PutItem", {"TableName": dst.Meta.table_name, "Item": item})


@pytest.mark.modes("fast")
def test_set_refuses_a_value_off_the_region_subsequence(make_model, backend, monkeypatch, capsys):
    """set of a region counter to another region's value is refused, naming the subsequence and a value on it."""
    table = backend.table_name("user")
    User = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    User().save()  # 1
    code, _, err = run_cli(monkeypatch, capsys, User, "set", "6", "--model", "MODEL", "--key", f"{table}@us-east-1")
    assert code == 1
    assert "off the subsequence of region 'us-east-1'" in err and "1, 3, 5, ..." in err
    assert "such as 7 (or 5)" in err
    assert counter_of(User, f"{table}@us-east-1")[0] == 1


@pytest.mark.modes("fast")
def test_set_accepts_a_value_on_the_region_subsequence(make_model, backend, monkeypatch, capsys):
    """set of a region counter to a value of its own subsequence is taken; the next save follows it."""
    table = backend.table_name("user")
    User = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    User().save()
    code, _, err = run_cli(monkeypatch, capsys, User, "set", "9", "--model", "MODEL", "--key", f"{table}@us-east-1")
    assert code == 0, err
    user = User()
    user.save()
    assert user.id == 11


@pytest.mark.modes("fast")
def test_set_no_is_called_refuses_a_next_value_off_the_region_subsequence(make_model, backend, monkeypatch,
                                                                          capsys):
    """set --no-is-called of a region counter refuses a next value of another region."""
    table = backend.table_name("user")
    User = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    User().save()
    code, _, err = run_cli(monkeypatch, capsys, User, "set", "4", "--no-is-called", "--model", "MODEL", "--key",
                           f"{table}@us-east-1")
    assert code == 1 and "such as 5 (or 3)" in err
    assert counter_of(User, f"{table}@us-east-1")[0] == 1


@pytest.mark.modes("fast")
def test_set_without_the_model_refuses_a_value_off_the_recorded_subsequence(make_model, backend, monkeypatch,
                                                                            capsys):
    """set --key of a region counter, no model named, checks the value against the subsequence it records."""
    table = backend.table_name("user")
    User = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    User().save()
    host = ["--host", backend.meta["host"]] if backend.meta.get("host") else []  # DynamoDB Local's endpoint
    code, _, err = run_cli(monkeypatch, capsys, User, "--region", "us-east-1", *host, "set", "6", "--key",
                           f"{table}@us-east-1")
    assert code == 1 and "off the subsequence of region 'us-east-1'" in err
    assert counter_of(User, f"{table}@us-east-1")[0] == 1


@pytest.mark.modes("fast")
def test_restart_refuses_a_value_off_the_region_subsequence(make_model, backend, monkeypatch, capsys):
    """restart --with another region's value is refused before anything is written."""
    table = backend.table_name("user")
    User = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    User().save()
    code, _, err = run_cli(monkeypatch, capsys, User, "restart", "--model", "MODEL", "--key", f"{table}@eu-west-1",
                           "--with", "9", "--force")
    assert code == 1
    assert "off the subsequence of region 'eu-west-1'" in err and "2, 4, 6, ..." in err and "10 (or 8)" in err
    assert counter_of(User, f"{table}@eu-west-1") == (None, None)


@pytest.mark.modes("gapless")
def test_check_audits_each_region_against_its_subsequence(make_model, backend, monkeypatch, capsys):
    """check of a healthy region-homed table reports each region's counter without holes, and exits 0."""
    table = backend.table_name("user")
    User = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    for _ in range(4):
        User().save()  # 1, 3, 5, 7
    for i in (2, 4):
        User(id=i).save()  # eu-west-1's, replicated
    code, out, err = run_cli(monkeypatch, capsys, User, "check", "--model", "MODEL", "--json")
    assert code == 0, err
    rows = {r["key"]: (r["items"], r["holes"], r["off_sequence"]) for r in json.loads(out)}
    assert rows == {f"{table}@us-east-1": (4, 0, 0), f"{table}@eu-west-1": (2, 0, 0)}


@pytest.mark.modes("fast")
def test_check_finds_a_hole_within_one_region(make_model, backend, monkeypatch, capsys):
    """check counts a value missing from one region's own subsequence as a hole of that region."""
    table = backend.table_name("user")
    User = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    for i in (1, 5, 2):
        User(id=i).save()
    code, out, err = run_cli(monkeypatch, capsys, User, "check", "--model", "MODEL", "--json")
    assert code == 0, err
    rows = {r["key"]: (r["holes"], r["hole_ranges"]) for r in json.loads(out)}
    assert rows == {f"{table}@us-east-1": (1, [[3, 3]]), f"{table}@eu-west-1": (0, [])}


@pytest.mark.modes("fast", "block", "gapless")
def test_an_appended_region_is_refused_until_seed(make_model, backend, described, mode):
    """A save in a region appended to the list, before seed, raises SequenceMismatchError naming seed;
    nothing is spent."""
    described()
    table = backend.table_name("user")
    Two = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    for _ in range(3):
        Two().save()  # 1, 3, 5
    Three = in_region(make_model, backend, "ap-south-1", table, autoinc_regions=REGIONS)
    replicate_counters(Two, Three)
    user = Three()
    with pytest.raises(SequenceMismatchError) as info:
        user.save()
    assert "pynamodb-autoinc seed" in str(info.value) and "'ap-south-1'" in str(info.value)
    assert user.id is None
    assert counter_of(Three, f"{table}@ap-south-1") == (None, None)


@pytest.mark.modes("fast")
def test_an_appended_region_is_refused_in_save_all(make_model, backend, described):
    """save_all() in an appended region, before seed, is refused before any value is reserved."""
    described()
    table = backend.table_name("user")
    Two = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    Two().save()
    Three = in_region(make_model, backend, "ap-south-1", table, autoinc_regions=REGIONS)
    replicate_counters(Two, Three)
    with pytest.raises(BulkSaveError, match="seed") as info:
        Three.save_all([Three(), Three()])
    assert isinstance(info.value.__cause__, SequenceMismatchError)
    assert counter_of(Three, f"{table}@ap-south-1") == (None, None)


@pytest.mark.modes("fast")
def test_an_appended_region_saves_after_seed(make_model, backend, described, monkeypatch, capsys):
    """After seed, the appended region numbers its own subsequence past every ID."""
    described()
    table = backend.table_name("user")
    Two = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    for _ in range(3):
        Two().save()  # 1, 3, 5
    Three = in_region(make_model, backend, "ap-south-1", table, autoinc_regions=REGIONS)
    East = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS)
    code, _, err = run_cli(monkeypatch, capsys, East, "seed", "--model", "MODEL")
    assert code == 0, err
    replicate_counters(East, Three)
    user = Three()
    user.save()
    assert user.id == 6


@pytest.mark.modes("fast", "gapless")
def test_a_region_listed_from_the_start_saves_after_another_region(make_model, backend, described, mode):
    """A region whose counter is new while the other regions' record the same layout is not refused."""
    described()
    table = backend.table_name("user")
    East = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    East().save()
    West = in_region(make_model, backend, "eu-west-1", table, autoinc_regions=REGIONS[:2])
    replicate_counters(East, West)
    user = West()
    user.save()
    assert user.id == 2


@pytest.mark.modes("fast")
def test_moving_to_region_homed_sequences_without_seed_is_refused(make_model, backend, described):
    """A table whose single-region counter handed out values, newly listing regions, is refused until seed."""
    described()
    table = backend.table_name("user")
    Before = in_region(make_model, backend, "us-east-1", table)
    for _ in range(3):
        Before().save()
    After = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    with pytest.raises(SequenceMismatchError, match="single-region counter"):
        After().save()
    assert counter_of(After, f"{table}@us-east-1") == (None, None)


@pytest.mark.modes("fast")
def test_seed_dry_run_of_region_counters_writes_nothing(make_model, backend, monkeypatch, capsys):
    """seed --dry-run of a region-homed model says what each region counter would become and writes nothing."""
    table = backend.table_name("user")
    Two = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    for _ in range(3):
        Two().save()
    Three = in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS)
    before = [counter_of(Three, f"{table}@{r}") for r in REGIONS]
    code, out, err = run_cli(monkeypatch, capsys, Three, "seed", "--model", "MODEL", "--dry-run")
    assert code == 0, err
    assert f"{table}@ap-south-1: would be restarted from None (no options) to 3 on start=3 step=3" in out
    assert "nothing was written" in out
    assert [counter_of(Three, f"{table}@{r}") for r in REGIONS] == before


@pytest.mark.modes("fast", "gapless")
def test_policy_for_one_region_includes_the_home_regions_tables(make_model, monkeypatch, capsys, mode):
    """`--region eu-west-1 policy` of a home-region model grants the counter table in the home region (and the
    model table there too, in gapless mode)."""
    User = make_model("User", create=False, region="eu-west-1", autoinc_home_region="us-east-1")
    code, out, err = run_cli(monkeypatch, capsys, User, "--region", "eu-west-1", "policy", "--model", "MODEL",
                             "--account", "123456789012")
    assert code == 0, err
    resources: Dict[str, set] = {}
    for statement in json.loads(out)["Statement"]:
        arns = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for arn in arns:
            table = arn.rsplit("/", 1)[1]
            resources.setdefault(table, set()).add(arn.split(":")[3])
    assert resources["NextId"] == {"us-east-1"}
    assert resources[User.Meta.table_name] == ({"eu-west-1", "us-east-1"} if mode == "gapless" else {"eu-west-1"})


def test_history_explicit_id_on_strong_consistency_is_refused(backend, monkeypatch):
    """An auto-ID history model on MRSC: an explicit-ID save (still a transaction) is refused too."""
    from pynamodb_autoinc import regions
    from pynamodb_autoinc.exceptions import GlobalTableError

    Doc, _ = auto_history_doc(backend, autoinc_gapless=False)
    monkeypatch.setattr(regions, "describe_table", lambda connection, table: dict(MRSC, TableName=table))
    with pytest.raises(GlobalTableError):
        Doc(id=5).save()
    assert Doc.count() == 0


@pytest.mark.modes("fast")
def test_api_setval_refuses_a_value_off_the_region_subsequence(make_model, backend):
    """NextId.setval/restart of a region counter to another region's value is refused (the API, not only the
    CLI), naming a value on the subsequence; a value on it is taken."""
    from pynamodb_autoinc.exceptions import OutOfBoundsError

    table = backend.table_name("user")
    User = region_model(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    User().save()  # 1
    counter, key = User.autoinc_options().counter, f"{table}@us-east-1"
    with pytest.raises(OutOfBoundsError, match="off the subsequence of region 'us-east-1'.*such as 7 \\(or 5\\)"):
        counter.setval(key, 6)
    with pytest.raises(OutOfBoundsError, match="off the subsequence"):
        counter.setval(key, 4, is_called=False)
    with pytest.raises(OutOfBoundsError, match="off the subsequence"):
        counter.restart(key, counter.stored_options(key), 8)
    assert counter.currval(key) == 1
    counter.setval(key, 5)
    user = User()
    user.save()
    assert user.id == 7


@pytest.mark.modes("fast", "gapless")
def test_an_appended_region_is_refused_in_a_transaction(make_model, backend, monkeypatch, mode):
    """TransactWrite.save() of a new item in a region appended before seed: SequenceMismatchError, nothing spent."""
    from pynamodb_autoinc import regions
    from pynamodb_autoinc.exceptions import SequenceMismatchError
    from tests.test_global_tables import SINGLE, counter_of, replicate_counters

    monkeypatch.setattr(regions, "describe_table", lambda connection, table: dict(SINGLE, TableName=table))
    table = backend.table_name("user")
    Two = region_model(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    for _ in range(3):
        Two().save()
    Three = region_model(make_model, backend, "ap-south-1", table, autoinc_regions=REGIONS)
    replicate_counters(Two, Three)
    user = Three()
    with pytest.raises(SequenceMismatchError), TransactWrite(connection=Three._get_connection().connection) as tx:
        tx.save(user)
    assert user.id is None
    assert counter_of(Three, f"{table}@ap-south-1") == (None, None)


@pytest.mark.modes()
@pytest.mark.parametrize("key", ["a@b", "orders#x@example.com"])
def test_setval_of_an_own_key_holding_an_at_sign_is_not_checked_as_a_region_counter(backend, key):
    """``NextId.setval`` and ``NextId.restart`` of an ordinary counter whose key holds ``@`` (a key of your own,
    or a scope value such as an e-mail address) with a step of 2 take any value within the bounds, as a
    PostgreSQL sequence does; only a key ending ``@`` and a region name is checked against a region's
    subsequence."""
    counter = backend.counter()
    sequence = SequenceOptions.of(step=2)
    assert counter.nextval(key, sequence) == 1
    counter.setval(key, 4)
    assert counter.nextval(key, sequence) == 6
    counter.restart(key, sequence, 10)
    assert counter.nextval(key, sequence) == 10


@pytest.mark.modes()
def test_setval_of_a_region_counter_off_its_subsequence_is_still_refused(backend):
    """A counter key ending ``@`` and a region name, with a step of 2 recorded, is still a region counter:
    ``setval`` to a value of the other region's subsequence is refused with ``OutOfBoundsError``."""
    counter = backend.counter()
    sequence = SequenceOptions.of(step=2)
    counter.nextval("user@us-east-1", sequence)
    with pytest.raises(OutOfBoundsError, match="off the subsequence of region 'us-east-1'"):
        counter.setval("user@us-east-1", 4)
    assert counter.currval("user@us-east-1") == 1


@pytest.mark.modes("fast", "block")
def test_history_on_strong_consistency_is_refused_before_a_value_is_spent(make_model, backend, monkeypatch):
    """On an MRSC global table, a history save is refused with GlobalTableError and no counter value is spent."""
    monkeypatch.setattr(regions, "describe_table", lambda connection, table: dict(MRSC, TableName=table))
    history = history_model(backend)
    Doc = make_model("Doc", bases=(HistoryMixin,), revision=VersionAttribute(), history_model=history)
    with pytest.raises(GlobalTableError, match="MRSC"):
        Doc().save()
    opts = Doc.autoinc_options()
    assert opts.counter.currval(opts.key) is None


@pytest.mark.modes("fast")
def test_history_save_all_on_strong_consistency_is_refused_before_any_save(make_model, backend, monkeypatch):
    """On an MRSC global table, save_all() of a history model raises GlobalTableError before saving any item."""
    monkeypatch.setattr(regions, "describe_table", lambda connection, table: dict(MRSC, TableName=table))
    history = history_model(backend)
    Doc = make_model("Doc", bases=(HistoryMixin,), revision=VersionAttribute(), history_model=history)
    docs = [Doc(), Doc()]
    with pytest.raises(GlobalTableError, match="MRSC"):
        Doc.save_all(docs)
    assert [d.id for d in docs] == [None, None]
    opts = Doc.autoinc_options()
    assert opts.counter.currval(opts.key) is None
