"""Opt-in skills: the ``skills`` service (a :class:`SkillLibrary`) and ``profile.skills``.

A skill is named, described instructions the host registers. At ``prepareInput`` the
``profile.skills`` middleware adds the instructions of the skills the new input calls for (by
name, or by the words of their description) as one system note before the input, so the model
gets only the skills the turn needs instead of all of them in the system prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

import attrs

from actoviq.core import CanonicalItem, TextItem
from actoviq.runtime import MiddlewareDefinition, RuntimeMiddlewareContext, define_middleware

__all__ = ["Skill", "SkillLibrary", "skills_middleware"]

_WORD: Final = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text) if len(word) > 3}


@attrs.frozen(kw_only=True, slots=True)
class Skill:
    """Named instructions: ``name``, a one-line ``description`` and the ``instructions``."""

    name: str
    description: str
    instructions: str


class SkillLibrary:
    """The skills a profile may draw on (the ``skills`` service).

    Args:
        skills: the skills to register.
        max_skills: how many skills one turn may receive.
    """

    def __init__(self, skills: Iterable[Skill] = (), *, max_skills: int = 3) -> None:
        self._skills: dict[str, Skill] = {}
        self.max_skills = max_skills
        for skill in skills:
            self.add(skill)

    def add(self, skill: Skill) -> None:
        """Register (or replace) ``skill``."""
        self._skills[skill.name] = skill

    def names(self) -> tuple[str, ...]:
        """The registered skill names, sorted."""
        return tuple(sorted(self._skills))

    def select(self, text: str) -> list[Skill]:
        """The skills ``text`` calls for: named ones first, then by description words."""
        lowered = text.lower()
        named = [skill for skill in self._skills.values() if skill.name.lower() in lowered]
        wanted = _words(text)
        scored = sorted(
            (
                (-len(wanted & _words(skill.description)), skill.name)
                for skill in self._skills.values()
                if skill not in named and wanted & _words(skill.description)
            ),
        )
        chosen = [*named, *(self._skills[name] for _, name in scored)]
        return chosen[: self.max_skills]


def _input_text(items: Sequence[CanonicalItem]) -> str:
    return "\n".join(
        item.text for item in items if isinstance(item, TextItem) and item.role == "user"
    )


def skills_middleware(library: SkillLibrary, *, priority: int = 55) -> MiddlewareDefinition:
    """``prepareInput``: prepend the instructions of the skills the input calls for."""

    async def add_skills(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        items: list[CanonicalItem] = list(await next())
        chosen = library.select(_input_text(items))
        if not chosen:
            return items
        note = "\n\n".join(f"Skill {skill.name}: {skill.instructions}" for skill in chosen)
        metadata: dict[str, Any] = {"profileSkills": [skill.name for skill in chosen]}
        return [TextItem(role="system", text=note, metadata=metadata), *items]

    return define_middleware("profile.skills", "prepareInput", add_skills, priority=priority)
