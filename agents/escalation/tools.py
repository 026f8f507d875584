"""Tools of the escalation agent."""

from __future__ import annotations
