"""The public API of every wheel in the workspace: which modules are public and what they export.

Used by the documentation build (one API reference page per wheel, generated at build time by
``tools/mkdocs_hooks.py``) and by the documentation tests (every public name has a docstring and
a reference entry). A public module is the top package of a wheel, any sub-package of it whose
dotted path has no ``_``-prefixed part, and the leaf modules listed in ``PUBLIC_LEAF_MODULES``
(modules users import directly although their package does not re-export them). Its public names
are its ``__all__``. A name exported by several public modules is documented once, under the
first module that exports it (parents before sub-packages).
"""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "packages"

# Leaf modules whose names users import from the module itself.
PUBLIC_LEAF_MODULES = frozenset(
    {
        "actoviq.providers.testing",
        "actoviq.runtime.schema",
        "actoviq.events.schema",
        "actoviq.surfaces.schema",
    }
)


@dataclass(frozen=True)
class PublicModule:
    """One public module and the names it documents (its ``__all__`` minus earlier duplicates)."""

    name: str
    exports: tuple[str, ...]
    documented: tuple[str, ...]


@dataclass(frozen=True)
class Wheel:
    """One workspace member: distribution name, description, top import and public modules."""

    dist: str
    description: str
    top: str
    slug: str
    modules: tuple[PublicModule, ...]


def _wheel_meta(pyproject: Path) -> tuple[str, str, str] | None:
    data = tomllib.loads(pyproject.read_text("utf-8"))
    project = data.get("project", {})
    backend = data.get("tool", {}).get("uv", {}).get("build-backend", {})
    top = backend.get("module-name")
    if not isinstance(top, str) or not top.startswith("actoviq."):
        return None
    return str(project["name"]), str(project.get("description", "")), top


def _module_names(top: ModuleType) -> list[str]:
    names = [top.__name__]
    paths = getattr(top, "__path__", None)
    if paths is None:
        return names
    for info in pkgutil.walk_packages(paths, top.__name__ + "."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        if info.ispkg or info.name in PUBLIC_LEAF_MODULES:
            names.append(info.name)
    return names


def _exports(module: ModuleType) -> tuple[str, ...]:
    exported: object = getattr(module, "__all__", ())
    if not isinstance(exported, list | tuple):
        return ()
    return tuple(str(name) for name in exported)  # type: ignore[union-attr]


def wheels() -> list[Wheel]:
    """Every workspace member with an ``actoviq.*`` module, sorted by distribution name."""
    found: list[Wheel] = []
    for pyproject in sorted(PACKAGES.glob("*/pyproject.toml")):
        meta = _wheel_meta(pyproject)
        if meta is None:
            continue
        dist, description, top_name = meta
        top = importlib.import_module(top_name)
        seen: set[tuple[str, int]] = set()
        modules: list[PublicModule] = []
        for module_name in _module_names(top):
            module = importlib.import_module(module_name)
            exports = _exports(module)
            documented: list[str] = []
            for name in exports:
                # vars(): a module-level __getattr__ (lazy or deprecated names) is not triggered.
                key = (name, id(vars(module).get(name, name)))
                if key in seen:
                    continue
                seen.add(key)
                documented.append(name)
            modules.append(PublicModule(module_name, exports, tuple(documented)))
        slug = dist.removeprefix("actoviq-")
        found.append(Wheel(dist, description, top_name, slug, tuple(modules)))
    return found


def documented_paths(wheel: Wheel) -> list[str]:
    """The dotted paths the reference page of ``wheel`` renders, in page order."""
    return [f"{module.name}.{name}" for module in wheel.modules for name in module.documented]


def reference_page(wheel: Wheel) -> str:
    """The Markdown of the API reference page of one wheel (mkdocstrings directives)."""
    lines = [
        f"# {wheel.dist}",
        "",
        wheel.description,
        "",
        f"Install: `pip install {wheel.dist}`. Import: `{wheel.top}`.",
        "",
        "This page is generated from the docstrings of every name in the `__all__` of the",
        "wheel's public modules; a name exported by several modules is documented once.",
        "",
    ]
    for module in wheel.modules:
        if not module.documented:
            continue
        lines += [f"## `{module.name}`", ""]
        for name in module.documented:
            lines += [f"::: {module.name}.{name}", ""]
    return "\n".join(lines)


def source_paths() -> list[Path]:
    """The ``src`` folder of every workspace member (where griffe reads the docstrings)."""
    return sorted(path for path in PACKAGES.glob("*/src") if path.is_dir())


def missing_docstrings(
    paths: list[str], search_paths: list[Path], packages: list[str]
) -> list[str]:
    """The dotted ``paths`` whose object has no docstring, read statically as the site renders.

    ``packages`` are the top packages to load from ``search_paths`` (e.g. ``actoviq.core``).

    Constants and type aliases are documented by a string literal right after the assignment
    (an attribute docstring); re-exported names are followed to their definition.
    """
    import griffe  # the docs dependency group; imported here so the build hooks stay light

    loader = griffe.GriffeLoader(search_paths=[str(path) for path in search_paths])
    for package in packages:
        loader.load(package)
    missing: list[str] = []
    for path in paths:
        try:
            obj = loader.modules_collection[path]
            docstring = obj.docstring
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            missing.append(f"{path} (not found)")
            continue
        if docstring is None or not docstring.value.strip():
            missing.append(path)
    return missing
