"""A resident ptxopt for the drop-in: a per-user server on a Unix socket.

Each ``ptxopt-ptxas`` run is a new process; importing ptxopt costs more than
optimizing a typical kernel.  The first run starts this server in the background
(modules loaded once); later runs hand it their whole command line (the thin
clients) or their PTX (the drop-in in process), paying only a thin client's
start-up.  The server warms up
once, then forks a few worker processes that serve the requests (several builds,
``make -j``, run in parallel; a crash in a request ends only its worker, which is
replaced) and exits after ``PTXOPT_SERVER_IDLE`` seconds without a request
(default 300).

The client never depends on it: no server, a server that does not start, dies
mid-request or answers garbage all mean "do the work in this process".  An error
that ptxopt itself reports for the input comes back as :class:`RemoteError`, the
same as it would in process.

The socket lives in ``$PTXOPT_SERVER_DIR`` (default ``$XDG_RUNTIME_DIR/ptxopt`` or
``/tmp/ptxopt-$UID``, mode 0700) and is named after the interpreter and this
package's location and version, so a changed installation gets a fresh server.

Protocol: each message is a 4-byte big-endian length and a JSON object.  Request
``{"text", "name", "arch", "passes", "knobs"}``; reply ``{"ok": true, "text"}`` or
``{"ok": false, "error"}``.  The thin clients (``ptxopt-ptxas`` itself,
:mod:`ptxopt.thin_client`, and the native one, ``ptxopt/native/client.c``) send
instead a whole ptxas command line with its working directory, environment and
standard streams, and a worker runs the drop-in for it (:func:`run_for_client`).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from ptxopt.thin_client import REPLY_TIMEOUT, socket_path

DEFAULT_IDLE = 300.0
CONNECT_TIMEOUT = 2.0  # seconds to wait for a freshly started server


class RemoteError(Exception):
    """ptxopt failed on the input (reported by the server)."""


def _send(sock: socket.socket, obj: dict[str, Any]) -> None:
    data = json.dumps(obj).encode("utf-8")
    sock.sendall(struct.pack(">I", len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


def _recv(sock: socket.socket) -> dict[str, Any]:
    (n,) = struct.unpack(">I", _recv_exact(sock, 4))
    obj = json.loads(_recv_exact(sock, n).decode("utf-8"))
    if not isinstance(obj, dict):
        raise ValueError("bad message")
    return obj


# -- client ----------------------------------------------------------------------


def _connect(path: str) -> socket.socket | None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        s.close()
        return None
    return s


def idle_seconds() -> float:
    try:
        return float(os.environ.get("PTXOPT_SERVER_IDLE", DEFAULT_IDLE))
    except ValueError:
        return DEFAULT_IDLE


def start_server(path: str) -> None:
    """Start a server for ``path`` in the background (its own session, no output)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    cmd = [sys.executable, "-m", "ptxopt.server", "--socket", path, "--idle", str(idle_seconds())]
    subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def connect_or_start(path: str) -> socket.socket | None:
    s = _connect(path)
    if s is not None:
        return s
    import fcntl

    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    # one client starts the server; the others wait on the lock and then connect
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        s = _connect(path)
        if s is not None:
            return s
        start_server(path)
        deadline = time.monotonic() + CONNECT_TIMEOUT
        while time.monotonic() < deadline:
            time.sleep(0.01)
            s = _connect(path)
            if s is not None:
                return s
    return None


def request(
    text: str, name: str, arch: str | None, passes: str | None, knobs: list[str]
) -> str | None:
    """The optimized PTX from the server (started if need be); ``None`` if no server
    could do it (the caller then works in process); :class:`RemoteError` if ptxopt
    rejected the input."""
    try:
        path = socket_path()
        s = connect_or_start(path)
        if s is None:
            return None
        with s:
            s.settimeout(REPLY_TIMEOUT)
            msg = {"text": text, "name": name, "arch": arch, "passes": passes, "knobs": knobs}
            _send(s, msg)
            reply = _recv(s)
    except (OSError, ValueError, struct.error):
        return None
    if reply.get("ok") is True and isinstance(reply.get("text"), str):
        return str(reply["text"])
    if reply.get("ok") is False:
        raise RemoteError(str(reply.get("error", "ptxopt failed")))
    return None


def ping(path: str | None = None) -> int | None:
    """The pid of the server listening on ``path`` (default: this user's), or ``None``."""
    s = _connect(path or socket_path())
    if s is None:
        return None
    try:
        with s:
            s.settimeout(10)
            _send(s, {"op": "ping"})
            pid = _recv(s).get("pid")
    except (OSError, ValueError, struct.error):
        return None
    return pid if isinstance(pid, int) else None


# -- server ----------------------------------------------------------------------


def decode_client_request(payload: bytes) -> tuple[list[str], str, dict[str, str]]:
    """The arguments, working directory and environment of a native client's request
    (after its ``PTXC`` tag): each string a 4-byte big-endian length and its bytes."""
    pos = 4

    def number() -> int:
        nonlocal pos
        if pos + 4 > len(payload):
            raise ValueError("truncated request")
        (n,) = struct.unpack_from(">I", payload, pos)
        pos += 4
        return int(n)

    def string() -> str:
        nonlocal pos
        n = number()
        if pos + n > len(payload):
            raise ValueError("truncated request")
        s = payload[pos : pos + n].decode("utf-8", "surrogateescape")
        pos += n
        return s

    argv = [string() for _ in range(number())]
    cwd = string()
    env: dict[str, str] = {}
    for _ in range(number()):
        name, eq, value = string().partition("=")
        if eq:
            env[name] = value
    if pos != len(payload):
        raise ValueError("trailing bytes in request")
    return argv, cwd, env


def run_for_client(
    argv: list[str], cwd: str, env: dict[str, str], fds: list[int], answer: Callable[[int], None]
) -> None:
    """Run the drop-in on ``argv`` as the client would have: in its directory, with its
    environment, writing to its standard output and error (``fds``); the server itself
    is not asked again (``PTXOPT_SERVER=0``).  ``answer`` gets the exit status as soon
    as the client's streams are let go (the client exits on it); the worker's own
    streams come back before that, its environment and directory, and the removal of
    the run's temporary files, after."""
    from ptxopt import dropin

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    after: list[Callable[[], None]] = []
    try:
        try:
            os.dup2(fds[0], 1)
            os.dup2(fds[1], 2)
            set_environ(dict(env, PTXOPT_SERVER="0"))
            os.chdir(cwd)
            dropin.reset_warnings()
            code = dropin.run(argv, after)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
        answer(code)
    finally:
        for step in after:
            step()
        set_environ(saved_env)
        os.chdir(saved_cwd)


def set_environ(env: dict[str, str]) -> None:
    """Make ``os.environ`` equal to ``env``, changing only the variables that differ
    (a client's environment is mostly the server's: emptying and refilling it costs
    a system call per variable each way)."""
    current = os.environ
    for name in [n for n in current if n not in env]:
        del current[name]
    for name, value in env.items():
        if current.get(name) != value:
            current[name] = value


def _handle_client(conn: socket.socket, payload: bytes, fds: list[int]) -> None:
    """A native client's ptxas command line: ``PTXR`` and the exit status, or ``PTXF``
    (the client then works in process) when the request cannot be served.  The
    client's streams are closed here before either reply: a reader of its output
    (``make``, a pipe) sees the end of it only once every copy is closed."""
    answered = False

    def answer(code: int) -> None:
        nonlocal answered
        close()
        answered = True
        conn.sendall(b"PTXR" + struct.pack(">i", code))

    def close() -> None:
        while fds:
            os.close(fds.pop())

    try:
        if len(fds) != 2:
            raise ValueError("a client request carries its standard output and error")
        argv, cwd, env = decode_client_request(payload)
        if any(a.startswith("--ptxopt-") for a in argv):
            # ptxopt's own set-up commands (``--ptxopt-make-client DIR``): the client
            # runs them itself (a worker would hand them to ptxas as options)
            raise ValueError("a set-up command runs in the client's process")
        run_for_client(argv, cwd, env, fds, answer)
    except Exception:
        if not answered:
            close()
            conn.sendall(b"PTXF" + bytes(4))
    finally:
        close()


def _handle(conn: socket.socket) -> None:
    """Serve one request (in a worker)."""
    from ptxopt.dropin import optimize_text

    head, fds, _, _ = socket.recv_fds(conn, 4, 4)
    head += _recv_exact(conn, 4 - len(head)) if len(head) < 4 else b""
    (n,) = struct.unpack(">I", head)
    payload = _recv_exact(conn, n)
    if payload[:4] == b"PTXC":
        _handle_client(conn, payload, list(fds))
        return
    for fd in fds:
        os.close(fd)
    msg = json.loads(payload.decode("utf-8"))
    if not isinstance(msg, dict):
        raise ValueError("bad message")
    if msg.get("op") == "ping":
        _send(conn, {"ok": True, "pid": os.getppid(), "worker": os.getpid()})
        return
    if os.environ.get("PTXOPT_SERVER_TESTING") == "1" and msg.get("name") == "<crash>":
        os._exit(3)  # tests: a request that dies half way
    later: list[Callable[[], None]] = []  # the IR is taken apart once the reply is sent
    try:
        out = optimize_text(
            str(msg["text"]),
            str(msg.get("name") or "<input>"),
            msg.get("arch"),
            msg.get("passes"),
            [str(k) for k in msg.get("knobs") or []],
            later,
        )
        reply: dict[str, Any] = {"ok": True, "text": out}
    except Exception as e:
        reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    try:
        _send(conn, reply)
    finally:
        for step in later:
            step()


def warm_up() -> None:
    """Do, once in the server, what a worker's first request would otherwise do:
    import what the passes import on first use, fill the parser's and validator's
    caches, compile the regular expressions.  The bundled example goes through the
    default pipeline for an sm_80 and an sm_90 target; then the heap is frozen so
    that the workers' garbage collections do not walk (and copy) it."""
    import gc
    from importlib import resources

    from ptxopt.dropin import optimize_text

    try:
        text = resources.files("ptxopt").joinpath("examples/reduce.ptx").read_text()
        for arch in ("sm_80", "sm_90"):
            for passes in ("default", "none"):
                optimize_text(text, "<warm-up>", arch, passes, [])
    except Exception:
        pass  # a warm-up failure only costs speed
    gc.collect()
    gc.freeze()


def _bind(path: str) -> socket.socket | None:
    """Listen on ``path``; ``None`` if a live server already does."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if os.path.exists(path):
        probe = _connect(path)
        if probe is not None:
            probe.close()
            return None
        os.unlink(path)  # left by a server that died
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = os.path.join(os.path.dirname(path), f".{os.getpid()}.tmp")
    sock.bind(tmp)
    os.chmod(tmp, 0o600)
    sock.listen(64)
    os.replace(tmp, path)
    return sock


def worker_count() -> int:
    """Requests served at once: ``$PTXOPT_SERVER_WORKERS`` or the CPU count (>= 2)."""
    try:
        return max(1, int(os.environ["PTXOPT_SERVER_WORKERS"]))
    except (KeyError, ValueError):
        return max(2, os.cpu_count() or 1)


def _die_with_parent() -> None:
    """Ask Linux to end this worker when the server dies, even by SIGKILL (elsewhere
    the worker notices by polling its parent)."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _work(sock: socket.socket, parent: int, beat: int) -> None:
    """A worker: serve requests one after the other until the server goes away or
    :data:`WORKER_REQUESTS` are done (then the server starts a fresh one, so nothing
    a request leaves behind accumulates).  ``+``/``-`` on ``beat`` tell the server
    when a request starts and ends (its idle clock).  The cyclic garbage collector
    runs between requests, after the reply is sent, instead of in the middle of one:
    a request's module is garbage only once it is answered."""
    import gc

    _die_with_parent()
    gc.disable()
    sock.settimeout(0.2)
    served = 0
    while served < WORKER_REQUESTS and os.getppid() == parent:
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        os.write(beat, b"+")
        try:
            with conn:
                conn.settimeout(None)
                _handle(conn)
        except Exception:
            pass  # the client sees the connection close and works in process
        gc.collect()
        os.write(beat, b"-")
        served += 1


WORKER_REQUESTS = 500


def serve(path: str, idle: float) -> int:
    """Accept requests on ``path`` until ``idle`` seconds pass without one.

    The server warms up once, then forks :func:`worker_count` workers that take the
    connections themselves, each keeping what its requests warmed (a process per
    request would redo the first-run work of every input and copy the pages it
    touches).  A worker that dies -- a crash in a request -- is replaced."""
    import select
    import signal

    sock = _bind(path)
    if sock is None:
        return 0
    warm_up()
    ino = os.stat(path).st_ino
    parent = os.getpid()
    workers: dict[int, int] = {}  # pid -> read end of its beat pipe
    busy: dict[int, int] = {}  # read end -> requests in progress
    last = time.monotonic()

    def spawn() -> None:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(r)
                _work(sock, parent, w)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        workers[pid] = r
        busy[r] = 0

    try:
        for _ in range(worker_count()):
            spawn()
        while True:
            for pid in list(workers):
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done:  # finished its share or crashed: its request is over
                    r = workers.pop(pid)
                    busy.pop(r, None)
                    os.close(r)
                    spawn()
            ready, _, _ = select.select(list(busy), [], [], min(0.2, max(idle, 0.01)))
            for r in ready:
                data = os.read(r, 4096)
                busy[r] += data.count(b"+") - data.count(b"-")
                last = time.monotonic()
            if not any(busy.values()) and time.monotonic() - last > idle:
                break
            try:
                if os.stat(path).st_ino != ino:
                    break  # replaced by another server
            except FileNotFoundError:
                break
    finally:
        sock.close()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in workers:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        try:
            if os.stat(path).st_ino == ino:
                os.unlink(path)
        except FileNotFoundError:
            pass
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m ptxopt.server", description=__doc__)
    ap.add_argument("--socket", default=None, help="socket path (default: the per-user one)")
    ap.add_argument("--idle", type=float, default=None, help="exit after this many idle seconds")
    a = ap.parse_args(argv)
    return serve(a.socket or socket_path(), idle_seconds() if a.idle is None else a.idle)


if __name__ == "__main__":
    sys.exit(main())
