"""Regenerate the golden per-request times of DiskSim 4.0 with g1_access_block's test mended
(README.md) for the drives and variants in variants.json.

Needs that build (DiskSim 4.0 built as tests/golden/disksim_full/README.md says, the one line
of diskmodel/mech_g1.c changed, its run_drive.sh and valid/statdefs); not run by the tests.
Usage: python make_fixed.py [BUILD_DIR [NAME ...]] (the NAMEs only, else every entry)
"""
import gzip
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "disksim_variants"))
from _disksim_run import run_listed_variants  # noqa: E402
from make_variants import make_folder  # noqa: E402

BUILD = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/ds3/ds40")

if __name__ == "__main__":
    for variant, out in run_listed_variants(HERE / "variants.json", BUILD, make_folder, set(sys.argv[2:])):
        with gzip.GzipFile(HERE / f"{variant['name']}.service_ms.txt.gz", "wb", mtime=0) as f:
            f.write("".join(f"{v!r}\n" for v in out).encode())
        print(variant["name"], len(out))
