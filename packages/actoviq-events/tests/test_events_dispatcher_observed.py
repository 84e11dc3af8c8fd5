"""``EventDispatcher.observed``: whether anything outside the dispatcher sees an event."""

from __future__ import annotations

from actoviq.events import (
    EventDispatcher,
    InMemoryEventSink,
    RedactionPolicy,
    RedactionProcessor,
    Redactor,
    RunEvent,
    RunEventSequencer,
    create_root_trace_context,
    default_processors,
)


class _Spy:
    id = "spy"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def process(self, event: RunEvent) -> RunEvent:
        self.seen.append(event.type)
        return event


class _LoggingRedaction(RedactionProcessor):
    pass


class _CountingRedactor(Redactor):
    pass


def test_only_the_built_in_redaction_without_sinks_is_unobserved() -> None:
    assert not EventDispatcher().observed
    assert not EventDispatcher(default_processors()).observed
    assert not EventDispatcher(default_processors(RedactionPolicy(scan_text=False))).observed


def test_a_sink_or_any_other_processor_observes() -> None:
    assert EventDispatcher(default_processors(), [InMemoryEventSink()]).observed
    assert EventDispatcher([*default_processors(), _Spy()]).observed
    assert EventDispatcher([_LoggingRedaction()]).observed  # a subclass may keep what it sees
    assert EventDispatcher([RedactionProcessor(_CountingRedactor())]).observed


def test_a_skipped_event_keeps_the_sequence() -> None:
    sequencer = RunEventSequencer(create_root_trace_context("r1"), 4)
    assert sequencer.skip() == 5
    assert sequencer.last_sequence == 5
    assert sequencer.next("run.completed", {"status": "completed"}).sequence == 6
