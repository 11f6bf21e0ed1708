"""Kubernetes' ``ip`` CEL library against upstream's own cases.

The table is ``k8s.io/apiserver/pkg/cel/library/ip_test.go`` (v0.36.3), each expected value
written as a comparison so the expression is a selector; runtime errors are compared whole
(upstream compares ``err.Error()``). Then Go ``net/netip`` parse errors and the refusals of
``parseIPAddr`` (zones, IPv4-mapped addresses).
"""

from __future__ import annotations

import pytest

from extender.dra.cel import CELDevice, CELError, compile_expression

DEVICE = CELDevice(driver="x.example.com", attributes={}, capacity={})


def _parse_error(text: str, detail: str) -> str:
    return (
        f'IP Address "{text}" parse error during conversion from string: '
        f'ParseAddr("{text}"): {detail}'
    )


# ip_test.go: (expression, expected: True | runtime error text)
CASES: list[tuple[str, bool | str]] = [
    ('ip("192.168.0.1") == ip("192.168.0.1")', True),
    (
        'ip("192.168.0.1.0") == ip("192.168.0.1")',
        _parse_error("192.168.0.1.0", "IPv4 address too long"),
    ),
    ('isIP("192.168.0.1")', True),
    ('isIP("192.168.0.1.0") == false', True),
    ('ip.isCanonical("127.0.0.1")', True),
    ('ip.isCanonical("127.0.0.1.0")', _parse_error("127.0.0.1.0", "IPv4 address too long")),
    ('ip("192.168.0.1").family() == 4', True),
    ('ip("0.0.0.0").isUnspecified()', True),
    ('ip("127.0.0.1").isUnspecified() == false', True),
    ('ip("127.0.0.1").isLoopback()', True),
    ('ip("1.2.3.4").isLoopback() == false', True),
    ('ip("224.0.0.1").isLinkLocalMulticast()', True),
    ('ip("224.0.1.1").isLinkLocalMulticast() == false', True),
    ('ip("169.254.169.254").isLinkLocalUnicast()', True),
    ('ip("192.168.0.1").isLinkLocalUnicast() == false', True),
    ('ip("192.168.0.1").isGlobalUnicast()', True),
    ('ip("255.255.255.255").isGlobalUnicast() == false', True),
    ('ip("2001:db8::68") == ip("2001:db8::68")', True),
    (
        'ip("2001:db8:::68") == ip("2001:db8::68")',
        _parse_error(
            "2001:db8:::68", 'each colon-separated field must have at least one digit (at ":68")'
        ),
    ),
    ('isIP("2001:db8::68")', True),
    ('isIP("2001:db8:::68") == false', True),
    ('ip.isCanonical("2001:db8::68")', True),
    ('ip.isCanonical("2001:DB8::68") == false', True),
    (
        'ip.isCanonical("2001:db8:::68")',
        _parse_error(
            "2001:db8:::68", 'each colon-separated field must have at least one digit (at ":68")'
        ),
    ),
    ('ip("2001:db8::68").family() == 6', True),
    ('ip("::").isUnspecified()', True),
    ('ip("::1").isUnspecified() == false', True),
    ('ip("::1").isLoopback()', True),
    ('ip("2001:db8::abcd").isLoopback() == false', True),
    ('ip("ff02::1").isLinkLocalMulticast()', True),
    ('ip("fd00::1").isLinkLocalMulticast() == false', True),
    ('ip("fe80::1").isLinkLocalUnicast()', True),
    ('ip("fd80::1").isLinkLocalUnicast() == false', True),
    ('ip("2001:db8::abcd").isGlobalUnicast()', True),
    ('ip("ff00::1").isGlobalUnicast() == false', True),
    ('string(ip("192.168.0.1")) == "192.168.0.1"', True),
    ('type(ip("192.168.0.1")) == net.IP', True),
    # Go's netip.ParseAddr, beyond the table (its texts are part of upstream's errors).
    ('isIP("1.2.3")', _parse_error("1.2.3", "IPv4 address too short")),
    (
        'ip("01.2.3.4") == ip("1.2.3.4")',
        _parse_error("01.2.3.4", "IPv4 field has octet with leading zero"),
    ),
    ('ip("1.2.3.256") == ip("1.2.3.4")', _parse_error("1.2.3.256", "IPv4 field has value >255")),
    (
        'ip("1..2.3") == ip("1.2.3.4")',
        _parse_error("1..2.3", 'IPv4 field must have at least one digit (at ".2.3")'),
    ),
    ('ip("foo") == ip("1.2.3.4")', _parse_error("foo", "unable to parse IP")),
    (
        'ip("1:2:3:4:5:6:7:8:9") == ip("::")',
        _parse_error("1:2:3:4:5:6:7:8:9", 'trailing garbage after address (at "9")'),
    ),
    (
        'ip("12345::") == ip("::")',
        _parse_error("12345::", 'each group must have 4 or less digits (at "12345::")'),
    ),
    ('ip("1::2::3") == ip("::")', _parse_error("1::2::3", 'multiple :: in address (at ":3")')),
    ('ip("1:2") == ip("::")', _parse_error("1:2", "address string too short")),
    ('ip("fe80::1%eth0") == ip("::")', 'IP address "fe80::1%eth0" with zone value is not allowed'),
    (
        'ip("::ffff:1.2.3.4") == ip("::")',
        'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed',
    ),
    ('ip("::1.2.3.4") == ip("::102:304")', True),
    ('string(ip("2001:0db8:0000:0000:0000:0000:0000:0001")) == "2001:db8::1"', True),
    ('string(ip("2001:db8:0:1:1:1:1:1")) == "2001:db8:0:1:1:1:1:1"', True),
]


@pytest.mark.parametrize("expression, expected", CASES)
def test_ip(expression: str, expected: bool | str) -> None:
    result = compile_expression(expression)
    assert result.error is None, result.error
    if expected is True:
        assert result.device_matches(DEVICE) is True
        return
    if expression.startswith("isIP("):
        assert result.device_matches(DEVICE) is False
        return
    with pytest.raises(CELError) as raised:
        result.device_matches(DEVICE)
    assert str(raised.value) == expected


def test_ip_compile_errors() -> None:
    result = compile_expression("isIP(ip('1.2.3.4'))")
    assert result.error is not None
    assert "found no matching overload for 'isIP' applied to '(net.IP)'" in str(result.error)


def _prefix_error(text: str, detail: str) -> str:
    wrap = "network address parse error during conversion from string: "
    return f'{wrap}{wrap}netip.ParsePrefix("{text}"): {detail}'


# cidr_test.go: (expression, expected: True | runtime error text)
CIDR_CASES: list[tuple[str, bool | str]] = [
    ('cidr("192.168.0.0/24") == cidr("192.168.0.0/24")', True),
    (
        'cidr("192.168.0.0/") == cidr("192.168.0.0/24")',
        _prefix_error("192.168.0.0/", 'bad bits after slash: ""'),
    ),
    ('cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))', True),
    ('cidr("192.168.0.0/24").containsIP(ip("192.168.1.1")) == false', True),
    ('cidr("192.168.0.0/24").containsIP("192.168.0.1")', True),
    ('cidr("192.168.0.0/24").containsIP("192.168.1.1") == false', True),
    ('cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/25"))', True),
    ('cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.1/32"))', True),
    ('cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/23")) == false', True),
    ('cidr("192.168.0.0/24").containsCIDR(cidr("192.169.0.1/32")) == false', True),
    ('cidr("192.168.0.0/24").containsCIDR("192.168.0.0/25")', True),
    ('cidr("192.168.0.0/24").containsCIDR("192.168.0.0/23") == false', True),
    ('cidr("192.168.0.0/24").ip() == ip("192.168.0.0")', True),
    ('cidr("192.168.0.0/24").masked() == cidr("192.168.0.0/24")', True),
    ('cidr("192.168.0.1/24").masked() == cidr("192.168.0.0/24")', True),
    ('cidr("192.168.0.1/24") != cidr("192.168.0.0/24")', True),
    ('cidr("192.168.0.0/24").prefixLength() == 24', True),
    ('cidr("2001:db8::/32") == cidr("2001:db8::/32")', True),
    (
        'cidr("2001:db8::/") == cidr("2001:db8::/32")',
        _prefix_error("2001:db8::/", 'bad bits after slash: ""'),
    ),
    ('cidr("2001:db8::/32").containsIP(ip("2001:db8::1"))', True),
    ('cidr("2001:db8::/32").containsIP(ip("2001:dc8::1")) == false', True),
    ('cidr("2001:db8::/32").containsIP("2001:db8::1")', True),
    ('cidr("2001:db8::/32").containsIP("2001:dc8::1") == false', True),
    ('cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/33"))', True),
    ('cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/31")) == false', True),
    ('cidr("2001:db8::/32").containsCIDR("2001:db8::/33")', True),
    ('cidr("2001:db8::/32").containsCIDR("2001:db8::/31") == false', True),
    ('cidr("2001:db8::/32").ip() == ip("2001:db8::")', True),
    ('cidr("2001:db8::/32").masked() == cidr("2001:db8::/32")', True),
    ('cidr("2001:db8:1::/32").masked() == cidr("2001:db8::/32")', True),
    ('cidr("2001:db8::/32").prefixLength() == 32', True),
    ('type(cidr("192.168.0.0/24")) == net.CIDR', True),
    # Go's netip.ParsePrefix and cidr.go's refusals, beyond the table.
    ('isCIDR("192.168.0.0/24")', True),
    ('isCIDR("192.168.0.0") == false', True),
    ('cidr("1.2.3.4") == cidr("1.2.3.4/32")', _prefix_error("1.2.3.4", "no '/'")),
    (
        'cidr("1.2.3.4/33") == cidr("1.2.3.4/32")',
        _prefix_error("1.2.3.4/33", "prefix length out of range"),
    ),
    (
        'cidr("1.2.3.4/024") == cidr("1.2.3.4/32")',
        _prefix_error("1.2.3.4/024", 'bad bits after slash: "024"'),
    ),
    (
        'cidr("1.2.3.4/+8") == cidr("1.2.3.4/32")',
        _prefix_error("1.2.3.4/+8", 'bad bits after slash: "+8"'),
    ),
    (
        'cidr("1.2.3/8") == cidr("1.2.3.4/32")',
        _prefix_error("1.2.3/8", 'ParseAddr("1.2.3"): IPv4 address too short'),
    ),
    (
        'cidr("fe80::1%eth0/64") == cidr("::/0")',
        _prefix_error("fe80::1%eth0/64", "IPv6 zones cannot be present in a prefix"),
    ),
    (
        'cidr("::ffff:1.2.3.4/120") == cidr("::/0")',
        "network address parse error during conversion from string: "
        'IPv4-mapped IPv6 address "::ffff:1.2.3.4/120" is not allowed',
    ),
    ('cidr("192.168.0.0/24").containsCIDR("192.168.0.0/24")', True),
    ('cidr("192.168.0.0/24").containsCIDR("192.168.0.255/24")', True),
    ('cidr("0.0.0.0/0").containsIP("2001:db8::1") == false', True),
    ('cidr("::/0").containsCIDR("1.2.3.4/32") == false', True),
]


@pytest.mark.parametrize("expression, expected", CIDR_CASES)
def test_cidr(expression: str, expected: bool | str) -> None:
    result = compile_expression(expression)
    assert result.error is None, result.error
    if expected is True:
        assert result.device_matches(DEVICE) is True
        return
    with pytest.raises(CELError) as raised:
        result.device_matches(DEVICE)
    assert str(raised.value) == expected


def test_cidr_compile_errors() -> None:
    # ip_test.go's compile error case.
    result = compile_expression('isIP(cidr("192.168.0.0/24"))')
    assert "found no matching overload for 'isIP' applied to '(net.CIDR)'" in str(result.error)
    # A known difference (see extender.dra.cel): upstream's string(cidr) has no overload here.
    result = compile_expression('string(cidr("192.168.0.0/24")) == "192.168.0.0/24"')
    assert "found no matching overload for 'string'" in str(result.error)
