"""Regenerate the golden per-request times of DiskSim 4.0 for the variants in variants.json.

Needs DiskSim 4.0 built as tests/golden/disksim_service_times/README.md says (here
/tmp/disksim-build, its run_drive.sh and valid/statdefs); not run by the tests.
Usage: python make_variants.py [DISKSIM_BUILD_DIR [NAME ...]] (the NAMEs only, else every variant)
"""
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _disksim_run import run_listed_variants  # noqa: E402

HERE = Path(__file__).parent
DRIVES = HERE.parents[2] / "data" / "disksim"
BUILD = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/disksim-build")


def _edit(folder: Path, pattern: str, edits) -> None:
    """Apply literal (old, new) edits, each once, to the folder's file matching *pattern*."""
    for old, new in edits:
        path = next(folder.glob(pattern))
        text = path.read_text()
        assert old in text, old
        path.write_text(text.replace(old, new, 1))


def make_folder(variant, where: Path) -> Path:
    folder = where / variant["name"]
    shutil.copytree(DRIVES / variant["drive"], folder)
    specs = next(folder.glob("*.diskspecs"))
    text = specs.read_text()
    for key, value in variant["changes"].items():
        pattern = re.compile(r"^(\s*)" + re.escape(key) + r"\s*=\s*[^,\n]*,", re.M)
        assert pattern.search(text), key
        text = pattern.sub(lambda m: f"{m.group(1)}{key} = {value},", text, count=1)
    specs.write_text(text)
    if variant.get("model"):
        # a model file written for the variant (skew_unit_models.py) in place of the drive's
        shutil.copy(HERE / variant["model"], next(folder.glob("*.model")))
    # literal edits of the model file (the mechanics and layout are not key = value lines alone)
    _edit(folder, "*.model", variant.get("model_edits", []))
    if variant.get("seek"):
        # a seek file written for the variant in place of the drive's
        shutil.copy(HERE / variant["seek"], next(folder.glob("*.seek")))
    # literal edits of the seek table, and of the .parv (its driver, buses and controller)
    _edit(folder, "*.seek", variant.get("seek_edits", []))
    _edit(folder, "*.parv", variant.get("parv_edits", []))
    if variant["trace"]:
        shutil.copy(HERE / variant["trace"], next(folder.glob("*.trace")))
    return folder


if __name__ == "__main__":
    for variant, out in run_listed_variants(HERE / "variants.json", BUILD, make_folder, set(sys.argv[2:])):
        rows = [f"{i},{float(v):.6f}" for i, v in enumerate(out[:variant["requests"]])]
        (HERE / f"{variant['name']}.csv").write_text("request,disksim_service_ms\n" + "\n".join(rows) + "\n")
        print(variant["name"], len(rows))
