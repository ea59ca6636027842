"""Model classes are checked when they are created, not on their first save.

The library's mixins take :class:`CheckedModel` as their metaclass (it is a
:class:`pynamodb.models.MetaModel`, so only classes that use a mixin are
affected). Once PynamoDB has finished a class, each library mixin in its MRO
checks it with its ``_autoinc_check_class`` classmethod, nearest to
``Model`` first (a feature's own rules before the general ones). A check
raises :class:`~pynamodb_autoinc.exceptions.ConfigurationError` with the
fix; it sends no request.

A class without ``Meta.table_name`` (an abstract base) is not checked; its
concrete subclasses are.
"""

from __future__ import annotations

from typing import Any, Callable, List

from pynamodb.models import MetaModel, Model

from .exceptions import ConfigurationError


class CheckedModel(MetaModel):
    """The metaclass of the library's mixins: checks each concrete model class once it is built."""

    def __init__(cls, name: str, bases: Any, namespace: Any, discriminator: Any = None) -> None:
        if not any(isinstance(base, MetaModel) and issubclass(base, Model) for base in bases):
            type.__init__(cls, name, bases, namespace)  # a mixin itself, not a model yet
            return
        super().__init__(name, bases, namespace, discriminator)
        if getattr(getattr(cls, "Meta", None), "table_name", None) is None:
            return
        refuse_after_model(cls)
        for check in class_checks(cls):
            check(cls)


def class_checks(model: type) -> List[Callable[[type], None]]:
    """The ``_autoinc_check_class`` of every class in ``model``'s MRO that defines one, nearest to ``Model``
    first."""
    checks = []
    for klass in reversed(model.__mro__):
        check = klass.__dict__.get("_autoinc_check_class")
        if check is not None:
            checks.append(check.__func__)
    return checks


def refuse_after_model(model: type) -> None:
    """Raise when a library mixin comes after ``Model`` in ``model``'s MRO: ``Model``'s own methods would shadow
    the mixin's, which would then never run (a base model class listed before the mixin does this)."""
    mro = model.__mro__
    late = [klass for klass in mro if "_autoinc_check_class" in klass.__dict__ and mro.index(klass) > mro.index(Model)]
    if late:
        first = next(k for k in mro if k is not model and issubclass(k, Model))
        raise ConfigurationError(
            f"{model.__name__}: {late[0].__name__} comes after {first.__name__} in the bases, so PynamoDB's own "
            f"save() would run instead of {late[0].__name__}'s; list the library's mixins first, before any Model "
            f"class, e.g. class {model.__name__}({late[0].__name__}, {first.__name__})")


def overrides_after(model: type, mixin: type, method: str) -> List[type]:
    """The classes after ``mixin`` (and before ``Model``) in ``model``'s MRO that define ``method``.

    Their ``method`` never runs for what ``mixin`` handles itself, so such an
    order is refused. The library's own mixins are left out: each handles the
    others (and refuses an order that does not work) itself.
    """
    mro = model.__mro__
    if mixin not in mro:
        return []
    after = mro[mro.index(mixin) + 1:]
    stop = after.index(Model) if Model in after else len(after)
    return [klass for klass in after[:stop] if method in klass.__dict__
            and "_autoinc_check_class" not in klass.__dict__]


def refuse_order(model: type, mixin: type, method: str, why: str) -> None:
    """Raise when a class after ``mixin`` in ``model``'s bases overrides ``method`` (see :func:`overrides_after`)."""
    skipped = overrides_after(model, mixin, method)
    if skipped:
        names = ", ".join(k.__name__ for k in skipped)
        bases = [b.__name__ for b in model.__bases__]
        raise ConfigurationError(
            f"{model.__name__}: {names} overrides {method}(), but comes after {mixin.__name__} in the bases, so "
            f"{why}; put {names} before {mixin.__name__}, e.g. class {model.__name__}("
            f"{', '.join(sorted(bases, key=lambda b: b != skipped[0].__name__))})")
