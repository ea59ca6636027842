"""CounterAttribute holds integers, on the class and on an instance."""

from __future__ import annotations

from pynamodb.attributes import UnicodeAttribute
from pynamodb.models import Model
from typing_extensions import assert_type

from pynamodb_autoinc import CounterAttribute, CounterMixin


class Page(CounterMixin, Model):
    class Meta:
        table_name = "pages"

    url = UnicodeAttribute(hash_key=True)
    views = CounterAttribute()
    stock = CounterAttribute(start=100, delta=-1)


def views() -> None:
    page = Page("/home")
    page.save()
    assert_type(page.views, int)
    total: int = page.views + page.stock
    page.update(actions=[Page.url.set("/")])
    print(total)
