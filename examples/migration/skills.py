"""Skills as an opt-in service: the model gets only the skills a turn calls for.

0.x scanned a skills folder for every agent. In 1.0 skills are a runtime service (a
``SkillLibrary`` of named instructions the host registers) and a ``prepareInput`` middleware
(``profile.skills``) that a profile turns on with ``optIns={"skills": True}``: before each run it
adds the instructions of the skills the new input asks for (by name, or by the words of their
description) as one system note. A profile without the opt-in, like a minimal agent, gets none.
Offline (no OPENAI_API_KEY, or ACTOVIQ_OFFLINE=1) a scripted model says which skill notes it
received; with OPENAI_API_KEY the real model answers with them.
"""

from __future__ import annotations

import asyncio
import os

from actoviq.core import TextItem
from actoviq.profiles import (
    Skill,
    SkillLibrary,
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider

OFFLINE = os.environ.get("ACTOVIQ_OFFLINE") == "1" or not os.environ.get("OPENAI_API_KEY")
SKILLS = [
    Skill(
        name="haiku",
        description="write a poem as a haiku",
        instructions="Answer as a haiku: three lines of five, seven and five syllables.",
    ),
    Skill(
        name="invoice",
        description="check an invoice total and currency",
        instructions="Recompute every invoice total and state the currency explicitly.",
    ),
]


def models() -> tuple[ModelRegistry, str]:
    """OpenAI with a key, else a scripted model that reports the skill notes it was sent."""
    if not OFFLINE:
        from actoviq.providers.openai import OpenAIResponsesProvider

        return ModelRegistry([OpenAIResponsesProvider()]), "openai-responses:gpt-4.1-mini"

    def answer(request: ModelRequest) -> str:
        text = " ".join(i.text for i in request.input if isinstance(i, TextItem))
        used = [skill.name for skill in SKILLS if skill.instructions in text]
        return f"(skills in my input: {used or 'none'})"

    return ModelRegistry([ScriptedProvider([answer], repeat_last=True)]), "scripted:demo"


async def main() -> None:
    registry_models, model = models()
    registry = default_profile_registry(skills=SkillLibrary(SKILLS))
    with_skills = build_profile("chat", id="helper", model=model, optIns={"skills": True})
    without = build_profile("chat", id="minimal", model=model)
    async with create_profile_runtime(registry, models=registry_models) as runtime:
        for profile, prompt in [
            (with_skills, "Write a poem about tea as a haiku."),
            (with_skills, "Please check this invoice total: 3 x 4.50 EUR = 14 EUR."),
            (without, "Write a poem about tea as a haiku."),
        ]:
            result = await run_profile(runtime, profile, prompt)
            label = "skills on " if profile is with_skills else "skills off"
            print(f"{label} | {prompt}\n  {result.output}")


if __name__ == "__main__":
    asyncio.run(main())
