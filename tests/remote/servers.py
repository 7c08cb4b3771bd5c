"""Real Git servers on loopback for the remote-store suites: a bare
repository reached over file://, `git daemon` with receive-pack enabled, and
smart HTTP through `git http-backend` behind lighttpd (Debian's packages).
Every server is started by the test that needs it and stopped by its
cleanup; nothing listens anywhere but 127.0.0.1.

    srv = Server.start(kind, root)   # kind: "file", "daemon" or "http"
    srv.url                          # what `git remote add origin URL` takes
    srv.bare                         # the served bare repository (a path)
    srv.stop(); srv.restart()
"""

import os
import shutil
import signal
import socket
import subprocess
import time

KINDS = ("file", "daemon", "http")
LIGHTTPD = shutil.which("lighttpd") or "/usr/sbin/lighttpd"


def git_exec_path():
    return subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=True).stdout.strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{what} is not listening on 127.0.0.1:{port} after {timeout}s")


class Server:
    def __init__(self, kind, root, name="store.git"):
        if kind not in KINDS:
            raise ValueError(kind)
        self.kind, self.root, self.name = kind, root, name
        self.bare = os.path.join(root, "srv", name)
        self.proc = None
        self.port = None
        self.log = os.path.join(root, f"{kind}-server.log")

    @classmethod
    def start(cls, kind, root, name="store.git"):
        s = cls(kind, root, name)
        os.makedirs(os.path.dirname(s.bare), exist_ok=True)
        subprocess.run(["git", "init", "-q", "--bare", s.bare], check=True)
        # Smart HTTP refuses anonymous pushes unless the repository allows them.
        subprocess.run(["git", "-C", s.bare, "config", "http.receivepack", "true"], check=True)
        s._launch()
        return s

    @property
    def url(self):
        if self.kind == "file":
            return "file://" + self.bare
        if self.kind == "daemon":
            return f"git://127.0.0.1:{self.port}/{self.name}"
        return f"http://127.0.0.1:{self.port}/git/{self.name}"

    def _launch(self):
        if self.kind == "file":
            return
        self.port = self.port or free_port()
        logf = open(self.log, "ab")
        base = os.path.dirname(self.bare)
        if self.kind == "daemon":
            # git-daemon itself, not `git daemon`: the `git` front end would
            # stay between us and the server, and killing it would leave the
            # daemon running.
            argv = [os.path.join(git_exec_path(), "git-daemon"), "--reuseaddr", "--export-all",
                    "--enable=receive-pack",
                    f"--base-path={base}", "--listen=127.0.0.1", f"--port={self.port}", base]
        else:
            conf = os.path.join(self.root, "lighttpd.conf")
            backend = os.path.join(git_exec_path(), "git-http-backend")
            with open(conf, "w") as f:
                f.write(f'''server.modules = ("mod_alias", "mod_cgi", "mod_setenv")
server.document-root = "{base}"
server.bind = "127.0.0.1"
server.port = {self.port}
server.errorlog = "{self.log}"
server.max-request-size = 0
alias.url = ("/git/" => "{backend}/")
$HTTP["url"] =~ "^/git/" {{
  cgi.assign = ("" => "")
  setenv.add-environment = ("GIT_PROJECT_ROOT" => "{base}", "GIT_HTTP_EXPORT_ALL" => "1")
}}
''')
            argv = [LIGHTTPD, "-D", "-f", conf]
        # A session of its own: stop() ends the server and every child it forked.
        self.proc = subprocess.Popen(argv, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        wait_listening(self.port, self.proc, self.kind)

    def stop(self):
        """The server goes away (file://: the repository becomes unreachable)."""
        if self.kind == "file":
            os.rename(self.bare, self.bare + ".away")
            return
        if self.proc:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.proc = None

    def restart(self):
        if self.kind == "file":
            os.rename(self.bare + ".away", self.bare)
            return
        self._launch()

    def close(self):
        if self.kind != "file":
            self.stop()

    def tip(self):
        r = subprocess.run(["git", "-C", self.bare, "rev-parse", "-q", "--verify", "refs/locks/state"],
                           capture_output=True, text=True)
        return r.stdout.strip() or None

    def history(self):
        r = subprocess.run(["git", "-C", self.bare, "rev-list", "--first-parent", "refs/locks/state"],
                           capture_output=True, text=True)
        return r.stdout.split()


def clone(url, path, name="host"):
    """A clone of the (possibly empty) served repository, as one writer's host."""
    subprocess.run(["git", "init", "-q", path], check=True)
    subprocess.run(["git", "-C", path, "remote", "add", "origin", url], check=True)
    subprocess.run(["git", "-C", path, "config", "user.name", name], check=True)
    subprocess.run(["git", "-C", path, "config", "user.email", f"{name}@example.invalid"], check=True)
    return path


class SilentProxy:
    """A server that accepts connections and never answers, in front of a
    real `git daemon`: with hang="all" every connection is held open in
    silence (any URL scheme: git://, http://); with hang="receive-pack" a
    git:// fetch (git-upload-pack) is passed through to `upstream_port` and
    only pushes are held. Held connections stay open until close().

        p = SilentProxy.start(hang="all")
        p.url("store.git", scheme="git")    # git://127.0.0.1:PORT/store.git
        p.accepted                           # connections accepted so far
    """

    def __init__(self, hang, upstream_port=None):
        import threading
        self.hang, self.upstream_port = hang, upstream_port
        self.accepted = 0
        self.held = []
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @classmethod
    def start(cls, hang, upstream_port=None):
        p = cls(hang, upstream_port)
        p.thread.start()
        return p

    def url(self, name, scheme="git"):
        if scheme == "git":
            return f"git://127.0.0.1:{self.port}/{name}"
        return f"http://127.0.0.1:{self.port}/git/{name}"

    def _serve(self):
        import threading
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        if self.hang == "all":
            with self.lock:
                self.held.append(conn)
            return
        # git:// starts with one pkt-line: "git-upload-pack /NAME\0host=...\0".
        first = b""
        try:
            while len(first) < 4 or len(first) < int(first[:4], 16):
                chunk = conn.recv(4096)
                if not chunk:
                    conn.close()
                    return
                first += chunk
        except (OSError, ValueError):
            conn.close()
            return
        if first[4:].startswith(b"git-receive-pack"):
            with self.lock:
                self.held.append(conn)
            return
        import threading
        up = socket.create_connection(("127.0.0.1", self.upstream_port))
        up.sendall(first)

        def pump(a, b):
            """a -> b until a's end of file, then b's write side is closed."""
            try:
                while True:
                    data = a.recv(65536)
                    if not data:
                        break
                    b.sendall(data)
            except OSError:
                pass
            try:
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        back = threading.Thread(target=pump, args=(up, conn), daemon=True)
        back.start()
        pump(conn, up)
        back.join()
        conn.close()
        up.close()

    def close(self):
        self.closed = True
        self.sock.close()
        with self.lock:
            for c in self.held:
                c.close()
            self.held.clear()
