"""HistoryMixin's versions are history model instances, in a PynamoDB ResultIterator."""

from __future__ import annotations

from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.models import Model
from pynamodb.pagination import ResultIterator
from typing_extensions import assert_type

from pynamodb_autoinc import HistoryMixin


class ArticleVersion(Model):
    class Meta:
        table_name = "article-versions"

    item = UnicodeAttribute(hash_key=True)
    version = NumberAttribute(range_key=True)
    deleted = BooleanAttribute(default=False)
    title = UnicodeAttribute(null=True)


class Article(HistoryMixin, Model):
    class Meta:
        table_name = "articles"
        history_model = ArticleVersion

    slug = UnicodeAttribute(hash_key=True)
    title = UnicodeAttribute()
    revision = VersionAttribute()


def versions() -> None:
    article = Article(slug="hello", title="Hello")
    article.save()
    assert_type(article.versions(), ResultIterator[Model])
    assert_type(article.version(1), Model)
    assert_type(Article.history("hello"), ResultIterator[Model])
    assert_type(article.history_key(), str)
