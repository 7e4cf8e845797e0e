"""DiskSim's drives as the package ships them (issue #12, "Ship the DiskSim data"): found by name or by folder."""
from __future__ import annotations

import shutil

import pytest

from diskmodel.data.disksim import (DISKSIM_PUBLISHED_DEMERIT_MS, BUNDLED_DRIVES, TRACED_DRIVES, DiskSimFolder,
                                    disksim_drive_folder, load_disksim_drive)
from diskmodel.data.disksim.bundled import BUNDLED_DIR, preset_or_drive


def test_the_declared_drives_are_the_folders_shipped():
    folders = {p.name for p in BUNDLED_DIR.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(BUNDLED_DRIVES)
    traced = {name for name in folders if list((BUNDLED_DIR / name).glob("*.trace"))}
    assert traced == set(TRACED_DRIVES) == set(DISKSIM_PUBLISHED_DEMERIT_MS)
    assert (BUNDLED_DIR / "COPYING").read_text().count("BSD-3-Clause") >= 1  # the licence goes with the data


@pytest.mark.parametrize("name", sorted(BUNDLED_DRIVES))
def test_every_bundled_drive_loads_by_name(name):
    drive = load_disksim_drive(name)
    assert isinstance(drive, DiskSimFolder) and drive.name == name
    assert drive.folder == BUNDLED_DIR / name
    assert (drive.trace_path is not None) == (name in TRACED_DRIVES)
    assert drive.model.mech.rpm > 3000


def test_a_folder_still_works_and_wins_over_a_name(tmp_path, monkeypatch):
    copy = tmp_path / "atlas10k"
    shutil.copytree(BUNDLED_DIR / "atlas10k", copy)
    assert load_disksim_drive(copy).folder == copy
    monkeypatch.chdir(tmp_path)  # a folder of your own named like a bundled drive is not shadowed
    assert disksim_drive_folder("atlas10k").resolve() == copy.resolve()
    assert preset_or_drive("atlas10k") == "atlas10k"


def test_names_are_refused_in_one_line_listing_the_drives(tmp_path):
    with pytest.raises(ValueError, match=r"^'nosuch' is neither a folder nor a bundled DiskSim drive \(bundled: "
                                         r"atlas10k, .*maxtor300g\)$"):
        disksim_drive_folder("nosuch")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is not a folder"):
        disksim_drive_folder(tmp_path / "file")
    with pytest.raises(ValueError, match="got int 3"):
        disksim_drive_folder(3)


def test_a_preset_name_stays_a_preset():
    assert preset_or_drive("hp_c2247a") == "hp_c2247a"  # both a preset and a bundled drive: the preset
    assert preset_or_drive("wd800bd") == "wd800bd"
    assert preset_or_drive("G4_4TB") == BUNDLED_DIR / "G4_4TB"
    assert preset_or_drive("nosuch") == "nosuch"
