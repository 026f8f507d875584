"""The embedded default's Celery broker: kombu's filesystem transport, made safe to read.

kombu's own writes a message by creating its file under the final name and then writing into
it, and its reader takes any file with that name: under a burst a worker read a file still
empty, `json.loads` raised, and the worker stopped ("Unrecoverable error: JSONDecodeError").
Here a message is written under a temporary name and renamed into place (a rename is atomic),
and a file that still does not parse (truncated, corrupted by hand or by a full disk) is moved
to the quarantine folder and logged; the worker goes on with the next message.
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from queue import Empty
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads
from kombu.utils.objects import cached_property

logger = logging.getLogger(__name__)

# Not `.msg`: a reader never takes a message still being written.
PARTIAL = ".partial"


class Channel(filesystem.Channel):
    @cached_property
    def quarantine_folder(self) -> Path:
        folder = Path(self.transport_options.get("quarantine_folder", "quarantine"))
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @cached_property
    def taken_folder(self) -> Path:
        # Always the processed folder (kept only with store_processed): a rename within the
        # broker's folder is atomic, so two consumers never both take one message.
        folder = Path(self.processed_folder)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # kombu's own bases disagree on the argument's name (message / payload): filesystem's wins.
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{int(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        try:
            with open(final + PARTIAL, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(final + PARTIAL, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != f"{queue}.msg":
                continue
            payload = self._take(name)
            if payload is None:
                continue  # another consumer took it first
            try:
                message = loads(bytes_to_str(payload))
            except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
                self._quarantine(name, payload, str(exc))
                continue
            if not isinstance(message, dict) or not isinstance(message.get("properties"), dict):
                self._quarantine(name, payload, "not a kombu message")  # kombu would raise
                continue
            return message
        raise Empty()

    def _take(self, name: str) -> bytes | None:
        """The file's bytes, once it is this consumer's (moved out of the queue folder)."""
        taken = self.taken_folder / name
        try:
            os.replace(os.path.join(self.data_folder_in, name), taken)
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("broker: could not take %s: %s", name, exc)
            return None
        try:
            payload = taken.read_bytes()
            if not self.store_processed:
                os.remove(taken)
        except OSError as exc:
            raise ChannelError(f"Cannot read file {taken!r} from queue.") from exc
        return payload

    def _quarantine(self, name: str, payload: bytes, why: str) -> None:
        kept = self.quarantine_folder / name
        try:
            kept.write_bytes(payload)
        except OSError as exc:  # a full disk, say: the message is lost either way, not the worker
            logger.error("broker: unreadable message %s (%s) dropped: %s", name, why, exc)
            return
        logger.error(
            "broker: unreadable message %s (%d bytes, %s) set aside in %s",
            name, len(payload), why, kept,
        )  # fmt: skip


class Transport(filesystem.Transport):
    Channel = Channel
