"""headstart: make Linux programs start fast, and show why they start slowly."""

__version__ = "0.1.0"
