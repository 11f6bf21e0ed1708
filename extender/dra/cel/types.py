"""The CEL value types of the DRA environment as protobuf messages: ``kubernetes.Quantity``,
``kubernetes.Semver`` and the checker's ``kubernetes.DRADevice`` (upstream's types of
k8s.io/apiserver ``pkg/cel/library/quantity.go``, ``semverlib.go`` and the ``device``
variable of ``k8s.io/dynamic-resource-allocation/cel/compile.go``), ``net.IP`` and ``net.CIDR``
(``ip.go``, ``cidr.go``), and the conversions between them and Python values."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

from extender.framework import quantity as quantity_lib

from . import semver as semver_lib

# --- the message types: kubernetes.Quantity, kubernetes.Semver, kubernetes.DRADevice --------


def _message_types() -> tuple[Any, Any, Any, Any]:
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="extender/dra/kubernetes_cel.proto", package="kubernetes", syntax="proto3"
    )
    q = proto.message_type.add(name="Quantity")
    # One field, "<unscaled>e<exponent>" of the normalized value: equal text, equal quantity.
    q.field.add(name="value", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    s = proto.message_type.add(name="Semver")
    s.field.add(name="version", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    # What the checker sees of upstream's kubernetes.DRADevice object: its four fields, the
    # two maps as map(string, map(string, dyn)) (a Struct is a JSON object to CEL). At run
    # time only driver and allowMultipleAllocations are read from it: every use of the maps
    # is pointed at a plain variable (see _analyze).
    proto.dependency.append("google/protobuf/struct.proto")
    d = proto.message_type.add(name="DRADevice")
    d.field.add(name="driver", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    d.field.add(
        name="allowMultipleAllocations", number=2, type=field.TYPE_BOOL, label=field.LABEL_OPTIONAL
    )
    for number, name in ((3, "attributes"), (4, "capacity")):
        entry = d.nested_type.add(name=name.capitalize() + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
        entry.field.add(
            name="value",
            number=2,
            type=field.TYPE_MESSAGE,
            label=field.LABEL_OPTIONAL,
            type_name=".google.protobuf.Struct",
        )
        d.field.add(
            name=name,
            number=number,
            type=field.TYPE_MESSAGE,
            label=field.LABEL_REPEATED,
            type_name=f".kubernetes.DRADevice.{name.capitalize()}Entry",
        )
    # The default pool: the checker resolves the well-known types (google.protobuf.Struct,
    # Value, ...) in the pool it is given, and without them a dyn value cannot be the range
    # of a comprehension. The file name is ours alone.
    pool = descriptor_pool.Default()
    pool.FindFileByName(struct_pb2.DESCRIPTOR.name)  # there once struct_pb2 is imported
    try:
        pool.FindFileByName(proto.name)
    except KeyError:
        pool.Add(proto)
    quantity_cls = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("kubernetes.Quantity")
    )
    semver_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("kubernetes.Semver"))
    device_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("kubernetes.DRADevice"))
    return pool, quantity_cls, semver_cls, device_cls


_POOL, _QuantityMsg, _SemverMsg, _DeviceMsg = _message_types()


def _net_types() -> Any:
    """``net.IP`` (ip.go's type name, so ``type(ip("::1")) == net.IP``)."""
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="extender/dra/net_cel.proto", package="net", syntax="proto3"
    )
    ip = proto.message_type.add(name="IP")
    # One field, the canonical text: equal text, equal address.
    ip.field.add(name="address", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    # cidr.go's net.CIDR: the address as written (unmasked, as Go's Prefix) and the length.
    cidr = proto.message_type.add(name="CIDR")
    cidr.field.add(name="address", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    cidr.field.add(name="bits", number=2, type=field.TYPE_INT64, label=field.LABEL_OPTIONAL)
    try:
        _POOL.FindFileByName(proto.name)
    except KeyError:
        _POOL.Add(proto)
    return tuple(
        message_factory.GetMessageClass(_POOL.FindMessageTypeByName(name))
        for name in ("net.IP", "net.CIDR")
    )


_IPMsg, _CIDRMsg = _net_types()
_IP = cel.Type("net.IP")
_CIDR = cel.Type("net.CIDR")
_QUANTITY = cel.Type("kubernetes.Quantity")
_SEMVER = cel.Type("kubernetes.Semver")


def _to_quantity_msg(q: quantity_lib.Quantity) -> Any:
    return _QuantityMsg(value=f"{q.unscaled}e{q.exponent}")


@lru_cache(maxsize=4096)
def _quantity_of_text(text: str) -> quantity_lib.Quantity:
    unscaled, _, exponent = text.partition("e")
    return quantity_lib.Quantity(int(unscaled or "0"), int(exponent or "0"))


def _from_quantity_msg(msg: Any) -> quantity_lib.Quantity:
    return _quantity_of_text(msg.value)


@lru_cache(maxsize=1024)
def _semver_of(text: str) -> semver_lib.Version:
    return semver_lib.parse(text)


def _to_semver_msg(v: semver_lib.Version) -> Any:
    return _SemverMsg(version=v.canonical())


def _from_semver_msg(msg: Any) -> semver_lib.Version:
    return _semver_of(msg.version)


@lru_cache(maxsize=4096)
def _quantity_msg_of(text: str) -> Any:
    # The same message object for the same text: messages handed to the runtime are only read.
    return _to_quantity_msg(quantity_lib.parse(text))


@lru_cache(maxsize=4096)
def _semver_msg_of(text: str) -> Any:
    return _to_semver_msg(_semver_of(text))


_T = cel.Type
