"""Gapless revision history: every save of an item is kept as version 1, 2, 3, …

    python examples/history.py
"""

from __future__ import annotations

import os

from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.models import Model

from pynamodb_autoinc import HistoryMixin, testing
from pynamodb_autoinc.exceptions import VersionConflictError

HOST = os.environ.get("DYNAMODB_HOST")  # an endpoint such as http://127.0.0.1:8000; None: moto, in-process
REGION = "us-east-1"


class ArticleVersion(Model):
    """The history: one item per (article, version)."""

    class Meta:
        table_name = "demo-article-versions"
        region = REGION
        host = HOST

    item = UnicodeAttribute(hash_key=True)
    version = NumberAttribute(range_key=True)
    deleted = BooleanAttribute(default=False)
    title = UnicodeAttribute(null=True)
    body = UnicodeAttribute(null=True)


class Article(HistoryMixin, Model):
    class Meta:
        table_name = "demo-articles"
        history_model = ArticleVersion
        region = REGION
        host = HOST

    slug = UnicodeAttribute(hash_key=True)
    title = UnicodeAttribute()
    body = UnicodeAttribute(null=True)
    revision = VersionAttribute()


def main() -> None:
    with testing.dynamodb(HOST, region=REGION):
        print(f"DynamoDB: {HOST or 'moto (in-process)'}")
        for model in (Article, ArticleVersion):
            if not model.exists():
                model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)

        article = Article("hello", title="Hello")
        article.save()
        article.body = "First draft."
        article.save()
        print(f"article at revision {article.revision}")

        alice = Article.get("hello", consistent_read=True)
        bob = Article.get("hello", consistent_read=True)
        alice.title = "Hello, world"
        alice.save()
        bob.body = "Bob's edit."
        try:
            bob.save()
        except VersionConflictError as exc:
            print(f"bob lost version {exc.attempted}; the article is at revision {exc.current}")

        def merge(mine: Article, stored: Article) -> None:
            mine.title = stored.title  # keep their title, my body

        bob.save(merge=merge)
        print(f"bob merged: revision {bob.revision}, {bob.title!r} / {bob.body!r}")

        bob.delete()
        for version in Article.history("hello", consistent_read=True):
            assert isinstance(version, ArticleVersion)  # history() yields Meta.history_model instances
            state = "deleted" if version.deleted else f"{version.title!r} / {version.body!r}"
            print(f"v{version.version}: {state}")
        first = article.version(1)
        assert isinstance(first, ArticleVersion)
        print(f"version 1 was {first.title!r}")


if __name__ == "__main__":
    main()
