"""benchmarks/dm_request_cost.py: the guest's fio output read right (fio 3.33's terse format v3)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import dm_request_cost as D  # noqa: E402

# fio 3.33, --output-format=terse --terse-version=3: 300 4 KiB requests (1200 KiB) each, psync
READ = "3;fio-3.33;c;0;0;1200;42857;10714;28;0;0;0.000000;0.000000;0;11196;90.261850;649.750765;1.000000%=0;5.000000%=1;10.000000%=37;20.000000%=43;30.000000%=45;40.000000%=45;50.000000%=46;60.000000%=47;70.000000%=48;80.000000%=50;90.000000%=54;95.000000%=71;99.000000%=242;99.500000%=1531;99.900000%=11206;99.950000%=11206;99.990000%=11206;0%=0;0%=0;0%=0;0;11196;90.316827;649.754839;0;0;0.000000%;0.000000;0.000000;0;0;0;0;0;0;0.000000;0.000000;0;0;0.000000;0.000000;1.000000%=0;5.000000%=0;10.000000%=0;20.000000%=0;30.000000%=0;40.000000%=0;50.000000%=0;60.000000%=0;70.000000%=0;80.000000%=0;90.000000%=0;95.000000%=0;99.000000%=0;99.500000%=0;99.900000%=0;99.950000%=0;99.990000%=0;0%=0;0%=0;0%=0;0;0;0.000000;0.000000;0;0;0.000000%;0.000000;0.000000;0.000000%;18.518519%;283;0;13;100.0%;0.0%;0.0%;0.0%;0.0%;0.0%;0.0%;5.67%;0.00%;0.33%;0.00%;71.33%;20.33%;1.33%;0.33%;0.00%;0.00%;0.33%;0.00%;0.00%;0.33%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;vda;0;0;0;0;0;0;0;0.00%"
WRITE = "3;fio-3.33;c;0;0;0;0;0;0;0;0;0.000000;0.000000;0;0;0.000000;0.000000;1.000000%=0;5.000000%=0;10.000000%=0;20.000000%=0;30.000000%=0;40.000000%=0;50.000000%=0;60.000000%=0;70.000000%=0;80.000000%=0;90.000000%=0;95.000000%=0;99.000000%=0;99.500000%=0;99.900000%=0;99.950000%=0;99.990000%=0;0%=0;0%=0;0%=0;0;0;0.000000;0.000000;0;0;0.000000%;0.000000;0.000000;1200;1200000;300000;1;0;0;0.000000;0.000000;0;28;1.608480;1.659488;1.000000%=0;5.000000%=0;10.000000%=1;20.000000%=1;30.000000%=1;40.000000%=1;50.000000%=1;60.000000%=1;70.000000%=1;80.000000%=1;90.000000%=2;95.000000%=2;99.000000%=4;99.500000%=6;99.900000%=28;99.950000%=28;99.990000%=28;0%=0;0%=0;0%=0;0;29;1.638950;1.703065;0;0;0.000000%;0.000000;0.000000;0.000000%;0.000000%;0;0;13;100.0%;0.0%;0.0%;0.0%;0.0%;0.0%;0.0%;89.00%;9.67%;1.00%;0.00%;0.33%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;0.00%;vda;0;0;0;0;0;0;0;0.00%"


def _terse_iops(line: str, kb_field: int, runtime_field: int) -> float:
    """IOPS from fio's own KiB moved and runtime [ms] (1-based fields): an independent reading."""
    fields = line.split(";")
    return float(fields[kb_field - 1]) / 4 / (float(fields[runtime_field - 1]) / 1000)


def test_the_iops_fields_are_the_ones_fio_counts():
    text = "\n".join(["noise", f"RESULT 1 raw randread {READ}", f"RESULT 1 raw randwrite {WRITE}",
                      f"RESULT 1 lin1 randread {READ}", f"RESULT 1 lin1 randwrite {WRITE}",
                      f"RESULT 1 cpu randread {READ}"])
    iops = D.parse_output(text)
    assert set(iops) == {(1, "raw", "randread"), (1, "raw", "randwrite"), (1, "lin1", "randread"),
                         (1, "lin1", "randwrite"), (1, "cpu", "randread")}
    assert iops[(1, "raw", "randread")] == pytest.approx(_terse_iops(READ, 6, 9), rel=0.01)
    assert iops[(1, "raw", "randwrite")] == pytest.approx(_terse_iops(WRITE, 47, 50), rel=0.01)


def test_the_cost_is_the_table_time_per_request_less_the_raw_one():
    iops = {(1, "raw", "randread"): 1000.0, (1, "lin1", "randread"): 800.0, (1, "lin2", "randread"): 500.0,
            (1, "raw", "randwrite"): 2000.0, (1, "lin1", "randwrite"): 1000.0, (1, "lin2", "randwrite"): 2000.0}
    per = D.costs(iops)
    assert per[("lin1", "randread")] == [pytest.approx(1 / 800 - 1 / 1000)]      # 250 us
    assert per[("lin2", "randread")] == [pytest.approx(1 / 500 - 1 / 1000)]      # 1 ms
    assert per[("lin1", "randwrite")] == [pytest.approx(1 / 1000 - 1 / 2000)]    # 500 us
    assert per[("lin2", "randwrite")] == [pytest.approx(0.0)]


def test_the_guest_script_builds_and_removes_both_tables():
    script = D.guest_script(3, 500)
    assert "dmsetup create lin1" in script and "dmsetup create lin2" in script
    assert script.index("dmsetup remove --noudevsync lin2") > script.index("done")
    assert "--number_ios=500" in script and "seq 1 3" in script
    assert "0 65536 linear" in script  # the two-segment table's halves of the 64 MiB image, in sectors
