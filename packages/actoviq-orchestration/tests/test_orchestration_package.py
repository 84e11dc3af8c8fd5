from __future__ import annotations

import importlib

import actoviq.orchestration as orchestration


def test_public_names_are_importable() -> None:
    for name in orchestration.__all__:
        assert getattr(orchestration, name) is not None


def test_package_sits_in_the_open_namespace() -> None:
    namespace = importlib.import_module("actoviq")
    assert getattr(namespace, "__file__", None) is None
    assert orchestration.__name__ == "actoviq.orchestration"
