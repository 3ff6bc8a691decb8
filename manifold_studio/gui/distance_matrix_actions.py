"""Distance matrices in the window: *File ▸ Open distance matrix…* (also the import dialog's "This
file is a distance matrix" box), and, while the current data set is a distance matrix fitted as
such (not a map of it: "Fit on" the data set), the algorithm tree offers only the methods that take
distances — the others are greyed out, their tooltip saying why and which ones can — and the
form's ``metric`` (``dissimilarity`` for MDS) is set to 'precomputed' and locked. Fitting goes the
usual way (Run: ``window.run_algorithm`` → the session, which sets the same parameter); reading
and checking the file is :mod:`manifold_studio.distance_matrix`, on a worker thread.
"""
from __future__ import annotations


from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog

from manifold_studio.gui.param_form import tooltip_for
from manifold_studio.session.distance_methods import (
    PRECOMPUTED, distance_methods, distance_param, distance_refusal,
)
from manifold_studio.distance_matrix import DistanceMatrixLoader

FORMATS = "*.csv *.tsv *.txt *.tab *.dat *.xlsx *.npy *.npz *.mtx *.mtx.gz"


class DistanceMatrices:
    def __init__(self, window):
        self.window = window
        self.action = QAction("Open &distance matrix…", window)
        self.action.setObjectName("open_distance_matrix_action")
        self.action.setStatusTip("Read a square matrix of distances between items (CSV/TSV, Excel, .npy, .npz, "
                                 ".mtx) and fit it with the methods that take distances.")
        self.action.triggered.connect(lambda: self.choose_file())
        menu = window.menus["file"]
        first = menu.actions()
        menu.insertAction(first[1] if len(first) > 1 else None, self.action)  # under "Open data file…"
        self._locked: str | None = None   # the form field locked to 'precomputed'
        panel = window.algorithm_panel
        panel.algorithmChanged.connect(lambda _id: self.lock_form())
        panel.form.changed.connect(self.lock_form)
        window.bridge.datasetsChanged.connect(self.update)
        selector = window.input_selector
        if selector is not None:
            selector.combo.currentIndexChanged.connect(lambda _i: self.update())
        self.update()

    # -- opening ----------------------------------------------------------------------------
    def choose_file(self):
        path, _ = QFileDialog.getOpenFileName(self.window, "Open a distance matrix", "",
                                              f"Distance matrices ({FORMATS});;All files (*)")
        return self.open_file(path) if path else None

    def open_file(self, path, options: dict | None = None, ask: bool | None = None):
        """Read ``path`` as a distance matrix on a worker thread (the window's open path, the
        loader's options asked in its dialog when the window asks for them); the Job, or None."""
        return self.window.open_file(path, options, ask, distance_matrix=True)

    def load(self, path, options: dict | None, inner):
        """Load ``path`` with ``inner`` (its loader) as a distance matrix."""
        options = {k: v for k, v in (options or {}).items() if k != "missing"}   # gaps are always reported
        return self.window.load_source(str(path), options, DistanceMatrixLoader(inner))

    # -- the algorithm panel ------------------------------------------------------------------
    def active_dataset(self):
        """The current data set when it is a distance matrix that the next run fits (None otherwise)."""
        ds = self.window.session.current_dataset
        selector = self.window.input_selector
        if ds is None or not ds.distance_matrix or (selector is not None and selector.source_run() is not None):
            return None
        return ds

    def blocker(self, algorithm_id: str) -> str:
        """Why ``algorithm_id`` cannot fit the current data set ("" when it can)."""
        ds = self.active_dataset()
        cls = self.window.host.algorithms.get(algorithm_id)
        if ds is None or cls is None:
            return ""
        if self.window.preparation_chain():
            return (f"'{ds.name}' is a distance matrix: preparation steps transform feature columns and do not "
                    "apply to it; remove them from the Preparation dock.")
        return distance_refusal(cls, self.window.host.algorithms, ds.name)

    def update(self) -> None:
        panel, algos = self.window.algorithm_panel, self.window.host.algorithms
        ds = self.active_dataset()
        reasons = {} if ds is None else {a: distance_refusal(cls, algos, ds.name)
                                         for a, cls in algos.items() if not distance_param(cls)}
        panel.set_unavailable(reasons)
        if ds is not None and panel.algorithm_id in reasons:
            able = distance_methods(algos)
            pick = "isomap" if "isomap" in able else (able[0] if able else "")
            if pick:
                panel.select_algorithm(pick)
                self.window.show_status(f"'{ds.name}' is a distance matrix: {algos[pick].name} selected; the methods "
                                        f"that take distances are {', '.join(able)}.")
        self.lock_form()

    def lock_form(self) -> None:
        """Set and lock the form's distance parameter to 'precomputed' for a distance matrix;
        unlock it (back to its default) otherwise."""
        panel = self.window.algorithm_panel
        form, cls = panel.form, self.window.host.algorithms.get(panel.algorithm_id)
        name = distance_param(cls) if cls is not None else None
        if name is None or name not in form.editors:
            self._locked = None
            return
        editor, ds = form.editor(name), self.active_dataset()
        defaults = {p.name: p.default for p in form.params}
        if ds is not None:
            if editor.value() != PRECOMPUTED:
                editor.set_value(PRECOMPUTED)
                for key, value in getattr(cls, "distance_defaults", {}).items():   # e.g. t-SNE's init='random'
                    if key in form.editors and form.editor(key).value() == defaults.get(key):
                        form.editor(key).set_value(value)
            editor.setEnabled(False)
            tip = f"Locked to 'precomputed': '{ds.name}' is a distance matrix."
            editor.setToolTip(tip)
            editor.input_widget.setToolTip(tip)
            self._locked = name
        elif self._locked == name and not editor.isEnabled():
            param = next(p for p in form.params if p.name == name)
            editor.setEnabled(True)
            editor.set_value(param.default)
            for key, value in getattr(cls, "distance_defaults", {}).items():
                if key in form.editors and form.editor(key).value() == value:
                    form.editor(key).set_value(defaults.get(key))
            editor.setToolTip(tooltip_for(param))
            editor.input_widget.setToolTip(tooltip_for(param))
            self._locked = None


def distance_blocker(window, algorithm_id: str) -> str:
    """Why Run cannot fit ``algorithm_id`` on the current distance matrix ("" when it can)."""
    tools = window.distance_matrices
    return tools.blocker(algorithm_id) if tools is not None else ""


def install_distance_matrices(window) -> DistanceMatrices:
    window.distance_matrices = DistanceMatrices(window)
    return window.distance_matrices
