"""Commands: the changes of the analysis state that undo records (Qt-free).

A command changes the :class:`~manifold_studio.session.model.Session` through
:meth:`~manifold_studio.session.state.AnalysisState.execute`, which runs its :meth:`Command.redo`,
keeps it for :meth:`~manifold_studio.session.state.AnalysisState.undo` and tells observers
(``SessionEvent("command", command=...)``); the window puts the same object on its Edit ▸ Undo
stack. A command holds what it needs to go both ways: the state before and the state after.

- :class:`SetChain`: the current preparation chain (what the next run fits).
- :class:`SetCut`: a run's cut (a dendrogram cut or a chosen number of clusters): its
  ``cut_labels`` and ``meta["cut"] = {"note", "height", "n_clusters"}``.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.errors import DataError


def normal_chain(chain) -> list[tuple[str, dict]]:
    """``[(step id, {params}), ...]`` from any sequence of (id, params) pairs (params copied)."""
    return [(str(step_id), dict(params or {})) for step_id, params in (chain or ())]


def require_dataset(session, run) -> None:
    """Refuse to cut ``run`` when its data set was removed (its labels are left as they are)."""
    if run.dataset_name not in session.datasets:
        raise DataError(f"Run #{run.id} was computed on data set '{run.dataset_name}', which was removed: "
                        "bring it back (Edit ▸ Undo, or load it again) before cutting; the run's labels "
                        "are unchanged.")


def same_partition(a, b) -> bool:
    """``a`` and ``b`` group the points alike (whatever the cluster numbers)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    pairs = np.unique(np.stack([np.unique(a, return_inverse=True)[1].ravel(),
                                np.unique(b, return_inverse=True)[1].ravel()]), axis=1).shape[1]
    return pairs == np.unique(a).size == np.unique(b).size


class Command:
    """A reversible change of the session; ``text`` says what it does ("Add standardize")."""

    text = ""

    def redo(self, session) -> None:
        raise NotImplementedError

    def undo(self, session) -> None:
        raise NotImplementedError

    def merge(self, other: "Command") -> bool:
        """Take in ``other``, done just after this one, and return True (one step of undo for
        both, e.g. the keystrokes of a caption); False: they stay two commands."""
        return False


class SetChain(Command):
    """Make ``chain`` the current preparation chain."""

    def __init__(self, session, chain, text: str = ""):
        self.before = normal_chain(session.chain)
        self.after = normal_chain(chain)
        self.text = text or "Change the preparation chain"

    def _set(self, session, chain) -> None:
        session._chain = normal_chain(chain)
        session.notify_kind("chain_changed")

    def redo(self, session) -> None:
        self._set(session, self.after)

    def undo(self, session) -> None:
        self._set(session, self.before)


class SetCut(Command):
    """Give run ``run_id`` the partition ``labels`` (None: back to its own labels) described by
    ``cut`` (``note``, ``height``, ``n_clusters``)."""

    def __init__(self, session, run_id: int, labels, cut: dict | None, text: str = ""):
        run = session.run_by_id(run_id)
        require_dataset(session, run)
        if labels is not None:
            labels = np.asarray(labels)
            own = run.labels
            if own is None:
                raise DataError(f"Run #{run_id} ({run.algorithm_id}) has no clusters to cut.")
            if labels.shape != own.shape:
                raise DataError(f"A cut of run #{run_id} needs {own.shape[0]:,} labels (one per point), "
                                f"got {labels.shape[0] if labels.ndim else 0:,}.")
        self.run_id = run_id
        self.before = (run.cut_labels, dict(run.meta["cut"]) if isinstance(run.meta.get("cut"), dict) else None)
        self.after = (labels, None if labels is None else {"note": "", **(cut or {})})
        self.text = text or (f"Cut run #{run_id} into {self.after[1].get('n_clusters')} clusters"
                             if labels is not None else f"Restore run #{run_id}'s own clusters")

    def _set(self, session, state) -> None:
        run = session.run_by_id(self.run_id)
        labels, cut = state
        run.cut_labels = labels
        if cut is None:
            run.meta.pop("cut", None)
        else:
            run.meta["cut"] = dict(cut)
        session.notify_kind("cut_changed", run=run)
        session.run_changed(run.id)

    def redo(self, session) -> None:
        self._set(session, self.after)

    def undo(self, session) -> None:
        self._set(session, self.before)
