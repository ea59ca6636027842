"""Models with a VersionAttribute: a copy saved as new starts at version 1 and spends one value; a stale
instance's failed version condition is reported as such."""

from __future__ import annotations

import copy

import pytest
from pynamodb.attributes import (
    UnicodeAttribute,
    VersionAttribute,
)

from tests.helpers import currval


@pytest.mark.modes("fast", "gapless", "block")
def test_versioned_copy_does_not_spend_values(make_model):
    """A versioned copy saved as new takes exactly one value (the next), in every counter mode."""
    Doc = make_model("Doc", version=VersionAttribute(null=True))
    Doc().save()
    Doc.get(1).save()
    Doc.get(1).save()
    clone = copy.copy(Doc.get(1))
    clone.id = None
    clone.save()
    assert (clone.id, clone.version) == (2, 1)
    nxt = Doc()
    nxt.save()
    assert nxt.id == 3


@pytest.mark.modes("query")
def test_query_versioned_copy_is_saved_as_new(make_model):
    """Query strategy: a versioned copy with its ID cleared is stored as a new item, version 1."""
    Doc = make_model("Doc", version=VersionAttribute(null=True))
    Doc().save()
    Doc.get("p", 1).save()
    clone = copy.copy(Doc.get("p", 1))
    clone.id = None
    clone.save()
    assert (clone.id, clone.version) == (2, 1)


@pytest.mark.modes("fast")
def test_versioned_stale_copy_with_condition_names_the_version(make_model):
    """A stale versioned instance (not new) failing PynamoDB's version condition is not blamed on a caller
    condition it never passed."""
    Doc = make_model("Doc", version=VersionAttribute(null=True))
    Doc().save()
    a, b = Doc.get(1), Doc.get(1)
    a.save()
    with pytest.raises(Exception) as info:
        b.save()
    assert "the condition passed to save() did not hold" not in str(info.value)


@pytest.mark.modes("fast", "gapless")
def test_versioned_copy_is_saved_as_a_new_item(make_model):
    """A copy of a ids versioned item with its ID cleared is saved as a new item, with version 1; the
    original is untouched."""
    Doc = make_model("Doc", name=UnicodeAttribute(), version=VersionAttribute(null=True))
    Doc(name="first").save()
    Doc.get(1).save()  # version 2
    clone = copy.copy(Doc.get(1))
    clone.id = None
    clone.save()
    assert (clone.id, clone.version) == (2, 1)
    assert sorted((d.id, d.name, d.version) for d in Doc.scan()) == [(1, "first", 2), (2, "first", 1)]
    assert currval(Doc) == 2


@pytest.mark.modes("fast", "gapless")
def test_versioned_copy_in_a_transaction_is_saved_as_a_new_item(make_model):
    """TransactWrite.save() of a versioned copy with its ID cleared stores it as a new item, version 1."""
    from pynamodb_autoinc import TransactWrite

    Doc = make_model("Doc", version=VersionAttribute(null=True))
    Doc().save()
    clone = copy.copy(Doc.get(1))
    clone.id = None
    with TransactWrite(connection=Doc._get_connection().connection) as tx:
        tx.save(clone)
    assert (clone.id, clone.version) == (2, 1)
    assert sorted((d.id, d.version) for d in Doc.scan()) == [(1, 1), (2, 1)]


@pytest.mark.modes("fast", "gapless")
def test_versioned_copy_in_save_all_is_saved_as_a_new_item(make_model):
    """save_all() of a versioned copy with its ID cleared stores it as a new item, version 1."""
    Doc = make_model("Doc", version=VersionAttribute(null=True))
    Doc().save()
    clone = copy.copy(Doc.get(1))
    clone.id = None
    Doc.save_all([Doc(), clone])
    assert (clone.id, clone.version) == (3, 1)
    assert sorted((d.id, d.version) for d in Doc.scan()) == [(1, 1), (2, 1), (3, 1)]
