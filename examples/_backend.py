"""Where the examples run: moto's in-process DynamoDB unless DYNAMODB_HOST names an endpoint.

    python examples/quickstart.py                                   # embedded moto, no AWS account
    DYNAMODB_HOST=http://127.0.0.1:8000 python examples/quickstart.py   # DynamoDB Local
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Dict, Iterator

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
HOST = os.environ.get("DYNAMODB_HOST")
if HOST:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
else:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")

#: Connection settings for the examples' model ``Meta`` classes.
META: Dict[str, Any] = {"region": "us-east-1", "host": HOST}


@contextlib.contextmanager
def dynamodb() -> Iterator[str]:
    """Run the block against the chosen DynamoDB, returning its description."""
    if HOST:
        yield HOST
        return
    from moto import mock_aws

    with mock_aws():
        yield "moto (in-process)"
