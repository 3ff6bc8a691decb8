"""Project files: a whole session round-trips without pickle, atomically, with clear errors."""
import numpy as np
import pytest

from manifold_studio.files.model_file import ModelFileError
from manifold_studio.project.project_file import load_project, save_project
from manifold_studio.session.records import DONE, FAILED
from manifold_studio.session.model import Session


@pytest.fixture
def session():
    s = Session()
    s.load("sample:iris")
    s.load("sample:swiss_roll", n_samples=300)
    s.set_current_dataset("Iris")
    pca = s.run("pca", n_components=2)
    s.extend(pca.id, rows=np.arange(10))
    s.run("kmeans", n_clusters=3, source_run=pca.id, random_state=0)
    with pytest.raises(Exception):
        s.run("pca", n_components=9)  # a failed run is part of the history too
    s.run("isomap", "Swiss roll", n_neighbors=10, rows=np.arange(0, 300, 2))
    return s


def test_round_trip(session, tmp_path):
    path = save_project(session, tmp_path / "study.msproj", view_settings={"colour": "labels"})
    loaded, views = load_project(path)
    assert views == {"colour": "labels"}
    assert list(loaded.datasets) == list(session.datasets)
    for name, ds in session.datasets.items():
        other = loaded.datasets[name]
        np.testing.assert_array_equal(other.X, ds.X)
        np.testing.assert_array_equal(other.labels.astype(str), np.asarray(ds.labels).astype(str))
        assert other.feature_names == ds.feature_names and other.source == ds.source
    assert loaded.current_dataset_name == "Iris"
    assert [r.status for r in loaded.runs.values()] == [r.status for r in session.runs.values()]
    assert FAILED in [r.status for r in loaded.runs.values()]
    for run_id, run in session.runs.items():
        other = loaded.runs[run_id]
        assert other.params == run.params and other.source_run == run.source_run
        if run.status != DONE:
            assert other.error == run.error
            continue
        for attr in ("embedding", "labels", "rows"):
            a, b = getattr(run, attr), getattr(other, attr)
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(b, a)
        # the fitted model is restored and extends exactly like the original
        X, _ = session.training_data(run)
        np.testing.assert_allclose(np.asarray(other.estimator.extend(X[:5]), dtype=float),
                                   np.asarray(run.estimator.extend(X[:5]), dtype=float))
    pca = loaded.runs[1]
    assert len(pca.extensions) == 1 and pca.extensions[0].values.shape == (10, 2)
    # new runs get fresh ids
    new = loaded.run("pca", n_components=1)
    assert new.id == max(session.runs) + 1


def test_saving_is_atomic_and_keeps_the_old_file_on_failure(session, tmp_path, monkeypatch):
    path = save_project(session, tmp_path / "study.msproj")
    before = path.read_bytes()
    import manifold_studio.files.model_file as mio

    def broken_savez(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(mio.np, "savez_compressed", broken_savez)
    with pytest.raises(OSError, match="disk full"):
        save_project(session, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["study.msproj"]  # no temporary left behind


def test_missing_plugin_keeps_results(session, tmp_path, fresh_host):
    path = save_project(session, tmp_path / "study.msproj")
    del fresh_host.algorithms["kmeans"]
    loaded, _ = load_project(path, host=fresh_host)
    km = [r for r in loaded.runs.values() if r.algorithm_id == "kmeans"][0]
    assert km.estimator is None and km.labels.shape == (150,)
    assert any("kmeans" in e.message and "cannot be restored" in e.message for e in loaded.history)


def test_bad_files_get_clear_messages(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        load_project(tmp_path / "nope.msproj")
    text = tmp_path / "notes.msproj"
    text.write_text("hello")
    with pytest.raises(ModelFileError, match="notes.msproj is not a Manifold Studio project file"):
        load_project(text)
    data = tmp_path / "data.npz"
    np.savez(data, X=np.ones((3, 2)))
    with pytest.raises(ModelFileError, match="no project description"):
        load_project(data)


def test_load_into_a_live_session_replaces_contents_and_notifies(session, tmp_path):
    path = save_project(session, tmp_path / "study.msproj")
    live = Session()
    live.load("sample:moons")
    live.run("pca", n_components=1)
    events = []
    live.subscribe(lambda ev: events.append(ev.kind))
    from manifold_studio.project.project_file import load_project_into

    load_project_into(live, path)
    assert list(live.datasets) == list(session.datasets)
    assert sorted(live.runs) == sorted(session.runs)
    assert {"run_removed", "dataset_removed", "dataset_added", "run_added"} <= set(events)
    assert live.run("pca", n_components=1).id == max(session.runs) + 1


def test_load_into_keeps_everything_when_the_file_is_bad(tmp_path):
    live = Session()
    live.load("sample:moons")
    live.run("pca", n_components=1)
    bad = tmp_path / "bad.msproj"
    bad.write_bytes(b"PK\x03\x04 truncated")
    from manifold_studio.project.project_file import load_project_into

    with pytest.raises(ModelFileError, match="bad.msproj"):
        load_project_into(live, bad)
    assert list(live.datasets) == ["Two moons"] and len(live.runs) == 1
