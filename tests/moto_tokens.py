"""moto keeps the ClientRequestToken of TransactWriteItems, as DynamoDB does (imported for its effect).

DynamoDB (and DynamoDB Local) answers a transaction sent again with the
token of one it applied in the last 10 minutes with success, applying nothing
again; the same token with other items is refused with
``IdempotentParameterMismatchException``. moto ignores the token and applies
a resend again, so that a test of an answer lost after a transaction was
applied would see what DynamoDB never shows. This wraps moto's handler to
answer as DynamoDB does; tokens are kept per backend, so a new ``mock_aws``
starts with none.
"""

from __future__ import annotations

import json
from typing import Any, Dict

from moto.core.responses import ActionResult
from moto.dynamodb.exceptions import MockValidationException
from moto.dynamodb.responses import DynamoHandler

_original = DynamoHandler.transact_write_items
_ANSWERS_TEXT = _original.__annotations__.get("return") in ("str", str)


class _Mismatch(MockValidationException):
    error_type = "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException"

    def __init__(self) -> None:
        super().__init__("Transaction request was already processed with different parameters")
        self.error_type = _Mismatch.error_type
        self.description = json.dumps({"__type": self.error_type, "message": self.message})


def transact_write_items(self: DynamoHandler) -> Any:
    token = self.body.get("ClientRequestToken")
    if token is None:
        return _original(self)
    # on the backend, which a new mock_aws resets
    tokens: Dict[str, str] = self.dynamodb_backend.__dict__.setdefault("_autoinc_tokens", {})
    items = json.dumps(self.body.get("TransactItems"), sort_keys=True)
    if token in tokens:
        if tokens[token] != items:
            raise _Mismatch()
        answer: Dict[str, Any] = {"ConsumedCapacity": [], "ItemCollectionMetrics": {}}
        # moto before 5.2 answers with the JSON text, later ones with an ActionResult
        return json.dumps(answer) if _ANSWERS_TEXT else ActionResult(answer)
    result = _original(self)
    tokens[token] = items
    return result


DynamoHandler.transact_write_items = transact_write_items  # type: ignore[method-assign]
