"""The kernel threads on an emulated loop device's way (diskmodel.calibrate.emulate.kthreads), and which drive a
traced DiskSim drive's folder serves (emulation_check serves the folders)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import require_root

from diskmodel.calibrate.emulate.kthreads import _kernel_threads, kernel_threads_realtime

pytestmark = pytest.mark.serial  # kernel threads' real-time scheduling, host-wide


def test_no_priority_changes_nothing_and_a_bad_one_is_refused_naming_the_flag():
    with kernel_threads_realtime(None) as changed:
        assert changed() == 0
    for bad in (0, 100, 4.5, True):
        with pytest.raises(ValueError, match="--kernel-threads-realtime"):
            with kernel_threads_realtime(bad):
                pass


@pytest.mark.slow  # changes the kernel's threads' policy for a moment (root)
def test_softirq_threads_run_real_time_inside_and_as_before_afterwards():
    require_root()
    softirq = _kernel_threads(("ksoftirqd/",))
    assert len(softirq) == os.cpu_count()  # one per CPU, children of kthreadd
    before = {pid: (os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority) for pid in softirq}
    with kernel_threads_realtime(7, ("ksoftirqd/",)) as changed:
        inside = {pid: (os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority) for pid in softirq}
        assert changed() == sum(policy != os.SCHED_FIFO for policy, _ in before.values())
    after = {pid: (os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority) for pid in softirq}
    assert all(v == (os.SCHED_FIFO, 7) or before[pid][0] == os.SCHED_FIFO for pid, v in inside.items())
    assert after == before


@pytest.mark.slow  # builds two drives' simulations (numba)
def test_a_traced_drives_folder_serves_the_disksim_drive_not_the_preset_of_its_name():
    """hp_c2247a is both a preset and a bundled DiskSim drive: by name the preset wins; its DiskSim folder
    gives the DiskSim drive, whose simulation matches the trace's measured times (the preset's does not)."""
    from diskmodel.calibrate.emulate.drives import resolve_drive
    from diskmodel.calibrate.emulate.timing import drive_parameters_of
    from diskmodel.data.disksim import DISKSIM_PUBLISHED_DEMERIT_MS, disksim_drive_folder, read_drive_folder
    from diskmodel.model.simulator.simulate import simulate_requests
    from diskmodel.model.predictions.validation import disksim_demerit_s

    by_name = resolve_drive("hp_c2247a")
    by_folder = resolve_drive(str(disksim_drive_folder("hp_c2247a")))
    assert by_name.timing["kind"] == "preset" and by_folder.timing["kind"] == "disksim"
    assert by_folder.name == "hp_c2247a"
    trace = read_drive_folder(disksim_drive_folder("hp_c2247a")).read_trace().head(3000)
    ratio = {}
    for key, spec in (("name", by_name), ("folder", by_folder)):
        sim = simulate_requests(drive_parameters_of(spec.timing), trace.is_write, trace.lbn, trace.blocks,
                                trace.interarrival_s)
        ratio[key] = disksim_demerit_s(trace.service_s, sim.service_s) * 1e3 / DISKSIM_PUBLISHED_DEMERIT_MS["hp_c2247a"]
    assert ratio["folder"] < 2.0 < ratio["name"], ratio
    assert np.isfinite(list(ratio.values())).all()
