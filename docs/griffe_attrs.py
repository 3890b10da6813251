"""A griffe extension: the ``__init__`` that attrs writes, for the API reference.

Griffe reads the source without running it, so an ``@attrs.frozen`` or ``@attrs.define``
class has no ``__init__`` to show, and its ``Args:`` would name parameters of no signature.
This builds that signature from the class's annotated fields, as griffe's own dataclasses
extension does for dataclasses: each field a parameter (keyword-only when the class or the
field says so), its default the field's ``default=`` (``factory=`` shown as a call), fields
with ``init=False`` and ``ClassVar`` left out.
"""

from __future__ import annotations

from typing import Any

from griffe import (
    Attribute,
    Class,
    Expr,
    ExprCall,
    ExprKeyword,
    Extension,
    Function,
    Module,
    Parameter,
    ParameterKind,
    Parameters,
)

_DECORATORS = {"attrs.frozen", "attrs.define", "attrs.mutable", "attr.s", "attr.attrs"}
_FIELDS = {"attrs.field", "attr.ib", "attr.field"}


def _call_arguments(expr: object) -> dict[str, Any]:
    if not isinstance(expr, ExprCall):
        return {}
    return {a.name: a.value for a in expr.arguments if isinstance(a, ExprKeyword)}


def _attrs_decorator(cls: Class) -> Expr | str | None:
    for decorator in cls.decorators:
        value = decorator.value
        function = value.function if isinstance(value, ExprCall) else value
        if isinstance(function, Expr) and function.canonical_path in _DECORATORS:
            return value
    return None


def _parameters(cls: Class, kw_only: bool) -> list[Parameter]:
    parameters = []
    for member in cls.members.values():
        if not isinstance(member, Attribute) or member.annotation is None:
            continue
        if "instance-attribute" not in member.labels and "ClassVar" in str(member.annotation):
            continue
        field: dict[str, Any] = {}
        value = member.value
        if isinstance(value, ExprCall) and value.function.canonical_path in _FIELDS:
            field = _call_arguments(value)
        if str(field.get("init")) == "False":
            continue
        if "factory" in field:
            default: str | Expr | None = ExprCall(function=field["factory"], arguments=[])
        elif field:
            default = field.get("default")
        else:
            default = value
        keyword = kw_only or str(field.get("kw_only")) == "True"
        parameters.append(
            Parameter(
                member.name,
                annotation=member.annotation,
                kind=ParameterKind.keyword_only if keyword else ParameterKind.positional_or_keyword,
                default=default,
                docstring=member.docstring,
            )
        )
    return parameters


def _apply(obj: Module | Class, seen: set[str]) -> None:
    if obj.path in seen:
        return
    seen.add(obj.path)
    if isinstance(obj, Class) and "__init__" not in obj.members:
        decorator = _attrs_decorator(obj)
        if decorator is not None:
            kw_only = str(_call_arguments(decorator).get("kw_only")) == "True"
            obj.set_member(
                "__init__",
                Function(
                    "__init__",
                    lineno=0,
                    endlineno=0,
                    parent=obj,
                    parameters=Parameters(
                        Parameter("self", kind=ParameterKind.positional_or_keyword),
                        *_parameters(obj, kw_only),
                    ),
                    returns="None",
                ),
            )
    for member in list(obj.members.values()):
        if not member.is_alias and (member.is_module or member.is_class):
            _apply(member, seen)  # type: ignore[arg-type]


class AttrsInit(Extension):
    """Give every attrs class the ``__init__`` attrs would write."""

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        _apply(pkg, set())
