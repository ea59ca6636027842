"""Model classes are checked when they are created: each mixin's ``_autoinc_check_class`` (nearest to ``Model``
first) checks a concrete class once PynamoDB has built it, and raises ConfigurationError, sending nothing."""

from __future__ import annotations

from typing import Any, List

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
        mro = cls.__mro__
        late = [k for k in mro if "_autoinc_check_class" in k.__dict__ and mro.index(k) > mro.index(Model)]
        if late:  # Model's own save() would shadow the mixin's
            first = next(k for k in mro if k is not cls and issubclass(k, Model))
            raise ConfigurationError(
                f"{name}: {late[0].__name__} comes after {first.__name__} in the bases, so PynamoDB's own save() "
                f"would run instead; list the library's mixins first, e.g. class {name}({late[0].__name__}, "
                f"{first.__name__})")
        for klass in reversed(mro):
            if "_autoinc_check_class" in klass.__dict__:
                klass.__dict__["_autoinc_check_class"].__func__(cls)
        cls._autoinc_accepted = True  # every check passed: the class is in use (a refused one never is)


def overrides_after(model: type, mixin: type, method: str) -> List[type]:
    """The classes after ``mixin`` and before ``Model`` in ``model``'s MRO (the library's own mixins left out)
    that define ``method``: it never runs for what ``mixin`` handles itself."""
    mro = model.__mro__
    if mixin not in mro:
        return []
    after = mro[mro.index(mixin) + 1:]
    after = after[:after.index(Model)] if Model in after else after
    return [k for k in after if method in k.__dict__ and "_autoinc_check_class" not in k.__dict__]


def refuse_order(model: type, mixin: type, method: str, why: str) -> None:
    """Raise when a class after ``mixin`` in ``model``'s bases overrides ``method``."""
    skipped = overrides_after(model, mixin, method)
    if skipped:
        names = ", ".join(k.__name__ for k in skipped)
        bases = sorted((b.__name__ for b in model.__bases__), key=lambda b: b != skipped[0].__name__)
        raise ConfigurationError(
            f"{model.__name__}: {names} overrides {method}(), but comes after {mixin.__name__} in the bases, so "
            f"{why}; put {names} before {mixin.__name__}, e.g. class {model.__name__}({', '.join(bases)})")
