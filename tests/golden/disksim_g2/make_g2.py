"""Regenerate the g2 golden data: DiskSim 4.0's g2 layout maps and per-request times.

Needs DiskSim 4.0 built as tests/golden/disksim_service_times/README.md says (here
/tmp/disksim-build: its diskmodel library, run_drive.sh and valid/statdefs); not run by
the tests (they only call :func:`make_folder`).
Usage: python make_g2.py [DISKSIM_BUILD_DIR]

1. g2_mapgen.c (beside this file), linked with DiskSim's libdiskmodel.a, writes the g2
   raw layout map of hp_c2247a's own g1 layout: every LBN through DiskSim's
   ``dm_translate_ltop``, runs on one track joined into extents (``hp_c2247a.g2map``).
2. :func:`odd_map` edits that map into layouts a g1 layout cannot express
   (:data:`ODD`; :func:`make_folder` applies them for a variant with ``"odd": true``): whole
   tracks moved to spare tracks of their zone, sectors left unmapped inside a track
   (listed as defects) with the blocks that no longer fit put on a spare track, a track
   whose first sectors are unmapped.
3. :func:`make_folder` writes a variant drive folder: the bundled drive with its
   ``dm_layout_g1`` replaced by a ``dm_layout_g2`` naming the map (zones: the g1
   zones' cylinders, blocks per track and skews, their first and last LBN read from
   the map).
4. DiskSim runs each variant (run_drive.sh) on the trace of variants.json: its
   per-request service times [ms] go to NAME.csv.
5. DiskSim's own LBN -> (cylinder, head, sector, angle, sectors per track, track
   boundaries) of blocks of the odd map (../disksim_mapdump.c) go to
   hp_c2247a_g2_odd_mapdump.csv.

DiskSim 4.0 as released cannot run a g2 layout in its disk controller:
layout_g2.c's ``track_boundaries`` is declared ``void`` though the layout
interface's slot returns ``dm_ptol_result_t``, and disk_buffer_seekdone
(src/disksim_diskctlr.c) asserts ``rv == DM_OK`` on what it returns (garbage:
"assertion failed ... rv == DM_OK" on the first request). :func:`patched_build`
copies the build and makes that function return DM_OK (:data:`PATCH`), nothing
else; the runs use the copy. The maps come from the unpatched build.
"""
import gzip
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _disksim_run import run_disksim  # noqa: E402

HERE = Path(__file__).parent
DRIVES = HERE.parents[2] / "data" / "disksim"
BUILD = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/disksim-build")
EXTENT = re.compile(r"lbn (\d+) --> cyl (\d+), head (\d+), sect (\d+), (\w+) (\d+)")

#: The edits of the odd map (each on a track of hp_c2247a's zones 0, 2 and 5, which
#: keep spare tracks at their end: sparing scheme 1): (what, cylinder, head, detail)
ODD = [
    ("move", 100, 5, (556, 3)),       # the track's blocks on spare track (556, 3) instead
    ("move", 101, 0, (556, 4)),       # the first track of a cylinder moved
    ("move", 1300, 12, (1517, 7)),    # the last track of a cylinder moved (zone 5)
    ("hole", 200, 7, (10, 3)),        # sectors 10..12 unmapped (defects); 3 blocks to a spare track
    ("hole", 800, 2, (0, 5)),         # sectors 0..4 unmapped: the track starts at sector 5 (zone 2)
    ("hole", 1310, 0, (71, 1)),       # the last sector unmapped (zone 5)
]


#: The one change to DiskSim 4.0 for the runs (diskmodel/layout_g2.c, track_boundaries)
PATCH = (("static void\ntrack_boundaries(", "static dm_ptol_result_t\ntrack_boundaries("),
         ("    } while((*l2 == DM_NX) && p2.sector);\n  }\n}",
          "    } while((*l2 == DM_NX) && p2.sector);\n  }\n  return DM_OK;\n}"))


def patched_build(build: Path, where: Path) -> Path:
    """A copy of the DiskSim build with :data:`PATCH` applied, diskmodel and disksim rebuilt."""
    copy = where / "disksim-g2fix"
    shutil.copytree(build, copy, symlinks=True)
    source = copy / "diskmodel" / "layout_g2.c"
    text = source.read_text()
    for old, new in PATCH:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    source.write_text(text)
    cc = "CC=gcc -m32 -fcommon -std=gnu89"
    subprocess.run(["make", "-C", str(copy / "diskmodel"), cc], check=True, capture_output=True)
    (copy / "src" / "disksim").unlink()
    subprocess.run(["make", "-C", str(copy / "src"), cc,
                    "LDFLAGS=-L. -ldisksim -L../diskmodel/lib -ldiskmodel -L../memsmodel/lib -lmemsmodel "
                    "-L../libparam/lib -lparam -L../libddbg/lib -lddbg -lm"], check=True, capture_output=True)
    return copy


def read_map(path: Path):
    lines = path.read_text().splitlines()
    extents = []
    for line in lines[3:]:
        m = EXTENT.fullmatch(line.strip())
        if m:
            lbn, cyl, head, sect, kind, n = m.groups()
            extents.append([int(lbn), int(cyl), int(head), int(sect), int(n) + (kind == "seqcnt")])
    return lines[:3], extents


def write_map(path: Path, header, extents, defects=()):
    body = [f"lbn {l} --> cyl {c}, head {h}, sect {s}, seqcnt {n - 1}" for l, c, h, s, n in extents]
    body += [f"Defect at cyl {c}, head {h}, sect {s}" for c, h, s in defects]
    path.write_text("\n".join(list(header) + body) + "\n")


def odd_map(header, extents):
    """The g1-equivalent map with the :data:`ODD` edits; LBNs renumbered in order."""
    spare_used = {}
    out, defects = [], []
    by_track = {(e[1], e[2]): e for e in extents}
    edits = {(c, h): (what, detail) for what, c, h, detail in ODD}
    for e in extents:
        lbn, c, h, s, n = e
        what, detail = edits.get((c, h), (None, None))
        if what == "move":
            assert detail not in by_track, detail
            out.append([0, detail[0], detail[1], s, n])
        elif what == "hole":
            first, count = detail
            assert s == 0 and first + count <= n, e
            if first:
                out.append([0, c, h, 0, first])
            rest = n - first - count
            if rest:
                out.append([0, c, h, first + count, rest])
            defects += [(c, h, k) for k in range(first, first + count)]
            spare = (ODD_SPARE[c // 500], 9)
            assert spare not in by_track and spare not in spare_used
            spare_used[spare] = True
            out.append([0, spare[0], spare[1], 0, count])
        else:
            out.append([0, c, h, s, n])
    lbn = 0
    for e in out:
        e[0] = lbn
        lbn += e[4]
    return out, defects


#: a spare track (cylinder, head 9) of the zone of each edited hole (by cylinder // 500)
ODD_SPARE = {0: 557, 1: 900, 2: 1518}


def _skews(zone_number, spt, zone_skew, track_skew, cylinder_skew):
    """A zone's skew lines with "Skew units = revolutions" where DiskSim's loader reads it in the
    file's order (``"skew_units": "in_file_order"``): in even zones after the zone skew (kept in
    sectors) and before the switch skews, (k + 0.5) / spt revolutions; in odd zones first, the
    zone skew too ((k + 0.25) / spt revolutions)."""
    def turns(k, f):
        return repr((float(k) + f) / int(spt))
    lines = ["Skew units = revolutions", f"Zone Skew = {turns(zone_skew, 0.25)}"] if zone_number % 2 else \
        [f"Zone Skew = {zone_skew}", "Skew units = revolutions"]
    return lines + [f"Skew for track switch = {turns(track_skew, 0.5)}",
                    f"Skew for cylinder switch = {turns(cylinder_skew, 0.5)}"]


def g2_model_text(model_text: str, map_name: str, extents, skew_units=None) -> str:
    """The .model with its dm_layout_g1 block replaced by a dm_layout_g2 naming *map_name*
    (the skews in sectors as the g1 zones', or in revolutions as :func:`_skews` writes them)."""
    start = model_text.index("Layout Model = dm_layout_g1")
    end = model_text.index("Mechanical Model")
    zones = re.findall(r"dm_layout_g1_zone \{(.*?)\n\s*\}", model_text[start:end], re.S)
    blocks = []
    for number, zone in enumerate(zones):
        def value(key):
            return re.search(re.escape(key) + r"\s*=\s*([-\d.]+)", zone).group(1)
        low, high = int(value("First cylinder number")), int(value("Last cylinder number"))
        lbns = [(l, l + n - 1) for l, c, _, _, n in extents if low <= c <= high]
        skews = [f"Zone Skew = {value('Offset of first block')}",
                 f"Skew for track switch = {value('Skew for track switch')}",
                 f"Skew for cylinder switch = {value('Skew for cylinder switch')}"]
        if skew_units == "in_file_order":
            skews = _skews(number, value("Blocks per track"), value("Offset of first block"),
                           value("Skew for track switch"), value("Skew for cylinder switch"))
        blocks.append("         dm_layout_g2_zone {\n"
                      f"            First cylinder number = {low},\n"
                      f"            Last cylinder number = {high},\n"
                      f"            First LBN = {min(a for a, _ in lbns)},\n"
                      f"            Last LBN = {max(b for _, b in lbns)},\n"
                      f"            Blocks per track = {value('Blocks per track')},\n"
                      + ",\n".join(f"            {line}" for line in skews) + "\n"
                      "         }")
    layout = ("Layout Model = dm_layout_g2 {\n"
              f"      Layout Map File = {map_name},\n"
              "      Zones = [\n" + ",\n".join(blocks) + "\n      ]\n   },\n   ")
    return model_text[:start] + layout + model_text[end:]


def make_folder(variant, where: Path) -> Path:
    """The variant's drive folder under *where*: the bundled drive, its layout the g2 map
    of this folder (stored gzipped; with the :data:`ODD` edits if the variant says so),
    its trace the variant's."""
    folder = where / variant["name"]
    shutil.copytree(DRIVES / variant["drive"], folder)
    map_name = variant["map"]
    (folder / map_name).write_bytes(gzip.decompress((HERE / "hp_c2247a.g2map.gz").read_bytes()))
    header, extents = read_map(folder / map_name)
    if variant["odd"]:
        extents, defects = odd_map(header, extents)
        write_map(folder / map_name, header, extents, defects)
    model = next(folder.glob("*.model"))
    model.write_text(g2_model_text(model.read_text(), map_name, extents, variant.get("skew_units")))
    if variant["trace"]:
        text = (HERE / variant["trace"]).read_text()
        if variant.get("reads_only"):
            text = re.sub(r"^W ", "R ", text, flags=re.M)
        next(folder.glob("*.trace")).write_text(text)
    return folder


def odd_trace(extents, count=3000, seed=5):
    """Requests touching the edited extents (and their neighbours) and elsewhere."""
    rng = random.Random(seed)
    total = extents[-1][0] + extents[-1][4]
    odd = [e for e in extents if (e[1], e[2]) in {(c, h) for _, c, h, _ in ODD}
           or e[1] in ODD_SPARE.values() or (e[1], e[2]) in {d for w, _, _, d in ODD if w == "move"}]
    lines = []
    for _ in range(count):
        if rng.random() < 0.8:
            e = rng.choice(odd)
            lbn = max(0, e[0] + rng.randint(-40, e[4] + 20))
        else:
            lbn = rng.randrange(total - 200)
        blocks = rng.choice((1, 2, 8, 16, 40, 100))
        lbn = min(lbn, total - blocks)
        op = "W" if rng.random() < 0.3 else "R"
        lines.append(f"{op} Miss {lbn} {blocks} 0.0 {rng.uniform(0, 20000):.1f}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    drive = DRIVES / "hp_c2247a"
    with tempfile.TemporaryDirectory() as tmp:
        tool = Path(tmp) / "g2_mapgen"
        inc = [f"-I{BUILD}/{d}/include" for d in ("diskmodel", "libparam", "libddbg")]
        subprocess.run(["gcc", "-m32", "-fcommon", "-std=gnu89", "-w", *inc, "-o", str(tool),
                        str(HERE / "g2_mapgen.c"), str(BUILD / "diskmodel/tests/driver.c"),
                        f"-L{BUILD}/diskmodel/lib", "-ldiskmodel", f"-L{BUILD}/libparam/lib", "-lparam",
                        f"-L{BUILD}/libddbg/lib", "-lddbg", "-lm"], check=True)
        out = Path(tmp) / "hp_c2247a.g2map"
        subprocess.run([str(tool), "hp_c2247a_validate.model", "HP_C2247A_validate_model", str(out)],
                       cwd=drive, check=True, capture_output=True)
        header, extents = read_map(out)
        (HERE / "hp_c2247a.g2map.gz").write_bytes(gzip.compress(out.read_bytes(), 9, mtime=0))
        odd, _ = odd_map(header, extents)
        (HERE / "synthetic_odd.trace").write_text(odd_trace(odd))
    with tempfile.TemporaryDirectory() as fixed_tmp:
        fixed = patched_build(BUILD, Path(fixed_tmp))
        # 5. DiskSim's own translation of blocks of the odd map (../disksim_mapdump.c: ltop, pbn_skew,
        #    sectors per track, track boundaries): the first and last block of every extent on or
        #    next to an edited track, and 300 blocks at random
        with tempfile.TemporaryDirectory() as tmp:
            variant = next(v for v in json.loads((HERE / "variants.json").read_text()) if v["odd"])
            folder = make_folder(variant, Path(tmp))
            tool = Path(tmp) / "mapdump"
            inc = [f"-I{fixed}/{d}/include" for d in ("diskmodel", "libparam", "libddbg")]
            subprocess.run(["gcc", "-m32", "-fcommon", "-std=gnu89", "-w", "-DLBA_t=int", *inc, "-o", str(tool),
                            str(HERE.parent / "disksim_mapdump.c"), str(fixed / "diskmodel/tests/driver.c"),
                            f"-L{fixed}/diskmodel/lib", "-ldiskmodel", f"-L{fixed}/libparam/lib", "-lparam",
                            f"-L{fixed}/libddbg/lib", "-lddbg", "-lm"], check=True)
            _, extents = read_map(folder / variant["map"])
            edited = {(c, h) for _, c, h, _ in ODD} | {d for w, _, _, d in ODD if w == "move"} \
                | {(c, 9) for c in ODD_SPARE.values()}
            near = [i for i, e in enumerate(extents) if (e[1], e[2]) in edited]
            pick = sorted({j for i in near for j in range(max(i - 2, 0), min(i + 3, len(extents)))})
            lbns = {b for j in pick for b in (extents[j][0], extents[j][0] + extents[j][4] - 1)}
            rng = random.Random(3)
            total = extents[-1][0] + extents[-1][4]
            lbns |= {rng.randrange(total) for _ in range(300)}
            (Path(tmp) / "lbns.txt").write_text("\n".join(map(str, sorted(lbns))) + "\n")
            out = subprocess.run([str(tool), next(folder.glob("*.model")).name, "HP_C2247A_validate_model",
                                  str(Path(tmp) / "lbns.txt")], cwd=folder, check=True, capture_output=True,
                                 text=True).stdout
            rows = [",".join(line.split()) for line in out.splitlines() if line[:1].isdigit()]
            (HERE / "hp_c2247a_g2_odd_mapdump.csv").write_text(
                "lbn,cyl,head,sector,skew_u32,spt,track_first_lbn,track_last_lbn\n" + "\n".join(rows) + "\n")
            print("mapdump", len(rows))
        for variant in json.loads((HERE / "variants.json").read_text()):
            with tempfile.TemporaryDirectory() as tmp:
                folder = make_folder(variant, Path(tmp))
                out = run_disksim(fixed, folder)
            rows = [f"{i},{float(v):.6f}" for i, v in enumerate(out[:variant["requests"]])]
            (HERE / f"{variant['name']}.csv").write_text("request,disksim_service_ms\n" + "\n".join(rows) + "\n")
            print(variant["name"], len(rows))
