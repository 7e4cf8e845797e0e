"""Every step an argument vector, on the host and in the guest script; undos typed; no shell string run.

(a) Every node kind the plans build gives steps whose words are str, Ref or
Concat, and the guest script, parsed back line by line with ``shlex.split``
(an independent reader of sh words), gives the same words.
(b) Values full of shell metacharacters (mount options, mkfs options, names,
captured values) run nothing extra: on the host (a real loop device) and in
the rendered script run by the real ``/bin/sh``, a marker file is never made.
(c) A state file holding the old "command" kind is refused by cleanup, and its
command is not run.
"""
from __future__ import annotations

import dataclasses
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import require_root, require_tools
from diskmodel.calibrate.bench import host_executor as X
from diskmodel.calibrate.bench import provision as L
from diskmodel.calibrate.bench.layers_bench import with_member_delays
from diskmodel.calibrate.bench.steps import Concat, Ref, Step, render_step, render_undo, sh_word, words_of
from diskmodel.model.drive.drives import PresetDrive
from diskmodel.model.stacks.loop_file import LoopFile, nested_loop_files
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.stack import FileSystemNode, Stack, paper_stack
from diskmodel.model.stacks.thin import ThinVolume
from diskmodel.model.units import KIB, MIB
from diskmodel.model.stacks.volumes import Partition, StripedVolume

DISKS = tuple(PresetDrive("wd800bd", d) for d in ("sda", "sdb", "sdc", "sdd", "sde"))


def _members(n: int, size: int = 128 * MIB) -> tuple:
    return tuple(Partition(MIB, size, disk=d.name) for d in DISKS[:n])


def _stack(volume, n_disks: int = 1, kind: str = "ext3") -> Stack:
    return Stack(FileSystemNode(volume, kind=kind), DISKS[:n_disks])


def _plans() -> dict:
    """A plan of every node kind the builders know, and of a member under a dm-delay."""
    md5 = RaidArray("raid5", _members(3), tool="md", chunk_size_bytes=64 * KIB, array_size_bytes=2 * 127 * MIB)
    stacks = {
        "native": paper_stack("native", fs_size_bytes=64 * MIB),
        "lvm1": paper_stack("lvm1", fs_size_bytes=64 * MIB),
        "lvm2": paper_stack("lvm2", fs_size_bytes=64 * MIB),
        "striped": _stack(StripedVolume(_members(3, 40 * MIB), stripe_size_bytes=128 * KIB), 3),
        "md raid0": _stack(RaidArray("raid0", _members(2), tool="md", array_size_bytes=2 * 254 * 512 * KIB), 2),
        "md raid1": _stack(RaidArray("raid1", _members(2), tool="md", array_size_bytes=127 * MIB), 2),
        "md raid5": _stack(md5, 3),
        "lvm raid0": _stack(RaidArray("raid0", _members(2), tool="lvm", chunk_size_bytes=64 * KIB,
                                      array_size_bytes=2 * 124 * MIB), 2),
        "lvm raid1": _stack(RaidArray("raid1", _members(2), tool="lvm", array_size_bytes=120 * MIB), 2),
        "lvm raid6": _stack(RaidArray("raid6", _members(5), tool="lvm", chunk_size_bytes=64 * KIB,
                                      array_size_bytes=3 * 120 * MIB), 5),
        "btrfs raid1": _stack(RaidArray("raid1", _members(2, 256 * MIB), tool="btrfs"), 2, kind="btrfs"),
        "thin": _stack(ThinVolume(Partition(MIB, 256 * MIB), 128 * MIB, 512 * MIB, used_bytes=16 * MIB,
                                  metadata_size_bytes=4 * MIB)),
        "loop_file sparse": _stack(LoopFile(Partition(MIB, 256 * MIB), 200 * MIB)),
        "loop_file nested": _stack(nested_loop_files(Partition(MIB, 512 * MIB), 2, allocation="zero_filled")),
    }
    plans = {name: L.build_plan(stack, backing="/dev/vda", name_token="t") for name, stack in stacks.items()}
    plans["md raid5 in a run folder"] = L.build_plan(stacks["md raid5"], backing="/dev/vda", mount_dir="/run/r/mnt")
    plans["md raid5 on delayed members"] = with_member_delays(
        L.build_plan(stacks["md raid5"], backing="/dev/vda", file_system=False), {"sdb": {"delay_s": 0.008}})
    return plans


PLANS = _plans()


def _words(word) -> bool:
    if isinstance(word, Concat):
        return all(isinstance(p, (str, Ref)) for p in word.parts)
    return isinstance(word, (str, Ref))


def _step_lines(script: str) -> list[str]:
    """The line after each ``echo 'diskmodel: step N: ...'``: the step's own line."""
    lines = script.splitlines()
    return [lines[i + 1] for i, line in enumerate(lines) if re.match(r"^echo 'diskmodel: step \d+: ", line)]


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_step_is_words_and_the_guest_script_reads_back_as_the_same_words(name):
    plan = PLANS[name]
    assert plan.steps
    for step in plan.steps:
        assert isinstance(step.argv, tuple) and all(_words(w) for w in step.argv), step
        assert step.argv or step.action
        assert step.undo is None or (step.resource is not None and all(
            _words(w) for w in step.undo)), step
    script = plan.render_script("true")
    lines = _step_lines(script)
    assert len(lines) == len(plan.steps)
    for step, line in zip(plan.steps, lines):
        parsed = shlex.split(line)
        words = [words_of(w) for w in step.words()]
        head = {"diskmodel_check": 2, "diskmodel_wait": 2, "diskmodel_capture": 2, "diskmodel_run": 1}[parsed[0]]
        assert parsed[head:] == words, (line, words)
        if step.expect is not None:
            assert parsed[:2] == ["diskmodel_wait" if step.wait else "diskmodel_check", step.expect]
        elif step.capture and step.value is None:
            assert parsed[:2] == ["diskmodel_capture", step.capture]
        if step.undo is not None:
            assert shlex.split(render_undo(step)) == [words_of(w) for w in step.undo]
    # and the real shell accepts the whole script
    res = subprocess.run(["/bin/sh", "-n"], input=script, text=True, capture_output=True)
    assert res.returncode == 0, res.stderr


def test_a_step_of_shell_text_is_refused():
    with pytest.raises(ValueError, match="argv must be a tuple of words, not shell text"):
        Step("a shell line", "mount -o x /dev/loop0 /mnt")
    with pytest.raises(ValueError, match=r"argv\[1\]: a word must be a str, Ref or Concat, got 3"):
        Step("a number", ("sleep", 3))
    with pytest.raises(ValueError, match="resource kind must be one of"):
        Step("an undo command", ("true",), resource=("command", (("undo", "rm -rf /"),)))


# ---------------------------------------------------------------- metacharacters

def _hostile(marker: Path) -> list[str]:
    m = str(marker)
    return [f"errors=remount-ro;touch${{IFS}}{m}", f"compress=zstd$(touch${{IFS}}{m})", f"a`touch {m}`",
            f"a|touch {m}", f"a&touch {m}&", f"a\ntouch {m}", f"'; touch {m}; '", f'"; touch {m}; "',
            f"$(touch {m})", f"${{IFS}}; touch {m}"]


def test_the_guest_script_passes_hostile_values_as_single_words_and_runs_nothing_else(tmp_path):
    """Hostile literal words and hostile captured values, through the real /bin/sh: each arrives as one
    argument, byte for byte, in a step, in a check and in a typed undo; the marker is never made."""
    marker = tmp_path / "marker"
    out = tmp_path / "args"
    values = _hostile(marker)
    steps = []
    for i, value in enumerate(values):
        steps.append(Step(f"capture {i}", ("printf", "%s", value), capture=f"V{i}"))
        # the literal, the captured value and a Concat of both, as words of one argv
        steps.append(Step(f"use {i}", ("sh", "-c", 'for a in "$@"; do printf "%s\\0" "$a"; done >> "$0"', str(out),
                                       value, Ref(f"V{i}"), Concat(("x", Ref(f"V{i}"), value)))))
        steps.append(Step(f"check {i}", ("printf", "%s", Ref(f"V{i}")), expect=value))
    # a folder under a hostile name (relative: the script runs in tmp_path), removed by its typed undo
    name = "d;touch${IFS}marker2$(touch marker2)`touch marker2`|touch marker2&'\""
    steps.append(Step("name", ("printf", "%s", name), capture="N"))
    steps.append(Step("folder", ("mkdir", Ref("N")), resource=("dir", (("path", Ref("N")),))))
    steps.append(Step("the folder is there", ("test", "-d", name)))
    plan = L.StackPlan(name="hostile", fs_type="ext3", fs_size_bytes=0, backing="/dev/null", regions=(),
                       steps=tuple(steps), device="/dev/null", mount_var="V0")
    script = plan.render_script("true")
    res = subprocess.run(["/bin/sh", "-e", "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert not marker.exists() and not (tmp_path / "marker2").exists(), script
    assert res.returncode == 0, res.stderr
    got = out.read_text().split("\0")[:-1]
    want = []
    for value in values:
        want += [value, value, "x" + value + value]
    assert got == want
    assert "diskmodel: undo " in res.stderr and not (tmp_path / name).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["args"]
    # a check that does not hold stops the script with its status
    bad = L.StackPlan(name="bad", fs_type="ext3", fs_size_bytes=0, backing="/dev/null", regions=(),
                      steps=(Step("check", ("printf", "%s", "  9 "), expect="8"),), device="/dev/null",
                      mount_var="V0")
    res = subprocess.run(["/bin/sh", "-e", "-c", bad.render_script("echo body")], capture_output=True, text=True)
    assert res.returncode != 0 and "body" not in res.stdout and "printed '9', not '8'" in res.stderr


@pytest.mark.integration
@pytest.mark.slow
def test_hostile_options_and_names_on_a_real_loop_device_run_nothing_extra(tmp_path):
    """The host executor, on a real loop device: mkfs and mount get hostile options as single
    arguments (and refuse them), a hostile mount point is made and removed as itself; nothing else runs."""
    require_root()
    require_tools("losetup", "mkfs.ext3", "mount", "blockdev")
    from diskmodel.calibrate.harness.scratch import prepare_scratch

    marker = tmp_path / "marker"
    stack = paper_stack("native", fs_size_bytes=16 * MIB)
    with prepare_scratch(tmp_path / "s.img", L.backing_bytes_required(stack)) as scratch:
        for value in _hostile(marker):
            mount_dir = str(tmp_path / ("mnt" + value.replace("/", "_")))
            plan = L.build_plan(stack, backing=scratch.path, mount_dir=mount_dir, queue_defaults=True)
            steps = list(plan.steps)
            mkfs = next(i for i, s in enumerate(steps) if s.argv[0].startswith("mkfs."))
            mount = next(i for i, s in enumerate(steps) if s.argv[0] == "mount")
            # the option validation of the stack is bypassed: the steps are built directly
            ok_mkfs = steps[mkfs]
            steps[mkfs] = Step(ok_mkfs.description, (*ok_mkfs.argv[:-1], "-L", value[:16], ok_mkfs.argv[-1]))
            m = steps[mount]
            steps[mount] = Step(m.description, (*m.argv[:4], f"{value},nosuid,nodev", *m.argv[5:]),
                                resource=m.resource)
            hostile = dataclasses.replace(plan, steps=tuple(steps))
            ex = X.HostExecutor(hostile)
            with pytest.raises(X.LayoutError, match=r"step \d+ \(mount ext3\) failed"):
                ex.build()
            assert ex.report is not None and ex.report.left == []
            mkfs_args = next(h[1] for h in ex.history if h[1][0].startswith("mkfs."))
            assert mkfs_args[-3:-1] == ["-L", value[:16]]            # one argument, as given
            mount_args = next(h[1] for h in ex.history if h[1][0] == "mount")
            assert mount_args[4] == f"{value},nosuid,nodev" and mount_args[-1] == mount_dir
            assert not marker.exists(), value
            assert not Path(mount_dir).exists()
        assert subprocess.run(["losetup", "-j", scratch.path], capture_output=True, text=True).stdout == ""
    assert not marker.exists()


# ---------------------------------------------------------------- the state file

def test_a_state_file_with_a_command_resource_is_refused_by_cleanup_and_nothing_runs(tmp_path, monkeypatch, capsys):
    from diskmodel.calibrate import cli
    from diskmodel.calibrate.harness import runstate

    monkeypatch.setenv(runstate.RUN_DIR_ENV, str(tmp_path / "run"))
    root = runstate.run_root()
    marker = tmp_path / "marker"
    dead = subprocess.Popen(["true"])
    dead.wait()
    state = {"format": runstate.STATE_FORMAT, "format_version": runstate.STATE_FORMAT_VERSION,
             "run_id": "planted", "pid": dead.pid, "start_ticks": 1, "command": "planted", "started": 0,
             "resources": [{"id": 0, "kind": "command", "state": "created", "note": "",
                            "details": {"undo": f"touch {marker}", "env": {}}}]}
    path = root / "planted.json"
    path.write_text(json.dumps(state))
    assert cli.main(["cleanup"]) == 1
    out = capsys.readouterr().out
    refused = [line for line in out.splitlines() if "refused" in line]
    assert len(refused) == 1 and 'resource kind "command"' in refused[0] and "nothing was run" in refused[0]
    assert not marker.exists()
    assert path.exists()          # kept, for a person to look at
    cli.main(["cleanup", "--dry-run"])
    assert 'resource kind "command"' in capsys.readouterr().out
    assert not marker.exists()


def test_sh_word_is_the_one_rendering_of_a_word():
    assert sh_word("a b") == "'a b'" and sh_word(Ref("V")) == '"$V"'
    assert sh_word(Concat((Ref("M"), "/image.img"))) == '"$M"/image.img'
    assert shlex.split(sh_word(Concat(("0 ", Ref("S"), " delay ", Ref("D"), " 0 8")))) == ["0 $S delay $D 0 8"]
    assert render_step(Step("x", ("mount", "-o", "a;b", Ref("D"), Ref("M")))) == \
        "diskmodel_run mount -o 'a;b' \"$D\" \"$M\""
