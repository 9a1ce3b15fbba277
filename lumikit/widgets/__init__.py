"""Thin ipywidgets views over the lumikit API (import each from its module, e.g. lumikit.widgets.gpu_dashboard)."""
