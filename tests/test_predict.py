"""model/predict.py (prediction, breakdown, fitters) and data/tables.py (Tables 1-6)."""
from __future__ import annotations

import math

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from diskmodel.data.tables import DOI, layout_sizes_bytes, load_table, postmark_results, provenance
from diskmodel.model.filesystems.filesystem import FileSystem, PageCache
from diskmodel.model.stacks.lvm_mapping import LvmMapping
from diskmodel.model.stacks.stack import paper_stack, stack_on
from diskmodel.model.fit import Case, PostMarkFit, fit_io_parameters, fit_lvm_mapping
from diskmodel.model.predict import Prediction, format_postmark_rate, predict
from diskmodel.model.drive.presets import load_preset
from diskmodel.model.units import MIB
from diskmodel.model.predictions.workload import PAPER_VOLUMES_BYTES, PostMarkConfig, expected_counts



@pytest.fixture(scope="module")
def disk():
    return load_preset("wd800bd")


@pytest.fixture(scope="module")
def counts():
    return expected_counts(PostMarkConfig(number_of_files=2000, transactions=4000,
                                          min_file_size_bytes=1024, max_file_size_bytes=80 * 1024))


# ---------------------------------------------------------------- tables

def test_tables_as_printed():
    assert list(load_table(1)["size_gb"]) == [58, 1, 20]
    assert list(load_table(3)["size_gb"]) == [58, 1, 10, 10, 20]
    t4 = load_table(4)
    assert set(t4["unit"]) == {"MB/s"}
    assert t4.set_index(["operation", "layout"]).loc[("read", "ext3"), "value"] == 2.99
    assert t4.set_index(["operation", "layout"]).loc[("read", "ext3"), "printed"] == "2,99"
    assert set(load_table(5)["unit"]) == {"KB/s"} and set(load_table(6)["unit"]) == {"KB/s"}
    assert load_table(5).set_index(["operation", "layout"]).loc[("write", "LVM-2"), "value"] == 53.06
    for n in range(1, 7):
        assert DOI in provenance(n)
        assert f"Table {n}" in provenance(n)
    assert layout_sizes_bytes(2)["dev/sda3"] == 20 * 10**9


def test_postmark_results_units_and_table6_flag():
    frame = postmark_results()
    assert len(frame) == 18
    row = frame.query("test == 'test1' and layout_key == 'native' and operation == 'read'").iloc[0]
    assert row.throughput_bytes_per_s == pytest.approx(2.99 * MIB)
    t6 = frame[frame.table == 6]
    assert set(t6.unit) == {"KB/s"} and set(t6.unit_used) == {"MB/s"} and all(t6.unit_note != "")
    literal = postmark_results(correct_table6_unit=False)
    assert literal[literal.table == 6].throughput_bytes_per_s.iloc[0] == pytest.approx(2.8 * 1024)
    with pytest.raises(ValueError, match="correct_table6_unit"):
        postmark_results(correct_table6_unit="yes")
    with pytest.raises(ValueError, match="number"):
        load_table(7)


def test_read_and_write_imply_the_same_elapsed_time():
    """PostMark divides both volumes by one elapsed time: the tables agree with the volumes."""
    frame = postmark_results().set_index(["test", "layout_key", "operation"])
    for test, volumes in PAPER_VOLUMES_BYTES.items():
        if test == "test3_1kb":
            continue
        for layout in ("native", "lvm1", "lvm2"):
            t_read = volumes["bytes_read"] / frame.loc[(test, layout, "read"), "throughput_bytes_per_s"]
            t_write = volumes["bytes_written"] / frame.loc[(test, layout, "write"), "throughput_bytes_per_s"]
            assert t_read == pytest.approx(t_write, rel=0.06), (test, layout)
    # and Table 6 read as MB/s gives a run of the same order as Test 1 (minutes, not weeks)
    t3 = PAPER_VOLUMES_BYTES["test3"]["bytes_read"] / frame.loc[("test3", "native", "read"), "throughput_bytes_per_s"]
    assert 600 < t3 < 3600


# ---------------------------------------------------------------- predict

def test_format_postmark_rate_golden():
    assert format_postmark_rate(2.99 * MIB) == "2.99 megabytes per second"
    assert format_postmark_rate(149.82 * 1024) == "149.82 kilobytes per second"
    with pytest.raises(ValueError, match="bytes_per_s"):
        format_postmark_rate(-1)


def test_prediction_consistency(disk, counts):
    p = predict(stack_on(disk, paper_stack("native", disk=disk).volume, FileSystem()), counts, PageCache())
    assert isinstance(p, Prediction)
    assert p.read_throughput_bytes_per_s == pytest.approx(counts.total.bytes_read / p.elapsed_s)
    assert p.write_throughput_bytes_per_s / p.read_throughput_bytes_per_s == pytest.approx(
        counts.total.bytes_written / counts.total.bytes_read)
    assert p.elapsed_s == pytest.approx(sum(p.terms.values()))
    assert p.terms["T_LVM_MO"] == 0.0
    frame = p.to_frame()
    assert {"read_throughput", "T_DFA", "T_LVM_MO", "T_DST.seek_s", "T_DST.rotation_s",
            "T_DST.transfer_s"} <= set(frame.index)
    assert "PostMark prediction" in p._repr_html_()
    assert p.postmark_units()["read"].endswith("per second")


def test_lvm_costs_add_to_the_elapsed_time(disk, counts):
    native = predict(stack_on(disk, paper_stack("native", disk=disk).volume, FileSystem()), counts)
    lvm1_free = predict(stack_on(disk, paper_stack("lvm1", disk=disk).volume, FileSystem()), counts)
    mapping = LvmMapping(md_mapping_s=1e-4, fb_mapping_s=1e-5)
    lvm1 = predict(stack_on(disk, paper_stack("lvm1", disk=disk).volume, FileSystem()), counts, lvm_mapping=mapping)
    lvm2 = predict(stack_on(disk, paper_stack("lvm2", disk=disk).volume, FileSystem()), counts, lvm_mapping=mapping)
    # same place on the disk, no mapping cost: within 2 % of native (1 MiB shift, slightly smaller volume)
    assert lvm1_free.elapsed_s == pytest.approx(native.elapsed_s, rel=0.02)
    assert lvm1.lvm_parts["md_mapping_s"] == pytest.approx(1e-4 * lvm1.io_counts["metadata_ios"])
    assert lvm1.lvm_parts["fb_mapping_s"] == pytest.approx(1e-5 * lvm1.io_counts["data_block_ios"])
    assert native.elapsed_s < lvm1.elapsed_s < lvm2.elapsed_s
    assert lvm2.read_throughput_bytes_per_s < lvm1.read_throughput_bytes_per_s


@settings(max_examples=10, deadline=None)
@given(files=st.integers(100, 3000), tx=st.integers(10, 4000), high_kib=st.integers(1, 300),
       layout=st.sampled_from(["native", "lvm1", "lvm2"]), md=st.floats(0, 1e-3), fb=st.floats(0, 1e-4))
def test_throughput_is_positive(files, tx, high_kib, layout, md, fb):
    disk = load_preset("wd800bd")
    cfg = PostMarkConfig(number_of_files=files, transactions=tx, min_file_size_bytes=1,
                         max_file_size_bytes=high_kib * 1024)
    p = predict(stack_on(disk, paper_stack(layout, disk=disk).volume, FileSystem()), cfg,
                lvm_mapping=LvmMapping(md, fb))
    assert p.elapsed_s > 0 and math.isfinite(p.elapsed_s)
    assert p.write_throughput_bytes_per_s > 0
    assert p.read_throughput_bytes_per_s >= 0


# ---------------------------------------------------------------- fitters

def test_fit_lvm_mapping_recovers_known_coefficients(disk):
    truth = LvmMapping(md_mapping_s=2e-4, fb_mapping_s=3e-5)
    cases = []
    for high, files in ((8 * 1024, 3000), (200 * 1024, 800)):  # metadata-heavy and data-heavy
        wl = expected_counts(PostMarkConfig(number_of_files=files, transactions=3000, min_file_size_bytes=1,
                                            max_file_size_bytes=high))
        for name in ("lvm1", "lvm2"):
            layout = paper_stack(name, disk=disk).volume
            p = predict(stack_on(disk, layout, FileSystem()), wl, lvm_mapping=truth)
            cases.append(Case(disk, layout, wl, p.read_throughput_bytes_per_s, p.write_throughput_bytes_per_s,
                              label=f"{high}/{name}"))
    fit = fit_lvm_mapping(cases)
    assert isinstance(fit, PostMarkFit) and fit.success
    assert fit.params["md_mapping_s"] == pytest.approx(2e-4, rel=0.02)
    assert fit.params["fb_mapping_s"] == pytest.approx(3e-5, rel=0.02)
    assert np.max(np.abs(fit.residuals)) < 1e-3
    ci = fit.conf_int()
    assert ci.loc["md_mapping_s", "lower"] <= fit.params["md_mapping_s"] <= ci.loc["md_mapping_s", "upper"]
    assert "md_mapping_s" in fit.summary() and "<th>md_mapping_s</th>" in fit._repr_html_()
    import matplotlib
    matplotlib.use("Agg")
    ax = fit.plot()
    assert len(ax.patches) == len(fit.residuals)


@pytest.mark.slow
def test_fit_io_parameters_recovers_a_host_rate(disk):
    cases = []
    slow = disk.evolve(interface_rate_bytes_per_s=8e6)
    cache = PageCache(size_bytes=64 * MIB)
    # three workloads for two parameters (read and write cells share one elapsed time)
    for high, files in ((8 * 1024, 3000), (200 * 1024, 800), (64 * 1024, 3000)):
        wl = expected_counts(PostMarkConfig(number_of_files=files, transactions=3000, min_file_size_bytes=1,
                                            max_file_size_bytes=high))
        layout = paper_stack("native", disk=disk).volume
        p = predict(stack_on(slow, layout, FileSystem()), wl, cache)
        cases.append(Case(disk, layout, wl, p.read_throughput_bytes_per_s, p.write_throughput_bytes_per_s))
    fit = fit_io_parameters(cases, initial={"page_cache_bytes": 100 * MIB})
    assert fit.params["interface_rate_bytes_per_s"] == pytest.approx(8e6, rel=0.05)
    assert fit.params["page_cache_bytes"] == pytest.approx(64 * MIB, rel=0.15)


def test_fit_io_parameters_recovers_a_file_data_rate(disk):
    """Two workloads, one link-bound rate: the fitter finds the rate that made the runs."""
    truth = FileSystem(overlapped_writeback=True, file_data_rate_bytes_per_s=3.7e6)
    start = FileSystem(overlapped_writeback=True)
    cache = PageCache(size_bytes=1536 * MIB)
    layout = paper_stack("native", disk=disk).volume
    cases = []
    for high, files in ((100 * 1024, 2000), (300 * 1024, 1000)):
        wl = expected_counts(PostMarkConfig(number_of_files=files, transactions=4000, min_file_size_bytes=1024,
                                            max_file_size_bytes=high))
        p = predict(stack_on(disk, layout, truth), wl, cache)
        cases.append(Case(disk, layout, wl, p.read_throughput_bytes_per_s, p.write_throughput_bytes_per_s,
                          filesystem=start, cache=cache))
    fit = fit_io_parameters(cases, parameters=("file_data_rate_bytes_per_s",))
    assert fit.params["file_data_rate_bytes_per_s"] == pytest.approx(3.7e6, rel=1e-3)
    assert np.all(np.abs(fit.residuals) < 1e-3)


def test_fit_bad_input(disk, counts):
    native = paper_stack("native", disk=disk).volume
    with pytest.raises(ValueError, match="cases"):
        fit_lvm_mapping([Case(disk, native, counts, 1e6, 1e6)])
    with pytest.raises(ValueError, match="read_throughput_bytes_per_s"):
        Case(disk, native, counts, -1.0, 1e6)
    with pytest.raises(ValueError, match="read_throughput_bytes_per_s or write"):
        Case(disk, native, counts)
    with pytest.raises(ValueError, match="lvm_mapping"):
        predict(stack_on(disk, native, FileSystem()), counts, lvm_mapping=(1, 2))


@pytest.mark.slow
def test_pipeline_prediction_terms_sum_to_elapsed_and_lvm_cost_loads_the_link(disk, counts):
    fs = FileSystem(overlapped_writeback=True)
    slow = disk.evolve(interface_rate_bytes_per_s=4e6)
    native = predict(stack_on(slow, paper_stack("native", disk=disk).volume, fs), counts)
    assert native.terms["T_overlap"] < 0
    assert native.elapsed_s == pytest.approx(sum(native.terms.values()))
    assert native.elapsed_s == pytest.approx(max(native.details["stages"].values()), rel=1e-6)
    mapping = LvmMapping(md_mapping_s=1e-4, fb_mapping_s=1e-5)
    lvm1 = predict(stack_on(slow, paper_stack("lvm1", disk=disk).volume, fs), counts, lvm_mapping=mapping)
    assert lvm1.elapsed_s == pytest.approx(sum(lvm1.terms.values()))
    added = lvm1.lvm_parts["md_mapping_s"] + lvm1.lvm_parts["fb_mapping_s"]
    assert added == pytest.approx(1e-4 * lvm1.io_counts["metadata_ios"] + 1e-5 * lvm1.io_counts["data_block_ios"])
    # link-bound: the mapping cost adds to the link stage and so to the elapsed time
    stages = lvm1.details["stages"]
    assert stages["link_s"] == max(stages.values())
    assert lvm1.elapsed_s > native.elapsed_s + 0.9 * added
    # serial model: no overlap term
    serial = predict(stack_on(slow, paper_stack("native", disk=disk).volume, FileSystem()), counts)
    assert serial.terms["T_overlap"] == 0.0
    assert serial.elapsed_s > native.elapsed_s


def test_request_mapping_cost_and_choice_of_fitted_coefficients(disk):
    """request_mapping_s: a cost per data request; fit_lvm_mapping fits any two named coefficients."""
    truth = LvmMapping(request_mapping_s=2e-3, fb_mapping_s=3e-5)
    cases = []
    for high, files in ((8 * 1024, 3000), (200 * 1024, 800)):
        wl = expected_counts(PostMarkConfig(number_of_files=files, transactions=3000, min_file_size_bytes=1,
                                            max_file_size_bytes=high))
        layout = paper_stack("lvm2", disk=disk).volume
        p = predict(stack_on(disk, layout, FileSystem()), wl, lvm_mapping=truth)
        # complexity 2 (two segments on one disk) times the cost times the data requests
        assert p.lvm_parts["request_mapping_s"] == pytest.approx(2 * 2e-3 * p.io_counts["data_requests"])
        assert p.lvm_parts["md_mapping_s"] == 0.0
        cases.append(Case(disk, layout, wl, p.read_throughput_bytes_per_s, p.write_throughput_bytes_per_s))
    fit = fit_lvm_mapping(cases, parameters=("request_mapping_s", "fb_mapping_s"))
    assert list(fit.params.index) == ["request_mapping_s", "fb_mapping_s"]
    assert fit.params["request_mapping_s"] == pytest.approx(2e-3, rel=0.02)
    assert fit.params["fb_mapping_s"] == pytest.approx(3e-5, rel=0.05)
    with pytest.raises(ValueError, match="parameters"):
        fit_lvm_mapping(cases, parameters=("md_mapping_s", "md_mapping_s"))
    with pytest.raises(ValueError, match="initial"):
        fit_lvm_mapping(cases, parameters=("md_mapping_s",), initial=(1e-4, 1e-5))
    with pytest.raises(ValueError, match="request_mapping_s"):
        LvmMapping(request_mapping_s=-1.0)


def test_data_requests_count_by_hand(disk):
    """Every file cached: data requests = creation-phase pieces of 512 KiB + transaction creates + appends."""
    cfg = PostMarkConfig(number_of_files=1000, transactions=2000, min_file_size_bytes=4096,
                         max_file_size_bytes=4096)
    wl = expected_counts(cfg)
    p = predict(stack_on(disk, paper_stack("native", disk=disk).volume, FileSystem()), wl, PageCache(size_bytes=1 << 30))
    fresh_pieces = math.ceil(1000 * 4096 / (512 * 1024))   # 8
    expected = fresh_pieces + (wl.total.creates - 1000) + wl.total.appends
    assert p.io_counts["data_requests"] == pytest.approx(expected)


def test_fit_lvm_mapping_escapes_a_stage_that_hides_the_cost(disk):
    """Pipeline model, media-bound run: a tiny starting cost hides under the media stage.

    With one start at 1e-6 s the residuals do not depend on the coefficient
    and the fit stays put; a second start 30,000x higher finds the cost.
    """
    fs = FileSystem(overlapped_writeback=True)
    wl = expected_counts(PostMarkConfig(number_of_files=2000, transactions=3000, min_file_size_bytes=1,
                                        max_file_size_bytes=8 * 1024))
    truth = LvmMapping(md_mapping_s=1e-2)
    cases = []
    for name in ("lvm1", "lvm2"):
        layout = paper_stack(name, disk=disk).volume
        p = predict(stack_on(disk, layout, fs), wl, lvm_mapping=truth)
        assert p.details["stages"]["link_s"] == max(p.details["stages"].values())   # the cost shows
        free = predict(stack_on(disk, layout, fs), wl)
        assert free.details["stages"]["link_s"] < free.details["stages"]["media_s"]   # without it: hidden
        cases.append(Case(disk, layout, wl, p.read_throughput_bytes_per_s, p.write_throughput_bytes_per_s,
                          filesystem=fs))
    stuck = fit_lvm_mapping(cases, parameters=("md_mapping_s",), initial=(1e-6,), start_factors=(1.0,))
    assert stuck.params["md_mapping_s"] == pytest.approx(1e-6, rel=1e-3)
    assert np.max(np.abs(stuck.residuals)) > 0.5
    found = fit_lvm_mapping(cases, parameters=("md_mapping_s",), initial=(1e-6,), start_factors=(1.0, 3e4))
    assert found.params["md_mapping_s"] == pytest.approx(1e-2, rel=0.02)
    assert np.max(np.abs(found.residuals)) < 1e-3
    with pytest.raises(ValueError, match="start_factors"):
        fit_lvm_mapping(cases, start_factors=(0.0,))


def test_predict_times_a_layout_over_several_disks_on_the_io_path():
    from diskmodel.model.stacks.volumes import Partition, StripedVolume
    from diskmodel.model.predictions.workload import PostMarkConfig

    disk = load_preset("wd800bd")
    volume = StripedVolume((Partition(0, 10**9, "a", disk="sda"), Partition(0, 10**9, "b", disk="sdb")))
    stack = stack_on(disk, volume)
    p = predict(stack, PostMarkConfig(number_of_files=100, transactions=200))
    # the I/O path's streams reach both drives, and each drive's requests are timed
    assert set(p.timing.devices) == {"sda", "sdb"}
    frame = p.timing.device_frame()
    assert (frame["requests"] > 0).all() and (frame["busy_s"] > 0).all()
    assert p.elapsed_s >= frame["busy_s"].max()


# ---------------------------------------------------------------- diskmodel predict --fs: every kind

def _cli_json(capsys, *argv) -> dict:
    import json

    from diskmodel.calibrate import cli

    assert cli.main(["predict", *argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_predict_cli_takes_every_kind_with_its_options_as_the_api_builds_them(capsys):
    from diskmodel.model.filesystems.kinds import KINDS
    from diskmodel.model.stacks.stack import FileSystemNode
    from diskmodel.model.predictions.workload import postmark_preset

    workload = postmark_preset("test1").evolve(number_of_files=500, transactions=2000)
    options = {"ext2": ((), ()), "ext3": ((), ("data=writeback",)), "ext4": (("-I", "512"), ("noatime",)),
               "xfs": (("-d", "agcount=8"), ("noatime",)), "btrfs": (("-m", "single"), ("nodatacow",)),
               "jfs": (("-s", "8"), ("noatime",)), "reiserfs": (("-s", "4096"), ("notail",))}
    assert set(options) == set(KINDS)
    base = paper_stack("native")
    rates = {}
    for kind, (mkfs, mount) in options.items():
        argv = ["--fs", kind, "--files", "500", "--transactions", "2000"]
        argv += [f"--mkfs-options={' '.join(mkfs)}"] if mkfs else []
        argv += [f"--mount-options={','.join(mount)}"] if mount else []
        got = _cli_json(capsys, *argv)
        node = FileSystemNode(base.volume, kind=kind, mkfs_options=mkfs, mount_options=mount)
        want = predict(base.evolve(file_system=node), workload)
        assert got["read_throughput_bytes_per_s"] == want.read_throughput_bytes_per_s, kind
        assert got["write_throughput_bytes_per_s"] == want.write_throughput_bytes_per_s, kind
        assert got["elapsed_s"] == want.elapsed_s, kind
        rates[kind] = got["read_throughput_bytes_per_s"]
    # the options reached the model: btrfs without them (dup metadata, copy-on-write) predicts otherwise
    assert rates["btrfs"] != _cli_json(capsys, "--fs", "btrfs", "--files", "500", "--transactions",
                                       "2000")["read_throughput_bytes_per_s"]
    ext3 = _cli_json(capsys, "--files", "500", "--transactions", "2000", "--journal-mode", "ordered")
    for kind in ("ext4", "xfs", "btrfs"):
        plain = _cli_json(capsys, "--fs", kind, "--files", "500", "--transactions", "2000")
        assert plain["read_throughput_bytes_per_s"] != ext3["read_throughput_bytes_per_s"], kind
        assert plain["elapsed_s"] != ext3["elapsed_s"], kind
    # --journal-mode is data=MODE: the same prediction as the mount option
    assert _cli_json(capsys, "--fs", "ext4", "--journal-mode", "journal", "--files", "500", "--transactions",
                     "2000") == _cli_json(capsys, "--fs", "ext4", "--mount-options", "data=journal", "--files",
                                          "500", "--transactions", "2000")


@pytest.mark.parametrize("argv, message", [
    (["--fs", "xfs", "--journal-mode", "journal"], "--journal-mode journal: data=journal is not a mount option of xfs"),
    (["--fs", "ext2", "--journal-mode", "ordered"],
     "--journal-mode ordered: data=ordered is not a mount option of ext2"),
    (["--fs", "xfs", "--mount-options", "data=journal"], "--mount-options: data=journal is not a mount option of xfs"),
    (["--fs", "xfs", "--mkfs-options=-O extent"], "--mkfs-options: -O is not an option of mkfs.xfs"),
    (["--fs", "ext4", "--mkfs-options=-b 8192"],
     "--mkfs-options: block_size_bytes must be one of 1024, 2048, 4096 for ext4 (got 8192)"),
    (["--fs", "ext4", "--journal-mode", "journal", "--mount-options", "data=ordered"],
     "--journal-mode journal: --mount-options sets data= already; give one"),
])
def test_predict_cli_refuses_an_option_the_kind_lacks_in_one_line(capsys, argv, message):
    from diskmodel.calibrate import cli

    assert cli.main(["predict", *argv]) == 2
    err = capsys.readouterr().err
    assert err == f"diskmodel: error: {message}\n"


def test_the_equations_prediction_is_a_results_object_in_si_units(disk, counts):
    # the rich display said PostMark's 2^20-byte megabytes (17.34 where the CLI said 18.19 MB/s), and there was
    # no summary(), plot() or conf_int() as every other results object has
    import matplotlib

    matplotlib.use("Agg")
    p = predict(stack_on(disk, paper_stack("native", disk=disk).volume, FileSystem()), counts)
    frame = p.to_frame()
    assert frame.loc["read_throughput", "unit"] == "MB/s"
    assert frame.loc["read_throughput", "value"] == pytest.approx(p.read_throughput_bytes_per_s / 1e6)
    html = p._repr_html_()
    assert f"read {p.read_throughput_bytes_per_s / 1e6:.2f} MB/s" in html and "MB = 10^6 bytes" in html
    assert not re.search(r"\d\.\d+e[+-]\d", html), html
    assert p.summary().splitlines()[0].startswith("PostMark prediction (the paper's equations")
    assert p.plot().get_title().startswith("PostMark")
    with pytest.raises(ValueError, match="^conf_int: the paper's equations give a point prediction"):
        p.conf_int()


def test_python_predict_takes_the_names_the_command_line_takes():
    # test1..3 and the eight fio jobs were refused in Python ("'test1' is not one of postmark, fio, ...")
    from diskmodel.model.predict import BlockPrediction
    from diskmodel.model.predictions.workload import postmark_preset

    stack = paper_stack("native")
    assert predict(stack, "test1").elapsed_s == pytest.approx(predict(stack, postmark_preset("test1")).elapsed_s)
    assert isinstance(predict(stack, "randread_4k"), BlockPrediction)
    with pytest.raises(ValueError, match=r"^workload 'bogus': not one of test1, test2, test3, seqread_4k"):
        predict(stack, "bogus")
