/*
 * ptxopt-ptxas as a native program: the thin client of ptxopt's resident server.
 *
 * Built by `ptxopt-ptxas --ptxopt-make-client DIR` with the machine's C compiler.
 * A run starts no Python: it sends its arguments, working directory and
 * environment to the server over the per-user Unix socket, together with its
 * standard output and error (SCM_RIGHTS), and a server worker runs the drop-in
 * there -- optimize, call the real ptxas, fall back to the original PTX -- writing
 * straight to this process's streams.  The reply is ptxas's exit status.
 *
 * Whenever the server cannot do the job (none running, PTXOPT_SERVER=0, a worker
 * that dies, an argument that does not fit the protocol), the client becomes the
 * Python drop-in (exec of `python -m ptxopt.dropin`), which starts a server for
 * the next run and works in process: the build never depends on the server.
 *
 * Request: 4-byte big-endian length, then "PTXC", the argument count and each
 * argument, the working directory, the environment count and each "NAME=VALUE"
 * (every string as a 4-byte big-endian length and its bytes).
 * Reply: "PTXR" and a 4-byte big-endian exit status, or "PTXF" (work in process).
 *
 * PTXOPT_PYTHON (the interpreter) and PTXOPT_SOCKET_NAME (the socket's file name,
 * which names the installation) are fixed when the client is built.
 *
 * Built with PTXOPT_DISCOVER instead (the `ptxopt-ptxas` that `pip install` puts
 * beside the package's scripts; PTXOPT_VERSION names the package's version), the
 * client knows neither: it connects to the link `c-<key>.sock` in the server's
 * directory, <key> the FNV-1a hash of its own path and the version, and falls back
 * to the Python client `ptxopt-ptxas-py` beside it (else on PATH), telling it the
 * link's name in PTXOPT_CLIENT_LINK; that client makes the link to its server's
 * socket, so the next run connects directly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef PTXOPT_DISCOVER
#ifndef PTXOPT_VERSION
#error "build with -DPTXOPT_VERSION=\"x.y.z\""
#endif
#else
#ifndef PTXOPT_PYTHON
#error "build with -DPTXOPT_PYTHON=\"/path/to/python\""
#endif
#ifndef PTXOPT_SOCKET_NAME
#error "build with -DPTXOPT_SOCKET_NAME=\"s-....sock\""
#endif
#endif

extern char **environ;

static char self_env[PATH_MAX + 32];
static char exe[PATH_MAX]; /* this program, "" when unknown */

#ifdef PTXOPT_DISCOVER
#define PY_CLIENT "ptxopt-ptxas-py"
static char link_name[32];           /* c-<16 hex digits>.sock */
static char link_env[sizeof link_name + 32];

/* Become the Python client beside this program (else the first on PATH), which
 * makes the link for the next run. */
static void in_process(int argc, char **argv) {
    (void)argc;
    char path[PATH_MAX];
    const char *slash = strrchr(exe, '/');
    if (link_name[0]) {
        snprintf(link_env, sizeof link_env, "PTXOPT_CLIENT_LINK=%s", link_name);
        putenv(link_env);
    }
    argv[0] = PY_CLIENT;
    if (slash != NULL) {
        int n = snprintf(path, sizeof path, "%.*s/%s", (int)(slash - exe), exe, PY_CLIENT);
        if (n > 0 && (size_t)n < sizeof path)
            execv(path, argv);
    }
    execvp(PY_CLIENT, argv);
    fprintf(stderr, "ptxopt-ptxas: cannot run %s: %s\n", PY_CLIENT, strerror(errno));
    _exit(127);
}

/* The link's name: FNV-1a (64 bits) over this program's path, a 0 byte, the version. */
static void make_link_name(void) {
    uint64_t h = 0xcbf29ce484222325ULL;
    const unsigned char *p = (const unsigned char *)exe;
    size_t n = strlen(exe) + 1; /* the 0 byte included */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    for (p = (const unsigned char *)PTXOPT_VERSION; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    snprintf(link_name, sizeof link_name, "c-%016llx.sock", (unsigned long long)h);
}
#define SOCKET_NAME link_name
#else
#define SOCKET_NAME PTXOPT_SOCKET_NAME

/* Become the Python drop-in with the same arguments. */
static void in_process(int argc, char **argv) {
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (args == NULL) {
        perror("ptxopt-ptxas");
        _exit(127);
    }
    args[0] = PTXOPT_PYTHON;
    args[1] = "-m";
    args[2] = "ptxopt.dropin";
    for (int i = 1; i < argc; i++)
        args[i + 2] = argv[i];
    args[argc + 2] = NULL;
    execv(PTXOPT_PYTHON, args);
    fprintf(stderr, "ptxopt-ptxas: cannot run %s: %s\n", PTXOPT_PYTHON, strerror(errno));
    _exit(127);
}
#endif

struct buf {
    char *data;
    size_t len, cap;
    int failed;
};

static void put(struct buf *b, const void *p, size_t n) {
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (d == NULL) {
            b->failed = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_u32(struct buf *b, size_t v) {
    if (v > UINT32_MAX) {
        b->failed = 1;
        return;
    }
    unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    put(b, x, 4);
}

static void put_str(struct buf *b, const char *s) {
    size_t n = strlen(s);
    put_u32(b, n);
    put(b, s, n);
}

/* The socket path, as ptxopt.thin_client.socket_path() computes it. */
static int socket_path(char *out, size_t size) {
    const char *given = getenv("PTXOPT_SERVER_DIR");
    const char *run = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    int n;
    if (given != NULL && *given)
        n = snprintf(out, size, "%s/%s", given, SOCKET_NAME);
    else if (run != NULL && *run && stat(run, &st) == 0 && S_ISDIR(st.st_mode))
        n = snprintf(out, size, "%s/ptxopt/%s", run, SOCKET_NAME);
    else
        n = snprintf(out, size, "/tmp/ptxopt-%u/%s", (unsigned)getuid(), SOCKET_NAME);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

static int read_exact(int fd, unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t put_n = write(fd, p, n);
        if (put_n < 0 && errno == EINTR)
            continue;
        if (put_n <= 0)
            return -1;
        p += put_n;
        n -= (size_t)put_n;
    }
    return 0;
}

int main(int argc, char **argv) {
    /* the server's drop-in must not take this program for the real ptxas */
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        snprintf(self_env, sizeof self_env, "PTXOPT_CLIENT_EXE=%s", exe);
        putenv(self_env);
    } else {
        exe[0] = '\0';
    }
#ifdef PTXOPT_DISCOVER
    if (exe[0] == '\0')
        in_process(argc, argv);
    make_link_name();
#endif
    const char *server = getenv("PTXOPT_SERVER");
    if (server != NULL && strcmp(server, "0") == 0)
        in_process(argc, argv);
    /* ptxopt's own set-up commands (--ptxopt-make-client DIR, ...) run in process */
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--ptxopt-", 9) == 0)
            in_process(argc, argv);

    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    if (socket_path(addr.sun_path, sizeof addr.sun_path) != 0)
        in_process(argc, argv);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof addr) != 0)
        in_process(argc, argv);
    /* a server that does not answer within REPLY_TIMEOUT (as ptxopt.server's) */
    struct timeval limit = {.tv_sec = 600, .tv_usec = 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);

    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
        in_process(argc, argv);
    struct buf body = {0};
    put(&body, "PTXC", 4);
    put_u32(&body, (size_t)(argc - 1));
    for (int i = 1; i < argc; i++)
        put_str(&body, argv[i]);
    put_str(&body, cwd);
    size_t nenv = 0;
    for (char **e = environ; *e != NULL; e++)
        nenv++;
    put_u32(&body, nenv);
    for (char **e = environ; *e != NULL; e++)
        put_str(&body, *e);
    struct buf msg = {0};
    put_u32(&msg, body.len);
    put(&msg, body.data, body.len);
    if (body.failed || msg.failed)
        in_process(argc, argv);

    /* the first bytes carry our standard output and error */
    int fds[2] = {STDOUT_FILENO, STDERR_FILENO};
    char control[CMSG_SPACE(sizeof fds)];
    memset(control, 0, sizeof control);
    struct iovec iov = {.iov_base = msg.data, .iov_len = 4};
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cm), fds, sizeof fds);
    ssize_t sent;
    do {
        sent = sendmsg(s, &mh, 0);
    } while (sent < 0 && errno == EINTR);
    if (sent != 4 || write_all(s, msg.data + 4, msg.len - 4) != 0)
        in_process(argc, argv);

    unsigned char reply[8];
    if (read_exact(s, reply, sizeof reply) != 0 || memcmp(reply, "PTXR", 4) != 0)
        in_process(argc, argv); /* no answer, or "PTXF": work in process */
    close(s);
    uint32_t code = ((uint32_t)reply[4] << 24) | ((uint32_t)reply[5] << 16) |
                    ((uint32_t)reply[6] << 8) | (uint32_t)reply[7];
    return (int)(code & 0xff);
}
