"""Helpers for the workbook's own test suites (the browser tests drive JupyterLab through :mod:`.browser`)."""
