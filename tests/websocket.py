"""Channels' websocket test client with the patience a loaded CI machine needs.

`WebsocketCommunicator.connect()` and `disconnect()` wait 1 s by default; with both suites and
the lint sharing two cores, a refused handshake (session lookup, origin check) once took longer
and the test failed on the timeout rather than on what it checks. Every test opens sockets
through this class; a test that expects silence says so with `receive_nothing`.
"""

from __future__ import annotations

from typing import Any

from channels.testing import WebsocketCommunicator as _Communicator

PATIENCE = 30.0


class WebsocketCommunicator(_Communicator):  # type: ignore[misc]
    async def connect(self, timeout: float = PATIENCE) -> Any:
        return await super().connect(timeout)

    async def disconnect(self, code: int = 1000, timeout: float = PATIENCE) -> None:
        await super().disconnect(code, timeout)

    async def receive_from(self, timeout: float = PATIENCE) -> Any:
        return await super().receive_from(timeout)

    async def receive_json_from(self, timeout: float = PATIENCE) -> Any:
        return await super().receive_json_from(timeout)
