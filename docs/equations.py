"""The equations of Djordjevic & Timcenko (2015), section 3, and the code that implements each.

``conf.py`` writes one page per entry of :data:`EQUATIONS` (``_generated/equations/eqN.md``).
Each ``implemented_by`` item is a Sphinx cross-reference (``{func}`...```, ``{class}`...```,
``{meth}`...```, ``{attr}`...```); ``conf.py`` turns an unresolved one on these pages into a
warning, so ``python -m sphinx -W`` fails when a function named here is renamed or moved.

The paper numbers its equations 1-8 and 10-12: there is no equation 9.
"""

PAPER = ("B. Djordjevic, V. Timcenko, *LVM in the Linux environment: performance examination*, "
         "Tehnički vjesnik 22(5), 2015, doi:10.17559/TV-20131113112940, section 3")

#: One dict per equation: number, title, the equation (LaTeX), its terms as
#: (symbol in LaTeX, meaning, unit), the implementing code (cross-references,
#: each with a note) and an optional remark on how the code reads the equation.
EQUATIONS = [
    {
        "number": 1,
        "title": "File-system access time",
        "latex": r"T_{FSA} = T_{DO} + T_{MO} + T_{FL} + T_{DFA} + T_J",
        "terms": [
            (r"T_{FSA}", "file-system access time: all the operations of the workload", "s"),
            (r"T_{DO}", "directory operations (lookups, creation and deletion of objects)", "s"),
            (r"T_{MO}", "metadata operations (inode reads and updates)", "s"),
            (r"T_{FL}", "free-list operations (block and inode bitmaps)", "s"),
            (r"T_{DFA}", "direct file access: reads and writes of file blocks", "s"),
            (r"T_J", "journaling: metadata written to the log and checkpointed", "s"),
        ],
        "implemented_by": [
            ("{func}`diskmodel.model.filesystems.filesystem.file_system_access_time`",
             "evaluates the five terms of a PostMark run and solves the elapsed time's fixed point"),
            ("{class}`diskmodel.model.filesystems.terms.FsaResult`",
             "holds the terms (``terms``) and the disk and cache time each is made of"),
            ("{attr}`diskmodel.model.filesystems.terms.FsaResult.total_s`",
             "the sum of the five terms (the serial model's elapsed time)"),
            ("{func}`diskmodel.model.filesystems.terms.plan_io`",
             "which I/Os each term issues"),
        ],
        "remark": ("With ``FileSystem(overlapped_writeback=True)`` (the pipeline model) the run takes "
                   "as long as its busiest stage instead of the sum of the terms "
                   "({meth}`diskmodel.model.filesystems.terms.FsaResult.pipeline_s`)."),
    },
    {
        "number": 2,
        "title": "Cache service time",
        "latex": r"T_{CST} \approx P_H \cdot \frac{S_R}{R_{CT}} + P_M \cdot T_{DST}",
        "terms": [
            (r"T_{CST}", "expected cache service time of a request", "s"),
            (r"P_H", "hit probability: hits over requests", "1 (0 to 1)"),
            (r"P_M", r"miss probability, $1 - P_H$", "1 (0 to 1)"),
            (r"S_R", "expected request size", "bytes"),
            (r"R_{CT}", "cache transfer rate (memory copy)", "bytes/s"),
            (r"T_{DST}", "disk service time of a miss (eq. 3)", "s"),
        ],
        "implemented_by": [
            ("{func}`diskmodel.model.filesystems.cache.cache_service_time_s`", "the equation itself"),
            ("{func}`diskmodel.model.filesystems.cache.hit_probability`",
             "a stated model of $P_H$ (random and sequential access with read-ahead)"),
            ("{class}`diskmodel.model.filesystems.filesystem.PageCache`",
             "the page cache's size and copy rate $R_{CT}$ that the file-system model uses"),
        ],
    },
    {
        "number": 3,
        "title": "Disk service time",
        "latex": r"T_{DST} = T_A + T_M + T_I",
        "terms": [
            (r"T_{DST}", "disk service time of one request", "s"),
            (r"T_A", "access time of the mechanism (eq. 4)", "s"),
            (r"T_M", "media transfer time (eq. 6)", "s"),
            (r"T_I", "interface time, request size over the host link's rate", "s"),
        ],
        "implemented_by": [
            ("{attr}`diskmodel.model.drive.disk.ServiceTime.total_s`", "the sum, term by term"),
            ("{func}`diskmodel.model.drive.disk.service_time_s`", "requests at given offsets, given where the head is"),
            ("{func}`diskmodel.model.drive.disk.expected_random_service_time_s`",
             "requests uniformly at random in a region"),
            ("{meth}`diskmodel.model.stacks.volume_on_disk.DiskRegion.service_time`",
             "requests in a region of a volume placed on its disk"),
        ],
    },
    {
        "number": 4,
        "title": "Access time",
        "latex": r"T_A = T_{CO} + T_{Seek} + T_{Settle} + T_{RL}",
        "terms": [
            (r"T_A", "access time of the mechanism", "s"),
            (r"T_{CO}", "command overhead: decoding the command (``Disk.command_overhead_s``)", "s"),
            (r"T_{Seek}", "seek time (eq. 7)", "s"),
            (r"T_{Settle}", "settle time of the head after a seek (``Disk.settle_s``)", "s"),
            (r"T_{RL}", "rotational latency (eq. 8)", "s"),
        ],
        "implemented_by": [
            ("{attr}`diskmodel.model.drive.disk.ServiceTime.access_s`", "the sum of the four terms"),
            ("{class}`diskmodel.model.drive.disk.Disk`", "the drive's parameters behind each term"),
        ],
    },
    {
        "number": 5,
        "title": "Disk service time, its three dominant terms",
        "latex": r"T_{DST} = T_{Seek} + T_{RL} + T_M",
        "terms": [
            (r"T_{DST}", "disk service time of one request", "s"),
            (r"T_{Seek}", "seek time (eq. 7)", "s"),
            (r"T_{RL}", "rotational latency (eq. 8)", "s"),
            (r"T_M", "media transfer time (eq. 6)", "s"),
        ],
        "implemented_by": [
            ("{class}`diskmodel.model.drive.disk.ServiceTime`",
             "keeps the three terms apart (``seek_s``, ``rotation_s``, ``transfer_s``)"),
        ],
        "remark": ("The code does not drop terms: it evaluates the full eqs. 3-4. Eq. 5 is their sum "
                   "with $T_{CO}$, $T_{Settle}$ and $T_I$ left out, i.e. "
                   "``seek_s + rotation_s + transfer_s`` of a {class}`~diskmodel.model.drive.disk.ServiceTime`."),
    },
    {
        "number": 6,
        "title": "Media transfer time",
        "latex": r"T_M = \frac{S_R}{R_T}",
        "terms": [
            (r"T_M", "time to transfer the request from or to the medium", "s"),
            (r"S_R", "request size", "bytes"),
            (r"R_T", "media transfer rate at the request's zone: sectors per track times "
                     "sector size over the rotation period", "bytes/s"),
        ],
        "implemented_by": [
            ("{meth}`diskmodel.model.drive.zones.Geometry.media_rate_bytes_per_s`", "$R_T$ at a byte offset (zoned)"),
            ("{meth}`diskmodel.model.drive.disk.Disk.media_rate_bytes_per_s`", "the same for a drive"),
            ("{func}`diskmodel.model.drive.disk.service_time_s`",
             "$T_M$ of each request (``ServiceTime.transfer_s``) at its zone's rate"),
            ("{func}`diskmodel.model.fit.zones.fit_zones`", "zones and their rates from a measured rate curve"),
        ],
    },
    {
        "number": 7,
        "title": "Seek time",
        "latex": (r"T_{Seek}[dis] = \begin{cases} 0 & dis = 0 \\ a + b\sqrt{dis} & 0 < dis \leq e \\ "
                  r"c + d \cdot dis & dis > e \end{cases}"),
        "terms": [
            (r"dis", "seek distance", "cylinders"),
            (r"a", "offset of the short-seek branch (``short_offset_s``)", "s"),
            (r"b", "square-root coefficient of the short-seek branch (``short_sqrt_s``)", r"s/$\sqrt{\text{cylinder}}$"),
            (r"c", "offset of the long-seek branch (``long_offset_s``)", "s"),
            (r"d", "slope of the long-seek branch (``long_per_cylinder_s``)", "s/cylinder"),
            (r"e", "knee: the last distance of the short branch (``knee_cylinders``)", "cylinders"),
        ],
        "implemented_by": [
            ("{func}`diskmodel.model.drive.seek.two_piece_seek_time_s`", "the equation itself"),
            ("{class}`diskmodel.model.drive.seek.TwoPieceSeek`", "its five parameters, as a drive's seek curve"),
            ("{func}`diskmodel.model.fit.seek.fit_two_piece`", "fits it to a measured seek curve"),
            ("{func}`diskmodel.model.fit.spec.solve_two_piece_seek_from_spec`",
             "solves it from a data sheet's track-to-track, average and full-stroke seeks"),
        ],
        "remark": ("{class}`~diskmodel.model.drive.seek.TableSeek` is the alternative: a measured curve, "
                   "interpolated monotonically."),
    },
    {
        "number": 8,
        "title": "Rotational latency",
        "latex": r"T_{RL} = \frac{R_{rotate}}{2}",
        "terms": [
            (r"T_{RL}", "expected rotational latency of a request uniformly placed on its track", "s"),
            (r"R_{rotate}", "time of one revolution, 60 / rpm", "s"),
        ],
        "implemented_by": [
            ("{func}`diskmodel.model.drive.rotation.mean_rotational_latency_s`", "the equation itself, from the rpm"),
            ("{func}`diskmodel.model.drive.rotation.rotation_period_s`", "$R_{rotate}$ from the rpm"),
            ("{attr}`diskmodel.model.drive.disk.Disk.mean_rotational_latency_s`", "the same for a drive"),
        ],
    },
    {
        "number": 10,
        "title": "LVM access time",
        "latex": r"T_{LVM\_AT} = T_{FSA} + T_{LVM\_MO}",
        "terms": [
            (r"T_{LVM\_AT}", "access time of a file system on an LVM logical volume", "s"),
            (r"T_{FSA}", "file-system access time (eq. 1)", "s"),
            (r"T_{LVM\_MO}", "LVM mapping overhead (eqs. 11-12)", "s"),
        ],
        "implemented_by": [
            ("{func}`diskmodel.model.predict.predict`",
             "PostMark throughput on a stack, with the breakdown by term"),
            ("{class}`diskmodel.model.predict.Prediction`", "``elapsed_s`` is $T_{LVM\\_AT}$ (or $T_{FSA}$ natively)"),
        ],
    },
    {
        "number": 11,
        "title": "LVM mapping overhead, what it depends on",
        "latex": r"T_{LVM\_MO} = f(N_D, N_{FS}, S_{FS}, L_{FS})",
        "terms": [
            (r"T_{LVM\_MO}", "LVM mapping overhead", "s"),
            (r"N_D", "number of disks", "count"),
            (r"N_{FS}", "number of file systems", "count"),
            (r"S_{FS}", "size of the file system", "bytes"),
            (r"L_{FS}", "location of the file system on the disk", "bytes (offset)"),
        ],
        "implemented_by": [
            ("{class}`diskmodel.model.stacks.volume_on_disk.VolumeOnDisk`",
             "the mechanistic part: the extents put the file system's I/O where they lie "
             "($S_{FS}$, $L_{FS}$)"),
            ("{class}`diskmodel.model.stacks.volumes.LinearVolume`",
             "its ``mapping_complexity``: segments of the mapping table times the number of disks $N_D$ "
             "(likewise {class}`~diskmodel.model.stacks.volumes.StripedVolume`; 0 for a "
             "{class}`~diskmodel.model.stacks.volumes.Partition`)"),
            ("{func}`diskmodel.model.stacks.lvm_mapping.lvm_mapping_overhead_s`", "the empirical part (eq. 12)"),
        ],
    },
    {
        "number": 12,
        "title": "LVM mapping overhead, its two components",
        "latex": r"T_{LVM\_MO} = f(MD_{mapping}, FB_{mapping})",
        "terms": [
            (r"T_{LVM\_MO}", "LVM mapping overhead (empirical part)", "s"),
            (r"MD_{mapping}", "cost per metadata I/O per unit of mapping complexity (``md_mapping_s``)", "s"),
            (r"FB_{mapping}", "cost per data-block I/O per unit of mapping complexity (``fb_mapping_s``)", "s"),
        ],
        "implemented_by": [
            ("{class}`diskmodel.model.stacks.lvm_mapping.LvmMapping`", "the two costs, with their bounds"),
            ("{func}`diskmodel.model.stacks.lvm_mapping.lvm_mapping_overhead_s`",
             "complexity times cost times count, per component"),
            ("{meth}`diskmodel.model.stacks.volume_on_disk.VolumeOnDisk.mapping_overhead_s`",
             "the same for a volume placed on its disk (0 on a partition)"),
            ("{func}`diskmodel.model.fit.postmark.fit_lvm_mapping`", "fits the costs to measured PostMark runs"),
        ],
    },
]


def page(equation: dict) -> str:
    """The MyST text of one equation's page."""
    n = equation["number"]
    lines = [
        f"(eq{n})=",
        f"# Eq. ({n}): {equation['title']}",
        "",
        # The paper's number as the tag (Sphinx would number every page's equation 1); nowrap, as
        # Sphinx puts a formula with "\\" in a split environment, which may not hold a tag.
        "```{math}",
        ":nowrap:",
        "",
        r"\begin{equation*}",
        equation["latex"] + rf" \tag{{{n}}}",
        r"\end{equation*}",
        "```",
        "",
        f"From {PAPER}.",
        "",
        "| term | meaning | unit |",
        "| --- | --- | --- |",
    ]
    lines += [f"| ${symbol}$ | {meaning} | {unit} |" for symbol, meaning, unit in equation["terms"]]
    lines += ["", "## Implemented by", ""]
    lines += [f"- {ref}: {note}" for ref, note in equation["implemented_by"]]
    if equation.get("remark"):
        lines += ["", equation["remark"]]
    return "\n".join(lines) + "\n"


def index() -> str:
    """The MyST text of the page listing the equations."""
    lines = [
        "# Equations of the paper",
        "",
        f"The model follows {PAPER}. Each page states one equation, its terms with their units, "
        "and the code that implements it. The paper numbers its equations 1-8 and 10-12: "
        "there is no equation 9.",
        "",
        "```{toctree}",
        ":maxdepth: 1",
        "",
    ]
    lines += [f"eq{equation['number']}" for equation in EQUATIONS]
    lines += ["```"]
    return "\n".join(lines) + "\n"
