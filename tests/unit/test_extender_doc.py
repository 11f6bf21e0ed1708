"""docs/extender.md's metrics table against the code: every ``outcome`` a verb handler sets and
every verb is listed (issue 27: the table omitted ``outcome="forbidden"``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from extender.webhook import app as webhook_app
from extender.webhook.app import OUTCOMES

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "extender.md").read_text()


def _outcomes_in_code() -> set[str]:
    """Every string the handlers of ``app.py`` assign to ``outcome`` (ternaries included)."""
    tree = ast.parse(Path(webhook_app.__file__).read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "outcome" for target in node.targets
        ):
            found |= _values(node.value)
    return found


def _values(expr: ast.expr) -> set[str]:
    """The strings ``expr`` can evaluate to: a constant, or either branch of a ternary."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return {expr.value}
    if isinstance(expr, ast.IfExp):
        return _values(expr.body) | _values(expr.orelse)
    raise AssertionError(f"outcome set from a non-constant: {ast.unparse(expr)}")


def _row(metric: str) -> str:
    (row,) = [line for line in DOC.splitlines() if line.startswith(f"| `{metric}` |")]
    return row


def test_outcomes_the_code_sets_are_the_constant() -> None:
    assert _outcomes_in_code() == set(OUTCOMES)


def test_the_metrics_table_lists_every_outcome() -> None:
    listed = _row("extender_requests_total").split("one of:", 1)[1].split("<br>")
    documented = {re.match(r"`(\w+)`", part.strip()).group(1) for part in listed if part.strip()}
    assert documented == set(OUTCOMES)


def test_the_metrics_section_lists_every_verb() -> None:
    from extender.framework.profile import Profile
    from extender.framework.registry import Registry
    from extender.framework.runtime import Framework
    from extender.webhook.service import ExtenderService

    app = webhook_app.create_app(ExtenderService(Framework(Profile("p", {}), Registry({}))))
    verbs = {
        rule.endpoint.removeprefix("verb_")
        for rule in app.url_map.iter_rules()
        if rule.endpoint.startswith("verb_")
    }
    (sentence,) = re.findall(r"^`verb` is (.*?)\.", DOC, re.M)
    assert set(re.findall(r"`(\w+)`", sentence)) == verbs
