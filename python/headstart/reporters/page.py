"""One HTML file with sections of charts and tables; everything inline, so it opens anywhere offline."""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 0.9em; }
img.chart { max-width: 100%; }
table { border-collapse: collapse; font-size: 0.9em; margin: 1em 0; }
td, th { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: right; }
td:first-child, th:first-child { text-align: left; }
"""


def svg_data(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode()


@dataclass
class Page:
    title: str
    parts: list[str] = field(default_factory=list)

    def heading(self, text: str) -> None:
        self.parts.append(f"<h2>{html.escape(text)}</h2>")

    def text(self, text: str) -> None:
        self.parts.append(f"<p>{html.escape(text)}</p>")

    def preformatted(self, text: str) -> None:
        self.parts.append(f"<pre>{html.escape(text)}</pre>")

    def chart(self, fig: Figure, caption: str) -> None:
        self.parts.append(
            f'<figure><img class="chart" alt="{html.escape(caption)}" src="{svg_data(fig)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )

    def table(self, headers: list[str], rows: list[list[str]]) -> None:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        self.parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def render(self) -> str:
        return (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(self.title)}</title>'
            f"<style>{_STYLE}</style></head><body><h1>{html.escape(self.title)}</h1>\n"
            + "\n".join(self.parts)
            + "\n</body></html>\n"
        )
