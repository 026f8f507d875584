"""The embedded understanding engine (feature O2): offline, deterministic, Django-free.

Rules for the obvious (directives, small talk, a bare CUIT), a classifier trained from the
registry's examples, multi-intent segmentation, dependency ordering and entity extraction.
scikit-learn is only imported when a router is trained.
"""

from __future__ import annotations

from nlu.cuit import cuit_problem, is_valid_cuit
from nlu.entities import extract_entities
from nlu.language import detect_language
from nlu.router import Router, build_router
from nlu.values import (
    Context,
    Directive,
    Entities,
    Example,
    Task,
    Understanding,
    Vocabulary,
)

__all__ = [
    "Context",
    "Directive",
    "Entities",
    "Example",
    "Router",
    "Task",
    "Understanding",
    "Vocabulary",
    "build_router",
    "cuit_problem",
    "detect_language",
    "extract_entities",
    "is_valid_cuit",
]
