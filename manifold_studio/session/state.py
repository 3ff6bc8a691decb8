"""The analysis state a :class:`~manifold_studio.session.model.Session` owns beyond its data sets
and runs, and what every view reads from it (Qt-free):

- the current preparation chain (:attr:`AnalysisState.chain`, changed by :meth:`set_chain`),
  which the next run fits and the project saves;
- the commands that changed the state (:meth:`execute`, :meth:`undo`, :meth:`redo`);
- a run's cut (:meth:`cut`, :meth:`set_cut`): a dendrogram cut or a chosen number of clusters
  becomes the run's ``cut_labels`` and ``meta["cut"]``;
- the matrix a run was fitted on (:meth:`prepared_data`): the run's data pushed through its
  fitted preparation steps (without the final estimator), with a caption saying what it is.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms.pipeline import make_pipeline
from manifold_studio.analysis.cluster_tasks import cut_labels, n_clusters_at
from manifold_studio.errors import DataError, ManifoldStudioError
from manifold_studio.analysis.chain import chain_text, dataset_columns
from manifold_studio.session.commands import (
    Command,
    SetChain,
    SetCut,
    normal_chain,
    require_dataset,
    same_partition,
)
from manifold_studio.session.records import SessionEvent

#: commands kept for undo
UNDO_DEPTH = 50


@dataclass
class PreparedData:
    """The matrix a run was fitted on: ``X`` (rows = the run's points), its ``columns`` and a
    ``caption`` saying what it is ("standardize, 13 columns", "raw data, 4 columns", "the map of
    run #2, 2 columns")."""

    X: np.ndarray
    columns: list[str]
    caption: str
    #: the preparation chain it went through (empty: the raw data or an earlier run's map)
    chain: list

    def __iter__(self):  # X, columns, caption = session.prepared_data(run_id)
        return iter((self.X, self.columns, self.caption))


class AnalysisState:
    """Mixed into :class:`~manifold_studio.session.model.Session` (which provides ``runs``,
    ``datasets``, ``_notify``, ``run_by_id``, ``dataset``, ``training_data``, ``run_changed``)."""

    def _init_state(self) -> None:
        self._chain: list[tuple[str, dict]] = []
        self._done: list[Command] = []
        self._undone: list[Command] = []
        self._prepared: dict[int, tuple] = {}  # run id -> (key, PreparedData)
        #: the window sets it: a chain with a third-party preparation step is never applied in
        #: this process to recompute prepared data for a view (its fits run in a worker process)
        self.isolate_third_party = False

    def _refuse_third_party(self, chain, what: str) -> None:
        """Raise when ``isolate_third_party`` is set and ``chain`` holds a third-party step."""
        if not self.isolate_third_party:
            return
        foreign = [step for step, _ in chain if self.host.is_third_party(step)]
        if foreign:
            raise DataError(f"{what} goes through the third-party preparation step '{foreign[0]}', which runs "
                            "in a worker process only, never in the window's: this view is not drawn on the "
                            "prepared data (fits, Test & Score and exports still use it).")

    def notify_kind(self, kind: str, run=None) -> None:
        self._notify(SessionEvent(kind, run=run, dataset=run.dataset_name if run is not None else None))

    # -- commands -------------------------------------------------------------------------------
    def execute(self, command: Command) -> Command:
        """Do ``command`` and keep it for :meth:`undo`; observers get ``SessionEvent("command")``
        (the window puts it on its Edit ▸ Undo stack)."""
        command.redo(self)
        if not (self._done and not self._undone and self._done[-1].merge(command)):
            self._done.append(command)
        del self._done[:-UNDO_DEPTH]
        self._undone.clear()
        self._notify(SessionEvent("command", command=command))
        return command

    def undo_command(self, command: Command) -> None:
        """Undo ``command`` (the window's undo stack calls this in its own order)."""
        command.undo(self)
        if command in self._done:
            self._done.remove(command)
        self._undone.append(command)

    def redo_command(self, command: Command) -> None:
        command.redo(self)
        if command in self._undone:
            self._undone.remove(command)
        self._done.append(command)

    def undo(self) -> Command | None:
        """Undo the latest command (None: nothing to undo)."""
        if not self._done:
            return None
        command = self._done[-1]
        self.undo_command(command)
        return command

    def redo(self) -> Command | None:
        if not self._undone:
            return None
        command = self._undone[-1]
        self.redo_command(command)
        return command

    # -- the preparation chain ------------------------------------------------------------------
    @property
    def chain(self) -> list[tuple[str, dict]]:
        """The current preparation chain: ``[(step id, {params}), ...]`` (a copy)."""
        return normal_chain(self._chain)

    def set_chain(self, chain, text: str = "") -> Command | None:
        """Make ``chain`` the current preparation chain (a command; None when it is the same)."""
        if normal_chain(chain) == self._chain:
            return None
        return self.execute(SetChain(self, chain, text))

    def restore_chain(self, chain) -> None:
        """Set the chain without a command: a project being opened, whose state starts a new
        history (the commands done before it are forgotten)."""
        self._chain = normal_chain(chain)
        self._done.clear()
        self._undone.clear()
        self.notify_kind("chain_changed")

    def missing_steps(self, chain=None) -> list[str]:
        """Steps of ``chain`` (default: the current one) that the plugin host does not provide."""
        installed = self.host.preprocessors
        return [step for step, _ in (self._chain if chain is None else chain) if step not in installed]

    # -- cuts ------------------------------------------------------------------------------------
    def set_cut(self, run_id: int, labels, note: str = "", **cut) -> Command | None:
        """Give run ``run_id`` the partition ``labels`` (None: its own labels again); ``note`` and
        ``cut`` (``height``, ``n_clusters``) become ``run.meta["cut"]``. None (no command) when
        the run already shows those labels."""
        run = self.run_by_id(run_id)
        require_dataset(self, run)
        if labels is None and run.cut_labels is None:
            return None
        if labels is not None:
            labels = np.asarray(labels)
            cut.setdefault("n_clusters", int(np.unique(labels).size))
            if run.cut_labels is not None and np.array_equal(labels, run.cut_labels) \
                    and run.meta.get("cut", {}).get("height") == cut.get("height"):
                return None
        return self.execute(SetCut(self, run_id, labels, {"note": note, **cut} if labels is not None else None))

    def cut(self, run_id: int, *, n_clusters: int | None = None, height: float | None = None) -> Command | None:
        """Cut run ``run_id``'s tree (its ``linkage_matrix_``) into ``n_clusters`` clusters or at
        ``height``: the run's labels become the cut's (no refit). A cut giving the run's own
        partition brings its own labels back (no cut)."""
        run = self.run_by_id(run_id)
        require_dataset(self, run)
        Z = getattr(run.estimator, "linkage_matrix_", None) if run.estimator is not None else None
        if Z is None:
            raise DataError(f"Run #{run_id} ({run.algorithm_id}) has no tree to cut: only a hierarchical "
                            "clustering can be cut without a refit; run the method again with another k.")
        Z = np.asarray(Z, dtype=float)
        if (n_clusters is None) == (height is None):
            raise DataError("Cut a tree either into n_clusters clusters or at a height, not both.")
        if height is None:
            n_leaves = Z.shape[0] + 1
            if not (isinstance(n_clusters, (int, np.integer)) and 1 <= n_clusters <= n_leaves):
                raise DataError(f"n_clusters must be a whole number from 1 to {n_leaves} for run #{run_id}; "
                                f"got {n_clusters!r}.")
            height = cut_height_for(Z, int(n_clusters))
        height = float(height)
        if not np.isfinite(height) or height < 0:
            raise DataError(f"A cut height must be a number ≥ 0; got {height!r}.")
        leaves = getattr(run.estimator, "linkage_leaves_", "points")
        labels = cut_labels(Z, height, leaves=leaves, leaf_labels=run.labels)
        k = int(np.unique(labels).size) if leaves == "clusters" else n_clusters_at(Z, height)
        if run.labels is not None and same_partition(labels, run.labels):  # the run's own clusters
            return self.set_cut(run_id, None)
        return self.set_cut(run_id, labels, f"dendrogram cut at {height:.4g} ({k} clusters)",
                            height=height, n_clusters=k)

    # -- what a run was (or the next run will be) fitted on ------------------------------------------
    def prepared_dataset(self, dataset_name: str | None = None, chain=None) -> PreparedData:
        """Data set ``dataset_name`` (default: the current one) through ``chain`` (default: the
        current chain) fitted on all its rows: what the next run fits on (Choose k computes on it)."""
        ds = self.dataset(dataset_name)
        chain = normal_chain(self._chain if chain is None else chain)
        self._refuse_third_party(chain, "The preparation chain")
        return _prepare_all(chain, ds)

    def prepared_data(self, run_id: int) -> PreparedData:
        """The matrix run ``run_id`` was fitted on, one row per point of the run: its data set's
        rows through its fitted preparation steps (without the final estimator), or the earlier
        run's map it clustered. Recomputed from the data set and the run's fitted pipeline (the
        chain is refitted on the run's rows when the run has no fitted model, e.g. a project saved
        without it). Raises a clear DataError when the data set was removed."""
        run = self.run_by_id(run_id)
        if run.source_run is not None:
            src = self.run_by_id(run.source_run)
            if src.embedding is None:
                raise DataError(f"Run #{run.source_run}, whose map run #{run_id} clustered, has no embedding.")
            X = np.asarray(src.embedding, dtype=float).reshape(len(src.embedding), -1)
            cols = [f"component {j + 1}" for j in range(X.shape[1])]
            return PreparedData(X, cols, f"the map of run #{src.id}, {X.shape[1]} columns", [])
        if run.dataset_name not in self.datasets:
            raise DataError(f"Run #{run_id}'s data set '{run.dataset_name}' was removed: its prepared data "
                            "cannot be recomputed; bring the data set back (Edit ▸ Undo, or load it again).")
        ds = self.dataset(run.dataset_name)
        chain = normal_chain(run.meta.get("chain") if isinstance(run.meta, dict) else None)
        self._refuse_third_party(chain, f"Run #{run_id}'s preparation chain")
        for gone in [i for i in self._prepared if i not in self.runs]:  # removed runs
            del self._prepared[gone]
        key = (ds.X, run.estimator, run.rows, run.meta.get("chain"))  # recomputed when one is replaced
        hit = self._prepared.get(run.id)
        if hit is not None and all(a is b for a, b in zip(hit[0], key)):
            return hit[1]
        X, _ = self.training_data(run)
        names = list(ds.feature_names or [f"x{j}" for j in range(ds.n_features)])
        if not chain:
            what = "the distance matrix" if ds.distance_matrix else "raw data"
            result = PreparedData(X, names, f"{what}, {X.shape[1]} columns", [])
        else:
            pipe = run.estimator if getattr(run.estimator, "is_fitted", False) \
                and hasattr(run.estimator, "prepare") else None
            try:
                if pipe is None:  # no fitted model: refit the chain alone on the run's rows
                    pipe = _chain_only(chain, ds)
                    pipe.fit(X)
                prepared = np.asarray(pipe.prepare(X), dtype=float)
            except ManifoldStudioError as exc:
                raise DataError(f"Run #{run_id}'s preparation ({chain_text(chain, brief=True)}) cannot be "
                                f"recomputed: {exc}") from None
            cols = list(getattr(pipe, "columns_out_", None) or [f"x{j}" for j in range(prepared.shape[1])])
            result = PreparedData(prepared, cols, f"{chain_text(chain, brief=True)}, {len(cols)} columns", chain)
        self._prepared[run.id] = (key, result)
        return result


def _prepare_all(chain, ds) -> PreparedData:
    """Data set ``ds`` through ``chain`` fitted on all its rows."""
    if not chain:
        names = list(ds.feature_names or [f"x{j}" for j in range(ds.n_features)])
        return PreparedData(ds.X, names, f"raw data, {len(names)} columns", [])
    try:
        pipe = _chain_only(chain, ds).fit(ds.X)
        X = np.asarray(pipe.prepare(ds.X), dtype=float)
    except ManifoldStudioError as exc:
        raise DataError(f"The preparation chain ({chain_text(chain, brief=True)}) cannot run on "
                        f"'{ds.name}': {exc}") from None
    cols = list(pipe.columns_out_)
    return PreparedData(X, cols, f"{chain_text(chain, brief=True)}, {len(cols)} columns", chain)


def _chain_only(chain, ds):
    """A pipeline of the preparation steps alone, bound to the columns of ``ds``."""
    pipe = make_pipeline(*chain)
    names, cats = dataset_columns(ds)
    return pipe.bind_columns(names, cats)


def cut_height_for(Z: np.ndarray, k: int) -> float:
    """A cut height of linkage ``Z`` that gives ``k`` clusters: midway between the merge heights
    around it."""
    hs = np.sort(np.asarray(Z, dtype=float)[:, 2])
    n_leaves = hs.size + 1
    k = int(min(max(k, 1), n_leaves))
    if k == 1:
        return float(hs[-1] * 1.05 + 1e-12)
    upper = hs[n_leaves - k]
    lower = hs[n_leaves - k - 1] if n_leaves - k - 1 >= 0 else 0.0
    return float((lower + upper) / 2.0)
