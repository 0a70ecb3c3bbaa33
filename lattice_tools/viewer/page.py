"""The view's HTML: the template (``page/view.html``, ``view.css``, ``view.js``, package data) with the styles,
the script and the data inlined, so that the one file needs nothing else: no CDN, no server, no request."""
from __future__ import annotations

import json
import re
from importlib import resources

# the template's only references to other text: these placeholders (each once; the title twice)
_SLOTS = ("/*VIEW_CSS*/", "/*VIEW_JS*/", "/*VIEW_DATA*/", "<!--VIEW_TITLE-->")


def _template(name: str) -> str:
    return resources.files(__package__).joinpath("page").joinpath(name).read_text(encoding="utf-8")


def data_json(data: dict) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">``: no ``</`` or ``<!--`` can end or
    comment out the element (a word such as ``</s>`` is written ``<\\/s>``, the same JSON string)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def _escape_html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def render_page(data: dict) -> str:
    """The whole page as one string."""
    html = _template("view.html")
    parts = {"/*VIEW_CSS*/": _template("view.css"), "/*VIEW_JS*/": _template("view.js"),
             "/*VIEW_DATA*/": data_json(data), "<!--VIEW_TITLE-->": _escape_html(str(data.get("title", "")))}
    for slot in _SLOTS:
        if html.count(slot) != (2 if slot == "<!--VIEW_TITLE-->" else 1):
            raise AssertionError(f"the view template holds {slot} {html.count(slot)} times")
    # one pass, so that no inlined text is searched for the next placeholder
    return re.sub("|".join(re.escape(s) for s in _SLOTS), lambda m: parts[m.group(0)], html)


def write_page(out: str, data: dict) -> int:
    """Write the page to ``out`` atomically; returns its size in bytes."""
    from ..core.files import atomic_write

    text = render_page(data).encode("utf-8")
    with atomic_write(str(out), "wb", compress=False) as f:
        f.write(text)
    return len(text)
