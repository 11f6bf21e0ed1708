"""Semantic versions as the Kubernetes CEL ``semver`` library sees them.

Parsing is github.com/blang/semver/v4 ``Parse`` (strict: ``MAJOR.MINOR.PATCH[-PRE][+BUILD]``, no
leading zeroes, the same error texts), and ``semver(s, true)`` first applies
``normalizeAndParse`` of ``k8s.io/apiserver/pkg/cel/library/semverlib.go`` (drops a ``v``
prefix and leading zeroes, fills in a missing minor or patch). Ordering is blang's ``Compare``
(SemVer 2.0.0 precedence; build metadata never counts).
"""

from __future__ import annotations

from dataclasses import dataclass

_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")
_MAX_UINT64 = (1 << 64) - 1


class SemverError(ValueError):
    """A version blang/semver would not parse (``str(e)`` is its message)."""


def _contains_only(text: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in text)


def _has_leading_zeroes(text: str) -> bool:
    return len(text) > 1 and text[0] == "0"


def _parse_uint(text: str) -> int:
    """Go's ``strconv.ParseUint(text, 10, 64)`` for a string of digits, with its errors."""
    if not text:
        raise SemverError('strconv.ParseUint: parsing "": invalid syntax')
    if len(text) > 20:  # more digits than 2^64 has (and than Python converts unasked)
        raise SemverError(f'strconv.ParseUint: parsing "{text}": value out of range')
    value = int(text)
    if value > _MAX_UINT64:
        raise SemverError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return value


@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    patch: int
    # Each part is an int (numeric identifier) or a str (alphanumeric identifier).
    pre: tuple[int | str, ...] = ()

    def canonical(self) -> str:
        """The text without build metadata: equal text exactly when ``compare`` is 0."""
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        return text

    def compare(self, other: Version) -> int:
        for mine, theirs in (
            (self.major, other.major),
            (self.minor, other.minor),
            (self.patch, other.patch),
        ):
            if mine != theirs:
                return 1 if mine > theirs else -1
        if not self.pre or not other.pre:
            # A version without a prerelease ranks above one with.
            return (not self.pre) - (not other.pre)
        for mine_pre, theirs_pre in zip(self.pre, other.pre, strict=False):
            comp = _compare_pre(mine_pre, theirs_pre)
            if comp:
                return comp
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))


def _compare_pre(a: int | str, b: int | str) -> int:
    a_num, b_num = isinstance(a, int), isinstance(b, int)
    if a_num != b_num:
        return -1 if a_num else 1  # numeric identifiers rank below alphanumeric ones
    return (a > b) - (a < b)  # type: ignore[operator]


def _parse_pre(text: str) -> int | str:
    if not text:
        raise SemverError("Prerelease is empty")
    if _contains_only(text, _NUMBERS):
        if _has_leading_zeroes(text):
            raise SemverError(
                f"Numeric PreRelease version must not contain leading zeroes {_quote(text)}"
            )
        return _parse_uint(text)
    if _contains_only(text, _ALPHANUM):
        return text
    raise SemverError(f"Invalid character(s) found in prerelease {_quote(text)}")


def _quote(text: str) -> str:
    """Go's ``%q`` for the plain ASCII texts these messages quote."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse(text: str) -> Version:
    """blang/semver ``Parse``."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    numbers = []
    for label, part in (("major", parts[0]), ("minor", parts[1])):
        if not _contains_only(part, _NUMBERS):
            raise SemverError(f"Invalid character(s) found in {label} number {_quote(part)}")
        if _has_leading_zeroes(part):
            raise SemverError(
                f"{label.capitalize()} number must not contain leading zeroes {_quote(part)}"
            )
        numbers.append(_parse_uint(part))
    patch_text = parts[2]
    build: list[str] = []
    prerelease: list[str] = []
    if "+" in patch_text:
        index = patch_text.index("+")
        build = patch_text[index + 1 :].split(".")
        patch_text = patch_text[:index]
    if "-" in patch_text:
        index = patch_text.index("-")
        prerelease = patch_text[index + 1 :].split(".")
        patch_text = patch_text[:index]
    if not _contains_only(patch_text, _NUMBERS):
        raise SemverError(f"Invalid character(s) found in patch number {_quote(patch_text)}")
    if _has_leading_zeroes(patch_text):
        raise SemverError(f"Patch number must not contain leading zeroes {_quote(patch_text)}")
    patch = _parse_uint(patch_text)
    pre = tuple(_parse_pre(p) for p in prerelease)
    for part in build:
        if not part:
            raise SemverError("Build meta data is empty")
        if not _contains_only(part, _ALPHANUM):
            raise SemverError(f"Invalid character(s) found in build meta data {_quote(part)}")
    return Version(numbers[0], numbers[1], patch, pre)


def parse_normalized(text: str) -> Version:
    """``normalizeAndParse``: ``semver(s, true)`` and ``isSemver(s, true)``."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _NUMBERS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if any(c in "+-" for c in parts[-1]):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts.extend(["0"] * (3 - len(parts)))
    return parse(".".join(parts))
