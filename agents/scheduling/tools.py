"""Tools of the scheduling agent."""

from __future__ import annotations
