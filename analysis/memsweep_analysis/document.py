"""A report as a list of blocks, rendered once as Markdown and once as a self-contained HTML page.

Building the content once and rendering it twice keeps the two files saying the same thing. The HTML page
embeds its images as base64 data URIs and its style inline, so it can be mailed or archived alone; the
Markdown links the PNGs beside it by file name, so the folder can be committed and read on a forge.
Tables are written here rather than with DataFrame.to_markdown, which needs the `tabulate` package that
Debian's python3-pandas does not pull in.
"""

import base64
import html
import math
import os

STYLE = """
body { font-family: sans-serif; max-width: 62rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.25rem; font-size: 0.85rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: right; }
th { background: #f0f0f0; }
td.text, th.text { text-align: left; }
img { max-width: 100%; }
code { background: #f4f4f4; padding: 0 0.2rem; }
p.note { color: #555; font-size: 0.9rem; }
"""


class Document:
    def __init__(self, title):
        self.title = title
        self.blocks = []

    def heading(self, text, level=2):
        self.blocks.append(("heading", level, text))

    def paragraph(self, text, note=False):
        self.blocks.append(("paragraph", note, text))

    def bullets(self, lines):
        if lines:
            self.blocks.append(("bullets", list(lines)))

    def table(self, frame):
        """A DataFrame whose cells are already what the reader should see (see `cell`)."""
        self.blocks.append(("table", frame))

    def image(self, path, alt):
        self.blocks.append(("image", os.fspath(path), alt))

    def to_markdown(self):
        parts = [f"# {self.title}"]
        for block in self.blocks:
            kind = block[0]
            if kind == "heading":
                parts.append("#" * block[1] + " " + block[2])
            elif kind == "paragraph":
                parts.append(f"_{block[2]}_" if block[1] else block[2])
            elif kind == "bullets":
                parts.append("\n".join(f"- {line}" for line in block[1]))
            elif kind == "table":
                parts.append(markdown_table(block[1]))
            elif kind == "image":
                parts.append(f"![{block[2]}]({os.path.basename(block[1])})")
        return "\n\n".join(parts) + "\n"

    def to_html(self):
        parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                 f"<title>{html.escape(self.title)}</title>", f"<style>{STYLE}</style>", "</head><body>",
                 f"<h1>{html.escape(self.title)}</h1>"]
        for block in self.blocks:
            kind = block[0]
            if kind == "heading":
                parts.append(f"<h{block[1]}>{html.escape(block[2])}</h{block[1]}>")
            elif kind == "paragraph":
                css = ' class="note"' if block[1] else ""
                parts.append(f"<p{css}>{_inline_html(block[2])}</p>")
            elif kind == "bullets":
                parts.append("<ul>" + "".join(f"<li>{_inline_html(line)}</li>" for line in block[1]) + "</ul>")
            elif kind == "table":
                parts.append(html_table(block[1]))
            elif kind == "image":
                with open(block[1], "rb") as png:
                    data = base64.b64encode(png.read()).decode("ascii")
                parts.append(f'<p><img alt="{html.escape(block[2], quote=True)}" '
                             f'src="data:image/png;base64,{data}"></p>')
        parts.append("</body></html>")
        return "\n".join(parts) + "\n"


def cell(value):
    """A table cell as text: NaN, None and pandas' NA empty, floats with up to 4 significant digits, lists (and
    tuples) joined by -."""
    if value is None or type(value).__name__ == "NAType":  # pandas' NA: a nullable column's missing value
        return ""
    if isinstance(value, (list, tuple)):
        return "-".join(str(v) for v in value)
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        value = float(value)
        if math.isnan(value):
            return ""
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
            return f"{value:.3g}"
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    if type(value).__name__ == "bool_" or isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _is_text_column(frame, column):
    return frame[column].dtype == object and not all(_numeric_text(v) for v in frame[column])


def _numeric_text(value):
    try:
        float(str(value))
        return True
    except ValueError:
        return str(value) == ""


def markdown_table(frame):
    if frame.empty:
        return "_(no rows)_"

    def escape(text):
        return str(text).replace("|", "\\|").replace("\n", " ")

    header = "| " + " | ".join(escape(c) for c in frame.columns) + " |"
    rule = "| " + " | ".join(":--" if _is_text_column(frame, c) else "--:" for c in frame.columns) + " |"
    rows = ["| " + " | ".join(escape(cell(v)) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule] + rows)


def html_table(frame):
    if frame.empty:
        return "<p><em>(no rows)</em></p>"
    text = [_is_text_column(frame, c) for c in frame.columns]
    head = "".join(f'<th{" class=text" if t else ""}>{html.escape(str(c))}</th>'
                   for c, t in zip(frame.columns, text))
    body = []
    for row in frame.itertuples(index=False):
        body.append("<tr>" + "".join(f'<td{" class=text" if t else ""}>{html.escape(cell(v))}</td>'
                                     for v, t in zip(row, text)) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _inline_html(text):
    """Markdown's `code` spans as <code>, everything else escaped: enough for the report's own sentences."""
    pieces = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(pieces))
