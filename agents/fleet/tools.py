"""Tools of the fleet agent."""

from __future__ import annotations
