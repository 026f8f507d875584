from __future__ import annotations

# The chat's fixtures hold here too: cheap password hashing and routers rebuilt per test
# (autouse), the registry of default agents and the scripted handlers.
from tests.copilot.conftest import (  # noqa: F401
    fast_passwords,
    fresh_routers,
    handlers,
    registry,
    router,
)
