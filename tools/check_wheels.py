"""Install each built wheel alone in a fresh venv and import it (decision D1).

Proves that every wheel declares all it needs: a missing dependency fails the import. Sibling
wheels are found through ``--find-links dist`` (they are not on the registry). Extras listed in
EXTRAS are installed one at a time and their modules imported too.

Usage: python tools/check_wheels.py dist
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# wheel distribution name -> import name
MODULES = {
    "actoviq-core": "actoviq.core",
    "actoviq-events": "actoviq.events",
    "actoviq-providers": "actoviq.providers",
    "actoviq-runtime": "actoviq.runtime",
    "actoviq-storage-sqlite": "actoviq.storage.sqlite",
    "actoviq-orchestration": "actoviq.orchestration",
    "actoviq-workflow": "actoviq.workflow",
    "actoviq-surfaces": "actoviq.surfaces",
    "actoviq-profiles": "actoviq.profiles",
    "actoviq-compat": "actoviq.compat",
    "actoviq-cli": "actoviq.cli",
    "actoviq-mcp": "actoviq.mcp",
    "actoviq-dbos": "actoviq.dbos",
}
# distribution -> {extra: module that needs it}
EXTRAS: dict[str, dict[str, str]] = {
    "actoviq-providers": {
        "openai": "actoviq.providers.openai",
        "anthropic": "actoviq.providers.anthropic",
    },
    "actoviq-storage-sqlite": {"postgres": "asyncpg"},
    "actoviq-runtime": {"fernet": "cryptography.fernet"},
    "actoviq-compat": {
        "openai": "actoviq.providers.openai",
        "anthropic": "actoviq.providers.anthropic",
    },
    "actoviq-cli": {"web": "actoviq.cli.web.app", "mcp": "actoviq.mcp"},
}
# distribution -> the exact set of distributions allowed in its closure (besides itself)
CLOSURES: dict[str, set[str]] = {
    "actoviq-core": {"attrs", "cattrs", "typing-extensions", "exceptiongroup"},
}
# distribution -> distributions that must NOT be in its closure without extras
NOT_IN_CLOSURE: dict[str, set[str]] = {
    "actoviq-providers": {"openai", "anthropic", "httpx2", "httpx"},
    "actoviq-events": {"opentelemetry-sdk"},
    "actoviq-runtime": {
        "openai",
        "anthropic",
        "sqlalchemy",
        "opentelemetry-sdk",
        "mcp",
        "cryptography",
    },
    "actoviq-mcp": {"openai", "anthropic", "sqlalchemy", "opentelemetry-sdk"},
    "actoviq-workflow": {"actoviq-runtime", "actoviq-events", "actoviq-providers"},
    "actoviq-orchestration": {
        "actoviq-workflow",
        "actoviq-storage-sqlite",
        "sqlalchemy",
        "openai",
        "anthropic",
        "opentelemetry-sdk",
    },
    "actoviq-surfaces": {"openai", "anthropic", "sqlalchemy", "opentelemetry-sdk"},
    # the provider SDKs come with the [openai] / [anthropic] extras only
    "actoviq-compat": {"openai", "anthropic", "httpx2", "opentelemetry-sdk"},
    "actoviq-cli": {"starlette", "uvicorn", "sse-starlette", "mcp", "openai", "anthropic"},
    "actoviq-dbos": {"actoviq-storage-sqlite", "actoviq-workflow", "openai", "anthropic"},
}
# modules that must not be imported by `import <module>`
IMPORT_FORBIDDEN: dict[str, tuple[str, ...]] = {
    "actoviq.core": ("socket", "ssl", "sqlite3", "httpx", "httpx2", "asyncio"),
    "actoviq.providers": ("openai", "anthropic", "httpx2"),
    # The bridge names runtime types for the checker only: hosts that only project stay light.
    "actoviq.surfaces": ("actoviq.runtime", "actoviq.providers", "openai", "anthropic"),
    # the SDK (pydantic, starlette, uvicorn, httpx2) loads on first connection, not on import
    "actoviq.mcp": ("mcp", "uvicorn", "starlette", "httpx2", "pydantic"),
    # JSON v1 parsing comes from actoviq.storage.sqlite, whose import loads no SQLAlchemy
    "actoviq.compat": ("openai", "anthropic", "httpx2", "sqlalchemy", "aiosqlite"),
    # the console script starts on Click alone; each command imports what it uses
    "actoviq.cli": ("click", "rich", "actoviq.core", "actoviq.runtime", "sqlalchemy", "asyncio"),
}
# distribution -> commands run from the installed wheel's venv/bin: (argv, text stdout must hold)
COMMANDS: dict[str, list[tuple[list[str], str]]] = {
    "actoviq-cli": [
        (["actoviq", "--help"], "Usage: actoviq"),
        (["actoviq", "run", "assistant", "hello", "--model", "scripted:demo"], "You said: hello"),
    ],
}
# (distribution, extra) -> Python code that must run in the installed venv
EXTRA_PROBES: dict[tuple[str, str], str] = {
    # the page is served from the wheel: its files must be in it
    ("actoviq-cli", "web"): "from actoviq.cli.web.app import _asset\n"
    "assert all(_asset(n) for n in ('index.html', 'app.js', 'app.css'))",
}

_PROBE = """
import importlib, json, sys
before = set(sys.modules)
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _dist_name(wheel: Path) -> str:
    return wheel.name.split("-")[0].replace("_", "-")


def _run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=False, text=True, capture_output=True, **kwargs)  # type: ignore[call-overload, no-any-return]


def check(wheel: Path, dist: Path, extra: str | None) -> list[str]:
    name = _dist_name(wheel)
    module = MODULES.get(name)
    if module is None:
        return [f"{wheel.name}: unknown distribution {name!r}; add it to MODULES"]
    if extra is not None:
        module = EXTRAS[name][extra]
    label = f"{name}[{extra}]" if extra else name
    uv = uv_command()
    with tempfile.TemporaryDirectory(prefix="wheelcheck-") as tmp:
        venv = Path(tmp) / "venv"
        env = {**os.environ, "VIRTUAL_ENV": str(venv)}
        env.pop("UV_PROJECT_ENVIRONMENT", None)
        made = _run(
            [
                *uv,
                "venv",
                "-q",
                "-p",
                f"{sys.version_info.major}.{sys.version_info.minor}",
                str(venv),
            ],
            env=env,
        )
        if made.returncode:
            return [f"{label}: venv failed: {made.stderr.strip()}"]
        python = str(venv / "bin" / "python")
        requirement = f"{wheel}[{extra}]" if extra else str(wheel)
        # Our wheels keep one version across rebuilds: make uv re-read them from dist instead of
        # reusing a cached build of the same name and version.
        refresh = [arg for sibling in MODULES for arg in ("--refresh-package", sibling)]
        installed = _run(
            [
                *uv,
                "pip",
                "install",
                "-q",
                *refresh,
                "--python",
                python,
                "--find-links",
                str(dist),
                requirement,
            ],
            env=env,
        )
        if installed.returncode:
            return [f"{label}: install failed:\n{installed.stderr.strip()}"]
        # With an extra, the package itself must still import, and so must the extra's module.
        targets = [module] if extra is None else [MODULES[name], module]
        probe = _run([python, "-I", "-c", _PROBE, *targets], env=env)
        if probe.returncode:
            return [f"{label}: import {module} failed:\n{probe.stderr.strip()[-2000:]}"]
        problems: list[str] = []
        extra_probe = EXTRA_PROBES.get((name, extra)) if extra else None
        if extra_probe is not None:
            ran = _run([python, "-I", "-c", extra_probe], env=env)
            if ran.returncode:
                problems.append(f"{label}: probe failed:\n{ran.stderr.strip()[-2000:]}")
        if extra is None:
            for argv, expected in COMMANDS.get(name, []):
                ran = _run([str(venv / "bin" / argv[0]), *argv[1:]], env=env, cwd=tmp)
                if ran.returncode or expected not in ran.stdout:
                    problems.append(
                        f"{label}: `{' '.join(argv)}` exited {ran.returncode}: "
                        f"{(ran.stdout + ran.stderr).strip()[-2000:]}"
                    )
        loaded = set(json.loads(probe.stdout))
        if extra is None:
            for forbidden in IMPORT_FORBIDDEN.get(module, ()):
                if forbidden in loaded:
                    problems.append(f"{label}: `import {module}` imported {forbidden}")
        listing = _run([*uv, "pip", "list", "--python", python, "--format", "json"], env=env)
        dists = {entry["name"].lower() for entry in json.loads(listing.stdout)} - {name}
        leaked: set[str] = set()
        if extra is None:
            leaked = dists & NOT_IN_CLOSURE.get(name, set())
        if leaked:
            problems.append(f"{label}: closure must not contain {sorted(leaked)}")
        allowed = CLOSURES.get(name)
        if allowed is not None and extra is None and not dists <= allowed:
            problems.append(f"{label}: closure {sorted(dists)} exceeds {sorted(allowed)}")
        status = "FAIL" if problems else "ok"
        print(f"  {status:4} {label:40} import {module}; closure: {', '.join(sorted(dists))}")
        return problems


def uv_command() -> list[str]:
    """The uv that runs us (`uv run` exports UV), else uv on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found:
        return [found]
    raise SystemExit("uv not found: run through `make` or `uv run`")


def main() -> int:
    dist = Path(sys.argv[1] if len(sys.argv) > 1 else "dist").resolve()
    wheels = sorted(dist.glob("*.whl"))
    if not wheels:
        print(f"no wheels in {dist}; run `make build`")
        return 1
    problems: list[str] = []
    for wheel in wheels:
        problems += check(wheel, dist, None)
        for extra in EXTRAS.get(_dist_name(wheel), {}):
            problems += check(wheel, dist, extra)
    for line in problems:
        print(line)
    print(f"check-wheels: {len(wheels)} wheel(s), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
