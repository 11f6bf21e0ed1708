"""Kubernetes' ``ip`` CEL library: the address parsing and tests of Go's ``net/netip``.

Upstream: ``k8s.io/apiserver/pkg/cel/library/ip.go`` (base environment since 1.30), whose
``parseIPAddr`` is Go's ``netip.ParseAddr`` with zones and IPv4-mapped IPv6 addresses
refused. Python's ``ipaddress`` accepts other spellings and words its errors differently, so
``parse_addr`` follows ``netip.ParseAddr`` step by step (its error texts are part of
upstream's runtime errors); ``ipaddress`` gives the canonical text (RFC 5952, as Go's).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass


class NetError(Exception):
    """A runtime error; ``str(e)`` is upstream's text."""


def _quote(text: str) -> str:
    # Go's strconv.Quote for the printable ASCII the tests use; JSON escapes the rest alike.
    return json.dumps(text, ensure_ascii=False)


class _ParseAddrError(Exception):
    def __init__(self, text: str, message: str, at: str = "") -> None:
        detail = f"ParseAddr({_quote(text)}): {message}"
        if at:
            detail += f" (at {_quote(at)})"
        super().__init__(detail)


@dataclass(frozen=True, slots=True)
class Addr:
    """An IPv4 (4 bytes) or IPv6 (16 bytes) address, with its zone."""

    octets: bytes
    zone: str = ""

    @property
    def is4(self) -> bool:
        return len(self.octets) == 4

    def is4in6(self) -> bool:
        return len(self.octets) == 16 and self.octets[:12] == b"\0" * 10 + b"\xff\xff"

    def canonical(self) -> str:
        if self.is4:
            return str(ipaddress.IPv4Address(self.octets))
        return str(ipaddress.IPv6Address(self.octets))

    def _u16(self, i: int) -> int:
        return (self.octets[2 * i] << 8) | self.octets[2 * i + 1]

    def is_unspecified(self) -> bool:
        return not any(self.octets)

    def is_loopback(self) -> bool:
        if self.is4:
            return self.octets[0] == 127
        return self.octets == b"\0" * 15 + b"\x01"

    def is_multicast(self) -> bool:
        return (self.octets[0] & 0xF0) == 0xE0 if self.is4 else self.octets[0] == 0xFF

    def is_link_local_multicast(self) -> bool:
        if self.is4:
            return self.octets[:3] == b"\xe0\0\0"
        return (self._u16(0) & 0xFF0F) == 0xFF02

    def is_link_local_unicast(self) -> bool:
        if self.is4:
            return self.octets[:2] == b"\xa9\xfe"
        return (self._u16(0) & 0xFFC0) == 0xFE80

    def is_global_unicast(self) -> bool:
        if self.is4 and self.octets in (b"\0\0\0\0", b"\xff\xff\xff\xff"):
            return False
        return not (
            self.is_unspecified()
            or self.is_loopback()
            or self.is_multicast()
            or self.is_link_local_unicast()
        )


def _ipv4_fields(text: str, start: int, end: int) -> bytes:
    """netip's parseIPv4Fields of ``text[start:end]``."""
    s = text[start:end]
    fields: list[int] = []
    value, digits = 0, 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if digits == 1 and value == 0:
                raise _ParseAddrError(text, "IPv4 field has octet with leading zero")
            value = value * 10 + ord(c) - ord("0")
            digits += 1
            if value > 255:
                raise _ParseAddrError(text, "IPv4 field has value >255")
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                raise _ParseAddrError(text, "IPv4 field must have at least one digit", s[i:])
            if len(fields) == 3:
                raise _ParseAddrError(text, "IPv4 address too long")
            fields.append(value)
            value, digits = 0, 0
        else:
            raise _ParseAddrError(text, "unexpected character", s[i:])
    if len(fields) < 3:
        raise _ParseAddrError(text, "IPv4 address too short")
    fields.append(value)
    return bytes(fields)


_HEX = {c: int(c, 16) for c in "0123456789abcdefABCDEF"}


def _ipv6(text: str) -> Addr:
    """netip's parseIPv6."""
    s, zone = text, ""
    if "%" in s:
        s, _, zone = s.partition("%")
        if not zone:
            raise _ParseAddrError(text, "zone must be a non-empty string")
    ip = bytearray(16)
    ellipsis = -1
    if len(s) >= 2 and s[0] == ":" and s[1] == ":":
        ellipsis = 0
        s = s[2:]
        if not s:
            return Addr(bytes(ip), zone)
    i = 0
    while i < 16:
        off, acc = 0, 0
        while off < len(s) and s[off] in _HEX:
            acc = (acc << 4) + _HEX[s[off]]
            if off > 3:
                raise _ParseAddrError(text, "each group must have 4 or less digits", s)
            if acc > 0xFFFF:
                raise _ParseAddrError(text, "IPv6 field has value >=2^16", s)
            off += 1
        if off == 0:
            raise _ParseAddrError(
                text, "each colon-separated field must have at least one digit", s
            )
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and i != 12:
                raise _ParseAddrError(
                    text, "embedded IPv4 address must replace the final 2 fields of the address", s
                )
            if i + 4 > 16:
                raise _ParseAddrError(
                    text,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    s,
                )
            end = len(text) - (len(zone) + 1 if zone else 0)
            ip[i : i + 4] = _ipv4_fields(text, end - len(s), end)
            s = ""
            i += 4
            break
        ip[i], ip[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise _ParseAddrError(text, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _ParseAddrError(text, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _ParseAddrError(text, "multiple :: in address", s)
            ellipsis = i
            s = s[1:]
            if not s:
                break
    if s:
        raise _ParseAddrError(text, "trailing garbage after address", s)
    if i < 16:
        if ellipsis < 0:
            raise _ParseAddrError(text, "address string too short")
        n = 16 - i
        ip[ellipsis + n : 16] = ip[ellipsis:i]
        ip[ellipsis : ellipsis + n] = bytes(n)
    elif ellipsis >= 0:
        raise _ParseAddrError(text, "the :: must expand to at least one field of zeros", s)
    return Addr(bytes(ip), zone)


def go_parse_addr(text: str) -> Addr:
    """Go's ``netip.ParseAddr``; raises _ParseAddrError with its text."""
    for c in text:
        if c == ".":
            return Addr(_ipv4_fields(text, 0, len(text)))
        if c == ":":
            return _ipv6(text)
        if c == "%":
            raise _ParseAddrError(text, "missing IPv6 address")
    raise _ParseAddrError(text, "unable to parse IP")


def parse_addr(text: str) -> Addr:
    """ip.go ``parseIPAddr``."""
    try:
        addr = go_parse_addr(text)
    except _ParseAddrError as e:
        raise NetError(
            f"IP Address {_quote(text)} parse error during conversion from string: {e}"
        ) from None
    if addr.zone:
        raise NetError(f"IP address {_quote(text)} with zone value is not allowed")
    if addr.is4in6():
        raise NetError(f"IPv4-mapped IPv6 address {_quote(text)} is not allowed")
    return addr


def is_ip(text: str) -> bool:
    try:
        parse_addr(text)
    except NetError:
        return False
    return True


def is_canonical(text: str) -> bool:
    return parse_addr(text).canonical() == text


@dataclass(frozen=True, slots=True)
class Prefix:
    """An address and a prefix length (Go's ``netip.Prefix``: the address is kept unmasked)."""

    addr: Addr
    bits: int

    def canonical(self) -> str:
        return f"{self.addr.canonical()}/{self.bits}"

    def masked(self) -> Prefix:
        value = int.from_bytes(self.addr.octets, "big")
        width = 8 * len(self.addr.octets)
        mask = ((1 << width) - 1) ^ ((1 << (width - self.bits)) - 1)
        return Prefix(Addr((value & mask).to_bytes(len(self.addr.octets), "big")), self.bits)

    def _leading(self, addr: Addr, bits: int) -> int:
        return int.from_bytes(addr.octets, "big") >> (8 * len(addr.octets) - bits)

    def contains(self, addr: Addr) -> bool:
        """``Prefix.Contains``: same family, no zone, the first ``bits`` bits equal."""
        if addr.zone or len(addr.octets) != len(self.addr.octets):
            return False
        return self._leading(addr, self.bits) == self._leading(self.addr, self.bits)

    def contains_prefix(self, other: Prefix) -> bool:
        """cidr.go ``containsCIDR``: ``Overlaps`` and a prefix no longer than the other's."""
        if len(other.addr.octets) != len(self.addr.octets):
            return False
        shortest = min(self.bits, other.bits)
        overlaps = self._leading(self.addr, shortest) == self._leading(other.addr, shortest)
        return overlaps and self.bits <= other.bits


class _ParsePrefixError(Exception):
    def __init__(self, text: str, message: str) -> None:
        super().__init__(f"netip.ParsePrefix({_quote(text)}): {message}")


_MAX_INT = (1 << 63) - 1


def go_parse_prefix(text: str) -> Prefix:
    """Go's ``netip.ParsePrefix``."""
    slash = text.rfind("/")
    if slash < 0:
        raise _ParsePrefixError(text, "no '/'")
    try:
        addr = go_parse_addr(text[:slash])
    except _ParseAddrError as e:
        raise _ParsePrefixError(text, str(e)) from None
    if not addr.is4 and addr.zone:
        raise _ParsePrefixError(text, "IPv6 zones cannot be present in a prefix")
    bits_text = text[slash + 1 :]
    bad = f"bad bits after slash: {_quote(bits_text)}"
    if len(bits_text) > 1 and not "1" <= bits_text[0] <= "9":
        raise _ParsePrefixError(text, bad)
    # strconv.Atoi: ASCII digits (a sign only when longer than one character: refused above).
    digits = bits_text[1:] if bits_text[:1] in ("+", "-") and len(bits_text) > 1 else bits_text
    if not digits or not all("0" <= c <= "9" for c in digits) or int(digits) > _MAX_INT:
        raise _ParsePrefixError(text, bad)
    bits = int(bits_text)
    if not 0 <= bits <= 8 * len(addr.octets):
        raise _ParsePrefixError(text, "prefix length out of range")
    return Prefix(addr, bits)


def parse_cidr(text: str) -> Prefix:
    """cidr.go ``parseCIDR``, with ``stringToCIDR``'s wording of its errors."""
    prefix_text = "network address parse error during conversion from string: "
    try:
        prefix = go_parse_prefix(text)
    except _ParsePrefixError as e:
        raise NetError(prefix_text + prefix_text + str(e)) from None
    if prefix.addr.is4in6():
        raise NetError(prefix_text + f"IPv4-mapped IPv6 address {_quote(text)} is not allowed")
    return prefix


def is_cidr(text: str) -> bool:
    try:
        parse_cidr(text)
    except NetError:
        return False
    return True
