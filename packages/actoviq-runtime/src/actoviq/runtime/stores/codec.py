"""Checkpoint payloads at rest: the ``payload_codec`` hook and a Fernet implementation (D6, D10).

A checkpoint keeps the run's transcript, tool inputs and tool results in clear by default:
``resume()`` needs them. A host that must not store them in clear passes a codec to the
checkpoint adapter (:class:`~actoviq.runtime.stores.StoreRunCheckpointAdapter`,
``actoviq.storage.sqlite.SqliteRunCheckpointAdapter``): the run state is then written as
``{"$codec": <id>, "payload": <codec output>}`` and the record's side-effect summaries lose their
``input``/``output``. What stays in clear: the run, session, tenant and trace ids, the status,
the lease, and the pending calls' ids, tool names and states (what operators query).

:class:`FernetPayloadCodec` encrypts with ``cryptography``'s Fernet (AES-128-CBC + HMAC-SHA256,
authenticated): ``pip install "actoviq-runtime[fernet]"``; ``cryptography`` is imported when the
codec is built, never by ``import actoviq.runtime``. Several keys may be given for rotation: the
first encrypts, all decrypt.

Example:
    >>> codec = FernetPayloadCodec(FernetPayloadCodec.generate_key())  # doctest: +SKIP
    >>> adapter = StoreRunCheckpointAdapter(store, payload_codec=codec)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, cast, runtime_checkable

from actoviq.core import JsonObject, JsonValue, dumps_compact, loads_strict
from actoviq.runtime.errors import RuntimeConfigurationError
from actoviq.runtime.stores.errors import StorageDataError

if TYPE_CHECKING:
    from cryptography.fernet import Fernet, InvalidToken, MultiFernet

__all__ = [
    "CODEC_FIELD",
    "FernetPayloadCodec",
    "PayloadCodec",
    "PayloadCodecError",
    "decode_payload",
    "encode_payload",
]

CODEC_FIELD: Final = "$codec"
"""The key that marks an encoded run state (``{"$codec": id, "payload": text}``)."""


class PayloadCodecError(StorageDataError):
    """A stored payload cannot be decoded: a wrong key, another codec, or corrupted data.

    The run state is not lost; configure the key (or codec) it was written with.
    """

    default_code: ClassVar[str] = "STORAGE_PAYLOAD_UNREADABLE"


@runtime_checkable
class PayloadCodec(Protocol):
    """Turns a run state's bytes into stored text and back (encryption, compression…)."""

    @property
    def id(self) -> str:
        """A stable name stored with each payload (``"fernet"``)."""
        ...

    def encode(self, data: bytes) -> str:
        """The stored text for ``data``."""
        ...

    def decode(self, text: str) -> bytes:
        """The bytes ``text`` was made from.

        Raises:
            PayloadCodecError: ``text`` was not made by this codec with these keys.
        """
        ...


def encode_payload(codec: PayloadCodec, state: JsonObject) -> JsonObject:
    """The envelope stored in place of ``state``."""
    return {CODEC_FIELD: codec.id, "payload": codec.encode(dumps_compact(state).encode("utf-8"))}


def decode_payload(codec: PayloadCodec | None, stored: JsonObject) -> JsonObject:
    """The run state a stored value holds (a plain state passes: written before the codec).

    Raises:
        PayloadCodecError: an envelope without a codec, of another codec, or that does not
            decode (wrong key, corrupted) into a JSON object.
    """
    name = stored.get(CODEC_FIELD)
    if name is None:
        return stored
    if codec is None:
        raise PayloadCodecError(
            f'The stored run state is encoded ("{name}"); configure its payload_codec to read it.'
        )
    if name != codec.id:
        raise PayloadCodecError(
            f'The stored run state is encoded with "{name}", not with "{codec.id}".'
        )
    payload = stored.get("payload")
    if not isinstance(payload, str):
        raise PayloadCodecError("The stored run state's payload is not text.")
    data = codec.decode(payload)
    try:
        value: JsonValue = loads_strict(data.decode("utf-8"), "run state")
    except (UnicodeDecodeError, ValueError) as error:
        raise PayloadCodecError(
            f"The decoded run state is not JSON ({type(error).__name__})."
        ) from None
    if type(value) is not dict:
        raise PayloadCodecError("The decoded run state is not a JSON object.")
    return cast(JsonObject, value)


class FernetPayloadCodec:
    """A :class:`PayloadCodec` on ``cryptography``'s Fernet (authenticated encryption).

    Args:
        keys: one url-safe base64 Fernet key (:meth:`generate_key`), or several for rotation
            (the first encrypts; every one decrypts).

    Raises:
        RuntimeConfigurationError: ``cryptography`` is not installed, or a key is malformed
            (the key itself is never echoed).
    """

    def __init__(self, keys: str | bytes | Sequence[str | bytes]) -> None:
        fernet, multi, invalid = _fernet_classes()
        given = cast(object, keys)
        if isinstance(given, str | bytes):
            listed: list[object] = [given]
        elif isinstance(given, Sequence):
            listed = list(cast(Sequence[object], given))
        else:  # None, a number ...: the same refusal as a malformed key
            listed = [given]
        if not listed:
            raise RuntimeConfigurationError("FernetPayloadCodec needs at least one key.")
        try:
            ciphers = [fernet(cast(Any, key)) for key in listed]
        except (ValueError, TypeError):
            raise RuntimeConfigurationError(
                "A FernetPayloadCodec key is not a 32-byte url-safe base64 Fernet key "
                "(make one with FernetPayloadCodec.generate_key())."
            ) from None
        self._cipher: MultiFernet = multi(ciphers)
        self._invalid: type[InvalidToken] = invalid

    @property
    def id(self) -> str:
        """``"fernet"``."""
        return "fernet"

    @staticmethod
    def generate_key() -> str:
        """A fresh random key (keep it in your secret store, never next to the database)."""
        return _fernet_classes()[0].generate_key().decode("ascii")

    def encode(self, data: bytes) -> str:
        """Encrypt ``data`` (a fresh IV each time)."""
        return self._cipher.encrypt(data).decode("ascii")

    def decode(self, text: str) -> bytes:
        """Decrypt ``text``.

        Raises:
            PayloadCodecError: no configured key decrypts it, or it was altered.
        """
        try:
            return self._cipher.decrypt(text.encode("ascii"))
        except (self._invalid, UnicodeEncodeError):
            raise PayloadCodecError(
                "The stored run state cannot be decrypted with the configured Fernet key(s): "
                "a wrong key, or the payload was altered."
            ) from None

    def __repr__(self) -> str:
        return "FernetPayloadCodec(<keys hidden>)"


def _fernet_classes() -> tuple[type[Fernet], type[MultiFernet], type[InvalidToken]]:
    try:
        from cryptography.fernet import Fernet, InvalidToken, MultiFernet
    except ImportError as error:
        raise RuntimeConfigurationError(
            'FernetPayloadCodec needs cryptography: pip install "actoviq-runtime[fernet]".'
        ) from error
    return Fernet, MultiFernet, InvalidToken
