"""Where a table's requests go: the one decision of endpoint, region and credentials that the counter binding, the
testing helpers, the pytest plugin and the command line read (docs/testing.md, "Where requests go")."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Type

from botocore.exceptions import NoRegionError
from pynamodb.models import Model

from .exceptions import ConfigurationError

#: The ``Meta`` settings that decide which endpoint a table is reached through, and as whom.
CONNECTION_SETTINGS = ("region", "host", "aws_access_key_id", "aws_secret_access_key", "aws_session_token",
                       "connect_timeout_seconds", "read_timeout_seconds", "max_retry_attempts",
                       "max_pool_connections", "extra_headers")

#: botocore's variable for DynamoDB's endpoint: where a client goes when it is given no endpoint URL.
ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL_DYNAMODB"
#: botocore's variables that reach DynamoDB elsewhere than AWS when no ``Meta.host`` is set, most specific first.
ENDPOINT_VARIABLES = (ENDPOINT_VARIABLE, "AWS_ENDPOINT_URL")
#: botocore's variable that, "true", makes it ignore the endpoint variables and the AWS config file's ``endpoint_url``.
IGNORE_CONFIGURED_VARIABLE = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
#: botocore's variables that choose another of AWS's endpoints (FIPS, dual-stack), which moto does not serve.
VARIANT_VARIABLES = ("AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT")
#: botocore's variable for the region of a client given none.
REGION_VARIABLE = "AWS_DEFAULT_REGION"
#: The region given to an explicit endpoint that has none: DynamoDB Local ignores it (only its name is needed).
HOST_REGION = "us-east-1"

#: The endpoints moto's ``mock_aws()`` serves: DynamoDB's public ones (moto's dynamodb ``url_bases``).
_MOTO_SERVES = re.compile(r"https?://(dynamodb\.[^/]+|[^/]+\.ddb\.[^/]+)\.amazonaws\.com(:443)?/?$")
#: The hosts of AWS's own endpoints: only moto may stand in for them in a test.
_AWS_HOST = re.compile(r"(^|\.)(amazonaws\.com(\.cn)?|api\.aws)$")

#: The hosts of the :func:`pynamodb_autoinc.testing.dynamodb` blocks running now (None: a block on moto); the last,
#: the innermost, is the one a test names.
named: List[Optional[str]] = []


@dataclass(frozen=True)
class Endpoint:
    """Where a table's requests go, and which setting said so."""

    host: Optional[str]
    """The endpoint URL; None: AWS's public endpoint of ``region``."""
    host_from: str
    """``Meta.host``, a variable of :data:`ENDPOINT_VARIABLES`, or ``AWS``."""
    region: Optional[str]
    region_from: str
    """``Meta.region``, :data:`REGION_VARIABLE`, or ``none`` (botocore's config file may still name one)."""


def resolve(meta: Any) -> Endpoint:
    """Where a table with this ``Meta`` is reached: ``Meta.host``, else the endpoint variables, else AWS; its region
    ``Meta.region``, else ``AWS_DEFAULT_REGION``. (A block of ``testing.dynamodb(host)`` sets the variable.)"""
    host, host_from = getattr(meta, "host", None), "Meta.host"
    if not host:
        host_from, host = next(((name, os.environ[name]) for name in ENDPOINT_VARIABLES if os.environ.get(name)),
                               ("AWS", None))
    region, region_from = getattr(meta, "region", None), "Meta.region"
    if not region:
        region = os.environ.get(REGION_VARIABLE) or None
        region_from = REGION_VARIABLE if region else "none"
    return Endpoint(host, host_from, region, region_from)


def block_variables(host: Optional[str]) -> Dict[str, Optional[str]]:
    """The variables a ``testing.dynamodb(host)`` block sets (None: unsets), whatever the environment and the AWS
    config file say: with ``host``, :data:`ENDPOINT_VARIABLE` at it and botocore told to read it; on moto (no
    ``host``), no endpoint variable and the config file's ``endpoint_url`` ignored. Either way AWS's standard
    endpoint, not its FIPS or dual-stack one (which moto does not serve, and which a host cannot be)."""
    endpoint: Dict[str, Optional[str]] = {ENDPOINT_VARIABLE: host} if host else dict.fromkeys(ENDPOINT_VARIABLES)
    return {**endpoint, IGNORE_CONFIGURED_VARIABLE: "false" if host else "true",
            **dict.fromkeys(VARIANT_VARIABLES, "false")}


def inherited(own: FrozenSet[str], counter_meta: Any, model_meta: Any) -> Dict[str, Any]:
    """The settings a counter takes from its model: each of :data:`CONNECTION_SETTINGS` its own ``Meta`` (``own``:
    what its author wrote) leaves out, where the model's differs."""
    return {name: getattr(model_meta, name) for name in CONNECTION_SETTINGS
            if name not in own and hasattr(model_meta, name)
            and getattr(model_meta, name) != getattr(counter_meta, name, None)}


def overrides(meta: Any, host: Optional[str], region: Optional[str]) -> Dict[str, str]:
    """The ``Meta`` settings that ``--host``/``--region`` give a table: those given, and with an endpoint other than
    AWS's and no region anywhere, :data:`HOST_REGION` (DynamoDB Local answers in any)."""
    settings = {name: value for name, value in (("host", host), ("region", region)) if value}
    where = resolve(type("Meta", (), {**{s: getattr(meta, s, None) for s in ("host", "region")}, **settings}))
    if where.region is None and where.host is not None and not is_aws(where.host):
        settings["region"] = HOST_REGION
    return settings


def no_region(error: Optional[Exception] = None, table: str = "") -> ConfigurationError:
    """The error for a request with no region to go to (botocore's ``NoRegionError``)."""
    named_table = f"table {table!r}: " if table else ""
    return ConfigurationError(
        f"{named_table}no AWS region is set, so no request was sent: set Meta.region on the model (and on the Meta "
        f"of its counter, if it has one of its own) or the {REGION_VARIABLE} variable; for DynamoDB Local or moto "
        f"any region will do, e.g. {HOST_REGION}", error)


def client(table: Type[Model]) -> Any:
    """``table``'s botocore client (made, not used: nothing is sent); no region raises :func:`no_region`'s error."""
    try:
        return table._get_connection().connection.client
    except NoRegionError as exc:
        raise no_region(exc, table.Meta.table_name) from exc


def is_aws(url: str) -> bool:
    """Whether ``url`` is one of AWS's own endpoints."""
    host = re.sub(r"^[a-z]+://", "", url.lower()).split("/")[0].split(":")[0]
    return bool(_AWS_HOST.search(host))


def same(url: Optional[str], other: Optional[str]) -> bool:
    return url is not None and other is not None and url.rstrip("/").lower() == other.rstrip("/").lower()


def moto_active() -> bool:
    """Whether moto's ``mock_aws()`` is running now (moto not imported: it is not)."""
    models = sys.modules.get("moto.core.models")
    stubber = getattr(models, "botocore_stubber", None)
    return bool(getattr(stubber, "enabled", False))


def check_test_endpoint(table: Type[Model], action: str, fixture: Optional[str] = None) -> None:
    """Refuse ``action`` (a testing helper's write) on ``table`` unless its client goes where the test named:
    moto's endpoint while moto runs, the host of a running ``testing.dynamodb(host)`` block, or the table's own
    ``Meta.host`` (not AWS's). Nothing is sent."""
    made = client(table)
    url = str(made.meta.endpoint_url)
    if moto_active() and _MOTO_SERVES.match(url):
        from moto.core.models import patch_client  # a client made before moto was imported is served by it too

        patch_client(made)
        return
    if (named and same(url, named[-1])) or (same(url, getattr(table.Meta, "host", None)) and not is_aws(url)):
        return
    where = resolve(table.Meta)
    source = f" (from {where.host_from})" if where.host_from != "AWS" else \
        "" if is_aws(url) else " (from the AWS config file's endpoint_url)"
    first = f"request your moto fixture before {fixture}" if fixture else "run it inside your moto mock_aws()"
    raise ConfigurationError(
        f"{action} refused: table {table.Meta.table_name!r} would be reached at {url}{source}, which this test did "
        f"not name, and it could be a real database; nothing was sent. Fix: {first} (moto "
        f"{'does not serve that endpoint' if moto_active() else 'is not running'}), or run the test inside "
        "pynamodb_autoinc.testing.dynamodb() (moto) or testing.dynamodb(host) (DynamoDB Local)")
