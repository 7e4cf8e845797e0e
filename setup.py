"""The build: setup.cfg holds the metadata; this adds one step to the wheel's build_py, the compile of
the simulator's numba kernels into the package (``diskmodel/model/_jit_cache/``, read at run time by
:mod:`diskmodel.model._jit`), so that an installed wheel's first simulation does not wait for the
compiler.

The compile runs in a subprocess on the built package (``build/lib``), with this interpreter: the
build environment must hold diskmodel's dependencies (numba, numpy, scipy, ...), as
``pip wheel --no-build-isolation`` in an environment with them gives. Without them the wheel is
built without compiled code, and says so; the first run then compiles (and says so too).
A checkout's own cache (``model/_jit_cache/``, filled by ``.ci/setup``) is copied in first: numba
keeps what is fresh for these sources, this CPU and this numba, and compiles the rest.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent

#: Run in the subprocess, given build/lib: import diskmodel from there only (not from an editable
#: install of the checkout, whose finder would come first), then compile.
_COMPILE = """
import sys
build_lib = sys.argv[1]
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("__editable__")]
sys.path.insert(0, build_lib)
import diskmodel.model._jit as jit_cache
if not jit_cache.__file__.startswith(build_lib):
    raise SystemExit(f"diskmodel imported from {jit_cache.__file__}, not from {build_lib}")
raise SystemExit(jit_cache.main([]))
"""


class BuildPyWithKernels(build_py):
    """build_py, then the kernels compiled into the built package (not for an editable install:
    ``.ci/setup`` compiles a checkout's in place)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("DISKMODEL_BUILD_WITHOUT_KERNELS") == "1":
            return
        build_lib = Path(self.build_lib).resolve()
        target = build_lib / "diskmodel" / "model" / "_jit_cache"
        seed = HERE / "model" / "_jit_cache"
        if seed.is_dir():
            # not the bounds-checked code (_jit_cache/boundscheck/), which only checks of the kernel run
            shutil.copytree(seed, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("boundscheck"))
        try:
            import numba  # noqa: F401  (only to know whether the compile can run here)
        except ImportError:
            print("diskmodel: numba is not importable in the build environment: the wheel holds no compiled "
                  "simulator, and its first simulation compiles it (build with --no-build-isolation in an "
                  "environment that has diskmodel's dependencies to ship it)", file=sys.stderr)
            return
        # numba's settings that the cache's key does not hold are left out (NUMBA_CPU_NAME stays: a
        # wheel for any x86-64 CPU is built with NUMBA_CPU_NAME=generic, and run with it too)
        env = {k: v for k, v in os.environ.items()
               if k not in ("NUMBA_CACHE_DIR", "NUMBA_BOUNDSCHECK", "NUMBA_OPT", "NUMBA_DEBUGINFO")}
        done = subprocess.run([sys.executable, "-c", _COMPILE, str(build_lib)], env=env, cwd=build_lib)
        if done.returncode != 0:
            raise SystemExit(f"diskmodel: compiling the simulator into {target} failed (exit {done.returncode})")


setup(cmdclass={"build_py": BuildPyWithKernels})
