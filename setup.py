"""Build hook: the metadata lives in pyproject.toml; this only adds the compiled
front end (``ptxopt/accel.py`` lists the modules and says when they stay Python) and
the ``ptxopt-ptxas`` program: the native client (``ptxopt/native/client.c``) where
the build compiles, else the Python client's script."""

from __future__ import annotations

import atexit
import hashlib
import os
import platform
import re
import runpy
import shutil
import subprocess
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


def _build_base(compiling: bool) -> str:
    """A fresh directory; or, for a compiled build with ``PTXOPT_BUILD_CACHE=DIR``
    (opt-in: CI installs one tree three times), ``DIR/<key>``, where ``<key>`` hashes
    every file of the package, the build files, Python, mypy and the compiler settings
    (``CC``, ``CFLAGS``, ``LDFLAGS``): a later build of the same tree finds its objects
    up to date there and compiles nothing."""
    cache = os.environ.get("PTXOPT_BUILD_CACHE")
    if not (compiling and cache):
        return os.path.join(_WORK, "b")
    from mypy.version import __version__ as mypy_version

    here = os.path.dirname(os.path.abspath(__file__))
    env = "\0".join(os.environ.get(k, "") for k in ("CC", "CFLAGS", "LDFLAGS"))
    h = hashlib.sha256(f"{sys.version}\0{platform.platform()}\0{mypy_version}\0{env}".encode())
    files = [os.path.join(here, n) for n in ("setup.py", "pyproject.toml")]
    for root, dirs, names in os.walk(os.path.join(here, "ptxopt")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [os.path.join(root, n) for n in sorted(names) if not n.endswith((".pyc", ".so"))]
    for path in files:
        with open(path, "rb") as f:
            h.update(os.path.relpath(path, here).encode() + b"\0" + f.read() + b"\0")
    return os.path.join(os.path.abspath(cache), h.hexdigest()[:16])


def _native_client() -> str | None:
    """``ptxopt-ptxas`` as the native client, built into ``build/`` for a build that
    is not pure-Python: it finds its server and its Python fallback at run time (the
    wheel may be installed anywhere); ``None`` for a pure or editable build, or when
    there is no C compiler or it fails."""
    if os.environ.get("PTXOPT_PURE") == "1" or not _BUILDS.intersection(sys.argv[1:]):
        return None
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "ptxopt", "__init__.py"), encoding="utf-8") as f:
        version = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if version is None:
        return None
    # (relative to the checkout, as setup() wants every path)
    out = "build/native/ptxopt-ptxas"
    os.makedirs(os.path.join(here, "build", "native"), exist_ok=True)
    src = "ptxopt/native/client.c"
    # the flags of ptxopt.dropin.make_client(discover=True), which the tests build with
    # (the package cannot be imported here: its dependencies are not installed yet)
    flags = ["-O2", "-std=gnu11", "-DPTXOPT_DISCOVER", f'-DPTXOPT_VERSION="{version.group(1)}"']
    cmd = [cc, *flags, src, "-o", out]
    done = subprocess.run(cmd, cwd=here, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"ptxopt: no native ptxopt-ptxas ({done.stderr.strip()[:200]})", file=sys.stderr)
        return None
    os.chmod(os.path.join(here, out), 0o755)
    return out


_EXTENSIONS = _extensions()
_CLIENT = _native_client()
setup(
    ext_modules=_EXTENSIONS,
    options={"build": {"build_base": _build_base(bool(_EXTENSIONS))}},
    # the native program beside the scripts; without it, the Python client's script
    data_files=[("bin", [_CLIENT])] if _CLIENT else [],
    scripts=[] if _CLIENT else ["ptxopt/native/ptxopt-ptxas"],
)
