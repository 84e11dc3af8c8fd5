"""All six profiles, in the reference order, on one runtime and one (scripted) model.

Each profile is built, checked against the runtime (every service, middleware and tool it names
must be registered, before any model call) and run. A runtime that lacks something is refused
with one error listing all of it, and the model is never called.
"""

from __future__ import annotations

import asyncio
import tempfile

from actoviq.profiles import (
    AGENT_PROFILE_KINDS,
    ProfileRuntimeConfigurationError,
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime, InMemoryCheckpointStore


async def main() -> None:
    provider = ScriptedProvider([f"profile-{n}" for n in range(1, 7)], id="profile-fake")
    with tempfile.TemporaryDirectory() as folder:
        registry = default_profile_registry(workspaces={"repo": folder})
        async with create_profile_runtime(
            registry, models=ModelRegistry([provider]), checkpoints=InMemoryCheckpointStore()
        ) as runtime:
            for kind in AGENT_PROFILE_KINDS:
                profile = build_profile(kind, model="profile-fake:model")
                instructions = str(profile.spec.instructions)
                workspace = "repo" if profile.config.workspace.required else None
                result = await run_profile(runtime, profile, f"go ({kind})", workspace_id=workspace)
                print(f"{kind:<10} {result.output:<10} {instructions[:48]}")
    print(f"model requests: {len(provider.calls)}")

    silent = ScriptedProvider(["never"], id="profile-fake")
    async with AgentRuntime(models=ModelRegistry([silent])) as bare:
        try:
            await run_profile(bare, build_profile("coding", model="profile-fake:model"), "fix it")
        except ProfileRuntimeConfigurationError as error:
            print(f"refused: {error.message}")
    print(f"model requests on the bare runtime: {len(silent.calls)}")


if __name__ == "__main__":
    asyncio.run(main())
