"""JSON v1 -> SQL migration: dry-run, backup, chunked cutover with a ledger, verify, rollback.

Spec 04 §3.12 with the §8.1.12 improvements: every chunk commits its own ledger rows (so a re-run
resumes and a finished migration re-runs as a no-op), ``verify`` compares counts, hashes and a fresh
re-conversion of the sources with the stored journal, and ``rollback`` deletes exactly the
sessions the ledger lists (in one maintenance transaction). Source files are never modified.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import attrs

from actoviq.core import JsonObject, JsonValue, iso_now
from actoviq.runtime.stores import SessionRevisionConflictError, StorageDataError
from actoviq.runtime.stores.rules import session_resource
from actoviq.runtime.stores.validation import require_key
from actoviq.storage.sqlite.errors import MigrationSourceError
from actoviq.storage.sqlite.legacy import LegacySessionFile, read_legacy_session_file
from actoviq.storage.sqlite.storage import SqliteStorage

__all__ = [
    "JsonV1Migrator",
    "MigrationFileReport",
    "MigrationProgress",
    "MigrationReport",
    "RollbackReport",
    "VerifyReport",
]

FileStatus = Literal["planned", "migrated", "skipped", "invalid"]
MigrationPhase = Literal["scan", "cutover", "verify"]


@attrs.frozen(kw_only=True)
class MigrationProgress:
    """Where a migration is, for progress bars (``JsonV1Migrator(progress=...)``).

    ``scan`` reads and converts every source file (also in a dry run), ``cutover`` writes the
    pending sessions chunk by chunk, ``verify`` re-checks each ledger entry. Counts are totals
    so far within the phase; ``bytes_*`` are source file sizes.
    """

    phase: MigrationPhase
    files_done: int
    files_total: int
    items_done: int
    bytes_done: int
    bytes_total: int


ProgressCallback = Callable[[MigrationProgress], None]


@attrs.frozen(kw_only=True)
class MigrationFileReport:
    """What happened (or would happen) to one source file."""

    source_file: str
    source_key: str
    session_id: str | None
    item_count: int
    status: FileStatus
    content_hash: str | None = None
    reason: str | None = None
    warnings: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        """CamelCase JSON (absent optionals omitted)."""
        data: JsonObject = {
            "sourceFile": self.source_file,
            "sourceKey": self.source_key,
            "sessionId": self.session_id,
            "itemCount": self.item_count,
            "status": self.status,
        }
        if self.content_hash is not None:
            data["contentHash"] = self.content_hash
        if self.reason is not None:
            data["reason"] = self.reason
        if self.warnings:
            data["warnings"] = list(self.warnings)
        return data


@attrs.frozen(kw_only=True)
class MigrationReport:
    """The result of :meth:`JsonV1Migrator.migrate` (also the dry-run plan)."""

    tenant_id: str
    source_directory: str
    source_id: str
    dry_run: bool
    files: tuple[MigrationFileReport, ...]
    backup_directory: str | None = None
    chunks_committed: int = 0

    @property
    def migrated_sessions(self) -> int:
        """Files migrated by this call."""
        return sum(1 for f in self.files if f.status == "migrated")

    @property
    def skipped_sessions(self) -> int:
        """Files already in the ledger with the same content."""
        return sum(1 for f in self.files if f.status == "skipped")

    @property
    def invalid_files(self) -> tuple[MigrationFileReport, ...]:
        """Files that cannot be migrated, each with its reason."""
        return tuple(f for f in self.files if f.status == "invalid")

    @property
    def total_items(self) -> int:
        """Journal entries over every valid file, skipped ones included."""
        return sum(f.item_count for f in self.files)

    def to_json(self) -> JsonObject:
        """CamelCase JSON for the CLI."""
        data: JsonObject = {
            "tenantId": self.tenant_id,
            "sourceDirectory": self.source_directory,
            "sourceId": self.source_id,
            "dryRun": self.dry_run,
            "files": [f.to_json() for f in self.files],
            "migratedSessions": self.migrated_sessions,
            "skippedSessions": self.skipped_sessions,
            "invalidFiles": len(self.invalid_files),
            "totalItems": self.total_items,
            "chunksCommitted": self.chunks_committed,
        }
        if self.backup_directory is not None:
            data["backupDirectory"] = self.backup_directory
        return data


@attrs.frozen(kw_only=True)
class VerifyReport:
    """The result of :meth:`JsonV1Migrator.verify`; ``ok`` when ``problems`` is empty."""

    tenant_id: str
    source_id: str
    sessions_checked: int
    items_checked: int
    problems: tuple[tuple[str, str], ...]

    @property
    def ok(self) -> bool:
        """True when every ledger entry matched its source and its session."""
        return not self.problems

    def to_json(self) -> JsonObject:
        """CamelCase JSON for the CLI."""
        return {
            "tenantId": self.tenant_id,
            "sourceId": self.source_id,
            "ok": self.ok,
            "sessionsChecked": self.sessions_checked,
            "itemsChecked": self.items_checked,
            "problems": [{"sourceKey": k, "reason": r} for k, r in self.problems],
        }


@attrs.frozen(kw_only=True)
class RollbackReport:
    """The result of :meth:`JsonV1Migrator.rollback`."""

    tenant_id: str
    source_id: str
    removed_sessions: tuple[str, ...]
    dry_run: bool

    def to_json(self) -> JsonObject:
        """CamelCase JSON for the CLI."""
        return {
            "tenantId": self.tenant_id,
            "sourceId": self.source_id,
            "dryRun": self.dry_run,
            "removedSessions": list(self.removed_sessions),
        }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _resolve_source(source_directory: str | Path) -> Path:
    root = Path(source_directory)
    if not root.is_dir():
        raise StorageDataError(f"JSON v1 source directory does not exist: {root}")
    return root.resolve()


def _session_files(root: Path) -> list[Path]:
    folder = root / "sessions"
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError as error:
        raise StorageDataError(
            f"Cannot read JSON v1 sessions directory {folder}: {error}"
        ) from None
    return [p for p in entries if p.name.endswith(".json") and p.is_file() and not p.is_symlink()]


class JsonV1Migrator:
    """Moves legacy JSON v1 session directories into a :class:`SqliteStorage`.

    Args:
        storage: the open target storage (not owned: the caller closes it).
        chunk_size: sessions per cutover transaction; each chunk commits its own ledger rows.
        progress: called (on the event loop, it must not block) after each file scanned, each
            chunk committed and each ledger entry verified.
    """

    def __init__(
        self,
        storage: SqliteStorage,
        *,
        chunk_size: int = 100,
        progress: ProgressCallback | None = None,
    ) -> None:
        if chunk_size <= 0:
            raise StorageDataError("chunk_size must be a positive integer")
        self._storage = storage
        self._chunk_size = chunk_size
        self._progress = progress

    def _report(
        self,
        phase: MigrationPhase,
        files: tuple[int, int],
        items: int,
        sizes: tuple[int, int],
    ) -> None:
        if self._progress is not None:
            self._progress(
                MigrationProgress(
                    phase=phase,
                    files_done=files[0],
                    files_total=files[1],
                    items_done=items,
                    bytes_done=sizes[0],
                    bytes_total=sizes[1],
                )
            )

    async def _ledger(self, tenant_id: str, source_id: str) -> dict[str, tuple[str, str, int]]:
        from actoviq.storage.sqlite import _maintenance

        return await _maintenance.read_ledger(self._storage.database, tenant_id, source_id)

    async def _plan(
        self, tenant_id: str, root: Path, source_id: str
    ) -> tuple[list[MigrationFileReport], list[LegacySessionFile]]:
        ledger = await self._ledger(tenant_id, source_id)
        reports: list[MigrationFileReport] = []
        pending: list[LegacySessionFile] = []
        owners: dict[str, str] = {}
        paths = _session_files(root)
        sizes = [_size(path) for path in paths]
        total_bytes, done_bytes, done_items = sum(sizes), 0, 0
        for index, path in enumerate(paths):
            report, plan = await self._plan_file(path, root, ledger, owners)
            reports.append(report)
            if plan is not None:
                pending.append(plan)
            done_bytes += sizes[index]
            done_items += report.item_count
            self._report("scan", (index + 1, len(paths)), done_items, (done_bytes, total_bytes))
        return reports, pending

    @staticmethod
    async def _plan_file(
        path: Path, root: Path, ledger: dict[str, tuple[str, str, int]], owners: dict[str, str]
    ) -> tuple[MigrationFileReport, LegacySessionFile | None]:
        key = path.relative_to(root).as_posix()
        try:
            plan = await asyncio.to_thread(read_legacy_session_file, path, root)
        except StorageDataError as error:
            invalid = MigrationFileReport(
                source_file=str(path),
                source_key=key,
                session_id=None,
                item_count=0,
                status="invalid",
                reason=error.message,
            )
            return invalid, None
        base = MigrationFileReport(
            source_file=str(path),
            source_key=key,
            session_id=plan.session_id,
            item_count=len(plan.items),
            status="planned",
            content_hash=plan.content_hash,
            warnings=plan.warnings,
        )
        if plan.session_id in owners:
            duplicate = attrs.evolve(
                base,
                status="invalid",
                reason="JSON v1 source contains duplicate session ids: "
                f"{plan.session_id} ({owners[plan.session_id]}, {key})",
            )
            return duplicate, None
        owners[plan.session_id] = key
        seen = ledger.get(key)
        if seen is None:
            return base, plan
        if seen[:2] == (plan.content_hash, plan.session_id):
            return attrs.evolve(base, status="skipped"), None
        changed = attrs.evolve(
            base,
            status="invalid",
            reason=f"Previously migrated JSON v1 source changed: {path.name}",
        )
        return changed, None

    async def migrate(
        self,
        *,
        tenant_id: str,
        source_directory: str | Path,
        source_id: str | None = None,
        dry_run: bool = False,
        backup_directory: str | Path | None = None,
    ) -> MigrationReport:
        """Plan, back up, then cut over in chunked transactions.

        A dry run writes nothing (no backup, sessions or ledger rows) and lists bad files with
        their reasons. A real run refuses to start while any file is bad.

        Raises:
            MigrationSourceError: some files are invalid (``problems`` lists path and reason).
            SessionRevisionConflictError: a target session already exists (nothing is written).
            StorageDataError: the source directory is missing or the backup failed to verify.
        """
        require_key(tenant_id, "tenantId")
        root = _resolve_source(source_directory)
        source = source_id or str(root)
        files, pending = await self._plan(tenant_id, root, source)
        report = MigrationReport(
            tenant_id=tenant_id,
            source_directory=str(root),
            source_id=source,
            dry_run=dry_run,
            files=tuple(files),
        )
        if dry_run:
            return report
        if report.invalid_files:
            problems = [(f.source_file, f.reason or "invalid") for f in report.invalid_files]
            raise MigrationSourceError(
                "JSON v1 source has invalid files: "
                + "; ".join(f"{path}: {reason}" for path, reason in problems),
                problems,
            )
        if not pending:
            return report
        for plan in pending:
            existing = await self._storage.sessions.get(
                tenant_id=tenant_id, session_id=plan.session_id
            )
            if existing is not None:
                raise SessionRevisionConflictError(
                    session_resource(tenant_id, plan.session_id),
                    expected_revision=None,
                    actual_revision=existing.revision,
                )
        backup = await asyncio.to_thread(
            self._backup, root, backup_directory, [f for f in files if f.content_hash]
        )
        from actoviq.storage.sqlite import _maintenance

        chunks = 0
        migrated: set[str] = set()
        sizes = {f.source_key: _size(Path(f.source_file)) for f in files if f.status == "planned"}
        total_bytes, done_bytes, done_items = sum(sizes.values()), 0, 0
        for start in range(0, len(pending), self._chunk_size):
            chunk = pending[start : start + self._chunk_size]
            migrated.update(
                await _maintenance.cutover_chunk(
                    self._storage.database, tenant_id, source, chunk, iso_now()
                )
            )
            chunks += 1
            done_items += sum(len(plan.items) for plan in chunk)
            done_bytes += sum(sizes.get(plan.source_key, 0) for plan in chunk)
            self._report(
                "cutover",
                (min(start + len(chunk), len(pending)), len(pending)),
                done_items,
                (done_bytes, total_bytes),
            )
        final = tuple(
            attrs.evolve(f, status="migrated") if f.source_key in migrated else f for f in files
        )
        return attrs.evolve(
            report, files=final, backup_directory=str(backup), chunks_committed=chunks
        )

    @staticmethod
    def _backup(
        root: Path, requested: str | Path | None, files: Sequence[MigrationFileReport]
    ) -> Path:
        if requested is None:
            stamp = int(time.time() * 1000)
            target = root.with_name(f"{root.name}.backup-v1-{stamp}-{uuid.uuid4().hex[:8]}")
        else:
            target = Path(requested).resolve()
        if target == root or root in target.parents:
            raise StorageDataError("The migration backup directory must be outside the source.")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(root, target, symlinks=True, dirs_exist_ok=False)
            manifest: JsonObject = {}
            for entry in files:
                copied = target / entry.source_key
                actual = (_sha256(Path(entry.source_file)), _sha256(copied))
                if actual != (entry.content_hash, entry.content_hash):
                    raise StorageDataError(f"Source changed while backing up {entry.source_file}")
                manifest[entry.source_key] = entry.content_hash
            (target.parent / f"{target.name}.sha256.json").write_text(
                json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
            )
        except (OSError, StorageDataError) as error:
            raise StorageDataError(
                f"Could not create and verify migration backup at {target}: {error}"
            ) from error
        return target

    async def verify(
        self, *, tenant_id: str, source_directory: str | Path, source_id: str | None = None
    ) -> VerifyReport:
        """Compare every ledger entry with its source file and its stored session.

        Checks: the source file still hashes to the ledger hash; the session exists with
        ``last_sequence`` equal to the ledger item count; re-converting the source gives exactly
        the stored journal (ids, kinds, payloads); every source file is in the ledger.
        """
        require_key(tenant_id, "tenantId")
        root = _resolve_source(source_directory)
        source = source_id or str(root)
        ledger = await self._ledger(tenant_id, source)
        problems: list[tuple[str, str]] = []
        items_checked = 0
        on_disk = {p.relative_to(root).as_posix() for p in _session_files(root)}
        problems.extend(
            (k, "source file is not in the ledger") for k in sorted(on_disk - set(ledger))
        )
        entries = sorted(ledger.items())
        sizes = [_size(root / key) for key, _ in entries]
        done_bytes, total_bytes = 0, sum(sizes)
        for index, (key, (content_hash, session_id, count)) in enumerate(entries):
            self._report("verify", (index, len(entries)), items_checked, (done_bytes, total_bytes))
            done_bytes += sizes[index]
            path = root / key
            if not path.is_file():
                problems.append((key, "source file is missing"))
                continue
            if await asyncio.to_thread(_sha256, path) != content_hash:
                problems.append((key, "source file hash differs from the ledger"))
            loaded = await self._storage.sessions.get(tenant_id=tenant_id, session_id=session_id)
            if loaded is None:
                problems.append((key, f"session {session_id} is missing"))
                continue
            journal = await self._storage.sessions.load(
                tenant_id=tenant_id, session_id=session_id, after_sequence=0
            )
            stored = [(i.item_id, i.kind, i.payload) for i in journal.items[:count]]
            if count != len(journal.items[:count]) or loaded.last_sequence < count:
                problems.append((key, f"expected {count} items, found {loaded.last_sequence}"))
            try:
                fresh = await asyncio.to_thread(read_legacy_session_file, path, root)
            except StorageDataError as error:
                problems.append((key, f"re-conversion failed: {error.message}"))
                continue
            expected: list[tuple[str, str, JsonValue]] = [
                (i.item_id, i.kind, i.payload) for i in fresh.items
            ]
            if expected != stored:
                diff = next(
                    (n for n, (a, b) in enumerate(zip(expected, stored, strict=False)) if a != b),
                    min(len(expected), len(stored)),
                )
                problems.append((key, f"re-conversion differs from the journal at item {diff}"))
            items_checked += len(stored)
        self._report(
            "verify", (len(entries), len(entries)), items_checked, (total_bytes, total_bytes)
        )
        return VerifyReport(
            tenant_id=tenant_id,
            source_id=source,
            sessions_checked=len(ledger),
            items_checked=items_checked,
            problems=tuple(problems),
        )

    async def rollback(
        self,
        *,
        tenant_id: str,
        source_directory: str | Path | None = None,
        source_id: str | None = None,
        dry_run: bool = False,
        force: bool = False,
    ) -> RollbackReport:
        """Delete exactly the sessions the ledger lists for this source, and their ledger rows.

        Runs as one maintenance transaction. A session written to after the migration (its
        revision moved) is refused unless ``force``.

        Raises:
            StorageDataError: neither a source directory nor a source id was given, or a
                migrated session changed since the migration and ``force`` is false.
        """
        require_key(tenant_id, "tenantId")
        if source_id is None:
            if source_directory is None:
                raise StorageDataError("rollback needs source_directory or source_id")
            source_id = str(await asyncio.to_thread(Path(source_directory).resolve))
        from actoviq.storage.sqlite import _maintenance

        removed = await _maintenance.rollback_ledger(
            self._storage.database, tenant_id, source_id, dry_run=dry_run, force=force
        )
        return RollbackReport(
            tenant_id=tenant_id,
            source_id=source_id,
            removed_sessions=tuple(removed),
            dry_run=dry_run,
        )
