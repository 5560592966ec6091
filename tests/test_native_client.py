"""The thin drop-in clients: the native one (``ptxopt/native/client.c``, built with the
machine's C compiler by ``--ptxopt-make-client``, or as ``pip install`` builds it,
finding its server and its fallback at run time), the Python one
(:mod:`ptxopt.thin_client`, ``ptxopt-ptxas-py``) and the ``ptxopt-ptxas`` that the
installed package has.  Each hands a whole ptxas command line to the resident server
-- arguments, working directory, environment, standard output and error -- and
becomes (or runs) the Python drop-in whenever the server cannot serve it.  The tests
that run a client run each of them.

A fake ptxas (``PTXOPT_PTXAS``) reports what it was given: its arguments, working
directory, one environment variable, and which process ran it (a server worker or
the client's own process)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import sys
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest

from ptxopt import server
from ptxopt.dropin import _c_string, _is_self, make_client, make_nvcc_dir
from ptxopt.thin_client import client_request, link_client, socket_path
from tests.test_dropin import env_for
from tests.test_server import wait_for

PTX = (files("ptxopt") / "examples" / "reduce.ptx").read_text()
CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
# a C compiler is on every CI machine (.ci/run sets CI=1): there the test must run
needs_cc = pytest.mark.skipif(
    CC is None and not os.environ.get("CI"), reason="no C compiler on this machine"
)

FAKE_PTXAS = f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
src = next(a for a in args if a.endswith(".ptx"))
text = open(src).read()
out = args[args.index("-o") + 1]
with open(out, "w") as f:
    f.write("cubin of " + str(len(text)) + " chars\\n")
print("fake-ptxas stdout", os.getcwd(), os.environ.get("FAKE_MARK", "-"))
print("fake-ptxas ppid", os.getppid())
print("fake-ptxas input", os.path.basename(src), file=sys.stderr)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


def encode_request(argv: list[str], cwd: str, env: dict[str, str]) -> bytes:
    def s(text: str) -> bytes:
        b = text.encode("utf-8", "surrogateescape")
        return struct.pack(">I", len(b)) + b

    parts = [b"PTXC", struct.pack(">I", len(argv)), *map(s, argv), s(cwd)]
    parts.append(struct.pack(">I", len(env)))
    parts.extend(s(f"{k}={v}") for k, v in env.items())
    return b"".join(parts)


def test_client_requests_decode() -> None:
    env = {"PATH": "/bin", "EMPTY": "", "EQ": "a=b"}
    argv = ["-arch=sm_80", "k é.ptx", ""]
    assert server.decode_client_request(encode_request(argv, "/w d", env)) == (argv, "/w d", env)
    whole = encode_request(argv, "/w", env)
    for cut in (5, 9, len(whole) - 1):
        with pytest.raises(ValueError, match="truncated"):
            server.decode_client_request(whole[:cut])
    with pytest.raises(ValueError, match="trailing"):
        server.decode_client_request(whole + b"x")
    # the Python client's request is the native client's
    benv = {k.encode(): v.encode() for k, v in env.items()}
    assert client_request(argv, "/w d", benv) == encode_request(argv, "/w d", env)


def test_c_string_literals() -> None:
    assert _c_string("/usr/bin/python3") == '"/usr/bin/python3"'
    assert _c_string('a"b\\c\né') == '"a\\042b\\134c\\012\\303\\251"'


def python_client(directory: Path, name: str = "ptxas") -> Path:
    """``directory/name``: a launcher of :mod:`ptxopt.thin_client`, as the
    ``ptxopt-ptxas-py`` console script is one."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(
        f"#!{sys.executable}\nimport sys\nfrom ptxopt.thin_client import entry\n"
        "if __name__ == '__main__':\n    sys.exit(entry())\n"
    )
    path.chmod(0o755)
    return path


def discovering_client(directory: Path) -> Path:
    """``directory/ptxas``: the native client as ``pip install`` builds it, with the
    Python client it falls back to beside it."""
    python_client(directory, "ptxopt-ptxas-py")
    return Path(make_client(str(directory), discover=True))


# the installed ptxopt-ptxas (the native client in a compiled build): CI installs it
INSTALLED = shutil.which("ptxopt-ptxas") if os.environ.get("PTXOPT_TEST_INSTALLED") else None
needs_installed = pytest.mark.skipif(
    INSTALLED is None, reason="runs on the installed package (PTXOPT_TEST_INSTALLED=1)"
)


@pytest.fixture(
    params=[
        pytest.param("native", marks=needs_cc),
        pytest.param("discovering", marks=needs_cc),
        "python",
        pytest.param("installed", marks=needs_installed),
    ]
)
def client(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, dict[str, str]]]:
    """A client in tmp_path/bin/ptxas (the native one built there, either way, the
    Python one, or a link to the installed ``ptxopt-ptxas``), an environment for it
    (a private server directory, the fake ptxas) and the server stopped afterwards."""
    srv = tmp_path / "srv"
    monkeypatch.setenv("PTXOPT_SERVER_DIR", str(srv))
    if request.param == "native":
        exe = Path(make_client(str(tmp_path / "bin")))
    elif request.param == "discovering":
        exe = discovering_client(tmp_path / "bin")
    elif request.param == "installed":
        assert INSTALLED is not None
        exe = tmp_path / "bin" / "ptxas"
        exe.parent.mkdir()
        exe.symlink_to(INSTALLED)
    else:
        exe = python_client(tmp_path / "bin")
    fake = tmp_path / "fake" / "ptxas"
    fake.parent.mkdir()
    fake.write_text(FAKE_PTXAS)
    fake.chmod(0o755)
    env = env_for(tmp_path, PTXOPT_SERVER_DIR=str(srv), PTXOPT_SERVER_IDLE="60")
    env.pop("PTXOPT_SERVER")
    env["PATH"] = f"{exe.parent}{os.pathsep}{fake.parent}{os.pathsep}{env['PATH']}"
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "k.ptx").write_text(PTX)
    yield exe, env
    pid = server.ping()
    if pid is not None:
        os.kill(pid, signal.SIGTERM)


def run_client(exe: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [str(exe), "-O3", "-arch=sm_80", "k.ptx", "-o", "k.cubin"]
    with subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as p:
        out, err = p.communicate(timeout=120)
        # (the client's pid on the first line: who ran the fake ptxas)
        return subprocess.CompletedProcess(cmd, p.returncode, f"client {p.pid}\n{out}", err)


# what the fake ptxas says it read: the drop-in's temporary copy of input 0 (k.ptx)
OPTIMIZED_COPY = re.compile(r"fake-ptxas input ptxopt-ptxas-0-\w+-k\.ptx\n")


def ptxas_parent(done: subprocess.CompletedProcess[str]) -> int:
    return int(done.stdout.split("fake-ptxas ppid ")[1].split()[0])


def client_pid(done: subprocess.CompletedProcess[str]) -> int:
    return int(done.stdout.split()[1])


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def test_served_by_the_server_in_the_clients_directory_and_streams(
    client: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    exe, env = client
    work = tmp_path / "work"
    env["FAKE_MARK"] = "marked"
    # no server yet: the client becomes the Python drop-in, which starts one
    first = run_client(exe, env, work)
    assert first.returncode == 0, first.stderr
    assert f"fake-ptxas stdout {work} marked" in first.stdout
    assert OPTIMIZED_COPY.search(first.stderr)
    assert wait_for(lambda: server.ping() is not None)
    pid = server.ping()
    assert pid is not None
    (work / "k.cubin").unlink()
    second = run_client(exe, env, work)
    assert second.returncode == 0, second.stderr
    assert f"fake-ptxas stdout {work} marked" in second.stdout
    assert OPTIMIZED_COPY.search(second.stderr)
    # the fake ptxas ran in a worker of that server, not in the client's process;
    # the first run was the client's own (it became, or ran, the Python drop-in)
    assert ptxas_parent(first) == client_pid(first)
    assert parent_of(ptxas_parent(second)) == pid
    assert (work / "k.cubin").read_text().startswith("cubin of")
    log = (tmp_path / "dropin.log").read_text().splitlines()
    assert log.count("optimized k.ptx") == 2


def test_exit_status_and_the_server_turned_off(
    client: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    exe, env = client
    work = tmp_path / "work"
    run_client(exe, env, work)
    assert wait_for(lambda: server.ping() is not None)
    env["FAKE_EXIT"] = "3"
    failed = run_client(exe, env, work)
    # ptxas "rejects" ptxopt's output, then the original: its status comes back
    assert failed.returncode == 3
    assert parent_of(ptxas_parent(failed)) == server.ping()
    assert failed.stderr.count("fake-ptxas input") == 2
    assert "assembling the original PTX" in failed.stderr
    env["FAKE_EXIT"] = "0"
    env["PTXOPT_SERVER"] = "0"
    here = run_client(exe, env, work)
    assert here.returncode == 0
    # in process: the fake ptxas is a child of the client's own process
    assert ptxas_parent(here) == client_pid(here)


def test_the_client_is_not_taken_for_the_real_ptxas(
    client: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The client named ptxas comes first on PATH; the drop-in behind it (in process
    or in the server) skips it and runs the fake ptxas after it."""
    exe, env = client
    assert shutil.which("ptxas", path=env["PATH"]) == str(exe)
    for server_on in ("0", "1", "1"):
        env["PTXOPT_SERVER"] = server_on
        done = run_client(exe, env, tmp_path / "work")
        assert done.returncode == 0 and "fake-ptxas stdout" in done.stdout, done.stderr


@needs_cc
def test_set_up_commands_run_in_process(
    client: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """``--ptxopt-make-client DIR`` through a client whose server runs: made in the
    client's own process (a worker would hand it to ptxas as an option)."""
    exe, env = client
    run_client(exe, env, tmp_path / "work")
    assert wait_for(lambda: server.ping() is not None)
    made = subprocess.run(
        [str(exe), "--ptxopt-make-client", str(tmp_path / "made")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "made" / "ptxas").read_bytes()[:4] == b"\x7fELF"


@pytest.mark.parametrize("client", ["python"], indirect=True)
def test_the_server_declines_set_up_commands(
    client: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """A client that sends ``--ptxopt-make-client DIR`` anyway (one built before the
    clients kept such runs to themselves) is told to work in process (``PTXF``),
    with nothing written to its streams; a ptxas command line is served."""
    import socket

    exe, env = client
    run_client(exe, env, tmp_path / "work")
    assert wait_for(lambda: server.ping() is not None)
    out = tmp_path / "out.txt"

    def reply(argv: list[str]) -> bytes:
        body = client_request(argv, str(tmp_path / "work"), {b"PATH": env["PATH"].encode()})
        with open(out, "w") as f, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(socket_path())
            socket.send_fds(s, [len(body).to_bytes(4, "big")], [f.fileno(), f.fileno()])
            s.sendall(body)
            got = b""
            while len(got) < 8:
                chunk = s.recv(8 - len(got))
                assert chunk, "the server closed the connection without a reply"
                got += chunk
        return got

    assert reply(["--ptxopt-make-client", str(tmp_path / "made")]) == b"PTXF" + bytes(4)
    assert not (tmp_path / "made").exists() and out.read_text() == ""
    assert reply(["--version"])[:4] == b"PTXR"


@needs_cc
def test_nvcc_dir_uses_the_native_client(tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    make_nvcc_dir(str(tmp_path / "n"))
    shim = tmp_path / "n" / "shim" / "ptxas"
    assert not shim.is_symlink() and shim.read_bytes()[:4] == b"\x7fELF"
    make_nvcc_dir(str(tmp_path / "p"), native=False)
    assert (tmp_path / "p" / "shim" / "ptxas").is_symlink()


@needs_cc
@pytest.mark.slow
def test_triton_through_the_native_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton's ptxas variables pointing at the native client: every kernel of both
    targets is optimized (the first run starts the server, the others use it)."""
    pytest.importorskip("triton")
    from tests.test_dropin import log_lines
    from tests.test_triton import KERNELS, compile_kernels

    srv = tmp_path / "srv"
    monkeypatch.setenv("PTXOPT_SERVER_DIR", str(srv))
    exe = make_client(str(tmp_path / "bin"))
    env = env_for(
        tmp_path,
        PTXOPT_SERVER_DIR=str(srv),
        PTXOPT_SERVER_IDLE="60",
        TRITON_PTXAS_PATH=exe,
        TRITON_PTXAS_BLACKWELL_PATH=exe,
    )
    env.pop("PTXOPT_SERVER")
    try:
        compile_kernels(tmp_path, env)
        lines = log_lines(tmp_path)
        assert len(lines) == 2 * len(KERNELS) and all(ln.startswith("optimized ") for ln in lines)
        assert server.ping() is not None
    finally:
        pid = server.ping()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)


@pytest.mark.parametrize("client", ["discovering"], indirect=True)
def test_the_discovering_client_links_to_its_server(
    client: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The installed client's first run finds no link and hands the run to the Python
    client beside it, which makes the link to its server's socket; a link left
    pointing at a socket that is gone is made again; the Python client makes no link
    of a name that is not one."""
    exe, env = client
    srv, work = tmp_path / "srv", tmp_path / "work"
    want = os.path.basename(socket_path())
    first = run_client(exe, env, work)
    assert first.returncode == 0, first.stderr
    links = [p for p in srv.iterdir() if p.name.startswith("c-")]
    assert len(links) == 1 and os.readlink(links[0]) == want
    assert re.fullmatch(r"c-[0-9a-f]{16}\.sock", links[0].name)
    assert wait_for(lambda: server.ping() is not None)
    served = run_client(exe, env, work)
    assert parent_of(ptxas_parent(served)) == server.ping()
    # a stale link: the run goes to the Python client, which mends it and is served
    links[0].unlink()
    links[0].symlink_to("s-000000000000.sock")
    again = run_client(exe, env, work)
    assert again.returncode == 0 and parent_of(ptxas_parent(again)) == server.ping()
    assert os.readlink(links[0]) == want
    assert parent_of(ptxas_parent(run_client(exe, env, work))) == server.ping()
    # the link's name is the client's own (its path and ptxopt's version)
    run_client(discovering_client(tmp_path / "bin2"), env, work)
    assert len([p for p in srv.iterdir() if p.name.startswith("c-")]) == 2
    for bad in ("c-0123.sock", "s-0123456789abcdef.sock", "c-0123456789abcdeg.sock"):
        link_client(bad)
        assert not (srv / bad).exists() and not (srv / bad).is_symlink()
    link_client("c-0123456789abcdef.sock")
    assert os.readlink(srv / "c-0123456789abcdef.sock") == want


@needs_cc
def test_every_native_client_is_known_as_ptxopt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A native client found on PATH as ptxas is not the real ptxas, whichever program
    asks (not only the one it handed its run to: ``PTXOPT_CLIENT_EXE``)."""
    monkeypatch.delenv("PTXOPT_CLIENT_EXE", raising=False)
    for exe in (make_client(str(tmp_path / "a")), discovering_client(tmp_path / "b")):
        assert _is_self(str(exe))
    plain = tmp_path / "plain.c"
    plain.write_text("int main(void) { return 0; }\n")
    assert CC is not None
    subprocess.run([CC, str(plain), "-o", str(tmp_path / "plain")], check=True)
    assert not _is_self(str(tmp_path / "plain"))


@needs_installed
def test_the_installed_ptxopt_ptxas_is_the_build_s_client() -> None:
    """A compiled build installs the native client as ptxopt-ptxas, with the Python
    client beside it; a pure one the Python client's script."""
    assert INSTALLED is not None
    head = Path(INSTALLED).read_bytes()[:4096]
    beside = Path(INSTALLED).parent / "ptxopt-ptxas-py"
    assert beside.is_file() and b"ptxopt.thin_client" in beside.read_bytes()[:2048]
    if os.environ.get("PTXOPT_EXPECT_BUILD") == "compiled":
        assert head.startswith(b"\x7fELF"), "the compiled build's ptxopt-ptxas is not native"
    elif os.environ.get("PTXOPT_EXPECT_BUILD") == "pure":
        assert head.startswith(b"#!") and b"ptxopt.thin_client" in head
