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


def _listings() -> dict[str, list[str]]:
    """Every package's ``__all__``, read from its ``__init__.py`` source (the UI's too)."""
    listings = {}
    for path in sorted(PACKAGE_ROOT.rglob("__init__.py")):
        package = ".".join(path.parent.relative_to(PACKAGE_ROOT.parent).parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
            ):
                listings[package] = list(ast.literal_eval(node.value))
    return listings


def _listed_twice(listings: dict[str, list[str]]) -> list[str]:
    """Each name twice in one ``__all__``, or in the ``__all__`` of two packages."""
    found = []
    owners: dict[str, list[str]] = {}
    for package, names in listings.items():
        found += [
            f"{package} lists {name} twice" for name in sorted(set(names)) if names.count(name) > 1
        ]
        for name in sorted(set(names)):
            owners.setdefault(name, []).append(package)
    found += [
        f"{name} in {', '.join(packages)}" for name, packages in owners.items() if len(packages) > 1
    ]
    return found


def test_listings_are_read_from_every_package() -> None:
    # A guard for the test below: it must see the packages it judges.
    listings = _listings()
    assert {"aah.benchmark", "aah.benchmark.bfcl", "aah.store", "aah.ui.web"} <= set(listings)
    assert all(listings.values())


@pytest.mark.parametrize(
    ("listings", "expected"),
    [
        ({"aah.a": ["x", "y"], "aah.b": ["z"]}, []),
        ({"aah.a": ["x", "x"]}, ["aah.a lists x twice"]),
        ({"aah.a": ["x"], "aah.a.b": ["x"]}, ["x in aah.a, aah.a.b"]),  # a parent re-exporting
        ({"aah.a": ["Verdict"], "aah.c": ["Verdict"]}, ["Verdict in aah.a, aah.c"]),  # two things
    ],
)
def test_listed_twice_finds_both_kinds(listings: dict[str, list[str]], expected: list[str]) -> None:
    assert _listed_twice(listings) == expected


def test_each_public_name_is_listed_once() -> None:
    # One owner per name: a parent package lists only what it defines, so a
    # reader imports every name from the one package that holds it, and two
    # different things never share a public name.
    assert _listed_twice(_listings()) == []


def _package_imports() -> dict[tuple[str, str], list[str]]:
    """Every ``from aah.<package> import name`` in the project: (package, name) -> files."""
    found: dict[tuple[str, str], list[str]] = {}
    root = PACKAGE_ROOT.parent
    for folder in ("aah", "tests", "perf", "scripts"):
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                    continue
                if node.module.split(".")[0] != "aah" or node.module not in PACKAGES_ALL:
                    continue
                for alias in node.names:
                    where = str(path.relative_to(root))
                    found.setdefault((node.module, alias.name), []).append(where)
    return found


PACKAGES_ALL = {info.name for info in pkgutil.walk_packages(aah.__path__, "aah.") if info.ispkg} | {
    "aah"
}


def test_every_name_imported_from_a_package_is_one_it_exports() -> None:
    # Packages load their names lazily (a module __getattr__), so mypy takes
    # any name from them: a name a package stopped exporting fails only when
    # the import runs. This finds it without running every command.
    missing = []
    for (package, name), files in sorted(_package_imports().items()):
        module = importlib.import_module(package)
        exported = set(getattr(module, "__all__", ()))
        if name in exported or (PACKAGE_ROOT.parent / package.replace(".", "/") / name).is_dir():
            continue
        if (
            name in vars(module)
            or (PACKAGE_ROOT.parent / package.replace(".", "/") / f"{name}.py").is_file()
        ):
            continue
        missing.append(f"{package}.{name} (in {', '.join(files[:3])})")
    assert missing == []
