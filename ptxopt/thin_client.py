"""The Python client of the resident server: ``ptxopt-ptxas-py``, and ``ptxopt-ptxas``
itself where the package was built without the native client (``setup.py``).

A run hands its whole ptxas command line to the server (:mod:`ptxopt.server`) the
way the native client does (``ptxopt/native/client.c``, the same ``PTXC`` request):
its arguments, working directory and environment, with its standard output and
error passed over the Unix socket; a server worker runs the drop-in for it, calling
the real ptxas and writing straight to this process's streams, and answers with
ptxas's exit status.  The run thus costs Python's own start-up and a request:
this module imports nothing beyond what the interpreter has loaded by then (the
socket and hash functions come from their C modules; ``socket``, ``hashlib``,
``subprocess`` and the drop-in itself would triple the start-up).

Whenever the server cannot serve the run -- none is running, ``PTXOPT_SERVER=0``,
a ``--ptxopt-...`` option, a request that fails or that the server declines --
the drop-in runs in this process (:func:`ptxopt.dropin.entry`), which starts a
server for the next run: the build never depends on the server.

This module also names the socket (:func:`socket_path`), for the server and both
clients, and makes the link by which an installed native client finds it
(:func:`link_client`).
"""

from __future__ import annotations

import os
import sys

# a server that does not answer within this many seconds (as the native client's)
REPLY_TIMEOUT = 600.0


def server_dir() -> str:
    """``$PTXOPT_SERVER_DIR``, else ``$XDG_RUNTIME_DIR/ptxopt``, else ``/tmp/ptxopt-$UID``."""
    given = os.environ.get("PTXOPT_SERVER_DIR")
    if given:
        return given
    run = os.environ.get("XDG_RUNTIME_DIR")
    if run and os.path.isdir(run):
        return os.path.join(run, "ptxopt")
    return os.path.join("/tmp", f"ptxopt-{os.getuid()}")


def _sha256_hex(data: bytes) -> str:
    try:  # the C module alone (hashlib would load OpenSSL: milliseconds of start-up)
        from _sha2 import sha256  # type: ignore[import-not-found]  # CPython 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef]
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment]
    return str(sha256(data).hexdigest())


def socket_path() -> str:
    """The server's socket: named after the interpreter and this package's location
    and version, so that a changed installation gets a fresh server."""
    from ptxopt import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    key = _sha256_hex(f"{sys.executable}\0{here}\0{__version__}".encode())[:12]
    # short: a Unix socket path has at most 107 bytes
    return os.path.join(server_dir(), f"s-{key}.sock")


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def client_request(argv: list[str], cwd: str, env: dict[bytes, bytes]) -> bytes:
    """The ``PTXC`` request of a command line (without its length prefix): the
    argument count and each argument, the working directory, the environment count
    and each ``NAME=VALUE``, every string a 4-byte big-endian length and its bytes."""
    parts = [b"PTXC", len(argv).to_bytes(4, "big")]
    parts += [_string(os.fsencode(a)) for a in argv]
    parts.append(_string(os.fsencode(cwd)))
    parts.append(len(env).to_bytes(4, "big"))
    parts += [_string(k + b"=" + v) for k, v in env.items()]
    return b"".join(parts)


def served(argv: list[str]) -> int | None:
    """Run ``ptxas argv`` through the server: ptxas's exit status, or ``None`` when
    the server did not serve it (nothing of the run has happened then, except when
    the server stopped answering half way: as the native client, the caller then
    runs it again in process)."""
    if os.environ.get("PTXOPT_SERVER") == "0" or any(a.startswith("--ptxopt-") for a in argv):
        return None
    import _socket

    try:
        env = dict(os.environb)
        # the worker's drop-in must not take this program for the real ptxas (nor
        # the native client that started it and named itself there)
        env.setdefault(b"PTXOPT_CLIENT_EXE", os.fsencode(os.path.realpath(sys.argv[0])))
        body = client_request(argv, os.getcwd(), env)
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.connect(socket_path())
            sock.settimeout(REPLY_TIMEOUT)
            # the first bytes carry this process's standard output and error
            fds = (1).to_bytes(4, sys.byteorder) + (2).to_bytes(4, sys.byteorder)
            head = len(body).to_bytes(4, "big")
            if sock.sendmsg([head], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)]) != 4:
                return None
            sock.sendall(body)
            reply = b""
            while len(reply) < 8:
                chunk = sock.recv(8 - len(reply))
                if not chunk:
                    return None
                reply += chunk
        finally:
            sock.close()
    except (OSError, ValueError):
        return None
    if reply[:4] != b"PTXR":
        return None  # "PTXF": the server asks this process to do the work
    return int.from_bytes(reply[4:], "big", signed=True) & 0xFF


def link_client(name: str) -> None:
    """Point ``name`` in the server's directory (``c-<16 hex digits>.sock``, the
    link an installed native client connects to, see ``ptxopt/native/client.c``) at
    this installation's socket.  A name of another form, or a failure, makes no
    link: the native client then keeps handing its runs to this program."""
    if len(name) != 23 or not name.startswith("c-") or not name.endswith(".sock"):
        return
    if any(c not in "0123456789abcdef" for c in name[2:18]):
        return
    target = socket_path()
    folder = os.path.dirname(target)
    link = os.path.join(folder, name)
    want = os.path.basename(target)
    try:
        if os.readlink(link) == want:
            return
    except OSError:
        pass
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        tmp = f"{link}.{os.getpid()}"
        os.symlink(want, tmp)
        os.replace(tmp, link)
    except OSError:
        pass


def entry() -> None:
    """The ``ptxopt-ptxas-py`` program: the run served by the resident server, else the
    drop-in in this process.  Started by the installed native client, which found no
    server behind its link (``PTXOPT_CLIENT_LINK``), it makes that link first."""
    link = os.environ.pop("PTXOPT_CLIENT_LINK", None)
    if link and os.environ.get("PTXOPT_SERVER") != "0":
        link_client(link)
    code = served(sys.argv[1:])
    if code is None:
        from ptxopt.dropin import entry as in_process

        in_process()
    os._exit(code if code is not None else 1)
