"""model/fit/paper.py: the leave-one-test-out check of Djordjevic & Timcenko (2015), Tables 4-6."""
from __future__ import annotations

import numpy as np
import pytest

from diskmodel.data.tables import postmark_results
from diskmodel.model.fit.paper import TESTS, fit_paper, median_abs_error_pct, predict_paper
from diskmodel.model.drive.presets import load_preset

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def loo(preset_leave_one_test_out):
    return preset_leave_one_test_out


def test_held_out_cells_meet_the_target(loo):
    frame, _ = loo
    assert len(frame) == 18 and not frame["error_pct"].isna().any()
    assert median_abs_error_pct(frame) <= 20.0
    # every native cell is predicted within 15 % from the other two tests
    native = frame[frame["layout"] == "native"]
    assert np.all(native["error_pct"].abs() <= 15.0)


def test_file_data_rate_is_stable_across_folds(loo):
    """The one fitted I/O-path rate must not depend much on which test is held out."""
    _, fits = loo
    rates = np.array([fits[t].io_fit.params["file_data_rate_bytes_per_s"] for t in TESTS])
    assert np.all((rates > 3.0e6) & (rates < 4.5e6))
    assert rates.max() / rates.min() < 1.10
    for fit in fits.values():
        assert fit.disk.interface_rate_bytes_per_s == 150e6   # the drive's link stays the spec's


def test_fit_on_all_tests_reproduces_the_tables():
    fit = fit_paper(load_preset("wd800bd"), postmark_results())
    frame = predict_paper(fit, postmark_results())
    assert not frame["held_out"].any()
    # in-sample: the native row within 12 %, and no cell off by more than 30 %
    assert np.all(frame[frame["layout"] == "native"]["error_pct"].abs() <= 12.0)
    assert np.all(frame["error_pct"].abs() <= 30.0)


def test_bad_test_names_are_refused():
    with pytest.raises(ValueError, match="train_tests"):
        fit_paper(load_preset("wd800bd"), postmark_results(), ["test4"])


# ---------------------------------------------------------------- LVM's cost by mechanism (djordjevic_loo.py)

def _measured_dm_cost():
    from diskmodel.data.measured import dm_request_cost
    from diskmodel.model.stacks.dm_cost import DeviceMapperCost

    return DeviceMapperCost(dm_request_cost().host_s)


@pytest.fixture(scope="module")
def mechanism_loo():
    from diskmodel.model.fit.paper import leave_one_test_out

    cost = _measured_dm_cost()
    return cost, *leave_one_test_out(load_preset("wd800bd"), postmark_results(), dm_cost=cost)


def test_mechanism_fits_nothing_per_layout_and_charges_each_bio_once(mechanism_loo):
    from diskmodel.model.stacks.stack import paper_stack

    cost, frame, fits = mechanism_loo
    for fit in fits.values():
        assert fit.lvm_fits == {} and fit.dm_cost == cost
        for name in ("lvm1", "lvm2"):
            complexity = paper_stack(name).volume.mapping_complexity
            assert fit.mappings[name].md_mapping_s * complexity == pytest.approx(cost.request_cost_s)
            assert fit.mappings[name].fb_mapping_s * complexity == pytest.approx(cost.request_cost_s)
    lvm = frame[frame["layout"] != "native"]
    # the mapping part of T_LVM_MO is the bios times the measured cost, cell by cell
    np.testing.assert_allclose(lvm["lvm_mapping_s"], lvm["dm_bios"] * cost.request_cost_s, rtol=1e-9)


def test_mechanism_loo_median_stays_at_its_recorded_figure(mechanism_loo):
    """The committed run (benchmarks/results/djordjevic_loo.json) gave 46.0 %; the native row stays within 15 %."""
    _, frame, _ = mechanism_loo
    assert median_abs_error_pct(frame) <= 47.0
    native = frame[frame["layout"] == "native"]
    assert np.all(native["error_pct"].abs() <= 15.0)


@pytest.mark.xfail(strict=True, reason="the paper's LVM overheads ask 170-4200 us of device-mapper per bio, "
                                       "hundreds of times its measured cost (docs/benchmarks.md, djordjevic_loo)")
def test_mechanism_loo_meets_the_issue_target(mechanism_loo):
    _, frame, _ = mechanism_loo
    assert median_abs_error_pct(frame) <= 15.0


def test_the_tables_ask_of_device_mapper_hundreds_of_times_its_measured_cost(mechanism_loo):
    """The paper's extra run time over native, per bio device-mapper remaps, in every LVM cell."""
    from diskmodel.model.predictions.workload import PAPER_VOLUMES_BYTES

    cost, frame, _ = mechanism_loo
    reads = frame[frame["operation"] == "read"].set_index(["test", "layout"])
    for test in TESTS:
        read_bytes = PAPER_VOLUMES_BYTES[test]["bytes_read"]
        native_s = read_bytes / reads.loc[(test, "native"), "measured_bytes_per_s"]
        for layout in ("lvm1", "lvm2"):
            row = reads.loc[(test, layout)]
            implied = (read_bytes / row["measured_bytes_per_s"] - native_s) / row["dm_bios"]
            assert implied > 100 * cost.request_cost_s, (test, layout, implied)
