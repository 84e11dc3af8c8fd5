"""``SqlArtifactBlobStore``: artifact bytes in the database, in chunk rows (SQLite, PostgreSQL).

A write inserts a nameless blob row (``sha256`` NULL), then one chunk row per transaction as the
bytes stream in (memory stays one chunk wide, the write lock is held one chunk at a time), then
names the blob in a last transaction: if a blob with that digest already exists it is touched and
the new rows are dropped, otherwise the new row gets the digest. A crash before that leaves a
nameless blob, which :meth:`SqlArtifactBlobStore.purge_incomplete` removes; a named blob is
always complete. Reads fetch one chunk per read transaction and verify the digest at the end.

Deletes lock the blob row (``FOR UPDATE`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite) and check
the last touch in the same transaction as the naming step of a concurrent write checks for it, so
a concurrent write of the same content either keeps the blob or writes its own.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Sequence
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from actoviq.core import iso_now
from actoviq.runtime.stores import (
    DEFAULT_CHUNK_SIZE,
    ArtifactBlobMissingError,
    ArtifactIntegrityError,
    BlobInfo,
    DigestWriter,
    StorageDataError,
    StreamVerifier,
    check_chunk_size,
    check_max_bytes,
)
from actoviq.runtime.stores.validation import require_limit, require_sha256
from actoviq.storage.sqlite._engine import Database
from actoviq.storage.sqlite._keyed_rows import stored_int
from actoviq.storage.sqlite._tables import artifact_blobs, artifact_chunks

__all__ = ["SqlArtifactBlobStore"]

_blobs = artifact_blobs.c
_chunks = artifact_chunks.c
_NAMING_ATTEMPTS = 3


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class SqlArtifactBlobStore:
    """An :class:`~actoviq.runtime.stores.ArtifactBlobStore` in the storage database.

    Args:
        database: the engine owner (a :class:`SqliteStorage`'s).
        chunk_size: bytes per stored chunk row.
    """

    def __init__(self, database: Database, *, chunk_size: int = DEFAULT_CHUNK_SIZE) -> None:
        self._db = database
        self._chunk_size = check_chunk_size(chunk_size)

    # -- write ------------------------------------------------------------------------------------

    async def write(
        self, chunks: AsyncIterable[bytes], *, max_bytes: int | None = None
    ) -> BlobInfo:
        """See :meth:`ArtifactBlobStore.write`."""
        limit = None if max_bytes is None else check_max_bytes(max_bytes)
        digest = DigestWriter(limit)
        seq = await self._db.run_write(_new_blob)
        index = 0
        named = False
        try:
            buffer = bytearray()
            async for chunk in chunks:  # the source's own errors propagate unchanged
                digest.update(chunk)
                buffer += chunk
                while len(buffer) >= self._chunk_size:
                    piece = bytes(buffer[: self._chunk_size])
                    del buffer[: self._chunk_size]
                    await self._db.run_write(_chunk_writer(seq, index, piece))
                    index += 1
            if buffer:
                await self._db.run_write(_chunk_writer(seq, index, bytes(buffer)))
                index += 1
            info = await self._name(seq, digest.hexdigest(), digest.size, index)
            named = True
            return info
        finally:
            if not named:
                with contextlib.suppress(Exception):
                    await self._db.run_write(lambda conn: _drop(conn, seq))

    async def _name(self, seq: int, sha: str, size: int, count: int) -> BlobInfo:
        def name(conn: Connection) -> BlobInfo:
            now = _now_ms()
            existing = conn.execute(
                select(_blobs.blob_seq).where(_blobs.sha256 == sha).with_for_update()
            ).first()
            if existing is not None:
                conn.execute(
                    update(artifact_blobs)
                    .where(_blobs.blob_seq == existing.blob_seq)
                    .values(touched_at=now)
                )
                _drop(conn, seq)
            else:
                conn.execute(
                    update(artifact_blobs)
                    .where(_blobs.blob_seq == seq)
                    .values(sha256=sha, size=size, chunk_count=count, touched_at=now)
                )
            return BlobInfo(sha256=sha, size=size, touched_at_ms=now)

        for attempt in range(_NAMING_ATTEMPTS):
            try:
                return await self._db.run_write(name)
            except IntegrityError:
                # PostgreSQL: a concurrent write named the same content first; the next attempt
                # finds it and touches it.
                if attempt == _NAMING_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    # -- read -------------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def open(
        self, sha256: str, *, size: int | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> AsyncGenerator[AsyncIterator[bytes], None]:
        """See :meth:`ArtifactBlobStore.open`."""
        require_sha256(sha256)
        step = check_chunk_size(chunk_size)
        row = await self._db.run_read(
            lambda conn: conn.execute(
                select(_blobs.blob_seq, _blobs.size, _blobs.chunk_count).where(
                    _blobs.sha256 == sha256
                )
            ).first()
        )
        if row is None:
            raise ArtifactBlobMissingError(sha256)
        stored_size = stored_int(row.size, "artifact blob size")
        if size is not None and stored_size != size:
            raise ArtifactIntegrityError(sha256, expected_size=size, actual_size=stored_size)
        stream = self._stream(
            stored_int(row.blob_seq, "blob_seq"),
            stored_int(row.chunk_count, "chunk_count"),
            StreamVerifier(sha256, stored_size),
            step,
        )
        try:
            yield stream
        finally:
            await stream.aclose()

    async def _stream(
        self, seq: int, count: int, verifier: StreamVerifier, step: int
    ) -> AsyncGenerator[bytes, None]:
        for index in range(count):
            data = await self._db.run_read(_chunk_reader(seq, index))
            if type(data) is not bytes:
                if data is None:
                    raise ArtifactIntegrityError(
                        verifier.sha256, reason=f"chunk {index} of {count} is missing"
                    )
                data = bytes(data)  # a driver that hands back memoryview / bytearray
            verifier.update(data)
            for start in range(0, len(data), step):
                yield data[start : start + step]
        verifier.finish()

    async def stat(self, sha256: str) -> BlobInfo | None:
        """See :meth:`ArtifactBlobStore.stat`."""
        require_sha256(sha256)
        row = await self._db.run_read(
            lambda conn: conn.execute(
                select(_blobs.size, _blobs.touched_at).where(_blobs.sha256 == sha256)
            ).first()
        )
        if row is None:
            return None
        return BlobInfo(
            sha256=sha256,
            size=stored_int(row.size, "artifact blob size"),
            touched_at_ms=stored_int(row.touched_at, "touched_at"),
        )

    async def list_blobs(self, *, after: str | None = None, limit: int = 1000) -> list[BlobInfo]:
        """See :meth:`ArtifactBlobStore.list_blobs`."""
        cap = require_limit(limit) or 1000
        query = select(_blobs.sha256, _blobs.size, _blobs.touched_at).where(
            _blobs.sha256.is_not(None)
        )
        if after is not None:
            query = query.where(_blobs.sha256 > require_sha256(after, "after"))
        query = query.order_by(_blobs.sha256).limit(cap)
        rows: Sequence[Any] = await self._db.run_read(lambda conn: conn.execute(query).all())
        return [
            BlobInfo(
                sha256=require_sha256(row.sha256, "stored sha256"),
                size=stored_int(row.size, "artifact blob size"),
                touched_at_ms=stored_int(row.touched_at, "touched_at"),
            )
            for row in rows
        ]

    # -- garbage ----------------------------------------------------------------------------------

    async def delete(self, sha256: str, *, touched_before_ms: int | None = None) -> bool:
        """See :meth:`ArtifactBlobStore.delete`."""
        require_sha256(sha256)

        def remove(conn: Connection) -> bool:
            row = conn.execute(
                select(_blobs.blob_seq, _blobs.touched_at)
                .where(_blobs.sha256 == sha256)
                .with_for_update()
            ).first()
            if row is None:
                return False
            if touched_before_ms is not None and row.touched_at >= touched_before_ms:
                return False
            _drop(conn, row.blob_seq)
            return True

        return await self._db.run_write(remove)

    async def purge_incomplete(self, *, older_than_ms: int) -> int:
        """See :meth:`ArtifactBlobStore.purge_incomplete`."""
        if type(older_than_ms) is not int:
            raise StorageDataError("older_than_ms must be an integer")

        def purge(conn: Connection) -> int:
            stale = conn.execute(
                select(_blobs.blob_seq)
                .where(_blobs.sha256.is_(None))
                .where(_blobs.touched_at < older_than_ms)
                .with_for_update()
            ).all()
            for row in stale:
                _drop(conn, row.blob_seq)
            return len(stale)

        return await self._db.run_write(purge)

    async def aclose(self) -> None:
        """No-op: the :class:`SqliteStorage` owns the engine."""


def _new_blob(conn: Connection) -> int:
    result = conn.execute(
        insert(artifact_blobs).values(
            sha256=None, size=0, chunk_count=0, touched_at=_now_ms(), created_at=iso_now()
        )
    )
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def _chunk_writer(seq: int, index: int, data: bytes) -> Any:
    def work(conn: Connection) -> None:
        conn.execute(insert(artifact_chunks).values(blob_seq=seq, chunk_index=index, data=data))
        # The touch keeps a slow but live write out of purge_incomplete.
        conn.execute(
            update(artifact_blobs).where(_blobs.blob_seq == seq).values(touched_at=_now_ms())
        )

    return work


def _chunk_reader(seq: int, index: int) -> Any:
    def work(conn: Connection) -> Any:
        return conn.execute(
            select(_chunks.data).where(_chunks.blob_seq == seq).where(_chunks.chunk_index == index)
        ).scalar_one_or_none()

    return work


def _drop(conn: Connection, seq: int) -> None:
    conn.execute(delete(artifact_chunks).where(_chunks.blob_seq == seq))
    conn.execute(delete(artifact_blobs).where(_blobs.blob_seq == seq))
