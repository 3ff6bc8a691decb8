"""Session commands on the window's Edit ▸ Undo stack.

The analysis state changes through Qt-free commands (:mod:`manifold_studio.session.commands`,
done by ``session.execute``). Each one done is announced (``SessionEvent("command")``); here it
is wrapped in a QUndoCommand on ``window.undo_stack`` whose undo / redo call the session's
``undo_command`` / ``redo_command``, so the window's history and the model's agree and the views
follow through the session's events as for any other change. Commands the session merges
(a caption's keystrokes) merge on the stack too (``id`` / ``mergeWith``).
"""
from __future__ import annotations

from manifold_studio.gui.undo import _SessionCommand, undo_stack
from manifold_studio.session.commands import Command

#: the QUndoCommand id of session commands that merge (Command.merge)
MERGE_ID = 3030


class SessionUndoCommand(_SessionCommand):
    """A session command already done (pushed after it): the first redo does nothing."""

    def __init__(self, window, command):
        super().__init__(window, command.text)
        self.command = command
        self.done = True

    def id(self) -> int:  # noqa: A003 - Qt's name: commands that can take in the next one
        return MERGE_ID if type(self.command).merge is not Command.merge else -1

    def mergeWith(self, other) -> bool:  # noqa: N802 - Qt's name
        """The session merged ``other`` into this command (a caption typed): one undo step."""
        return isinstance(other, SessionUndoCommand) and self.command.merge(other.command)

    def _redo(self) -> None:
        if self.done:
            self.done = False
            return
        self.window.session.redo_command(self.command)

    def _undo(self) -> None:
        self.window.session.undo_command(self.command)


def install_session_undo(window) -> None:
    """Put every session command done in ``window`` on its undo stack (once per window)."""
    if window.session_undo:
        return
    window.session_undo = True

    def on_event(event) -> None:
        if event.kind == "command" and event.command is not None:
            undo_stack(window).push(SessionUndoCommand(window, event.command))

    window.bridge.event.connect(on_event)
