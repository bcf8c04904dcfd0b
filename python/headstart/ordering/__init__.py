"""Startup function ordering: which functions a launch runs, in order (capture.py, pages.py), the
order written for each linker (emit.py), and the text pages a cold launch touches (check.py)."""
