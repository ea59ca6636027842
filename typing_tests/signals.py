"""Receivers of the library's signals, as users write them."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pynamodb_autoinc import after_save, before_save, contention_failed, race_lost

metrics: Counter[str] = Counter()


@before_save.connect
def stamp(sender: type, instance: Any, is_new: bool, **kwargs: Any) -> None:
    metrics["before_save"] += 1


@after_save.connect
def saved(sender: type, instance: Any, is_new: bool, **kwargs: Any) -> None:
    metrics["after_save"] += 1


@race_lost.connect
def lost(sender: type, instance: Any, attempts: int, elapsed: float, **kwargs: Any) -> None:
    metrics[f"races_lost{{model={sender.__name__}}}"] += 1


@contention_failed.connect
def failed(sender: type, instance: Any, attempts: int, elapsed: float, **kwargs: Any) -> None:
    metrics[f"contention_errors{{model={sender.__name__}}}"] += 1
