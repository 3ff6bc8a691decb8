"""Commands on what the analyst looks at (Qt-free): the selection, view settings and the report.

Done by :meth:`~manifold_studio.session.state.AnalysisState.execute` like every command, so undo
records them (:mod:`manifold_studio.session.commands` holds the chain and the cut):

- :class:`SetSelection`: the selected rows of one or more data sets (a boolean mask each, or
  none); observers get ``SessionEvent("selection_changed", dataset=name)`` per data set. With
  ``saved=True`` it keeps a named selection instead (``(data set, name)`` keys: Explain
  selection's "selection B"), announced as ``"saved_selection_changed"``.
- :class:`SetViewSetting`: one setting of one view (``("map", "colour")``, ``("map", "point_size")``,
  ...); observers get ``SessionEvent("view_setting_changed", setting=(view, key))``.
- :class:`AddReportItem`, :class:`RemoveReportItem`, :class:`MoveReportItem`,
  :class:`SetReportCaption`: the report's items; observers get ``SessionEvent("report_changed")``.
  Typing a caption is one command per item however many keystrokes it takes (:meth:`Command.merge`).
"""
from __future__ import annotations

import weakref

import numpy as np

from manifold_studio.session.commands import Command

#: a view setting that was not set before a command
UNSET = object()


def _packed(entry):
    """(weak reference to the data set, mask) kept for undo as (reference, bits, n): 1/8 of the memory."""
    return None if entry is None else (entry[0], np.packbits(entry[1]), entry[1].size)


class SetSelection(Command):
    """Make ``changes`` (data set name -> boolean mask, or None for nothing selected) the
    selection of those data sets."""

    def __init__(self, session, changes: dict, text: str = "", saved: bool = False):
        self.saved = saved
        store = self._store(session)
        self.before = {key: _packed(store.get(key)) for key in changes}
        self.after = {key: None if mask is None else _packed((weakref.ref(session.datasets[key[0] if saved else key]), mask))
                      for key, mask in changes.items()}
        self.text = text or "Change the selection"

    def _store(self, session) -> dict:
        return session._saved_selections if self.saved else session._selection

    def _set(self, session, state: dict) -> None:
        store = self._store(session)
        for key, entry in state.items():
            if entry is None:
                store.pop(key, None)
            else:
                ds, bits, n = entry
                store[key] = (ds, np.unpackbits(bits, count=n).astype(bool))
        for key in state:
            session.notify_selection(key[0] if self.saved else key, saved=self.saved)

    def redo(self, session) -> None:
        self._set(session, self.after)

    def undo(self, session) -> None:
        self._set(session, self.before)


class SetViewSetting(Command):
    """Give setting ``key`` of view ``view`` the value ``value`` (plain JSON data)."""

    def __init__(self, session, view: str, key: str, value, text: str = "", merge: bool = False):
        self.view, self.key = str(view), str(key)
        self.before = session._view_settings.get(self.view, {}).get(self.key, UNSET)
        self.after = value
        whose = self.view.replace("_", " ") + ("'" if self.view.endswith("s") else "'s")
        key_text = self.key.replace("_", " ")
        self.text = text or (f"Change the {whose} {key_text} settings" if isinstance(value, (dict, list))
                             else f"Set the {whose} {key_text} to {value!r}")
        #: a setting changed by a slider or by typing: the next change of it joins this command
        self.merging = merge

    def merge(self, other) -> bool:
        if self.merging and isinstance(other, SetViewSetting) and other.merging \
                and (other.view, other.key) == (self.view, self.key):
            self.after = other.after
            self.text = other.text
            return True
        return False

    def _set(self, session, value) -> None:
        settings = session._view_settings.setdefault(self.view, {})
        if value is UNSET:
            settings.pop(self.key, None)
        else:
            settings[self.key] = value
        session.notify_setting(self.view, self.key)

    def redo(self, session) -> None:
        self._set(session, self.after)

    def undo(self, session) -> None:
        self._set(session, self.before)


class AddReportItem(Command):
    """Append ``item`` to the report."""

    def __init__(self, session, item, text: str = ""):
        self.item = item
        self.text = text or f"Add '{item.title}' to the report"

    def redo(self, session) -> None:
        session.report.add(self.item)
        session.notify_report()

    def undo(self, session) -> None:
        session.report.items.remove(self.item)
        session.notify_report()


class RemoveReportItem(Command):
    """Remove the report's item ``index`` (undo puts it back where it was)."""

    def __init__(self, session, index: int, text: str = ""):
        self.index = session.report._index(index) % len(session.report)
        self.item = session.report.items[self.index]
        self.text = text or f"Remove '{self.item.title}' from the report"

    def redo(self, session) -> None:
        session.report.items.remove(self.item)
        session.notify_report()

    def undo(self, session) -> None:
        session.report.items.insert(self.index, self.item)
        session.notify_report()


class MoveReportItem(Command):
    """Move the report's item ``index`` to position ``to``."""

    def __init__(self, session, index: int, to: int, text: str = ""):
        n = len(session.report)
        self.index = session.report._index(index) % n
        self.to = max(0, min(int(to), n - 1))
        self.text = text or f"Move report item {self.index + 1} to position {self.to + 1}"

    def redo(self, session) -> None:
        session.report.move(self.index, self.to)
        session.notify_report()

    def undo(self, session) -> None:
        session.report.move(self.to, self.index)
        session.notify_report()


class SetReportCaption(Command):
    """Give the report's item ``index`` the caption ``caption``."""

    def __init__(self, session, index: int, caption: str, text: str = ""):
        self.item = session.report.items[session.report._index(index)]
        self.before, self.after = self.item.caption, str(caption)
        self.text = text or f"Edit the caption of '{self.item.title}'"

    def merge(self, other) -> bool:
        """Consecutive edits of the same item's caption are one command (typing a caption)."""
        if isinstance(other, SetReportCaption) and other.item is self.item:
            self.after = other.after
            return True
        return False

    def _set(self, session, caption: str) -> None:
        self.item.caption = caption
        session.notify_report()

    def redo(self, session) -> None:
        self._set(session, self.after)

    def undo(self, session) -> None:
        self._set(session, self.before)
