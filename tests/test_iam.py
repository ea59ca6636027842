"""The library sends no DynamoDB action outside the policy pynamodb_autoinc.iam documents, in each mode."""

from __future__ import annotations

from typing import Any, Dict, Iterator, Set

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from pynamodb_autoinc import NextId, TransactWrite
from pynamodb_autoinc.exceptions import AutoIncrementError
from pynamodb_autoinc.iam import policy, required_actions

TRANSACT = {"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem", "Delete": "dynamodb:DeleteItem",
            "ConditionCheck": "dynamodb:ConditionCheckItem"}


class Recorder:
    """Every action sent by the model's and its counter's clients, per table, transactions expanded."""

    def __init__(self, *clients: Any) -> None:
        self.actions: Dict[str, Set[str]] = {}
        self.clients = list({id(c): c for c in clients}.values())
        for client in self.clients:
            client.meta.events.register("before-parameter-build.dynamodb", self.record)

    def record(self, params: Dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "TransactWriteItems":
            for item in params["TransactItems"]:
                (kind, body), = item.items()
                self.actions.setdefault(body["TableName"], set()).add(TRANSACT[kind])
        else:
            self.actions.setdefault(params.get("TableName", "?"), set()).add(f"dynamodb:{model.name}")

    def remove(self) -> None:
        for client in self.clients:
            client.meta.events.unregister("before-parameter-build.dynamodb", self.record)


CONFIGS: Dict[str, Dict[str, Any]] = {
    "fast": {},
    "block": {"autoinc_block": 5},
    "gapless": {"autoinc_gapless": True},
    "in-table": {"autoinc_counter_in_table": True, "autoinc_gapless": True},
    "query": {"autoinc_strategy": "query"},
}


@pytest.fixture(params=sorted(CONFIGS))
def configured(request, make_model) -> Iterator[Any]:
    options = dict(CONFIGS[request.param])
    if request.param == "query":
        model = make_model("Item", pk=UnicodeAttribute(hash_key=True), id=NumberAttribute(range_key=True),
                           autoinc_attribute="id", **options)
    else:
        model = make_model("Item", pk=UnicodeAttribute(hash_key=True), id=NumberAttribute(null=True),
                           autoinc_attribute="id", **{"autoinc_gapless": False, **options})
    yield model


def exercise(model: Any) -> None:
    """New saves, a collision, a failed condition, an explicit ID, a transaction and a bulk save."""
    for pk in ("a", "b"):
        model(pk=pk).save()
    if model.autoinc_options().strategy == "query":
        model(pk="a").save()  # the next number in partition a: no collision in this strategy
    else:
        with pytest.raises(AutoIncrementError):
            model(pk="a").save()
    with pytest.raises(AutoIncrementError):
        model(pk="c").save(condition=model.pk == "x")
    model(pk="d", id=99).save()
    with TransactWrite(connection=model._get_connection().connection) as tx:
        tx.save(model(pk="e"))
    model.save_all([model(pk="f"), model(pk="g")])


@pytest.mark.modes()  # its models set their own mode
def test_actions_stay_within_the_policy(configured):
    """Everything the library sends in this mode is in required_actions(model)."""
    model = configured
    recorder = Recorder(model._get_connection().connection.client,
                        model.autoinc_options().counter._get_connection().connection.client)
    try:
        exercise(model)
    finally:
        recorder.remove()
    allowed = required_actions(model)
    assert recorder.actions, "nothing was recorded"
    for table, actions in recorder.actions.items():
        assert actions <= allowed.get(table, set()), f"{table}: {sorted(actions - allowed.get(table, set()))}"


@pytest.mark.modes()  # its models set their own mode
def test_policy_document(make_model):
    """policy() renders one statement per table with the table's ARN."""
    User = make_model("User", autoinc_gapless=True)
    document = policy(User, region="eu-west-1", account="123456789012")
    resources = {s["Resource"]: s["Action"] for s in document["Statement"]}
    assert resources == {
        "arn:aws:dynamodb:eu-west-1:123456789012:table/NextId":
            ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:UpdateItem"],
        f"arn:aws:dynamodb:eu-west-1:123456789012:table/{User.Meta.table_name}":
            ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem"],
    }


class RegionRecorder:
    """Every action sent, per (region, table), from the clients of a model, its counter and its home writes."""

    def __init__(self, *clients: Any) -> None:
        self.actions: Dict[Any, Set[str]] = {}
        self.clients = list({id(c): c for c in clients}.values())
        self.handlers = []
        for client in self.clients:
            handler = self.recorder(client.meta.region_name)
            client.meta.events.register("before-parameter-build.dynamodb", handler)
            self.handlers.append((client, handler))

    def recorder(self, region: str) -> Any:
        def record(params: Dict[str, Any], model: Any, **_: Any) -> None:
            if model.name == "TransactWriteItems":
                for item in params["TransactItems"]:
                    (kind, body), = item.items()
                    self.actions.setdefault((region, body["TableName"]), set()).add(TRANSACT[kind])
            else:
                self.actions.setdefault((region, params.get("TableName", "?")), set()).add(f"dynamodb:{model.name}")

        return record

    def remove(self) -> None:
        for client, handler in self.handlers:
            client.meta.events.unregister("before-parameter-build.dynamodb", handler)


@pytest.mark.modes()
@pytest.mark.parametrize("gapless", [False, True], ids=["fast", "gapless"])
def test_a_home_region_models_requests_stay_within_its_regional_policy(make_model, backend, gapless):
    """With Meta.autoinc_home_region, every request, in whichever region it is sent, is granted by the policy
    for the process's region, which names the home region's tables."""
    from pynamodb_autoinc import regions

    if backend.name == "local":
        pytest.skip("DynamoDB Local (-sharedDb) keeps one table for every region; moto keeps one per region")
    attrs = {"pk": UnicodeAttribute(hash_key=True), "id": NumberAttribute(null=True)}
    table = backend.table_name("item")
    make_model("Item", region="us-east-1", table_name=table, autoinc_attribute="id", autoinc_gapless=gapless,
               **attrs)  # the home region's tables
    model = make_model("Item", region="eu-west-1", table_name=table, autoinc_attribute="id",
                       autoinc_gapless=gapless, autoinc_home_region="us-east-1", **attrs)
    backend.counter(model=model)  # the counter table of the local region (unused: counters live at home)
    recorder = RegionRecorder(model._get_connection().connection.client,
                              model.autoinc_options().counter._get_connection().connection.client,
                              regions.write_connection(model).client)
    try:
        exercise(model)
    finally:
        recorder.remove()
    granted: Dict[Any, Set[str]] = {}
    for statement in policy(model, region="eu-west-1", account="1")["Statement"]:
        arns = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for arn in arns:
            granted.setdefault((arn.split(":")[3], arn.rsplit("/", 1)[1]), set()).update(statement["Action"])
    assert ("us-east-1", "NextId") in recorder.actions
    for where, actions in recorder.actions.items():
        assert actions <= granted.get(where, set()), f"{where}: {sorted(actions - granted.get(where, set()))}"


def arns(document: Dict[str, Any]) -> Dict[str, Any]:
    """{ARN: actions} of a policy document."""
    found: Dict[str, Any] = {}
    for statement in document["Statement"]:
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for arn in resources:
            found[arn] = statement["Action"]
    return found


@pytest.mark.modes("fast")
def test_a_counter_class_in_its_own_region_is_granted_there(make_model):
    """A counter class whose Meta sets its own region keeps its table there: the policy names the counter
    table's ARN in that region, whatever region the model's process is in."""
    class FarCounter(NextId):
        class Meta:
            table_name = "far-counters"
            region = "eu-west-1"

    model = make_model("Item", create=False, autoinc_counter=FarCounter, region="us-west-2")
    for region in ("*", "us-west-2"):
        granted = arns(policy(model, region=region, account="1"))
        assert set(granted) == {f"arn:aws:dynamodb:us-west-2:1:table/{model.Meta.table_name}",
                                "arn:aws:dynamodb:eu-west-1:1:table/far-counters"}, region


@pytest.mark.modes("fast")
def test_the_policy_names_the_region_the_model_sets(make_model):
    """policy(Model) of a model with Meta.region names its tables in that region, not every region."""
    model = make_model("Item", create=False, region="ap-south-1")
    assert set(arns(policy(model, account="1"))) == {
        f"arn:aws:dynamodb:ap-south-1:1:table/{model.Meta.table_name}", "arn:aws:dynamodb:ap-south-1:1:table/NextId"}


def history_models(backend: Any, **page_meta: Any) -> Any:
    """A numbered Page (HistoryMixin, AutoIncrementMixin) and its history model, tables created."""
    from pynamodb.attributes import BooleanAttribute, VersionAttribute
    from pynamodb.models import Model

    from pynamodb_autoinc import AutoIncrementMixin, HistoryMixin

    history_meta = {**backend.meta, **page_meta.pop("history_meta", {})}
    history = type("PageVersion", (Model,), {
        "Meta": type("Meta", (), {"table_name": backend.table_name("page-history"), **history_meta}),
        "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "title": UnicodeAttribute(null=True)})
    page = type("Page", (HistoryMixin, AutoIncrementMixin, Model), {
        "Meta": type("Meta", (), {"table_name": backend.table_name("page"), "history_model": history,
                                  **backend.meta, **page_meta}),
        "id": NumberAttribute(hash_key=True), "title": UnicodeAttribute(null=True), "revision": VersionAttribute()})
    for model in (history, page):
        backend.create(model)
    backend.counter(model=page)
    return page, history


@pytest.mark.modes()  # its models set their own mode
@pytest.mark.parametrize("block", [1, 5], ids=["fast", "block"])
def test_a_numbered_history_models_requests_stay_within_the_policy(backend, block):
    """A HistoryMixin model numbered by the library: new saves, edits, save_all, versions and a delete send
    nothing outside required_actions, on the item's, the history's and the counter's tables."""
    page, history = history_models(backend, autoinc_gapless=False, autoinc_block=block)
    recorder = Recorder(page._get_connection().connection.client, history._get_connection().connection.client,
                        page.autoinc_options().counter._get_connection().connection.client)
    try:
        first = page(title="a")
        first.save()
        first.title = "b"
        first.save()
        page.save_all([page(title="c"), page(title="d")])
        list(first.versions())
        first.delete()
    finally:
        recorder.remove()
    allowed = required_actions(page)
    assert set(recorder.actions) == {page.Meta.table_name, history.Meta.table_name,
                                     page.autoinc_options().counter.Meta.table_name}
    for table, actions in recorder.actions.items():
        assert actions <= allowed.get(table, set()), f"{table}: {sorted(actions - allowed.get(table, set()))}"


@pytest.mark.backends("moto")
@pytest.mark.modes()
def test_a_history_model_in_another_region_is_granted_there(backend):
    """A history model whose Meta.region differs from the model's is granted in its own region."""
    page, history = history_models(backend, autoinc_gapless=False, history_meta={"region": "eu-central-1"})
    granted = arns(policy(page, account="1"))
    assert f"arn:aws:dynamodb:eu-central-1:1:table/{history.Meta.table_name}" in granted
    assert f"arn:aws:dynamodb:us-east-1:1:table/{page.Meta.table_name}" in granted


@pytest.mark.modes("fast")
def test_a_global_tables_model_is_granted_in_every_region_by_default(make_model):
    """A model writing a global table from several regions (Meta.autoinc_regions) runs with one Meta.region
    per deployment: policy(Model) grants every region, and policy(Model, region=R) the process's region R."""
    model = make_model("Item", create=False, region="us-east-1", autoinc_regions=["us-east-1", "eu-west-1"])
    table = model.Meta.table_name
    assert set(arns(policy(model, account="1"))) == {f"arn:aws:dynamodb:*:1:table/{table}",
                                                     "arn:aws:dynamodb:*:1:table/NextId"}
    assert set(arns(policy(model, region="eu-west-1", account="1"))) == {
        f"arn:aws:dynamodb:eu-west-1:1:table/{table}", "arn:aws:dynamodb:eu-west-1:1:table/NextId"}


# -- several models, a pinned region, own counter keys ---------------------------------------------------------


def conditions(document: Dict[str, Any]) -> Dict[str, Any]:
    """{ARN: its statement's Condition (None: none)} of a policy document."""
    found: Dict[str, Any] = {}
    for statement in document["Statement"]:
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for arn in resources:
            found[arn] = statement.get("Condition")
    return found


@pytest.mark.modes("fast")
def test_the_policy_of_several_models_is_one_document(make_model):
    """policy(Order, Ledger) merges the two: each table once, the shared counter table with what both need (the
    gapless Ledger's and the fast Order's actions), every ARN in one statement of its table."""
    order = make_model("Order", create=False, region="us-east-1")
    ledger = make_model("Ledger", create=False, region="us-east-1", autoinc_gapless=True, autoinc_key="ledger")
    document = policy(order, ledger, account="1")
    granted = arns(document)
    assert set(granted) == {f"arn:aws:dynamodb:us-east-1:1:table/{t}"
                            for t in ("NextId", order.Meta.table_name, ledger.Meta.table_name)}
    assert granted["arn:aws:dynamodb:us-east-1:1:table/NextId"] == sorted(
        set(required_actions(order)["NextId"]) | set(required_actions(ledger)["NextId"]))
    assert len(document["Statement"]) == 3


@pytest.mark.modes("fast")
def test_the_region_given_is_pinned_for_every_model_merged(make_model):
    """policy(A, B, region="eu-west-1") of a model in us-west-2 and one naming no region grants every table in
    eu-west-1 only."""
    first = make_model("First", create=False, region="us-west-2")
    second = make_model("Second", create=False)
    granted = arns(policy(first, second, region="eu-west-1", account="1"))
    assert {arn.split(":")[3] for arn in granted} == {"eu-west-1"}


@pytest.mark.modes("fast")
def test_own_counters_only_keeps_the_counter_table_to_the_models_keys(make_model):
    """own_counters_only=True adds a dynamodb:LeadingKeys condition to the counter table's statement alone: the
    key of a model with one counter, and ``key#*`` for one numbered per scope value or per period."""
    order = make_model("Order", create=False, region="us-east-1", autoinc_key="orders")
    issue = make_model("Issue", create=False, region="us-east-1", autoinc_key="issues", autoinc_scope="project",
                       autoinc_attribute="number", project=UnicodeAttribute(hash_key=True),
                       number=NumberAttribute(range_key=True))
    found = conditions(policy(order, issue, account="1", own_counters_only=True))
    assert found.pop("arn:aws:dynamodb:us-east-1:1:table/NextId") == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["issues#*", "orders"]}}
    assert set(found.values()) == {None}


@pytest.mark.modes("fast")
def test_own_counter_keys_of_region_homed_sequences_name_each_region(make_model):
    """With Meta.autoinc_regions the counter keys are each region's (``key@region``) and the single-region one
    that seed and a first save read."""
    from pynamodb_autoinc.iam import counter_keys

    model = make_model("Order", create=False, region="us-east-1", autoinc_key="orders",
                       autoinc_regions=["us-east-1", "eu-west-1"])
    assert counter_keys(model) == ["orders", "orders@us-east-1", "orders@eu-west-1"]


@pytest.mark.modes("gapless")
def test_own_counters_only_refuses_counters_in_the_models_table(make_model):
    """A model keeping its counters in its own table (autoinc_counter_in_table) cannot be kept to its counter keys:
    own_counters_only raises ConfigurationError naming the option; without it the policy is as before."""
    from pynamodb_autoinc.exceptions import ConfigurationError

    model = make_model("Ledger", create=False, pk=UnicodeAttribute(hash_key=True), num=NumberAttribute(null=True),
                       autoinc_attribute="num", autoinc_counter_in_table=True)
    with pytest.raises(ConfigurationError, match="autoinc_counter_in_table"):
        policy(model, own_counters_only=True)
    assert policy(model)["Statement"]


@pytest.mark.modes("fast", "gapless")
def test_the_counter_keys_the_library_sends_match_its_own_counters_condition(make_model, backend):
    """Every key a save of a model numbered per scope value sends to the counter table (alone, or inside a
    transaction) matches the LeadingKeys patterns of own_counters_only."""
    import fnmatch

    from pynamodb_autoinc.iam import counter_keys

    model = make_model("Issue", autoinc_key="issues", autoinc_scope="project", autoinc_attribute="number",
                       project=UnicodeAttribute(hash_key=True), number=NumberAttribute(range_key=True))
    counter = model.autoinc_options().counter
    sent: Set[str] = set()

    def record(params: Dict[str, Any], model: Any, **_: Any) -> None:
        requests = [body for item in params.get("TransactItems", []) for body in item.values()] or [params]
        sent.update(body["Key"]["NextKey"]["S"] for body in requests
                    if body.get("TableName") == counter.Meta.table_name and "Key" in body)

    events = counter._get_connection().connection.client.meta.events
    events.register("before-parameter-build.dynamodb", record)
    try:
        for project in ("a", "b#c", "a"):
            model(project=project).save()
    finally:
        events.unregister("before-parameter-build.dynamodb", record)
    patterns = counter_keys(model) or []
    assert sent and all(any(fnmatch.fnmatchcase(key, p) for p in patterns) for key in sent), (sent, patterns)


@pytest.mark.backends()  # nothing is sent
def test_the_policy_command_takes_several_models_a_region_and_own_counters_only(capsys, monkeypatch):
    """policy --model A --model B --region R --own-counters-only prints the merged policy in region R, the counter
    table kept to both models' keys."""
    import json

    from tests.cli_models import Invoice, User
    from tests.test_cli import run

    monkeypatch.setattr(Invoice.Meta, "region", Invoice.Meta.region)  # the command sets --region on the models
    monkeypatch.setattr(User.Meta, "region", User.Meta.region)
    code, out, err = run(capsys, "policy", "--model", "tests.cli_models:User", "--model", "tests.cli_models:Invoice",
                         "--region", "eu-west-1", "--account", "1", "--own-counters-only")
    assert code == 0, err
    found = conditions(json.loads(out))
    assert set(found) == {f"arn:aws:dynamodb:eu-west-1:1:table/{t}" for t in
                          ("NextId", User.Meta.table_name, Invoice.Meta.table_name)}
    assert found["arn:aws:dynamodb:eu-west-1:1:table/NextId"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": sorted([User.Meta.autoinc_key, Invoice.Meta.table_name])}}
