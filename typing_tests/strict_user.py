# mypy: disallow-any-generics, disallow-subclassing-any, disallow-untyped-calls, disallow-untyped-defs
# mypy: disallow-incomplete-defs, check-untyped-defs, disallow-untyped-decorators, warn-unused-ignores
# mypy: warn-return-any, no-implicit-reexport, strict-equality, extra-checks
"""A user's code under ``mypy --strict``: an auto-increment model reads as precisely as a plain PynamoDB one.

The comment lines above switch on, for this file, every check of ``mypy --strict`` that can be set per
module, so the project's ``python3 -m mypy`` fails here when a public method of the mixins answers
``Any`` where PynamoDB's own ``Model`` gives a type (``warn-return-any`` turns that into an error in a
user's function that returns it).
"""

from __future__ import annotations

from typing import List, Optional

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model
from pynamodb.pagination import ResultIterator
from typing_extensions import assert_type

from pynamodb_autoinc import AutoIncrementMixin


class User(AutoIncrementMixin, Model):
    class Meta:
        table_name = "users"

    id = NumberAttribute(hash_key=True)
    name = UnicodeAttribute()


def everyone() -> ResultIterator[User]:
    return User.scan()


def first_named(name: str) -> Optional[User]:
    for user in User.scan(User.name == name, limit=1, page_size=10, consistent_read=True):
        return user
    return None


def names() -> List[str]:
    return [user.name for user in User.scan(attributes_to_get=["name"])]


def reads() -> None:
    assert_type(User.scan(), ResultIterator[User])
    assert_type(User.scan(segment=0, total_segments=4, rate_limit=5.0), ResultIterator[User])
    assert_type(User.query(1), ResultIterator[User])
    assert_type(User.get(1), User)
    assert_type(User.count(), int)
