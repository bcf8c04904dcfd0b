"""Every output of the `headstart` command: terminal tables, JSON, and self-contained HTML pages
(charts drawn by matplotlib, embedded as SVG images, no network). One module per subject; each
renders data a collector returned to a stream passed in, so a test can render into a string."""
