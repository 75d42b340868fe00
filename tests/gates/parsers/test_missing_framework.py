"""A missing framework or compiler skips the parser tests locally and fails them in CI."""

from __future__ import annotations

import pytest


def test_missing_component_fails_when_ci_is_set(monkeypatch, missing_component):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required for CI but missing: doctest"):
        missing_component("doctest")


def test_missing_component_skips_without_ci(monkeypatch, missing_component):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="missing: doctest"):
        missing_component("doctest")
