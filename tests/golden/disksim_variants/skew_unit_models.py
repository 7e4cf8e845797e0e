"""The model files of this folder with g1 skews in other units (not run by the tests).

Each is a bundled drive's model file with its "Offset of first block", "Skew for track switch"
and "Skew for cylinder switch" rewritten, zone by zone, and a "Skew units" line added where DiskSim's
loader will read it (diskmodel/modules/layout_g1.modspec, layout_g1_zone.modspec). Usage: python
skew_unit_models.py (rewrites them).
"""
import re
from pathlib import Path

HERE = Path(__file__).parent
DRIVES = HERE.parents[2] / "data" / "disksim"
_ZONE = re.compile(r"dm_layout_g1_zone \{.*?\n\s*\}", re.S)
_SKEWED = ("Offset of first block", "Skew for track switch", "Skew for cylinder switch")


def _value(zone, key):
    return float(re.search(re.escape(key) + r"\s*=\s*([-0-9.e+]+)", zone).group(1))


def _set(zone, key, value):
    return re.sub(re.escape(key) + r"\s*=\s*[-0-9.e+]+", f"{key} = {value!r}", zone, count=1)


def _units_before(zone, key):
    """A zone's "Skew units = revolutions" line just before its *key* line."""
    line = re.search(r"\n(\s*)" + re.escape(key), zone)
    return zone[:line.start()] + f"\n{line.group(1)}Skew units = revolutions," + zone[line.start():]


def rewrite(text, zone_rewrite):
    zones = _ZONE.findall(text)
    for number, zone in enumerate(zones):
        text = text.replace(zone, zone_rewrite(number, zone), 1)
    return text


def whole_sectors(number, zone):
    """Each value k sectors as k / spt revolutions (the zones inherit the layout's unit)."""
    spt = _value(zone, "Blocks per track")
    for key in _SKEWED:
        zone = _set(zone, key, _value(zone, key) / spt)
    return zone


#: sector fractions added, zone by zone, to (offset, track skew, cylinder skew); a whole turn added
#: to one track skew (dm_angle_dtoi drops it), and a negative offset in another zone
_FRACTIONS = ((0.37, 0.5, 0.25), (0.9, 0.1, 0.75), (0.5, 0.33, 0.61), (0.05, 0.95, 0.5))


def fractions(number, zone):
    """Each zone's own "Skew units = revolutions" before its offset; the values (k + f) / spt."""
    spt = _value(zone, "Blocks per track")
    extra = _FRACTIONS[number % len(_FRACTIONS)]
    for key, f in zip(_SKEWED, extra):
        value = (_value(zone, key) + f) / spt
        if key == "Skew for track switch" and number == 1:
            value += 1.0
        if key == "Offset of first block" and number == 2:
            value = -value
        zone = _set(zone, key, value)
    return _units_before(zone, "Offset of first block")


def in_file_order(number, zone):
    """The zone's "Skew units = revolutions" after its track skew (kept in sectors) and before its
    cylinder skew (rewritten as (k + 0.5) / spt revolutions); the layout's own "Skew units =
    revolutions" (written after its Zones) reaches no zone."""
    spt = _value(zone, "Blocks per track")
    zone = _set(zone, "Skew for cylinder switch", (_value(zone, "Skew for cylinder switch") + 0.5) / spt)
    return _units_before(zone, "Skew for cylinder switch")


def write(name, drive, zone_rewrite, layout_units=None):
    source = next((DRIVES / drive).glob("*.model"))
    text = rewrite(source.read_text(), zone_rewrite)
    if layout_units == "before zones":
        text = re.sub(r"\n(\s*)Zones = \[", r"\n\1Skew units = revolutions,\n\1Zones = [", text, count=1)
    elif layout_units == "after zones":
        # the "]" closing the Zones list, after the last zone's block
        at = text.index("]", _ZONE.search(text, text.rindex("dm_layout_g1_zone {")).end())
        text = text[:at + 1] + ",\n      Skew units = revolutions" + text[at + 1:]
    (HERE / name).write_text(text)


if __name__ == "__main__":
    write("hp_c2247a_skews_in_revolutions.model", "hp_c2247a", whole_sectors, "before zones")
    write("hp_c2247a_skew_fractions.model", "hp_c2247a", fractions)
    write("hp_c2247a_skew_units_in_file_order.model", "hp_c2247a", in_file_order, "after zones")
    write("cheetah4LP_skew_fractions.model", "cheetah4LP", fractions)
