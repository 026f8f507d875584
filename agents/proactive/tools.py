"""Tools of the proactive agent."""

from __future__ import annotations
