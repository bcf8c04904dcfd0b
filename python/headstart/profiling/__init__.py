"""Measuring one program's launches: the probe's timeline, the loader's counts, faults, files, pages, memory."""
