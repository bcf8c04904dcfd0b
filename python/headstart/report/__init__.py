"""Self-contained HTML reports: charts drawn by matplotlib, embedded as SVG images, no network."""
