"""Short garbage collections in the window's process (gui/gc_pauses.py): what survived a full
collection is frozen, so the next one walks only newer objects; collect_all still finds cycles
among the frozen ones. Counts of objects, not timings."""
from __future__ import annotations

import gc
import weakref

import pytest

pytest.importorskip("PySide6")

from manifold_studio.gui.gc_pauses import FrozenCollector  # noqa: E402


class _Node:
    def __init__(self):
        self.other = self


@pytest.fixture
def collector():
    c = FrozenCollector()
    yield c
    c.uninstall()


def test_a_full_collection_leaves_only_newer_objects_to_walk(collector):
    collector.install()
    frozen = gc.get_freeze_count()
    assert frozen > 1000 and collector.collections == 1
    young = [[i] for i in range(5000)]   # tracked containers made after the install
    assert len(gc.get_objects()) >= 5000
    gc.collect()   # a full collection (the callback runs after it, as after an automatic one)
    assert collector.freezes == 1
    assert gc.get_freeze_count() >= frozen + 5000   # the survivors are frozen now
    assert len(gc.get_objects()) < 100              # the next full collection walks almost nothing
    del young


def test_collect_all_frees_cycles_that_were_frozen(collector):
    collector.install()
    node = _Node()
    ref = weakref.ref(node)
    gc.collect()          # node survives it (still referenced) and is frozen
    del node
    gc.collect()          # frozen: not walked, the cycle stays
    assert ref() is not None
    assert collector.collect_all() >= 1
    assert ref() is None and gc.get_freeze_count() > 0


def test_freeze_new_skips_what_a_run_left(collector):
    collector.install()
    frozen = gc.get_freeze_count()
    kept = [[i] for i in range(3000)]   # e.g. the modules a first fit imported
    collector.freeze_new()
    assert gc.get_freeze_count() >= frozen + 3000 and len(gc.get_objects()) < 100
    del kept


def test_uninstall_gives_every_object_back(collector):
    collector.install()
    collector.uninstall()
    assert gc.get_freeze_count() == 0 and collector._after_collection not in gc.callbacks
