"""Gapless revision history: every save of an item is kept as version 1, 2, 3, …

    python examples/history.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _backend import META, dynamodb  # noqa: E402
from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute  # noqa: E402
from pynamodb.models import Model  # noqa: E402

from pynamodb_autoinc import HistoryMixin
from pynamodb_autoinc.exceptions import VersionConflictError  # noqa: E402


class ArticleVersion(Model):
    """The history: one item per (article, version)."""

    class Meta:
        table_name = "article-versions"
        region = META["region"]
        host = META["host"]

    item = UnicodeAttribute(hash_key=True)
    version = NumberAttribute(range_key=True)
    deleted = BooleanAttribute(default=False)
    title = UnicodeAttribute(null=True)
    body = UnicodeAttribute(null=True)


class Article(HistoryMixin, Model):
    class Meta:
        table_name = "articles"
        history_model = ArticleVersion
        region = META["region"]
        host = META["host"]

    slug = UnicodeAttribute(hash_key=True)
    title = UnicodeAttribute()
    body = UnicodeAttribute(null=True)
    revision = VersionAttribute()


def main() -> None:
    with dynamodb() as where:
        print(f"DynamoDB: {where}")
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
            state = "deleted" if version.deleted else f"{version.title!r} / {version.body!r}"
            print(f"v{version.version}: {state}")
        print(f"version 1 was {article.version(1).title!r}")


if __name__ == "__main__":
    main()
