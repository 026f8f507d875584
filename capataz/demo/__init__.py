"""The demo organisation «Climatización Río de la Plata» (`manage.py load_demo`)."""

from __future__ import annotations

from capataz.demo.load import DemoResult, delete_demo, demo_counts, load_demo

__all__ = ["DemoResult", "delete_demo", "demo_counts", "load_demo"]
