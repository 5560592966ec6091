"""The resident drop-in server (:mod:`ptxopt.server`): start on first use, reuse,
idle exit, a crash mid-request, concurrent clients, and the drop-in through it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import files
from pathlib import Path

import pytest

from ptxopt import server
from ptxopt.dropin import optimize_text
from tests.test_dropin import PTXAS, env_for, log_lines, write_dropin

PTX = (files("ptxopt") / "examples" / "reduce.ptx").read_text()


def wait_for(cond: object, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)  # ours only if started by this process
    except ChildProcessError:
        done = 0
    if done:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # the process may end and be reaped between the kill and the read
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


@pytest.fixture
def srv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private server directory; servers started there are stopped afterwards.  A
    server gets 30 s to come up instead of 2: on a loaded CI machine (every core busy
    with other tests) starting Python and its imports can take longer, and these tests
    are about what the server does, not how fast it starts (a client that gives up
    falls back to working in process, which test_server_that_cannot_start covers)."""
    d = tmp_path / "srv"
    monkeypatch.setattr(server, "CONNECT_TIMEOUT", 30.0)
    monkeypatch.setenv("PTXOPT_SERVER_DIR", str(d))
    monkeypatch.setenv("PTXOPT_SERVER_IDLE", "60")
    monkeypatch.delenv("PTXOPT_SERVER", raising=False)
    yield d
    pid = server.ping()
    if pid is not None:
        os.kill(pid, signal.SIGTERM)


def test_start_and_reuse(srv: Path) -> None:
    assert server.ping() is None and not srv.exists()
    want = optimize_text(PTX, "r.ptx", "sm_80", None, [])
    assert server.request(PTX, "r.ptx", "sm_80", None, []) == want
    pid = server.ping()
    assert pid is not None and alive(pid)
    assert Path(server.socket_path()).is_socket()
    assert oct(srv.stat().st_mode & 0o777) == "0o700"
    # the next requests go to the same server
    assert server.request(PTX, "r.ptx", "sm_80", "none", []) == optimize_text(
        PTX, "r.ptx", "sm_80", "none", []
    )
    assert server.ping() == pid


def test_input_errors_come_back(srv: Path) -> None:
    with pytest.raises(server.RemoteError, match="unknown modifier"):
        server.request(PTX.replace("mov.u32", "mov.u99", 1), "bad.ptx", None, None, [])
    with pytest.raises(server.RemoteError, match="unknown pass"):
        server.request(PTX, "r.ptx", None, "no-such-pass", [])
    assert server.ping() is not None


def test_idle_exit(srv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTXOPT_SERVER_IDLE", "0.5")
    assert server.request(PTX, "r.ptx", None, "none", []) is not None
    pid = server.ping()
    assert pid is not None
    assert wait_for(lambda: not alive(pid)), "the server did not exit when idle"
    assert not Path(server.socket_path()).exists()
    # and the next request starts a new one
    assert server.request(PTX, "r.ptx", None, "none", []) is not None
    assert server.ping() not in (None, pid)


def test_crash_mid_request(srv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTXOPT_SERVER_TESTING", "1")
    assert server.request(PTX, "<crash>", None, "none", []) is None  # caller works in process
    pid = server.ping()
    assert pid is not None and alive(pid)  # the request's child died, not the server
    assert server.request(PTX, "r.ptx", None, "none", []) is not None


def worker_pid() -> int:
    s = server._connect(server.socket_path())
    assert s is not None
    with s:
        server._send(s, {"op": "ping"})
        pid = server._recv(s)["worker"]
    assert isinstance(pid, int)
    return pid


def test_workers_are_reused_and_replaced(srv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One worker serves request after request (what it warmed stays warm); one that
    dies in a request is replaced, and the workers end with the server."""
    monkeypatch.setenv("PTXOPT_SERVER_WORKERS", "1")
    monkeypatch.setenv("PTXOPT_SERVER_TESTING", "1")
    assert server.request(PTX, "r.ptx", None, "none", []) is not None
    first = worker_pid()
    assert server.request(PTX, "r.ptx", None, None, []) is not None
    assert worker_pid() == first and alive(first)
    assert server.request(PTX, "<crash>", None, "none", []) is None
    assert wait_for(lambda: not alive(first))
    second = worker_pid()
    assert second != first
    pid = server.ping()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not alive(second)), "a worker outlived its server"


def test_stale_socket_and_dead_server(srv: Path) -> None:
    srv.mkdir(mode=0o700)
    path = server.socket_path()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()  # a socket file nobody listens on
    assert server.request(PTX, "r.ptx", None, "none", []) is not None
    pid = server.ping()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    # dead once nothing listens: its workers end on SIGTERM (PR_SET_PDEATHSIG), but a
    # worker frees its heap before its files are closed, and in between a connection
    # is accepted into a backlog nobody reads (a client there falls back to working in
    # process; "no answer to a ping" is not yet "dead")
    assert wait_for(lambda: refused(path))
    assert server.request(PTX, "r.ptx", None, "none", []) is not None


def refused(path: str) -> bool:
    """Nothing listens on ``path``."""
    s = server._connect(path)
    if s is None:
        return True
    s.close()
    return False


def test_server_that_cannot_start(srv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "start_server", lambda path: None)
    monkeypatch.setattr(server, "CONNECT_TIMEOUT", 0.2)
    assert server.request(PTX, "r.ptx", None, "none", []) is None


@pytest.mark.skipif(PTXAS is None, reason="no ptxas on PATH")
def test_concurrent_dropin_clients(tmp_path: Path, srv: Path) -> None:
    """make -j: many drop-in runs at once, one server, every cubin built."""
    dropin = write_dropin(tmp_path / "bin")
    src = tmp_path / "k.ptx"
    src.write_text(PTX)
    env = env_for(tmp_path, PTXOPT_SERVER="1", PTXOPT_SERVER_DIR=str(srv))

    def build(i: int) -> int:
        out = tmp_path / f"k{i}.cubin"
        cmd = [str(dropin), "-arch=sm_90", str(src), "-o", str(out)]
        return subprocess.run(cmd, env=env, timeout=300).returncode

    with ThreadPoolExecutor(6) as pool:
        codes = list(pool.map(build, range(6)))
    assert codes == [0] * 6
    assert all((tmp_path / f"k{i}.cubin").stat().st_size > 0 for i in range(6))
    assert log_lines(tmp_path) == [f"optimized {src}"] * 6
    socks = [p for p in srv.iterdir() if p.suffix == ".sock"]
    assert len(socks) == 1 and server.ping() is not None


def test_warm_up_loads_what_requests_use_before_any_fork() -> None:
    """The server runs the bundled example through the pipeline once before serving,
    so a forked child finds the passes' lazily imported modules loaded and the heap
    frozen (its collections skip the parent's objects)."""
    import sys

    code = (
        "import gc, sys\n"
        "from ptxopt import server\n"
        "before = {m for m in sys.modules if m.startswith('ptxopt.')}\n"
        "server.warm_up()\n"
        "after = {m for m in sys.modules if m.startswith('ptxopt.')}\n"
        "print(gc.get_freeze_count() > 0, sorted(after - before))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    frozen, _, loaded = done.stdout.partition(" ")
    assert frozen == "True"
    for module in ("ptxopt.pipeline", "ptxopt.ir.cssa", "ptxopt.analysis.divergence"):
        assert repr(module) in loaded


def test_set_environ_makes_the_environment_equal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker takes on each client's environment by changing only what differs
    (:func:`server.set_environ`), then puts its own back."""
    monkeypatch.setenv("PTXOPT_T_KEEP", "same")
    monkeypatch.setenv("PTXOPT_T_CHANGE", "old")
    monkeypatch.setenv("PTXOPT_T_DROP", "gone")
    monkeypatch.delenv("PTXOPT_T_NEW", raising=False)
    saved = dict(os.environ)
    client = {k: v for k, v in saved.items() if k != "PTXOPT_T_DROP"}
    client.update(PTXOPT_T_CHANGE="new", PTXOPT_T_NEW="1")
    try:
        server.set_environ(client)
        assert dict(os.environ) == client
        # the process's own environment, as a child sees it, not only the mapping
        got = subprocess.run(["env"], capture_output=True, text=True, check=True).stdout
        assert "PTXOPT_T_CHANGE=new\n" in got and "PTXOPT_T_NEW=1\n" in got
        assert "PTXOPT_T_DROP" not in got and "PTXOPT_T_KEEP=same\n" in got
    finally:
        server.set_environ(saved)
    assert dict(os.environ) == saved


def test_a_client_is_answered_before_the_worker_puts_itself_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """:func:`server.run_for_client` answers once ptxas is done and the client's
    streams are let go; the temporary copy is removed and the worker's directory and
    environment come back after the answer, before the call returns."""
    from tests.test_dropin import fake_ptxas

    temp = tmp_path / "tmp"
    temp.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "k.ptx").write_text(PTX)
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    fake = fake_ptxas(tmp_path / "fake", tmp_path / "seen.ptx", 0)
    monkeypatch.delenv("PTXOPT_T_CLIENT", raising=False)
    env = dict(os.environ, PTXOPT_PTXAS=str(fake), PTXOPT_PASSES="none", PTXOPT_T_CLIENT="1")
    here = os.getcwd()
    before = dict(os.environ)
    r, w = os.pipe()
    fds = [os.dup(w), os.dup(w)]
    seen: list[tuple[int, list[str], str, str | None, bytes]] = []

    def answer(code: int) -> None:
        # the worker has given back its standard streams: once the handler closes the
        # copies it was sent (as _handle_client does), the pipe reads to its end
        for fd in (w, *fds):
            os.close(fd)
        os.set_blocking(r, False)
        try:
            end = os.read(r, 1 << 16)  # b"": no writer is left
        except BlockingIOError:
            end = b"a writer is still open"
        os.close(r)
        temps = sorted(p.name for p in temp.iterdir())
        seen.append((code, temps, os.getcwd(), os.environ.get("PTXOPT_T_CLIENT"), end))

    server.run_for_client(["-arch=sm_80", "k.ptx", "-o", "k.cubin"], str(work), env, fds, answer)
    assert len(seen) == 1
    code, files_then, cwd_then, var_then, end = seen[0]
    assert code == 0 and end == b""
    assert len(files_then) == 1 and files_then[0].endswith("-k.ptx")  # still there
    assert cwd_then == str(work) and var_then == "1"  # the client's, still
    assert list(temp.iterdir()) == []
    assert os.getcwd() == here and dict(os.environ) == before
