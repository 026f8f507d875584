"""Tools of the financial agent."""

from __future__ import annotations
