"""Keeping the pages launches need resident: plans for headstart-pind, and running it."""
