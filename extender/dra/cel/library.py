"""The Kubernetes CEL library functions of the DRA environment: ``quantity``, ``semver``,
``regex``, ``lists``, ``ip``, ``cidr`` (k8s.io/apiserver ``pkg/cel/library/``) and cel-go's
``ext.Sets``, declared as one extension of the C++ runtime whose every call is metered."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import re2
from cel_expr_python import cel

from extender.framework import quantity as quantity_lib

from . import lists as cel_lists
from . import net as cel_net
from . import semver as semver_lib
from .errors import CELError
from .meter import (
    _contains_cidr_cost,
    _contains_ip_cost,
    _list_cost,
    _metered,
    _nominal,
    _regex_cost,
    _sets_cost,
    _string_cost,
    _tick,
)
from .sets import _cel_equal, _sets_contains, _sets_equivalent, _sets_intersects
from .types import (
    _CIDR,
    _IP,
    _QUANTITY,
    _SEMVER,
    _T,
    _CIDRMsg,
    _from_quantity_msg,
    _from_semver_msg,
    _IPMsg,
    _quantity_msg_of,
    _QuantityMsg,
    _SemverMsg,
    _to_quantity_msg,
    _to_semver_msg,
)

# --- library functions (names and overload ids as in quantity.go and semverlib.go) --------


def _quantity(text: str) -> Any:
    return _quantity_msg_of(text)


def _is_quantity(text: str) -> bool:
    try:
        quantity_lib.parse(text)
    except quantity_lib.QuantityError:
        return False
    return True


def _q_cmp(a: Any, b: Any) -> int:
    return _from_quantity_msg(a).cmp(_from_quantity_msg(b))


def _q_as_integer(a: Any) -> int:
    value = _from_quantity_msg(a).as_int64()
    if value is None:
        raise CELError("cannot convert value to integer")
    return value


def _q_add(a: Any, b: Any) -> Any:
    return _to_quantity_msg(_from_quantity_msg(a).add(_from_quantity_msg(b)))


def _q_add_int(a: Any, b: int) -> Any:
    return _to_quantity_msg(_from_quantity_msg(a).add(quantity_lib.Quantity.of(b)))


def _q_sub(a: Any, b: Any) -> Any:
    return _to_quantity_msg(_from_quantity_msg(a).add(_from_quantity_msg(b).neg()))


def _q_sub_int(a: Any, b: int) -> Any:
    return _to_quantity_msg(_from_quantity_msg(a).add(quantity_lib.Quantity.of(-b)))


def _semver(text: str) -> Any:
    return _to_semver_msg(semver_lib.parse(text))


def _semver_normalize(text: str, normalize: bool) -> Any:
    parse = semver_lib.parse_normalized if normalize else semver_lib.parse
    return _to_semver_msg(parse(text))


def _is_semver(text: str) -> bool:
    return _is_semver_normalize(text, False)


def _is_semver_normalize(text: str, normalize: bool) -> bool:
    parse = semver_lib.parse_normalized if normalize else semver_lib.parse
    try:
        parse(text)
    except semver_lib.SemverError:
        return False
    return True


def _s_cmp(a: Any, b: Any) -> int:
    return _from_semver_msg(a).compare(_from_semver_msg(b))


def _compare(function: str, a: Any, b: Any) -> int:
    """Two quantities or two semvers; anything else has no overload (cel-go's words)."""
    if isinstance(a, _QuantityMsg) and isinstance(b, _QuantityMsg):
        return _q_cmp(a, b)
    if isinstance(a, _SemverMsg) and isinstance(b, _SemverMsg):
        return _s_cmp(a, b)
    raise CELError(f"no such overload: {function}")


def _compare_to(a: Any, b: Any) -> int:
    return _compare("compareTo", a, b)


def _greater_than(a: Any, b: Any) -> bool:
    return _compare("isGreaterThan", a, b) == 1


def _less_than(a: Any, b: Any) -> bool:
    return _compare("isLessThan", a, b) == -1


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # an invalid pattern is the caller's error, not a log line
    return options


_RE2_OPTIONS = _re2_options()


@lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    """RE2, as Go's regexp: linear time (a selector is hostile input; Python's re is not)."""
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as e:
        detail = (
            e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else e
        )
        raise CELError(f"Illegal regex: error parsing regexp: {detail}") from None


def _find(text: str, pattern: str) -> str:
    """regex.go ``find``: the leftmost match, or the empty string."""
    match = _regex(pattern).search(text)
    return str(match.group(0)) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """regex.go ``findAll``: Go's ``FindAllString`` (a negative limit means all; an empty
    match right after the previous match is skipped)."""
    if limit == 0:
        return []
    found: list[str] = []
    previous_end = -1
    for match in _regex(pattern).finditer(text):
        if match.start() == match.end() == previous_end:
            continue
        previous_end = match.end()
        found.append(str(match.group(0)))
        if 0 < limit <= len(found):
            break
    return found


def _lists_call(impl: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except cel_lists.ListsError as e:
            raise CELError(str(e)) from None

    return call


def _ticking_equal(a: Any, b: Any) -> bool:
    _tick()
    return _cel_equal(a, b)


def _index_of(values: list[Any], item: Any) -> int:
    return cel_lists.index_of(values, item, _ticking_equal)


def _last_index_of(values: list[Any], item: Any) -> int:
    return cel_lists.last_index_of(values, item, _ticking_equal)


@lru_cache(maxsize=1024)
def _ip_msg_of(text: str) -> Any:
    try:
        return _IPMsg(address=cel_net.parse_addr(text).canonical())
    except cel_net.NetError as e:
        raise CELError(str(e)) from None


@lru_cache(maxsize=1024)
def _addr_of(text: str) -> cel_net.Addr:
    return cel_net.parse_addr(text)


@lru_cache(maxsize=1024)
def _prefix_of(text: str) -> cel_net.Prefix:
    try:
        return cel_net.parse_cidr(text)
    except cel_net.NetError as e:
        raise CELError(str(e)) from None


def _cidr_msg(prefix: cel_net.Prefix) -> Any:
    return _CIDRMsg(address=prefix.addr.canonical(), bits=prefix.bits)


def _cidr_of(msg: Any) -> cel_net.Prefix:
    return cel_net.Prefix(_addr_of(msg.address), int(msg.bits))


def _ip_of(msg_or_text: Any) -> cel_net.Addr:
    if isinstance(msg_or_text, str):
        try:
            return _addr_of(msg_or_text)
        except cel_net.NetError as e:
            raise CELError(str(e)) from None
    return _addr_of(msg_or_text.address)


def _contains_ip(cidr: Any, ip: Any) -> bool:
    return _cidr_of(cidr).contains(_ip_of(ip))


def _contains_cidr(cidr: Any, other: Any) -> bool:
    inner = _prefix_of(other) if isinstance(other, str) else _cidr_of(other)
    return _cidr_of(cidr).contains_prefix(inner)


def _net_to_string(value: Any) -> str:
    if isinstance(value, _CIDRMsg):
        return f"{value.address}/{value.bits}"
    return str(value.address)


def _ip_is_canonical(text: str) -> bool:
    try:
        return cel_net.is_canonical(text)
    except cel_net.NetError as e:
        raise CELError(str(e)) from None


def _ip_test(test: Callable[[cel_net.Addr], bool]) -> Callable[[Any], bool]:
    return lambda msg: test(_addr_of(msg.address))


def _overload(
    overload_id: str,
    result: cel.Type,
    params: list[cel.Type],
    impl: Callable[..., Any],
    member: bool = False,
    cost: Callable[..., int] = _nominal,
) -> cel.Overload:
    """An overload whose calls are metered: ``cost(*args)`` is upstream's runtime cost of the
    call (cost.go ``CallCost``, ext/sets.go; 1 for what they do not name)."""
    return cel.Overload(overload_id, result, params, is_member=member, impl=_metered(cost, impl))


def _kubernetes_library() -> cel.CelExtension:
    Q, S, B, INT, STR, DYN = _QUANTITY, _SEMVER, _T.BOOL, _T.INT, _T.STRING, _T.DYN
    LIST = _T.List(DYN)
    f = cel.FunctionDecl
    o = _overload
    functions = [
        # quantity.go
        f("quantity", [o("string_to_quantity", Q, [STR], _quantity, cost=_string_cost())]),
        f("isQuantity", [o("is_quantity_string", B, [STR], _is_quantity, cost=_string_cost())]),
        f("sign", [o("quantity_sign", INT, [Q], lambda a: _from_quantity_msg(a).sign(), True)]),
        f(
            "asApproximateFloat",
            [
                o(
                    "quantity_get_float",
                    _T.DOUBLE,
                    [Q],
                    lambda a: _from_quantity_msg(a).approximate_float(),
                    True,
                )
            ],
        ),
        f("asInteger", [o("quantity_get_int", INT, [Q], _q_as_integer, True)]),
        f(
            "isInteger",
            [
                o(
                    "quantity_is_integer",
                    B,
                    [Q],
                    lambda a: _from_quantity_msg(a).as_int64() is not None,
                    True,
                )
            ],
        ),
        f(
            "add",
            [
                o("quantity_add", Q, [Q, Q], _q_add, True),
                o("quantity_add_int", Q, [Q, INT], _q_add_int, True),
            ],
        ),
        f(
            "sub",
            [
                o("quantity_sub", Q, [Q, Q], _q_sub, True),
                o("quantity_sub_int", Q, [Q, INT], _q_sub_int, True),
            ],
        ),
        # The C++ runtime dispatches on kinds, and both value types are of the message kind:
        # one overload on dyn per method compares two quantities or two semvers.
        f("isGreaterThan", [o("dra_is_greater_than", B, [DYN, DYN], _greater_than, True)]),
        f("isLessThan", [o("dra_is_less_than", B, [DYN, DYN], _less_than, True)]),
        f("compareTo", [o("dra_compare_to", INT, [DYN, DYN], _compare_to, True)]),
        # semverlib.go (SemverVersion(1): the normalizing overloads too)
        f(
            "semver",
            [
                o("string_to_semver", S, [STR], _semver, cost=_string_cost()),
                o("string_bool_to_semver", S, [STR, B], _semver_normalize, cost=_string_cost()),
            ],
        ),
        f(
            "isSemver",
            [
                o("is_semver_string", B, [STR], _is_semver, cost=_string_cost()),
                o("is_semver_string_bool", B, [STR, B], _is_semver_normalize, cost=_string_cost()),
            ],
        ),
        # regex.go (RE2, as Go's regexp)
        f("find", [o("string_find_string", STR, [STR, STR], _find, True, _regex_cost)]),
        f(
            "findAll",
            [
                o(
                    "string_find_all_string",
                    _T.List(STR),
                    [STR, STR],
                    _find_all,
                    True,
                    _regex_cost,
                ),
                o(
                    "string_find_all_string_int",
                    _T.List(STR),
                    [STR, STR, INT],
                    _find_all,
                    True,
                    _regex_cost,
                ),
            ],
        ),
        # cel-go ext.Sets (base environment since 1.29)
        f(
            "sets.contains",
            [o("list_sets_contains_list", B, [LIST, LIST], _sets_contains, cost=_sets_cost(1))],
        ),
        f(
            "sets.equivalent",
            [o("list_sets_equivalent_list", B, [LIST, LIST], _sets_equivalent, cost=_sets_cost(2))],
        ),
        f(
            "sets.intersects",
            [o("list_sets_intersects_list", B, [LIST, LIST], _sets_intersects, cost=_sets_cost(1))],
        ),
        # ip.go
        f(
            "ip",
            [
                o("string_to_ip", _IP, [STR], _ip_msg_of, cost=_string_cost()),
                o("cidr_ip", _IP, [_CIDR], lambda c: _IPMsg(address=c.address), True),
            ],
        ),
        # cidr.go
        f(
            "cidr",
            [
                o(
                    "string_to_cidr",
                    _CIDR,
                    [STR],
                    lambda t: _cidr_msg(_prefix_of(t)),
                    cost=_string_cost(),
                )
            ],
        ),
        f("isCIDR", [o("is_cidr", B, [STR], cel_net.is_cidr, cost=_string_cost())]),
        f(
            "containsIP",
            [
                o(
                    "cidr_contains_ip_string",
                    B,
                    [_CIDR, STR],
                    _contains_ip,
                    True,
                    _contains_ip_cost,
                ),
                o("cidr_contains_ip_ip", B, [_CIDR, _IP], _contains_ip, True, _contains_ip_cost),
            ],
        ),
        f(
            "containsCIDR",
            [
                o(
                    "cidr_contains_cidr_string",
                    B,
                    [_CIDR, STR],
                    _contains_cidr,
                    True,
                    _contains_cidr_cost,
                ),
                o(
                    "cidr_contains_cidr",
                    B,
                    [_CIDR, _CIDR],
                    _contains_cidr,
                    True,
                    _contains_cidr_cost,
                ),
            ],
        ),
        f("prefixLength", [o("cidr_prefix_length", INT, [_CIDR], lambda c: int(c.bits), True)]),
        f(
            "masked",
            [o("cidr_masked", _CIDR, [_CIDR], lambda c: _cidr_msg(_cidr_of(c).masked()), True)],
        ),
        f("isIP", [o("is_ip", B, [STR], cel_net.is_ip, cost=_string_cost())]),
        f(
            "ip.isCanonical",
            [o("ip_is_canonical", B, [STR], _ip_is_canonical, cost=_string_cost(2))],
        ),
        f(
            "family",
            [o("ip_family", INT, [_IP], lambda a: 4 if _addr_of(a.address).is4 else 6, True)],
        ),
        # string(cidr): the C++ runtime dispatches on kinds, and net.IP and net.CIDR are both
        # messages: string(ip) is the one overload (ip_to_string) and gives a CIDR's text too.
        f("string", [o("ip_to_string", STR, [_IP], _net_to_string)]),
        *(
            f(name, [o(overload, B, [_IP], _ip_test(test), True)])
            for name, overload, test in (
                ("isUnspecified", "ip_is_unspecified", cel_net.Addr.is_unspecified),
                ("isLoopback", "ip_is_loopback", cel_net.Addr.is_loopback),
                (
                    "isLinkLocalMulticast",
                    "ip_is_link_local_multicast",
                    cel_net.Addr.is_link_local_multicast,
                ),
                (
                    "isLinkLocalUnicast",
                    "ip_is_link_local_unicast",
                    cel_net.Addr.is_link_local_unicast,
                ),
                ("isGlobalUnicast", "ip_is_global_unicast", cel_net.Addr.is_global_unicast),
            )
        ),
        # lists.go: one overload on list(dyn) each (see extender.dra.cel.lists); indexOf and
        # lastIndexOf of strings are the string extension's.
        f(
            "isSorted",
            [
                o(
                    "list_is_sorted_bool",
                    B,
                    [LIST],
                    _lists_call(cel_lists.is_sorted),
                    True,
                    _list_cost,
                )
            ],
        ),
        f("sum", [o("list_sum", DYN, [LIST], _lists_call(cel_lists.list_sum), True, _list_cost)]),
        f("min", [o("list_min", DYN, [LIST], _lists_call(cel_lists.list_min), True, _list_cost)]),
        f("max", [o("list_max", DYN, [LIST], _lists_call(cel_lists.list_max), True, _list_cost)]),
        f("indexOf", [o("list_a_index_of_int", INT, [LIST, DYN], _index_of, True, _list_cost)]),
        f(
            "lastIndexOf",
            [o("list_a_last_index_of_int", INT, [LIST, DYN], _last_index_of, True, _list_cost)],
        ),
        f("major", [o("semver_major", INT, [S], lambda a: _from_semver_msg(a).major, True)]),
        f("minor", [o("semver_minor", INT, [S], lambda a: _from_semver_msg(a).minor, True)]),
        f("patch", [o("semver_patch", INT, [S], lambda a: _from_semver_msg(a).patch, True)]),
    ]
    return cel.CelExtension("kubernetes", functions)
