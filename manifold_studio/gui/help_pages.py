"""Help ▸ Keyboard shortcuts and Help ▸ Methods, both built from what the window really has.

- The shortcuts page walks the window's QActions and QShortcuts (menus, panels, context
  actions) each time it opens, so it lists exactly the keys that work — never a stale table.
- The methods page is made from the plugin host: every algorithm's name, id, help text,
  docstring summary and parameters (type, allowed values, default, help), grouped by kind, with
  an anchor per method (``#algorithm-<id>``); then the loaders and the sample data sets.

Also here: View ▸ Zoom to fit (Ctrl+0), the one listed shortcut the window lacked.
"""
from __future__ import annotations

import html
import inspect

from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
)

KIND_TITLES = {"embedding": "Embedding (dimensionality reduction)", "clustering": "Clustering",
               "classification": "Classification"}
#: keys handled by widgets rather than actions; listed only when no action already has the key
DOCUMENTED_KEYS = (("Ctrl+A", "Select all points of the map", "Map (selection)"),
                   ("Esc", "Clear the selection (when no job runs)", "Map (selection)"))


# -- keyboard shortcuts -------------------------------------------------------------------------
def _clean(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip(".…").strip()


def _menu_paths(window) -> dict[int, tuple[int, str]]:
    """id(action) -> (position in menu order, "File ▸ Open recent" style path) of every action
    reachable from the menu bar."""
    paths: dict[int, tuple[int, str]] = {}

    def walk(menu, prefix):
        for action in menu.actions():
            sub = action.menu()
            if sub is not None:
                walk(sub, f"{prefix} ▸ {_clean(sub.title())}")
            elif id(action) not in paths:
                paths[id(action)] = (len(paths), prefix)

    for top in window.menuBar().actions():
        if top.menu() is not None:
            walk(top.menu(), _clean(top.menu().title()))
    return paths


def _keys(sequences) -> str:
    return ", ".join(s.toString(QKeySequence.SequenceFormat.NativeText) for s in sequences if not s.isEmpty())


def shortcut_rows(window) -> list[tuple[str, str, str]]:
    """(what, keys, where) for every action and shortcut of ``window`` that has a key."""
    paths = _menu_paths(window)
    actions = {id(a): a for a in window.findChildren(QAction)}
    actions.update({id(a): a for a in window.actions()})
    found, seen = [], set()  # (sort key, row)
    for key, action in actions.items():
        keys = _keys(action.shortcuts())
        if not keys:
            continue
        position, where = paths.get(key, (len(paths), ""))
        row = (_clean(action.text()) or action.objectName(), keys,
               where or action.property("where") or _owner(action))
        if row not in seen:
            seen.add(row)
            found.append(((position, row[2], row[0]), row))
    for shortcut in window.findChildren(QShortcut):
        keys = _keys([shortcut.key()])
        row = (shortcut.whatsThis() or shortcut.objectName() or "Shortcut", keys, _owner(shortcut))
        if keys and shortcut.isEnabled() and row not in seen:
            seen.add(row)
            found.append(((len(paths), row[2], row[0]), row))
    rows = [row for _key, row in sorted(found)]  # menu order, then the widgets' own keys
    taken = {k.strip() for _w, keys, _p in rows for k in keys.split(",")}
    for keys, what, where in DOCUMENTED_KEYS:
        native = QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText)
        if native not in taken:
            rows.append((what, native, where))
    return rows


def _owner(obj) -> str:
    parent = obj.parent()
    while parent is not None and not parent.objectName():
        parent = parent.parent()
    name = parent.objectName() if parent is not None else ""
    return name.replace("_", " ").capitalize() if name else "Window"


class ShortcutsDialog(QDialog):
    def __init__(self, window):
        super().__init__(window)
        self.setWindowTitle("Keyboard shortcuts")
        self.rows = shortcut_rows(window)
        self.table = QTableWidget(len(self.rows), 3)
        self.table.setObjectName("shortcuts_table")
        self.table.setHorizontalHeaderLabels(("Action", "Keys", "Where"))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        for r, row in enumerate(self.rows):
            for c, text in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(text))
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.table)
        lay.addWidget(buttons)
        self.resize(620, 520)


# -- methods --------------------------------------------------------------------------------------
def _docstring_summary(cls) -> str:
    doc = cls.__dict__.get("__doc__") or ""
    return inspect.cleandoc(doc).split("\n\n", 1)[0].strip() if doc else ""


def _param_cells(p) -> tuple[str, str, str, str, str]:
    """(name, type, allowed, default, help) of a constraint, tolerant of third-party ones."""
    name = str(getattr(p, "name", "?"))
    try:
        info, default = p.to_dict(), p.format(p.default)
    except Exception:  # noqa: BLE001 - a third-party constraint may lack these
        info, default = {"type": type(p).__name__}, repr(getattr(p, "default", ""))
    return (name, str(info.get("type", "")), str(info.get("allowed", "")), str(default),
            str(info.get("help", getattr(p, "help", ""))))


def _params_table(params) -> str:
    if not params:
        return "<p><i>No parameters.</i></p>"
    rows = ["<tr><th>Parameter</th><th>Type</th><th>Allowed</th><th>Default</th><th>Help</th></tr>"]
    for p in params:
        name, *rest = (html.escape(c) for c in _param_cells(p))
        rows.append(f"<tr><td valign='top'><code>{name}</code></td>"
                    + "".join(f"<td valign='top'>{c}</td>" for c in rest) + "</tr>")
    return f"<table border='1' cellspacing='0' cellpadding='3'>{''.join(rows)}</table>"


def methods_html(host) -> str:
    """The Help ▸ Methods page for ``host`` (a PluginHost) as HTML."""
    esc = html.escape
    groups: dict[str, list] = {}
    for aid, cls in sorted(host.algorithms.items(), key=lambda kv: (getattr(kv[1], "name", "") or kv[0]).lower()):
        groups.setdefault(getattr(cls, "kind", "") or "other", []).append((aid, cls))
    kinds = [k for k in KIND_TITLES if k in groups] + sorted(k for k in groups if k not in KIND_TITLES)
    out = ["<h1>Methods</h1><p>Every algorithm, loader and sample data set of the loaded plugins, "
           "with its parameters (the same constraints the settings form and the command line use).</p>"]
    toc = []
    for kind in kinds:
        links = ", ".join(f"<a href='#algorithm-{esc(aid)}'>{esc(cls.name or aid)}</a>" for aid, cls in groups[kind])
        toc.append(f"<li><a href='#kind-{esc(kind)}'>{esc(KIND_TITLES.get(kind, kind.capitalize()))}</a>: {links}</li>")
    toc.append("<li><a href='#loaders'>File loaders</a></li><li><a href='#samples'>Sample data sets</a></li>")
    out.append(f"<ul>{''.join(toc)}</ul>")
    for kind in kinds:
        out.append(f"<a name='kind-{esc(kind)}'></a><h2>{esc(KIND_TITLES.get(kind, kind.capitalize()))}</h2>")
        for aid, cls in groups[kind]:
            name = getattr(cls, "name", "") or aid
            out.append(f"<a name='algorithm-{esc(aid)}'></a><h3>{esc(name)} <small>(<code>{esc(aid)}</code>)</small></h3>")
            help_text = getattr(cls, "help", "") or ""
            if help_text:
                out.append(f"<p>{esc(help_text)}</p>")
            summary = _docstring_summary(cls)
            if summary and summary != help_text:
                out.append(f"<p><i>{esc(summary)}</i></p>")
            out.append(_params_table(getattr(cls, "params", ())))
    out.append("<a name='loaders'></a><h2>File loaders</h2>")
    for lid, loader in sorted(host.loaders.items()):
        exts = ", ".join(getattr(loader, "extensions", ()) or ()) or "a folder"
        doc = _docstring_summary(type(loader))
        out.append(f"<a name='loader-{esc(lid)}'></a><h3>{esc(loader.name or lid)} <small>(<code>{esc(lid)}</code>)</small></h3>"
                   f"<p>Reads: {esc(exts)}.{(' ' + esc(doc)) if doc else ''}</p>"
                   + _params_table(getattr(loader, "options", ())))
    out.append("<a name='samples'></a><h2>Sample data sets</h2>")
    for sid, sample in sorted(host.samples.items()):
        out.append(f"<a name='sample-{esc(sid)}'></a><h3>{esc(sample.name or sid)} <small>(<code>sample:{esc(sid)}</code>)"
                   f"</small></h3><p>{esc(getattr(sample, 'description', '') or '')}</p>"
                   + _params_table(getattr(sample, "options", ())))
    return "\n".join(out)


class MethodsDialog(QDialog):
    def __init__(self, window):
        super().__init__(window)
        self.setWindowTitle("Methods")
        self.browser = QTextBrowser()
        self.browser.setObjectName("methods_browser")
        self.browser.setOpenLinks(True)
        self.browser.setHtml(methods_html(window.host))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.browser)
        lay.addWidget(buttons)
        self.resize(760, 640)

    def show_method(self, algorithm_id: str) -> None:
        self.browser.scrollToAnchor(f"algorithm-{algorithm_id}")


# -- installation -------------------------------------------------------------------------------
def open_shortcuts(window) -> ShortcutsDialog:
    dialog = window.shortcuts_dialog = ShortcutsDialog(window)
    if window.dialogs:
        dialog.show()
    return dialog


def open_methods(window, algorithm_id: str | None = None) -> MethodsDialog:
    dialog = window.methods_dialog = MethodsDialog(window)
    if window.dialogs:
        dialog.show()
    if algorithm_id:
        dialog.show_method(algorithm_id)
    return dialog


def zoom_to_fit(window) -> None:
    view = window.map_view
    if view is not None:
        view.fit_to_points()


def install_help_pages(window) -> None:
    """Help ▸ Keyboard shortcuts, Help ▸ Methods and View ▸ Zoom to fit (Ctrl+0). Idempotent."""
    if window.shortcuts_action is not None:
        return
    help_menu = window.menus["help"]
    first = help_menu.actions()[0] if help_menu.actions() else None
    shortcuts = window.shortcuts_action = QAction("&Keyboard shortcuts", window)
    shortcuts.setObjectName("action_shortcuts")
    shortcuts.triggered.connect(lambda: open_shortcuts(window))
    methods = window.methods_action = QAction("&Methods", window, shortcut=QKeySequence.StandardKey.HelpContents)
    methods.setObjectName("action_methods")
    methods.triggered.connect(lambda: open_methods(window, window.algorithm_panel.algorithm_id))
    for action in (methods, shortcuts):
        help_menu.insertAction(first, action)
    if first is not None:
        help_menu.insertSeparator(first)
    zoom = window.zoom_action = QAction("&Zoom to fit", window, shortcut=QKeySequence("Ctrl+0"))
    zoom.setObjectName("action_zoom_to_fit")
    zoom.setToolTip("Show every point of the map.")
    zoom.triggered.connect(lambda: zoom_to_fit(window))
    view_menu = window.menus["view"]
    first_view = view_menu.actions()[0] if view_menu.actions() else None
    view_menu.insertAction(first_view, zoom)
    if first_view is not None:
        view_menu.insertSeparator(first_view)
