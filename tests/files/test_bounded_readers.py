"""Bounded readers (issue 18, item 3): every .npy / .npz / model / project reader checks the
declared shapes against the bytes really in the file and the load limit before allocating;
bombs and lying headers are refused naming the member and the sizes; running out of memory is a
DataError saying how much was asked for; FIFOs and devices are refused at once; an archive of
20,000 members gives a one-line message."""
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.errors import DataError
from manifold_studio.fileio import bounded
from manifold_studio.files.model_file import ModelFileError, load_model, save_model
from manifold_studio.project.project_file import read_project, save_project
from manifold_studio.session.model import Session

from hostile_files import (
    PROJECT_KEY, bomb_npz, lying_npy, npy_bytes, npy_header, read_members, set_member, write_members,
)


@pytest.fixture
def model_path(tmp_path):
    X = np.random.default_rng(0).normal(size=(40, 5))
    return save_model(ms.get_algorithm("pca", n_components=2).fit(X), tmp_path / "m.npz")


@pytest.fixture
def project_path(tmp_path):
    s = Session()
    s.load("sample:iris")
    s.run("pca", n_components=2)
    return save_project(s, tmp_path / "p.msproj")


# -- the load limit ----------------------------------------------------------------------------
def test_limit_from_the_environment_the_constant_and_the_ram(monkeypatch):
    monkeypatch.delenv(bounded.ENV_VAR, raising=False)
    monkeypatch.setattr(bounded, "MAX_LOAD_BYTES", None)
    ram = bounded._physical_memory()
    assert bounded.max_load_bytes() == (int(ram * 0.5) if ram else bounded.FALLBACK_LOAD_BYTES)
    monkeypatch.setattr(bounded, "MAX_LOAD_BYTES", 12345)
    assert bounded.max_load_bytes() == 12345
    for text, value in (("64G", 64 * 2**30), ("1.5M", int(1.5 * 2**20)), ("4096", 4096), ("2 GiB", 2 * 2**30)):
        monkeypatch.setenv(bounded.ENV_VAR, text)
        assert bounded.max_load_bytes() == value  # the environment wins over the constant
    monkeypatch.setenv(bounded.ENV_VAR, "lots")
    with pytest.raises(DataError, match=r"MANIFOLD_STUDIO_MAX_LOAD_BYTES='lots' is not a size"):
        bounded.max_load_bytes()


def test_human_bytes_and_bounded_lists():
    assert bounded.human_bytes(512) == "512 bytes"
    assert bounded.human_bytes(4 * 10**12 * 8) == "29.1 TiB"
    assert bounded.name_list([f"m{i}" for i in range(20_000)]) == (
        "'m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7' and 19,992 more")


# -- lying headers -------------------------------------------------------------------------------
def test_a_400_byte_npy_declaring_29_tib_is_refused_unallocated(tmp_path):
    path = lying_npy(tmp_path / "huge.npy", (2_000_000, 2_000_000))  # 4·10¹² float64
    assert path.stat().st_size < 400
    with pytest.raises(DataError, match=r"huge\.npy is truncated or forged: its header declares shape \(2,000,000, 2,000,000\) of <f8 "
                                        r"\(29\.1 TiB\), but it holds only 64 bytes of data"):
        ms.load_data(path)
    with pytest.raises(DataError, match="29.1 TiB"):  # the chunked reader (apply) too
        next(ms._host().loader_for(str(path)).iter_chunks(path, 10))


def test_an_npy_larger_than_the_limit_is_refused_by_size(tmp_path, monkeypatch):
    path = tmp_path / "big.npy"
    np.save(path, np.ones((1000, 10)))
    monkeypatch.setenv(bounded.ENV_VAR, "10K")
    with pytest.raises(DataError, match=r"big\.npy: it would need 78\.1 KiB \(shape \(1,000, 10\)\), more than "
                                        r"the load limit of 10\.0 KiB \(set MANIFOLD_STUDIO_MAX_LOAD_BYTES"):
        ms.load_data(path)
    monkeypatch.setenv(bounded.ENV_VAR, "1M")
    assert ms.load_data(path).X.shape == (1000, 10)


def test_an_npz_member_whose_header_lies_is_named(tmp_path):
    path = write_members(tmp_path / "lie.npz", {"X.npy": npy_header((10**6, 10**6)) + b"\0" * 80,
                                                "y.npy": npy_bytes(np.arange(3))})
    with pytest.raises(DataError, match=r"lie\.npz: member 'X' is truncated or forged: its header declares shape \(1,000,000, 1,000,000\) "
                                        r"of <f8 \(7\.3 TiB\), but it holds only 80 bytes"):
        ms.load_data(path)


def test_a_damaged_npy_header_is_named(tmp_path):
    path = tmp_path / "bad.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': <<<<}  \n")
    with pytest.raises(DataError, match=r"bad\.npy is not a readable NumPy array \(its header is damaged"):
        ms.load_data(path)


# -- bombs ---------------------------------------------------------------------------------------
def test_an_npz_bomb_is_refused_before_inflating(tmp_path):
    path = bomb_npz(tmp_path / "bomb.npz", 200 * 2**20)  # 200 MiB of zeros
    assert path.stat().st_size < 2**20
    with pytest.raises(DataError, match=r"bomb\.npz: member 'X' inflates from [\d.]+ KiB to 200\.0 MiB \(more than "
                                        r"200 times\): refused as a compression bomb"):
        ms.load_data(path)


def test_a_bomb_inside_a_model_or_project_is_refused(tmp_path, model_path, project_path):
    members = read_members(model_path)
    del members["state/mean_.npy"]
    write_members(model_path, members)
    bomb = bomb_npz(tmp_path / "b.npz", 100 * 2**20, "state/mean_.npy")
    with zipfile.ZipFile(bomb) as src, zipfile.ZipFile(model_path, "a") as dst:
        dst.writestr(src.getinfo("state/mean_.npy"), src.read("state/mean_.npy"))  # compressed as it was
    with pytest.raises(ModelFileError, match=r"m\.npz: member 'state/mean_' inflates from .* to 100\.0 MiB"):
        load_model(model_path)
    members = read_members(project_path)
    members = {k: v for k, v in members.items() if k != "data/0/X.npy"}
    write_members(project_path, members)
    with zipfile.ZipFile(bomb) as src, zipfile.ZipFile(project_path, "a") as dst:
        info = src.getinfo("state/mean_.npy")
        info.filename = "data/0/X.npy"
        dst.writestr(info, src.read("state/mean_.npy"))
    with pytest.raises(ModelFileError, match=r"p\.msproj: member 'data/0/X' inflates .* compression bomb"):
        read_project(project_path)


def test_an_extra_4_gb_array_in_a_model_is_never_read(tmp_path, model_path, monkeypatch):
    # an undeclared member is refused unread, whatever its size
    set_member(model_path, "state/payload_", npy_header((2**29,)) + b"\0" * 16)
    with pytest.raises(ModelFileError, match=r"member 'payload_' is not a fitted attribute of a pca model"):
        load_model(model_path)


def test_all_members_together_stay_within_the_limit(tmp_path, model_path, monkeypatch):
    with bounded.BoundedNpz(model_path) as npz:
        sizes = [npz.header(k)[2] for k in npz.files]
    limit = max(sizes) + 1  # each array fits, all of them together do not
    assert sum(sizes) > limit
    monkeypatch.setenv(bounded.ENV_VAR, str(limit))
    with pytest.raises(ModelFileError, match=rf"m\.npz: its arrays together need more than the load limit of "
                                             rf"{bounded.human_bytes(limit)} \(at member '.*'; set MANIFOLD_STUDIO"):
        load_model(model_path)


# -- out of memory -------------------------------------------------------------------------------
def test_out_of_memory_is_a_data_error_with_the_amount(tmp_path, monkeypatch):
    np.save(tmp_path / "a.npy", np.ones((100, 3)))
    np.savez(tmp_path / "a.npz", X=np.ones((100, 3)))

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 2.23 GiB for an array with shape (300000000,) and data type float64")

    monkeypatch.setattr(np, "load", no_memory)
    with pytest.raises(DataError, match=r"a\.npy: not enough memory to load it \(2\.23 GiB asked for, load limit"):
        ms.load_data(tmp_path / "a.npy")
    monkeypatch.undo()
    monkeypatch.setattr(np.lib.format, "read_array", lambda *a, **k: (_ for _ in ()).throw(MemoryError()))
    with pytest.raises(DataError, match=r"a\.npz: member 'X': not enough memory to load it \(2\.3 KiB asked for"):
        ms.load_data(tmp_path / "a.npz")


def test_out_of_memory_in_a_model_or_project_names_the_member(model_path, project_path, monkeypatch):
    monkeypatch.setattr(np.lib.format, "read_array", lambda *a, **k: (_ for _ in ()).throw(MemoryError()))
    with pytest.raises(ModelFileError, match=r"m\.npz: member '__manifold_studio_model__': not enough memory .* asked for"):
        load_model(model_path)
    with pytest.raises(ModelFileError, match=r"p\.msproj: member '__manifold_studio_project__': not enough memory"):
        read_project(project_path)


# -- FIFOs and devices ----------------------------------------------------------------------------
@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this system")
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    assert stat.S_ISFIFO(os.stat(path).st_mode)
    return path


def test_a_fifo_is_refused_at_once_by_every_reader(fifo, tmp_path):
    for name in ("pipe.csv", "pipe.npy", "pipe.npz"):
        path = tmp_path / name
        if not path.exists():
            os.mkfifo(path)
        with pytest.raises(DataError, match=rf"{name} is a named pipe \(FIFO\), not a regular data file"):
            ms.load_data(path)
    csv_loader = ms._host().loader_for(str(fifo))
    for read in (lambda: csv_loader.preview(fifo), lambda: next(csv_loader.iter_chunks(fifo, 10)),
                 lambda: next(ms._host().loader_for(str(tmp_path / "pipe.npy")).iter_chunks(tmp_path / "pipe.npy", 10))):
        with pytest.raises(DataError, match=r"pipe\.(csv|npy) is a named pipe \(FIFO\), not a regular"):
            read()
    with pytest.raises(ModelFileError, match=r"pipe\.npz is a named pipe \(FIFO\), not a regular model file"):
        load_model(tmp_path / "pipe.npz")
    with pytest.raises(ModelFileError, match=r"pipe\.npz is a named pipe \(FIFO\), not a regular project file"):
        read_project(tmp_path / "pipe.npz")


def test_a_fifo_in_an_image_folder_is_skipped(tmp_path):
    from PIL import Image

    folder = tmp_path / "images"
    folder.mkdir()
    for i in range(3):
        Image.fromarray(np.full((4, 4), 60 * i, dtype=np.uint8)).save(folder / f"{i}.png")
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this system")
    os.mkfifo(folder / "pipe.png")
    ds = ms.load_data(folder)
    assert ds.X.shape == (3, 16) and any("pipe.png" in r for r in ds.report)


def test_a_device_is_refused(tmp_path):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    with pytest.raises(DataError, match=r"zero is a device, not a regular"):
        bounded.check_regular_file("/dev/zero")


@pytest.mark.parametrize("args", [
    ["run", "pca", "--data", "{fifo}", "--out", "-"],
    ["run", "pca", "--data", "sample:iris", "--extend", "{fifo}", "--extend-out", "{tmp}/e.csv", "--out", "{tmp}/o.csv"],
    ["apply", "--model", "{fifo}", "--data", "sample:iris", "--out", "-"],
    ["apply", "--model", "{tmp}/m.npz", "--data", "{fifo}", "--out", "-"],
])
def test_a_fifo_on_the_command_line_never_blocks(args, fifo, tmp_path):
    save_model(ms.get_algorithm("pca").fit(ms.load_data("sample:iris").X), tmp_path / "m.npz")
    argv = [a.replace("{fifo}", str(fifo)).replace("{tmp}", str(tmp_path)) for a in args]
    res = subprocess.run([sys.executable, "-m", "manifold_studio", *argv], capture_output=True, text=True,
                         timeout=120)  # a blocked read would hit the timeout
    assert res.returncode == 2
    flag = argv[argv.index(str(fifo)) - 1]
    assert res.stderr.strip().splitlines() == [
        f"manifold-studio: error: {flag} {fifo}: pipe.csv is a named pipe (FIFO), not a regular "
        f"{'model' if flag == '--model' else 'data'} file: give a file saved on disk."]


# -- many members ---------------------------------------------------------------------------------
def test_an_npz_with_20000_members_gives_one_bounded_line(tmp_path):
    path = tmp_path / "many.npz"
    one = npy_bytes(np.ones((2, 2)))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for i in range(20_000):
            z.writestr(f"a{i}.npy", one)
    with pytest.raises(DataError) as info:
        ms.load_data(path)
    message = str(info.value)
    assert "\n" not in message and len(message) < 400
    assert "many.npz holds several arrays ('a0' (2, 2), 'a1' (2, 2)" in message and "and 19,992 more" in message
    with pytest.raises(DataError) as info:
        ms.load_data(path, data_array="nope")
    assert "and 19,992 more" in str(info.value) and len(str(info.value)) < 400


def test_too_many_members_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(bounded, "MAX_MEMBERS", 10)
    path = write_members(tmp_path / "m.npz", {f"a{i}.npy": npy_bytes(np.ones(2)) for i in range(11)})
    with pytest.raises(DataError, match=r"m\.npz holds 11 members, more than the 10 a NumPy \.npz file may have"):
        ms.load_data(path)


def test_ordinary_files_still_read(tmp_path, model_path, project_path):
    np.savez_compressed(tmp_path / "ok.npz", X=np.arange(12.0).reshape(4, 3), y=np.array([0, 1, 0, 1]))
    ds = ms.load_data(tmp_path / "ok.npz")
    assert ds.X.shape == (4, 3) and list(ds.labels) == [0, 1, 0, 1]
    assert load_model(model_path).n_features_in_ == 5
    contents = read_project(project_path)
    assert contents.problems == [] and contents.session.runs[1].embedding.shape == (150, 2)
    assert PROJECT_KEY in read_members(project_path)


def test_out_of_memory_while_restoring_says_how_much(model_path, project_path, monkeypatch):
    from manifold_studio.files import model_file

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 3.00 GiB for an array with shape (400000000,) and data type float64")

    monkeypatch.setattr(model_file, "unpack_estimator", no_memory)
    with pytest.raises(ModelFileError, match=r"m\.npz: not enough memory to load it \(3\.00 GiB asked for"):
        load_model(model_path)
    blob = model_file.model_bytes(ms.get_algorithm("pca").fit(np.eye(4)))
    with pytest.raises(ModelFileError, match=r"the model bytes: not enough memory to load it \(3\.00 GiB asked for"):
        model_file.model_from_bytes(blob)
    monkeypatch.setattr("manifold_studio.project.project_file._ProjectReader.read", no_memory)
    with pytest.raises(ModelFileError, match=r"p\.msproj: not enough memory to load it \(3\.00 GiB asked for"):
        read_project(project_path)
