"""A small DiskSim model file's text for the readers' tests (tests/test_disksim_readers.py,
tests/test_disksim_parameters.py)."""


def model_text(mechanics: str, layout: str) -> str:
    """A small dm_disk: 1 surface, 10 cylinders of 100 sectors, with the given mechanics and layout."""
    return ("dm_disk M {\n  Block count = 1000,\n  Number of data surfaces = 1,\n  Number of cylinders = 10,\n"
            f"  Mechanical Model = dm_mech_g1 {{\n    Seek type = hpl,\n    Head switch time = 1.0,\n"
            f"    Rotation speed (in rpms) = 6000,\n    {mechanics}\n  }},\n"
            f"  Layout Model = {layout}\n}}\n")


G1_LAYOUT = ("dm_layout_g1 {\n    LBN-to-PBN mapping scheme = 0,\n    Sparing scheme used = 0,\n"
             "    Zones = [ dm_layout_g1_zone { First cylinder number = 0, Last cylinder number = 9,\n"
             "      Blocks per track = 100 } ]\n  }")
HPL = "HPL seek equation values = [ {}, 3.81, 0.33, 7.75, 0.0059, -1 ],"
