"""Each package's ``__init__`` is its public API, and other packages use only that."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import aah

PACKAGE_ROOT = Path(aah.__file__).resolve().parent
PACKAGES = sorted(
    info.name
    for info in pkgutil.walk_packages(aah.__path__, "aah.")
    if info.ispkg and not info.name.startswith("aah.ui")
)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in getattr(module, "__all__", ()):
        assert getattr(module, name) is not None, f"{package}.{name}"


def _owner(module: str) -> str:
    """The innermost package that holds ``module`` (a package is its own owner)."""
    path = PACKAGE_ROOT.parent / Path(*module.split("."))
    return module if path.is_dir() else module.rpartition(".")[0]


def _inner_imports() -> list[str]:
    found = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        here = ".".join(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
        here_pkg = here if path.name == "__init__.py" else here.rpartition(".")[0]
        here_pkg = here_pkg.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("aah."):
                continue
            target = str(node.module)
            owner = _owner(target)
            if owner == target or owner == "aah":
                continue  # a package's API, or a top-level module
            if here_pkg == owner or here_pkg.startswith(owner + "."):
                continue  # inside the package itself
            if owner.startswith(here_pkg + ".") and path.name == "__init__.py":
                continue  # a package re-exporting its subpackage's names
            found.append(f"{here}: from {target} import ...")
    return found


def test_packages_import_each_other_through_their_public_api() -> None:
    assert _inner_imports() == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_public_name_is_also_a_module_name(package: str) -> None:
    # Importing a submodule sets it as the package's attribute, which would
    # hide a lazily exported name spelt the same.
    module = importlib.import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    assert submodules & set(getattr(module, "__all__", ())) == set()
