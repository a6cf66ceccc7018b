"""The one rule for what a suite needs: required in CI, skipped with the reason elsewhere."""

from __future__ import annotations

import pytest

from support.requirements import need


def test_a_missing_requirement_skips_with_the_reason_and_the_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"the thing: it is absent \(install it\)"):
        need("the thing", False, "it is absent", "install it")


def test_under_ci_a_missing_requirement_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true requires the thing: it is absent"):
        need("the thing", False, "it is absent")


def test_a_present_requirement_lets_the_test_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    need("the thing", True, "it is absent")
