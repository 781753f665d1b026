"""The front end's shape, read from the files (no browser): small ES modules with one shared
``dom.js``, each htmx event heard in one place, one modal mechanism (native ``<dialog>``), and
templates without tiny single-use partials or lines over 200 characters (issue 23 item 5).

The browser suite (``tests/e2e``) holds what these files do; this holds how they are cut, so
the chat page does not grow back into one script by appending."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "static" / "netaclaw"
TEMPLATES = ROOT / "templates"
# the packages whose code renders templates by name (views, the socket's HTML encoder, …)
PYTHON = ("web", "channels_app", "chat", "agents", "compaction", "recall", "system", "netaclaw")

MAX_JS_LINES = 300
MAX_TEMPLATE_LINE = 200
TINY_PARTIAL_LINES = 10


def _scripts() -> dict[str, str]:
    return {
        path.relative_to(STATIC).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(STATIC.rglob("*.js"))
    }


def _templates() -> dict[str, str]:
    return {
        path.relative_to(TEMPLATES).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(TEMPLATES.rglob("*.html"))
    }


def test_no_script_is_over_300_lines() -> None:
    sizes = {name: text.count("\n") for name, text in _scripts().items()}
    assert sizes, "static/netaclaw has scripts"
    assert {name: n for name, n in sizes.items() if n > MAX_JS_LINES} == {}


def test_the_dom_helpers_are_written_once_in_dom_js() -> None:
    definition = re.compile(r"\b(?:function\s+byId\b|(?:const|let|var)\s+byId\s*=)")
    defined = [name for name, text in _scripts().items() for _ in definition.finditer(text)]
    assert defined == ["dom.js"]
    # every module that needs an element by id imports it from there
    for name, text in _scripts().items():
        if name != "dom.js" and re.search(r"\bbyId\(", text):
            assert re.search(r"import \{[^}]*\bbyId\b[^}]*\} from \"(\./|\.\./)dom\.js\"", text), (
                name
            )


def test_each_htmx_event_is_handled_in_one_place() -> None:
    heard = Counter(
        (name, event)
        for name, text in _scripts().items()
        for event in re.findall(r"""["'](htmx:[A-Za-z]+)["']""", text)
    )
    assert heard, "the chat page listens to htmx events"
    places: dict[str, list[str]] = {}
    for (name, event), count in heard.items():
        places.setdefault(event, []).extend([name] * count)
    assert {event: where for event, where in places.items() if len(where) > 1} == {}


def test_pages_load_es_modules_whose_imports_resolve() -> None:
    tags = [
        (name, tag)
        for name, text in _templates().items()
        for tag in re.findall(r"<script\b[^>]*netaclaw/[^>]*>", text)
    ]
    assert tags, "the pages load the project's scripts"
    # one classic script: the colour theme must apply before the first paint (issue 26 item
    # 6), and modules run after it
    classic = [(name, tag) for name, tag in tags if 'type="module"' not in tag]
    assert classic == [("base.html", "<script src=\"{% static 'netaclaw/theme.js' %}\">")]
    for name, text in _scripts().items():
        folder = (STATIC / name).parent
        for target in re.findall(r"""^import\b[^"']*["']([^"']+)["']""", text, re.M):
            assert (folder / target).resolve().is_file(), (name, target)
    # the chat page's own entry module is loaded by the chat page only
    loaders = [name for name, tag in tags if "netaclaw/chat.js" in tag]
    assert loaders == ["chat/session.html"]


def test_one_modal_mechanism_native_dialog() -> None:
    for name, text in _templates().items():
        for tag in re.findall(r"<[a-z][^<>]*\b(?:role=\"dialog\"|aria-modal)[^<>]*>", text):
            assert tag.startswith("<dialog"), (name, tag)  # not a div or aside made modal by hand
    scripts = _scripts()
    # showModal, and Tab handling at a modal's edges, live in modal.js only
    assert [n for n, text in scripts.items() if ".showModal()" in text] == ["modal.js"]
    assert [n for n, text in scripts.items() if re.search(r"""["']Tab["']""", text)] == ["modal.js"]


def test_no_template_line_is_over_200_characters() -> None:
    long_lines = [
        (name, number, len(line))
        for name, text in _templates().items()
        for number, line in enumerate(text.splitlines(), start=1)
        if len(line) > MAX_TEMPLATE_LINE
    ]
    assert long_lines == []


def _rendered_from_python() -> set[str]:
    names: set[str] = set()
    for package in PYTHON:
        for path in (ROOT / package).rglob("*.py"):
            names.update(re.findall(r"""["']([\w/]+\.html)["']""", path.read_text("utf-8")))
    return names


def test_a_short_partial_used_in_one_place_is_merged_into_it() -> None:
    """A partial earns its file by being included from several places or rendered alone (by a
    view, the socket's HTML encoder, pin_views); a short one included once is merged."""
    templates = _templates()
    includes = Counter(
        included
        for text in templates.values()
        for included in re.findall(r"""\{%\s*include\s+["']([^"']+)["']""", text)
    )
    by_python = _rendered_from_python()
    single_use = [
        name
        for name, text in templates.items()
        if includes[name] == 1
        and name not in by_python
        and name.rsplit("/", 1)[-1] not in by_python
        and not name.startswith("admin/")  # Django admin's own templates
        and text.count("\n") <= TINY_PARTIAL_LINES
    ]
    assert single_use == []
