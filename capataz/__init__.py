from __future__ import annotations

# Celery's app is loaded with Django so that @shared_task binds to it.
from capataz.celery import app as celery_app

__all__ = ["celery_app"]
