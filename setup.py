"""Build hook: the metadata lives in pyproject.toml; this only adds the compiled
front end (``ptxopt/accel.py`` lists the modules and says when they stay Python)."""

from __future__ import annotations

import atexit
import os
import runpy
import shutil
import sys
import tempfile

from setuptools import setup

# the commands that build the package's files; metadata queries and editable
# installs (whose modules must stay the files a developer edits) compile nothing
_BUILDS = {"bdist_wheel", "build", "build_ext", "install"}
# a fresh build directory each time: a build/ left in the checkout by an earlier
# compiled build would otherwise put its extensions into a pure one
_WORK = tempfile.mkdtemp(prefix="ptxopt-build-")
atexit.register(shutil.rmtree, _WORK, True)


def _extensions() -> list[object]:
    if os.environ.get("PTXOPT_PURE") == "1" or not _BUILDS.intersection(sys.argv[1:]):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # no mypy in the build environment: pure Python
        return []
    here = os.path.dirname(os.path.abspath(__file__))
    names = runpy.run_path(os.path.join(here, "ptxopt", "accel.py"))["COMPILED"]
    paths = [os.path.join("ptxopt", *n.split(".")[1:]) + ".py" for n in names]
    try:
        # (the generated C goes to build/ in the checkout: sources must be relative)
        exts = mypycify(paths, opt_level="3", group_name="ptxopt")
    except (Exception, SystemExit) as e:  # mypyc refused (its errors exit): no compiling
        print(f"ptxopt: front end not compiled ({type(e).__name__}: {e})", file=sys.stderr)
        return []
    for ext in exts:
        ext.optional = True  # no C compiler: the modules stay Python
    return list(exts)


setup(ext_modules=_extensions(), options={"build": {"build_base": os.path.join(_WORK, "b")}})
