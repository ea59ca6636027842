"""Where requests go (pynamodb_autoinc._endpoint): the precedence of endpoint and region, the region error, the
counter table made where a model reaches it, testing.dynamodb()'s endpoint and connections, and the command line."""

from __future__ import annotations

import os
import threading
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Iterator, List

import pytest
from moto import mock_aws
from pynamodb.attributes import NumberAttribute
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import AutoIncrementMixin, NextId, _endpoint, cli, testing
from pynamodb_autoinc.exceptions import ConfigurationError
from tests.helpers import closed_port

ENDPOINT = _endpoint.ENDPOINT_VARIABLE


def model(meta: Any, name: str = "Ticket") -> Any:
    """An auto-increment model with this ``Meta`` (a dict), its table named afresh."""
    settings = {"table_name": f"{name.lower()}-{uuid.uuid4().hex[:8]}", **meta}
    return type(name, (AutoIncrementMixin, Model), {"Meta": type("Meta", (), settings),
                                                    "id": NumberAttribute(hash_key=True)})


def endpoint_url(table: Any) -> str:
    return str(table._get_connection().connection.client.meta.endpoint_url)


@pytest.fixture
def no_region(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine with no AWS region anywhere (no variable, no config file)."""
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)


@pytest.fixture
def no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _endpoint.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def sent() -> Iterator[List[str]]:
    """The operations sent during the test."""
    operations: List[str] = []

    def record(_: Any, operation_name: str, **__: Any) -> None:
        operations.append(operation_name)

    with pre_dynamodb_send.connected_to(record):
        yield operations


@pytest.mark.parametrize("meta, variables, expected", [
    ({"host": "http://meta:1", "region": "eu-west-1"}, {ENDPOINT: "http://var:2", "AWS_DEFAULT_REGION": "us-west-2"},
     ("http://meta:1", "Meta.host", "eu-west-1", "Meta.region")),
    ({}, {ENDPOINT: "http://var:2", "AWS_ENDPOINT_URL": "http://all:3", "AWS_DEFAULT_REGION": "us-west-2"},
     ("http://var:2", ENDPOINT, "us-west-2", "AWS_DEFAULT_REGION")),
    ({}, {"AWS_ENDPOINT_URL": "http://all:3"}, ("http://all:3", "AWS_ENDPOINT_URL", None, "none")),
    ({"region": "ap-south-1"}, {}, (None, "AWS", "ap-south-1", "Meta.region")),
], ids=["meta-first", "variables-next", "any-service-variable", "aws-last"])
def test_resolve_follows_the_documented_precedence(monkeypatch, no_region, meta, variables, expected):
    """resolve() takes Meta.host, then AWS_ENDPOINT_URL_DYNAMODB, then AWS_ENDPOINT_URL, then AWS; Meta.region,
    then AWS_DEFAULT_REGION (the table of docs/testing.md, "Where requests go")."""
    for name in _endpoint.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    where = _endpoint.resolve(type("Meta", (), meta))
    assert (where.host, where.host_from, where.region, where.region_from) == expected


@pytest.mark.backends()
def test_a_save_with_no_region_names_meta_region_and_the_variable(no_region):
    """A save on a machine with no region raises ConfigurationError naming Meta.region and AWS_DEFAULT_REGION
    (not "nothing was written, try again")."""
    ticket = model({})
    with mock_aws(), pytest.raises(ConfigurationError, match="Meta.region.*AWS_DEFAULT_REGION") as caught:
        ticket().save()
    assert "try again" not in str(caught.value)


def test_create_table_for_makes_the_counter_table_at_the_models_host(local, no_endpoint, no_region):
    """NextId.create_table_for(Model) creates the model's counter table at its Meta.host (DynamoDB Local), with
    the model's region, not at AWS, and returns the counter the model uses."""
    counters = type("Counters", (NextId,), {"Meta": type("Meta", (), {"table_name": f"c-{uuid.uuid4().hex[:8]}"})})
    ticket = model({**local.meta, "autoinc_counter": counters})
    counter = NextId.create_table_for(ticket)
    local.create(ticket)
    assert counter is ticket.autoinc_options().counter and counter.exists()
    assert endpoint_url(counter) == local.meta["host"]
    ticket().save()
    assert counter.currval(ticket.autoinc_options().key) == 1


@pytest.mark.backends()
def test_create_table_for_with_no_region_names_the_settings(no_region, no_endpoint, monkeypatch, sent):
    """NextId.create_table_for(Model) of a model with no region raises ConfigurationError naming Meta.region and
    AWS_DEFAULT_REGION (not botocore's bare "You must specify a region"), before any request."""
    monkeypatch.setattr(NextId, "_connection", None)  # not one an earlier test made with a region
    with pytest.raises(ConfigurationError, match="Meta.region.*AWS_DEFAULT_REGION"):
        NextId.create_table_for(model({}))
    assert sent == []


def test_cli_host_without_region_lists(dynamodb_local, local, no_region, no_endpoint, capsys):
    """`pynamodb-autoinc --host URL list` works with no --region and no region anywhere: DynamoDB Local takes
    any, and the command gives it us-east-1."""
    assert cli.main(["--host", dynamodb_local.url, "list"]) == 0, capsys.readouterr().err


@pytest.fixture
def html_server() -> Iterator[str]:
    """An endpoint that answers every request with an HTML page."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = b"<html><body>not DynamoDB</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.backends()
def test_cli_names_the_url_of_an_endpoint_variable_that_is_not_dynamodb(html_server, monkeypatch, capsys):
    """An endpoint from AWS_ENDPOINT_URL_DYNAMODB that answers HTML is named by its URL, not by a region."""
    monkeypatch.setenv(ENDPOINT, html_server)
    monkeypatch.setattr(NextId, "_connection", None)
    assert cli.main(["list"]) == 1
    assert f"the endpoint {html_server} did not answer as DynamoDB" in capsys.readouterr().err


@pytest.mark.backends()
def test_moto_block_ignores_an_outside_endpoint_variable(monkeypatch):
    """Inside testing.dynamodb() (moto), NextId reaches moto, not the endpoint of an outside
    AWS_ENDPOINT_URL_DYNAMODB, which is back after the block."""
    outside = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv(ENDPOINT, outside)
    with testing.dynamodb():
        assert ENDPOINT not in os.environ
        testing.create_counter_table()
        assert NextId.keys() == []
    assert os.environ[ENDPOINT] == outside


@pytest.mark.backends()
def test_host_block_overrides_an_outside_endpoint_variable(monkeypatch):
    """Inside testing.dynamodb(host), NextId reaches host even when AWS_ENDPOINT_URL_DYNAMODB named another
    endpoint before the block; that one is back after it."""
    outside, host = (f"http://127.0.0.1:{closed_port()}" for _ in range(2))
    monkeypatch.setenv(ENDPOINT, outside)
    with testing.dynamodb(host):
        assert endpoint_url(NextId) == host
    assert os.environ[ENDPOINT] == outside


@pytest.mark.backends()
def test_host_block_gives_models_used_before_it_the_blocks_host(no_endpoint):
    """A model and its counter used before testing.dynamodb(host) (connections cached for AWS) reach host inside
    the block, and get their old connections back after it."""
    ticket = model({"region": "us-east-1"})
    counter = ticket.autoinc_options().counter
    before = ticket._get_connection(), counter._get_connection()
    host = f"http://127.0.0.1:{closed_port()}"
    with testing.dynamodb(host):
        assert endpoint_url(ticket) == host and endpoint_url(counter) == host
    assert (ticket._get_connection(), counter._get_connection()) == before


@pytest.mark.backends()
def test_after_a_host_block_nextid_no_longer_reaches_its_host(no_endpoint, monkeypatch):
    """NextId, first used inside testing.dynamodb(host), reaches AWS again after the block, not host."""
    monkeypatch.setattr(NextId, "_connection", None)
    host = f"http://127.0.0.1:{closed_port()}"
    with testing.dynamodb(host):
        assert endpoint_url(NextId) == host
    assert "amazonaws.com" in endpoint_url(NextId)


@pytest.mark.backends()
def test_reset_counters_outside_moto_is_refused_before_any_request(no_endpoint, monkeypatch, sent):
    """reset_counters() outside moto on the default endpoint (AWS) raises ConfigurationError naming the fix, and
    sends nothing."""
    monkeypatch.setattr(NextId, "_connection", None)
    with pytest.raises(ConfigurationError, match=r"reset_counters\(\) refused.*testing\.dynamodb"):
        testing.reset_counters()
    assert sent == []


@pytest.mark.backends()
def test_create_counter_table_on_an_endpoint_variable_under_moto_is_refused(monkeypatch, sent):
    """create_counter_table() while moto runs, NextId reaching an endpoint from AWS_ENDPOINT_URL_DYNAMODB (which
    moto does not serve), raises ConfigurationError naming the variable, and sends nothing."""
    monkeypatch.setattr(NextId, "_connection", None)
    monkeypatch.setenv(ENDPOINT, f"http://127.0.0.1:{closed_port()}")
    with mock_aws(), pytest.raises(ConfigurationError, match=f"from {ENDPOINT}.*moto does not serve"):
        testing.create_counter_table()
    monkeypatch.setattr(NextId, "_connection", None)
    assert sent == []


#: botocore's variables: ignore the endpoint variables and config file; choose AWS's FIPS or dual-stack endpoints.
IGNORE = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
VARIANTS = ("AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT")

#: AWS config files naming an endpoint for every service, or for DynamoDB in a ``services`` section (``{url}``).
CONFIG_FILES = {
    "endpoint_url": "[default]\nendpoint_url = {url}\n",
    "services": "[default]\nservices = elsewhere\n\n[services elsewhere]\ndynamodb =\n  endpoint_url = {url}\n",
}


@pytest.fixture(params=sorted(CONFIG_FILES))
def config_endpoint(request: pytest.FixtureRequest, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """An AWS config file (AWS_CONFIG_FILE) naming an endpoint, a closed port, which botocore would reach."""
    url = f"http://127.0.0.1:{closed_port()}"
    path = tmp_path / "config"
    path.write_text(CONFIG_FILES[request.param].format(url=url))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(path))
    monkeypatch.delenv(IGNORE, raising=False)
    return url


@pytest.mark.backends()
def test_moto_block_ignores_an_endpoint_in_the_aws_config_file(config_endpoint, no_endpoint, monkeypatch):
    """With the AWS config file naming an endpoint (botocore goes there outside the block), testing.dynamodb()
    still runs on moto: the counter table is created there and a counter moves; after the block botocore reads
    the config file again."""
    monkeypatch.setattr(NextId, "_connection", None)
    assert endpoint_url(NextId) == config_endpoint  # botocore reads it
    monkeypatch.setattr(NextId, "_connection", None)
    with testing.dynamodb():
        assert "amazonaws.com" in endpoint_url(NextId)
        testing.create_counter_table()
        assert NextId.nextval("config") == 1
    assert IGNORE not in os.environ
    assert endpoint_url(NextId) == config_endpoint


@pytest.mark.backends()
def test_host_block_reaches_its_host_whatever_the_config_file_and_the_ignore_variable(config_endpoint, monkeypatch):
    """testing.dynamodb(host) reaches host even with AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true outside it (which
    would have botocore ignore the block's endpoint variable) and an endpoint in the AWS config file."""
    monkeypatch.setenv(IGNORE, "true")
    host = f"http://127.0.0.1:{closed_port()}"
    with testing.dynamodb(host):
        assert endpoint_url(NextId) == host
    assert os.environ[IGNORE] == "true"


@pytest.mark.backends()
@pytest.mark.parametrize("variable", VARIANTS)
def test_moto_block_reaches_moto_when_fips_or_dual_stack_is_asked_for(variable, no_endpoint, monkeypatch):
    """With AWS_USE_FIPS_ENDPOINT or AWS_USE_DUALSTACK_ENDPOINT true (AWS endpoints moto does not serve, so a
    save would go to AWS itself), testing.dynamodb() still runs on moto; the variable is back after it."""
    monkeypatch.setenv(variable, "true")
    monkeypatch.setattr(NextId, "_connection", None)
    with testing.dynamodb():
        testing.create_counter_table()
        assert NextId.nextval("variant") == 1
    assert os.environ[variable] == "true"
    monkeypatch.setattr(NextId, "_connection", None)


@pytest.mark.backends()
def test_a_refusal_names_the_aws_config_file(config_endpoint, no_endpoint, monkeypatch, sent):
    """reset_counters() outside any block, NextId reaching the endpoint of the AWS config file, is refused
    naming that file as where the endpoint came from; nothing is sent."""
    monkeypatch.setattr(NextId, "_connection", None)
    with pytest.raises(ConfigurationError, match=f"{config_endpoint} \\(from the AWS config file's endpoint_url\\)"):
        testing.reset_counters()
    monkeypatch.setattr(NextId, "_connection", None)
    assert sent == []


@pytest.mark.backends()
def test_a_moto_block_inside_a_host_block_does_not_write_to_the_host(no_endpoint, monkeypatch, sent):
    """Inside a moto block nested in a testing.dynamodb(host) block, a counter table reaching host (its
    Meta.host unset, so only the outer block named it) is refused: the test names moto now."""
    host = f"http://127.0.0.1:{closed_port()}"
    counters: Any = type("HostCounters", (NextId,), {"Meta": type("Meta", (), {"table_name": "NextId"})})
    with testing.dynamodb(host):
        connection = counters._get_connection()
        assert endpoint_url(counters) == host  # its client made for host
        with testing.dynamodb():
            monkeypatch.setattr(counters, "_connection", connection)  # as if kept from the outer block
            with pytest.raises(ConfigurationError, match=f"reached at {host}"):
                testing.reset_counters(counter=counters)
            monkeypatch.setattr(counters, "_connection", None)
    assert sent == []
