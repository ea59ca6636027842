"""What moto's in-process DynamoDB holds, read from its memory: the model check's look at the tables after a step.

After every step the check compares each table and each counter with the reference. Through botocore and
moto's request handling, those reads cost as much as the step itself (a scan of every table and a read of
every counter, about 40% of the check's time). Read straight from moto's backend, in the same DynamoDB JSON
a Scan or GetItem answers with, they cost a fraction of that and send nothing, so that no fault, rival or
``pre_dynamodb_send`` receiver of the check meets them. On DynamoDB Local the check reads by requests.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Type

from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType
from pynamodb.models import Model


def _table(name: str) -> Any:
    """moto's table ``name``, in whichever account and region holds it (the check's worlds hold one of each)."""
    for regions in dynamodb_backends.values():
        for backend in regions.values():
            table = backend.tables.get(name)
            if table is not None:
                return table
    raise LookupError(f"moto holds no table {name!r}")


def items(model: Type[Model]) -> Iterator[Any]:
    """Every item of ``model``'s table, as ``model.scan(consistent_read=True)`` would give it."""
    raw: List[Dict[str, Any]] = [item.to_json()["Attributes"] for item in _table(model.Meta.table_name).all_items()]
    return (model.from_raw_data(data) for data in raw)


def item(table_name: str, hash_key: Dict[str, Any], range_key: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The raw item under the key (DynamoDB JSON values, ``{"S": "user"}``), as GetItem answers it; {} for none."""
    found = _table(table_name).get_item(DynamoType(hash_key), None if range_key is None else DynamoType(range_key))
    return {} if found is None else dict(found.to_json()["Attributes"])
