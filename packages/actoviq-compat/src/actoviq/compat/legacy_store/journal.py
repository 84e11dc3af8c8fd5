"""``LegacyJsonV1SessionJournal``: the runtime's :class:`~actoviq.runtime.SessionStore` on JSON v1.

With it a host keeps the JSON v1 session files as the single writer until cutover: the runtime
loads and appends through the usual adapter (``StoreRuntimeSessionAdapter``), every append is
mirrored into the file's ``messages``/``runs`` for 0.x readers, and rolling back means routing
writes to a 0.x writer again, which the journal picks up (see
:mod:`~actoviq.compat.legacy_store._journal_codec`).

Every operation is one read (and for writes one locked read-modify-write with an atomic rename)
of the session file, in a worker thread. CAS is on the file's ``revision``, shared with the 0.x
face (:class:`~actoviq.compat.legacy_store.store.LegacyJsonV1SessionStore`), so a 0.x ``save``
in between makes a stale append conflict. Tenants: ``"default"`` is the root itself; any other
tenant is its own JSON v1 root under ``<root>/tenants/<percent-encoded tenant>/``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, cast
from urllib.parse import quote

import attrs

from actoviq.compat.diagnostics import compat_symbol
from actoviq.compat.legacy_store._directory import SessionDirectory
from actoviq.compat.legacy_store._files import LOCK_STALE_S, LOCK_TIMEOUT_S
from actoviq.compat.legacy_store._journal_codec import (
    Journal,
    decode_journal,
    encode_journal,
    project_entries,
)
from actoviq.compat.legacy_store.shapes import JOURNAL_KEY, StoredSession
from actoviq.core import JsonObject, iso_now
from actoviq.runtime import (
    DEFAULT_TENANT_ID,
    NewSessionItem,
    SessionLoad,
    SessionRecord,
    SessionRevisionConflictError,
    SessionSnapshot,
    StorageDataError,
    StorageNotFoundError,
)
from actoviq.runtime.stores.rules import (
    prepare_append,
    session_key,
    session_resource,
    validate_compact,
    validate_load,
    validate_session_create,
)
from actoviq.runtime.stores.validation import require_key, require_limit, require_revision

__all__ = ["LegacyJsonV1SessionJournal", "tenant_root"]

_log = logging.getLogger("actoviq.compat")
_MAX_SEGMENT: Final = 200


def tenant_root(root: Path, tenant_id: str) -> Path:
    """The JSON v1 root of ``tenant_id``: ``root`` for the default tenant, else a subdirectory.

    Example:
        >>> tenant_root(Path("/data"), "acme/eu").as_posix()
        '/data/tenants/acme%2Feu'
    """
    if tenant_id == DEFAULT_TENANT_ID:
        return root
    segment = quote(tenant_id, safe="").replace(".", "%2E")
    if len(segment) > _MAX_SEGMENT:
        segment = "sha256-" + hashlib.sha256(tenant_id.encode("utf-8")).hexdigest()
    return root / "tenants" / segment


def _record(tenant_id: str, session: StoredSession, journal: Journal) -> SessionRecord:
    return SessionRecord(
        tenant_id=tenant_id,
        session_id=session["id"],
        revision=session.get("revision", 0),
        metadata=cast(JsonObject, dict(session["metadata"])),
        created_at=session["createdAt"],
        updated_at=session["updatedAt"],
        last_sequence=journal.last_sequence,
    )


@compat_symbol(
    "LegacyJsonV1SessionJournal",
    "actoviq.storage.sqlite.SqliteStorage(...).sessions after a JsonV1Migrator cutover",
)
class LegacyJsonV1SessionJournal:
    """A :class:`~actoviq.runtime.SessionStore` whose sessions are JSON v1 files.

    Args:
        root: the JSON v1 root (``<root>/sessions/<id>.json``).
        lock_timeout: seconds to wait for a session's write lock (then ``SessionBusyError``).
        lock_stale_after: seconds after which a write lock is considered abandoned.
        durable: fsync every write (file and directory).

    Example:
        >>> from actoviq.runtime import StoreRuntimeSessionAdapter
        >>> sessions = StoreRuntimeSessionAdapter(LegacyJsonV1SessionJournal("state"))
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        lock_timeout: float = LOCK_TIMEOUT_S,
        lock_stale_after: float = LOCK_STALE_S,
        durable: bool = True,
    ) -> None:
        self.root = Path(root)
        self._options: dict[str, Any] = {
            "lock_timeout": lock_timeout,
            "lock_stale_after": lock_stale_after,
            "durable": durable,
        }
        self._directories: dict[str, SessionDirectory] = {}

    def __repr__(self) -> str:
        return f"LegacyJsonV1SessionJournal({str(self.root)!r})"

    def directory(self, tenant_id: str) -> SessionDirectory:
        """The files of ``tenant_id``'s JSON v1 root."""
        found = self._directories.get(tenant_id)
        if found is None:
            found = SessionDirectory(tenant_root(self.root, tenant_id), **self._options)
            self._directories[tenant_id] = found
        return found

    # -- SessionStore ----------------------------------------------------------------------------

    async def create(
        self,
        *,
        tenant_id: str,
        session_id: str,
        metadata: JsonObject | None = None,
        created_at: str | None = None,
    ) -> SessionRecord:
        """See :meth:`~actoviq.runtime.SessionStore.create` (a file at revision 0)."""
        record = validate_session_create(tenant_id, session_id, metadata, created_at)
        directory = self.directory(tenant_id)
        directory.session_path(session_id)  # unsafe ids are refused before any I/O

        def create() -> SessionRecord:
            current = directory.read(session_id)
            if current is not None:
                raise SessionRevisionConflictError(
                    session_resource(tenant_id, session_id),
                    expected_revision=None,
                    actual_revision=current.get("revision", 0),
                )
            session = cast(
                StoredSession,
                {
                    "version": 1,
                    "revision": 0,
                    "id": session_id,
                    "title": "Untitled Session",
                    "titleSource": "auto",
                    "model": "unknown",
                    "tags": [],
                    "metadata": record.metadata,
                    "createdAt": record.created_at,
                    "updatedAt": record.created_at,
                    "lastActiveAt": record.created_at,
                    "status": "active",
                    "messages": [],
                    "runs": [],
                },
            )
            empty = Journal(items=[], snapshots=[], extras=[], covered_runs=0)
            cast(JsonObject, session)[JOURNAL_KEY] = encode_journal(session, empty)
            directory.write(session)
            return record

        return await asyncio.to_thread(directory.locked, session_id, create)

    async def get(self, *, tenant_id: str, session_id: str) -> SessionRecord | None:
        """See :meth:`~actoviq.runtime.SessionStore.get`."""
        session_key(tenant_id, session_id)
        directory = self.directory(tenant_id)
        directory.session_path(session_id)

        def get() -> SessionRecord | None:
            session = directory.read(session_id)
            if session is None:
                return None
            return _record(tenant_id, session, decode_journal(session))

        return await asyncio.to_thread(get)

    async def append(
        self,
        *,
        tenant_id: str,
        session_id: str,
        expected_revision: int,
        items: Sequence[NewSessionItem],
        updated_at: str | None = None,
    ) -> SessionRecord:
        """See :meth:`~actoviq.runtime.SessionStore.append`; also mirrors into ``messages``."""
        session_key(tenant_id, session_id)
        expected = require_revision(expected_revision, "expectedRevision")
        stamp = updated_at or iso_now()
        prepared = prepare_append(items, stamp)
        directory = self.directory(tenant_id)
        directory.session_path(session_id)
        resource = session_resource(tenant_id, session_id)

        def append() -> SessionRecord:
            session = directory.read(session_id)
            if session is None:
                raise StorageNotFoundError(resource)
            journal = decode_journal(session)
            revision = session.get("revision", 0)
            existing = {cast(str, entry["itemId"]): entry for entry in journal.entries()}
            known = [existing.get(item.item_id) for item in prepared]
            if any(found is not None for found in known):
                if all(
                    found is not None
                    and found["kind"] == new.kind
                    and found["payload"] == new.payload
                    for found, new in zip(known, prepared, strict=True)
                ):
                    return _record(tenant_id, session, journal)
                if revision == expected:
                    raise StorageDataError(
                        f"Session items already exist with different content in {resource}"
                    )
            if revision != expected:
                raise SessionRevisionConflictError(
                    resource, expected_revision=expected, actual_revision=revision
                )
            project_entries(session, prepared)
            journal = attrs.evolve(
                journal,
                items=[
                    *journal.entries(),
                    *(
                        {
                            "itemId": item.item_id,
                            "kind": item.kind,
                            "createdAt": item.created_at or stamp,
                            "payload": item.payload,
                        }
                        for item in prepared
                    ),
                ],
                extras=[],
            )
            _commit(session, journal, stamp)
            directory.write(session)
            return _record(tenant_id, session, journal)

        return await asyncio.to_thread(directory.locked, session_id, append)

    async def load(
        self,
        *,
        tenant_id: str,
        session_id: str,
        after_sequence: int | None = None,
        use_snapshot: bool = True,
        limit: int | None = None,
    ) -> SessionLoad:
        """See :meth:`~actoviq.runtime.SessionStore.load`."""
        cap = validate_load(tenant_id, session_id, after_sequence, limit)
        directory = self.directory(tenant_id)
        directory.session_path(session_id)

        def load() -> SessionLoad:
            session = directory.read(session_id)
            if session is None:
                raise StorageNotFoundError(session_resource(tenant_id, session_id))
            journal = decode_journal(session)
            snapshot = (
                journal.latest_snapshot() if after_sequence is None and use_snapshot else None
            )
            start = snapshot.through_sequence if snapshot is not None else after_sequence or 0
            stop = None if cap is None else start + cap
            return SessionLoad(
                session=_record(tenant_id, session, journal),
                snapshot=snapshot,
                items=journal.stored(start, stop),
            )

        return await asyncio.to_thread(load)

    async def compact(
        self,
        *,
        tenant_id: str,
        session_id: str,
        expected_revision: int,
        through_sequence: int,
        state: JsonObject,
        created_at: str | None = None,
    ) -> SessionSnapshot:
        """See :meth:`~actoviq.runtime.SessionStore.compact` (messages are left as they are)."""
        expected, through, body, stamp = validate_compact(
            tenant_id, session_id, expected_revision, through_sequence, state, created_at
        )
        directory = self.directory(tenant_id)
        directory.session_path(session_id)
        resource = session_resource(tenant_id, session_id)

        def compact() -> SessionSnapshot:
            session = directory.read(session_id)
            if session is None:
                raise StorageNotFoundError(resource)
            journal = decode_journal(session)
            revision = session.get("revision", 0)
            if revision != expected:
                raise SessionRevisionConflictError(
                    resource, expected_revision=expected, actual_revision=revision
                )
            if through > journal.last_sequence:
                raise StorageDataError(
                    f"Snapshot sequence {through} exceeds session tail {journal.last_sequence}"
                )
            latest = journal.latest_snapshot()
            if latest is not None and latest.through_sequence >= through:
                raise StorageDataError("A compacted snapshot must advance throughSequence")
            snapshot: JsonObject = {
                "throughSequence": through,
                "revision": revision + 1,
                "state": body,
                "createdAt": stamp,
            }
            journal = attrs.evolve(
                journal,
                items=journal.entries(),
                extras=[],
                snapshots=[*journal.snapshots, snapshot],
            )
            _commit(session, journal, stamp)
            directory.write(session)
            return SessionSnapshot(
                through_sequence=through, revision=revision + 1, state=body, created_at=stamp
            )

        return await asyncio.to_thread(directory.locked, session_id, compact)

    async def list_sessions(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[SessionRecord]:
        """See :meth:`~actoviq.runtime.SessionStore.list_sessions` (unreadable files skipped)."""
        tenant = require_key(tenant_id, "tenantId")
        cap = require_limit(limit)
        directory = self.directory(tenant)

        def listing() -> list[SessionRecord]:
            records: list[SessionRecord] = []
            for session in directory.read_all():
                try:
                    records.append(_record(tenant, session, decode_journal(session)))
                except StorageDataError as error:
                    _log.warning("skipping JSON v1 session %s: %s", session["id"], error.message)
            records.sort(key=lambda r: r.session_id)
            records.sort(key=lambda r: r.updated_at, reverse=True)
            return records[:cap]

        return await asyncio.to_thread(listing)

    async def aclose(self) -> None:
        """Nothing to release (every operation opens and closes its files)."""


def _commit(session: StoredSession, journal: Journal, stamp: str) -> None:
    """Write the journal into the session and advance its revision and timestamps (in place)."""
    cast(JsonObject, session)[JOURNAL_KEY] = encode_journal(session, journal)
    session["revision"] = session.get("revision", 0) + 1
    session["updatedAt"] = stamp
    session["lastActiveAt"] = stamp
