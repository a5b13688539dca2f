"""The integrations found by folder, and a generic check run on every one of them (a new one is checked unnamed)."""

import inspect
import sys

import pytest

from camdf.common.fingerprint import defining_package
from camdf.integrations.registry import (cost_measures, discover, executable_code, get_executable, integrations,
                                         measure_code)
from camdf.pipeline.checks.values import COST_REGIMES, ConfigError, converter_target, converters
from camdf.sufficiency.domain import ExecutableDomain

PACKAGES = sorted(integrations())


def _resolve(package: str, ref: str):
    import importlib

    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(f"{package}.{module}"), attr)


def test_every_package_of_the_folder_is_an_integration():
    import camdf.integrations as root
    import pkgutil

    assert PACKAGES == sorted(f"camdf.integrations.{i.name}" for i in pkgutil.iter_modules(root.__path__) if i.ispkg)
    assert {"camdf.integrations.tau2", "camdf.integrations.bfcl"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_integration(package):
    """What every integration owes the pipeline: its converters allowed, its domains and measures resolvable."""
    declared = integrations()[package]
    for ref in declared.converters:
        target = f"{package}.{ref.replace(':', '.')}"
        assert callable(_resolve(package, ref)) and target in converters()
        assert converter_target("domain.converter._target_", target) == target
    for name, ref in declared.executable.items():
        cls = _resolve(package, ref)
        assert issubclass(cls, ExecutableDomain)
        assert executable_code(name) == (package,) == (defining_package(cls),)  # what derive's cache hashes
        assert get_executable(name) is get_executable(name)  # one shared instance
    for regime, m in declared.measures.items():
        resolved = cost_measures()[regime]
        accepted = inspect.signature(resolved.measure).parameters
        assert set(m.params) <= set(accepted) and regime in COST_REGIMES
        assert measure_code(regime) == (package,) == (defining_package(resolved.measure),)
        assert m.domain_param is None or m.domain_param in m.params


def test_a_target_outside_the_declarations_is_refused():
    with pytest.raises(ConfigError, match="one of the built-in converters"):
        converter_target("domain.converter._target_", "os.system")


def test_a_package_without_a_declaration_is_refused_by_name(tmp_path, monkeypatch):
    root = tmp_path / "fake_integrations"
    (root / "good").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "good" / "__init__.py").write_text(
        "from camdf.integrations.base import Integration\nINTEGRATION = Integration(converters=('convert:run',))\n")
    (root / "forgot").mkdir()
    (root / "forgot" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fake_integrations

    with pytest.raises(TypeError, match=r"fake_integrations/forgot/__init__.py: expected a module-level INTEGRATION"):
        discover(fake_integrations)
    (root / "forgot" / "__init__.py").write_text("from camdf.integrations.base import Integration\n"
                                                 "INTEGRATION = Integration()\n")
    sys.modules.pop("fake_integrations.forgot", None)
    assert list(discover(fake_integrations)) == ["fake_integrations.forgot", "fake_integrations.good"]
