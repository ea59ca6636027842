"""Awaitable saves and counter operations (``await instance.asave()``): see docs/async.md."""

from __future__ import annotations


class AsyncSaves:
    """The awaitable saves of a model that uses the mixin."""


class AsyncCounter:
    """The awaitable operations of a counter model (:class:`~pynamodb_autoinc.NextId`)."""


class AsyncTransaction:
    """``async with TransactWrite(...)``."""
