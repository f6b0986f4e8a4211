"""A mypy plugin that types an ask's answer from its message, not from where
the answer goes.

Enable it in the project's mypy configuration (``pyproject.toml``):

.. not run: a configuration file, not Python

::

    [tool.mypy]
    plugins = ["actors.mypy"]

Without it, mypy infers the type of ``await ref.ask(Get, "k")`` from what it
is assigned to first, so ``s: str = await ref.ask(Get, "k")`` (``Get``'s
reply being a ``Reply[int | None]``) is reported against the ask's first
argument: ``expected "Callable[[str, Reply[str]], ...]"``. With it, the
answer's type is read from the message's reply parameter before the call is
checked, and the error is the assignment's own:

.. not run: mypy's output

::

    Incompatible types in assignment (expression has type "int | None",
    variable has type "str")

The plugin changes nothing else: the arguments are still checked against the
message's fields, and the message against what the actor accepts. It reads
the answer's type when ``build`` (the ask's first argument) is a name or an
attribute (``Get``, ``messages.Get``, a function) whose last positional
parameter is a ``Reply[X]`` with ``X`` free of type variables; otherwise
(a generic message class, ``functools.partial``, a lambda, an overloaded
callable) it leaves the call to mypy as it is. It covers
:meth:`actors.ActorRef.ask` and :meth:`actors.Pool.ask`.
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.checker import TypeChecker
from mypy.expandtype import expand_type
from mypy.nodes import ARG_OPT, ARG_POS, ARG_STAR, Expression, MemberExpr, NameExpr
from mypy.plugin import MethodSigContext, Plugin
from mypy.typeops import get_type_vars
from mypy.types import (
    CallableType,
    FunctionLike,
    Instance,
    ProperType,
    TupleType,
    Type,
    TypeVarType,
    UnpackType,
    get_proper_type,
)

_REPLY = "actors._core._reply.Reply"
_ASKS = frozenset({"actors._core._mailbox.ActorRef.ask", "actors._pool.Pool.ask"})


class AskPlugin(Plugin):
    """Types ``ActorRef.ask`` and ``Pool.ask`` from their message (see the
    module's documentation)."""

    def get_method_signature_hook(
        self, fullname: str
    ) -> Callable[[MethodSigContext], FunctionLike] | None:
        return _typed_by_message if fullname in _ASKS else None


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point: the plugin class, for any mypy version this
    library's ``dev`` extra allows."""
    del version
    return AskPlugin


def _typed_by_message(ctx: MethodSigContext) -> FunctionLike:
    signature = ctx.default_signature
    answer = _answer_variable(signature)
    built = _built_type(ctx)
    if answer is None or built is None:
        return signature
    answer_type = _reply_type(built)
    if answer_type is None or get_type_vars(answer_type):
        return signature
    return expand_type(signature, {answer.id: answer_type}).copy_modified(
        variables=[variable for variable in signature.variables if variable.id != answer.id]
    )


def _answer_variable(signature: CallableType) -> TypeVarType | None:
    """The ``R`` of ``build: Callable[[*Ts, Reply[R]], M]``, if the signature
    still has it to infer."""
    if not signature.arg_types:
        return None
    build = get_proper_type(signature.arg_types[0])
    if not isinstance(build, CallableType):
        return None
    reply = _last_positional(build)
    if reply is None or reply.type.fullname != _REPLY or len(reply.args) != 1:
        return None
    variable = get_proper_type(reply.args[0])
    if not isinstance(variable, TypeVarType):
        return None
    if all(variable.id != declared.id for declared in signature.variables):
        return None
    return variable


def _built_type(ctx: MethodSigContext) -> CallableType | None:
    """The type of the ask's first argument, if it is a plain reference: a
    name or an attribute, whose type can be read twice without effects."""
    if not ctx.args or len(ctx.args[0]) != 1:
        return None
    expression: Expression = ctx.args[0][0]
    if not isinstance(expression, NameExpr | MemberExpr):
        return None
    checker = ctx.api
    if not isinstance(checker, TypeChecker):
        return None
    with checker.msg.filter_errors():
        built = get_proper_type(checker.expr_checker.accept(expression))
    return built if isinstance(built, CallableType) and not built.variables else None


def _reply_type(built: CallableType) -> Type | None:
    reply = _last_positional(built)
    if reply is None or reply.type.fullname != _REPLY or len(reply.args) != 1:
        return None
    return reply.args[0]


def _last_positional(callable_type: CallableType) -> Instance | None:
    """The type of the last positional parameter, if it is an instance: of
    ``(key: str, reply: Reply[int])``, or of ``(*args: *tuple[*Ts, Reply[R]])``
    (how mypy spells ``Callable[[*Ts, Reply[R]], M]``)."""
    positional: list[Type] = []
    for argument, kind in zip(callable_type.arg_types, callable_type.arg_kinds, strict=True):
        if kind in (ARG_POS, ARG_OPT):
            positional.append(argument)
        elif kind == ARG_STAR and isinstance(argument, UnpackType):
            unpacked = get_proper_type(argument.type)
            if not isinstance(unpacked, TupleType):
                return None
            positional.extend(unpacked.items)
            break
        else:
            break
    if not positional:
        return None
    last: ProperType = get_proper_type(positional[-1])
    return last if isinstance(last, Instance) else None
