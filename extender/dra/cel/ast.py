"""Reading and editing the checked AST that cel-expr-python produces.

``Expression.serialize()`` gives a ``cel.expr.CheckedExpr`` (in a ``google.protobuf.Any``) and
``Env.deserialize()`` plans one. The message types are declared here with the field numbers of
cel-spec's ``proto/cel/expr/syntax.proto`` and ``checked.proto`` (cel.dev/expr v0.25.1), only
the fields this package reads; protobuf keeps every other field as an unknown field and writes
it back unchanged, so an edited AST loses nothing.

What ``extender.dra.cel`` uses it for: the environment details the C++ runtime cannot express
(a ``device`` object with four typed fields, a default for unknown attribute domains) and the
static cost estimate.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

__all__ = [
    "DecodeError",
    "children",
    "decode",
    "encode",
    "error_at",
    "is_checked",
    "is_dyn",
    "type_name",
    "walk",
    "walk_scoped",
]

CHECKED_EXPR_TYPE_URL = "type.googleapis.com/cel.expr.CheckedExpr"
PARSED_EXPR_TYPE_URL = "type.googleapis.com/cel.expr.ParsedExpr"

_F = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_I64, _I32, _U64, _STR, _BOOL, _DBL, _BYTES, _MSG = (
    _F.TYPE_INT64,
    _F.TYPE_INT32,
    _F.TYPE_UINT64,
    _F.TYPE_STRING,
    _F.TYPE_BOOL,
    _F.TYPE_DOUBLE,
    _F.TYPE_BYTES,
    _F.TYPE_MESSAGE,
)


def _message(
    container: Any, name: str, fields: list[tuple[Any, ...]], oneof: str | None = None
) -> Any:
    """Add a message: fields are (name, number, type[, type_name[, label[, in_oneof]]])."""
    msg = container.add(name=name)
    if oneof:
        msg.oneof_decl.add(name=oneof)
    for spec in fields:
        fname, number, ftype = spec[:3]
        type_name = spec[3] if len(spec) > 3 else None
        label = spec[4] if len(spec) > 4 else _OPT
        in_oneof = spec[5] if len(spec) > 5 else False
        field = msg.field.add(name=fname, number=number, type=ftype, label=label)
        if type_name:
            field.type_name = type_name
        if in_oneof:
            field.oneof_index = 0
    return msg


def _map_entry(parent: Any, name: str, key_type: int, value: tuple[int, str | None]) -> None:
    entry = parent.nested_type.add(name=name)
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=key_type, label=_OPT)
    value_field = entry.field.add(name="value", number=2, type=value[0], label=_OPT)
    if value[1]:
        value_field.type_name = value[1]


def _pool() -> descriptor_pool.DescriptorPool:
    proto = descriptor_pb2.FileDescriptorProto(
        name="extender/dra/cel_expr_subset.proto", package="cel.expr", syntax="proto3"
    )
    types = proto.message_type
    expr = _message(
        types,
        "Expr",
        [
            ("id", 2, _I64),
            ("const_expr", 3, _MSG, ".cel.expr.Constant", _OPT, True),
            ("ident_expr", 4, _MSG, ".cel.expr.Expr.Ident", _OPT, True),
            ("select_expr", 5, _MSG, ".cel.expr.Expr.Select", _OPT, True),
            ("call_expr", 6, _MSG, ".cel.expr.Expr.Call", _OPT, True),
            ("list_expr", 7, _MSG, ".cel.expr.Expr.CreateList", _OPT, True),
            ("struct_expr", 8, _MSG, ".cel.expr.Expr.CreateStruct", _OPT, True),
            ("comprehension_expr", 9, _MSG, ".cel.expr.Expr.Comprehension", _OPT, True),
        ],
        oneof="expr_kind",
    )
    nested = expr.nested_type
    _message(nested, "Ident", [("name", 1, _STR)])
    _message(
        nested,
        "Select",
        [("operand", 1, _MSG, ".cel.expr.Expr"), ("field", 2, _STR), ("test_only", 3, _BOOL)],
    )
    _message(
        nested,
        "Call",
        [
            ("target", 1, _MSG, ".cel.expr.Expr"),
            ("function", 2, _STR),
            ("args", 3, _MSG, ".cel.expr.Expr", _REP),
        ],
    )
    _message(nested, "CreateList", [("elements", 1, _MSG, ".cel.expr.Expr", _REP)])
    struct = _message(
        nested,
        "CreateStruct",
        [
            ("message_name", 1, _STR),
            ("entries", 2, _MSG, ".cel.expr.Expr.CreateStruct.Entry", _REP),
        ],
    )
    _message(
        struct.nested_type,
        "Entry",
        [
            ("id", 1, _I64),
            ("field_key", 2, _STR),
            ("map_key", 3, _MSG, ".cel.expr.Expr"),
            ("value", 4, _MSG, ".cel.expr.Expr"),
        ],
    )
    _message(
        nested,
        "Comprehension",
        [
            ("iter_var", 1, _STR),
            ("iter_range", 2, _MSG, ".cel.expr.Expr"),
            ("accu_var", 3, _STR),
            ("accu_init", 4, _MSG, ".cel.expr.Expr"),
            ("loop_condition", 5, _MSG, ".cel.expr.Expr"),
            ("loop_step", 6, _MSG, ".cel.expr.Expr"),
            ("result", 7, _MSG, ".cel.expr.Expr"),
            ("iter_var2", 8, _STR),
        ],
    )
    _message(
        types,
        "Constant",
        [
            ("null_value", 1, _I32, None, _OPT, True),
            ("bool_value", 2, _BOOL, None, _OPT, True),
            ("int64_value", 3, _I64, None, _OPT, True),
            ("uint64_value", 4, _U64, None, _OPT, True),
            ("double_value", 5, _DBL, None, _OPT, True),
            ("string_value", 6, _STR, None, _OPT, True),
            ("bytes_value", 7, _BYTES, None, _OPT, True),
        ],
        oneof="constant_kind",
    )
    source_info = _message(
        types,
        "SourceInfo",
        [
            ("line_offsets", 3, _I32, None, _REP),
            ("positions", 4, _MSG, ".cel.expr.SourceInfo.PositionsEntry", _REP),
        ],
    )
    _map_entry(source_info, "PositionsEntry", _I64, (_I32, None))
    type_msg = _message(
        types,
        "Type",
        [
            ("dyn", 1, _MSG, ".cel.expr.Empty", _OPT, True),
            ("null", 2, _I32, None, _OPT, True),
            ("primitive", 3, _I32, None, _OPT, True),
            ("wrapper", 4, _I32, None, _OPT, True),
            ("well_known", 5, _I32, None, _OPT, True),
            ("list_type", 6, _MSG, ".cel.expr.Type.ListType", _OPT, True),
            ("map_type", 7, _MSG, ".cel.expr.Type.MapType", _OPT, True),
            ("message_type", 9, _STR, None, _OPT, True),
            ("type_param", 10, _STR, None, _OPT, True),
            ("type", 11, _MSG, ".cel.expr.Type", _OPT, True),
            ("error", 12, _MSG, ".cel.expr.Empty", _OPT, True),
            ("abstract_type", 14, _MSG, ".cel.expr.Type.AbstractType", _OPT, True),
        ],
        oneof="type_kind",
    )
    _message(types, "Empty", [])
    _message(
        type_msg.nested_type,
        "AbstractType",
        [("name", 1, _STR), ("parameter_types", 2, _MSG, ".cel.expr.Type", _REP)],
    )
    _message(type_msg.nested_type, "ListType", [("elem_type", 1, _MSG, ".cel.expr.Type")])
    _message(
        type_msg.nested_type,
        "MapType",
        [("key_type", 1, _MSG, ".cel.expr.Type"), ("value_type", 2, _MSG, ".cel.expr.Type")],
    )
    _message(types, "Reference", [("name", 1, _STR), ("overload_id", 3, _STR, None, _REP)])
    checked = _message(
        types,
        "CheckedExpr",
        [
            ("reference_map", 2, _MSG, ".cel.expr.CheckedExpr.ReferenceMapEntry", _REP),
            ("type_map", 3, _MSG, ".cel.expr.CheckedExpr.TypeMapEntry", _REP),
            ("expr", 4, _MSG, ".cel.expr.Expr"),
            ("source_info", 5, _MSG, ".cel.expr.SourceInfo"),
            ("expr_version", 6, _STR),
        ],
    )
    _message(
        types,
        "ParsedExpr",
        [("expr", 2, _MSG, ".cel.expr.Expr"), ("source_info", 3, _MSG, ".cel.expr.SourceInfo")],
    )
    _map_entry(checked, "ReferenceMapEntry", _I64, (_MSG, ".cel.expr.Reference"))
    _map_entry(checked, "TypeMapEntry", _I64, (_MSG, ".cel.expr.Type"))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return pool


_POOL = _pool()
CheckedExpr: Any = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("cel.expr.CheckedExpr")
)
ParsedExpr: Any = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("cel.expr.ParsedExpr")
)


def decode(serialized: bytes) -> Any:
    """The CheckedExpr (or, compiled without the checker, ParsedExpr) of ``serialize()``."""
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(serialized)
    message = ParsedExpr() if wrapper.type_url == PARSED_EXPR_TYPE_URL else CheckedExpr()
    message.ParseFromString(wrapper.value)
    return message


def is_checked(message: Any) -> bool:
    return bool(message.DESCRIPTOR.name == "CheckedExpr")


def encode(message: Any) -> bytes:
    """What ``Env.deserialize()`` reads."""
    url = CHECKED_EXPR_TYPE_URL if is_checked(message) else PARSED_EXPR_TYPE_URL
    wrapper = any_pb2.Any(type_url=url, value=message.SerializeToString())
    return wrapper.SerializeToString()


_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "google.protobuf.Timestamp", 3: "google.protobuf.Duration"}


def type_name(t: Any) -> str:
    """cel-go's ``FormatCELType`` of a checked type."""
    kind = t.WhichOneof("type_kind")
    if kind == "primitive":
        return _PRIMITIVES.get(t.primitive, "dyn")
    if kind == "wrapper":
        return f"wrapper({_PRIMITIVES.get(t.wrapper, 'dyn')})"
    if kind == "well_known":
        return _WELL_KNOWN.get(t.well_known, "dyn")
    if kind == "list_type":
        return f"list({type_name(t.list_type.elem_type)})"
    if kind == "map_type":
        return f"map({type_name(t.map_type.key_type)}, {type_name(t.map_type.value_type)})"
    if kind == "message_type":
        return str(t.message_type)
    if kind == "type_param":
        return str(t.type_param)
    if kind == "type":
        return f"type({type_name(t.type)})"
    if kind == "null":
        return "null_type"
    if kind == "error":
        return "*error*"
    if kind == "abstract_type":
        params = ", ".join(type_name(p) for p in t.abstract_type.parameter_types)
        return f"{t.abstract_type.name}({params})" if params else str(t.abstract_type.name)
    return "dyn"


def is_dyn(t: Any) -> bool:
    return t.WhichOneof("type_kind") in (None, "dyn")


def children(expr: Any) -> Iterator[Any]:
    """The direct sub-expressions of a node, in source order."""
    kind = expr.WhichOneof("expr_kind")
    if kind == "select_expr":
        yield expr.select_expr.operand
    elif kind == "call_expr":
        call = expr.call_expr
        if call.HasField("target"):
            yield call.target
        yield from call.args
    elif kind == "list_expr":
        yield from expr.list_expr.elements
    elif kind == "struct_expr":
        for entry in expr.struct_expr.entries:
            if entry.HasField("map_key"):
                yield entry.map_key
            yield entry.value
    elif kind == "comprehension_expr":
        comp = expr.comprehension_expr
        yield comp.iter_range
        yield comp.accu_init
        yield comp.loop_condition
        yield comp.loop_step
        yield comp.result


def walk(expr: Any) -> Iterator[Any]:
    """Every node, parents before children (iterative: deep expressions do not recurse)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(list(children(node))))


def location(checked: Any, expr_id: int, source: str) -> tuple[int, int]:
    """(line, column), both 1-based, of a node, as cel-go prints them."""
    offset = checked.source_info.positions.get(expr_id, 0)
    line_start = 0
    line = 1
    for i, ch in enumerate(source):
        if i >= offset:
            break
        if ch == "\n":
            line += 1
            line_start = i + 1
    return line, offset - line_start + 1


def error_at(checked: Any, expr_id: int, source: str, message: str) -> str:
    """cel-go's issue text: ``ERROR: <input>:L:C: message`` and the source line with a caret."""
    line, column = location(checked, expr_id, source)
    text = source.split("\n")[line - 1] if source else ""
    return f"ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {'.' * (column - 1)}^"


def walk_scoped(expr: Any) -> Iterator[tuple[Any, frozenset[str]]]:
    """Every node with the comprehension variables in scope there (parents first).

    A comprehension's range and initial accumulator are outside its variables; the loop
    condition and step see the iteration variables and the accumulator; the result sees the
    accumulator only.
    """
    stack: list[tuple[Any, frozenset[str]]] = [(expr, frozenset())]
    while stack:
        node, bound = stack.pop()
        yield node, bound
        if node.WhichOneof("expr_kind") == "comprehension_expr":
            comp = node.comprehension_expr
            loop = bound | {comp.iter_var, comp.accu_var} | ({comp.iter_var2} - {""})
            scoped = [
                (comp.iter_range, bound),
                (comp.accu_init, bound),
                (comp.loop_condition, loop),
                (comp.loop_step, loop),
                (comp.result, bound | {comp.accu_var}),
            ]
        else:
            scoped = [(child, bound) for child in children(node)]
        stack.extend(reversed(scoped))
