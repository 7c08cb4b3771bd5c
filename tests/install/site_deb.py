"""The release build installed whole and packaged, with the page the wasm
preset built (registered in the wasm preset, tests/install/CMakeLists.txt):

- `cmake --install` into a scratch prefix puts the page in
  share/git-locks/web, and the installed `git-locks web` serves it (and the
  WebAssembly core) over HTTP;
- `cpack -G DEB` makes git-locks_<version>_<arch>.deb holding the binary,
  the man page, the bash completion and the page, whose Depends apt can
  resolve on this Debian (`apt-get install --simulate`), and whose extracted
  binary runs and serves the packaged page."""

import glob
import os
import re
import unittest

from support import Scratch, WebServer, clean_env, cmake_install, env_var, run

DEB_PATHS = ("./usr/bin/git-locks", "./usr/share/git-locks/web/index.html",
             "./usr/share/git-locks/web/pkg/gitlocks-core.wasm", "./usr/share/man/man1/git-locks.1.gz",
             "./usr/share/bash-completion/completions/git-locks")


def read(path):
    with open(path, "rb") as f:
        return f.read()


class SiteAndDeb(Scratch):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.release = env_var("GITLOCKS_RELEASE_DIR")
        cls.site = env_var("GITLOCKS_WEB_SITE_DIR")
        cls.version = env_var("GITLOCKS_VERSION")
        cache = os.path.join(cls.release, "CMakeCache.txt")
        if not os.path.exists(os.path.join(cls.release, "CPackConfig.cmake")):
            raise AssertionError(f"no release build in {cls.release}: run cmake --preset release && "
                                 "cmake --build --preset release first")
        with open(cache) as f:
            m = re.search(r"^GITLOCKS_WEB_SITE:PATH=(.*)$", f.read(), re.M)
        if not m or os.path.realpath(m.group(1)) != os.path.realpath(cls.site):
            raise AssertionError(f"the release build installs the page from {m and m.group(1)}, not from this "
                                 f"build's {cls.site}")
        cls.env = clean_env(HOME=os.path.join(cls.tmp, "home"), GIT_CONFIG_NOSYSTEM="1")
        os.makedirs(cls.env["HOME"])

    def serve_and_check(self, binary, expect_site):
        repo = self.new_repo(f"repo-{len(os.listdir(self.tmp))}", self.env)
        server = WebServer(binary, repo, self.env)
        try:
            self.assertEqual(server.info["site"], os.path.realpath(expect_site))
            status, ctype, body = server.get("/")
            self.assertEqual((status, body), (200, read(os.path.join(self.site, "index.html"))))
            self.assertIn("text/html", ctype)
            status, ctype, body = server.get("/pkg/gitlocks-core.wasm")
            self.assertEqual((status, ctype), (200, "application/wasm"))
            self.assertEqual(body, read(os.path.join(self.site, "pkg", "gitlocks-core.wasm")))
            status, _, body = server.get("/live.json")
            self.assertEqual(status, 200)
            self.assertIn(b'"ref":"refs/locks/state"', body)
        finally:
            server.stop()

    def test_installed_prefix_serves_the_page(self):
        prefix = os.path.join(self.tmp, "prefix")
        cmake_install(self.release, prefix)
        web = os.path.join(prefix, "share", "git-locks", "web")
        for name in ("index.html", "app.mjs", "worker.mjs", "style.css", "pkg/browser.mjs",
                     "pkg/gitlocks-core.wasm"):
            self.assertEqual(read(os.path.join(web, name)), read(os.path.join(self.site, name)), name)
        self.serve_and_check(os.path.join(prefix, "bin", "git-locks"), web)

    def test_deb(self):
        out = os.path.join(self.tmp, "deb")
        run(["cpack", "-G", "DEB", "--config", os.path.join(self.release, "CPackConfig.cmake"), "-B", out],
            cwd=self.tmp, timeout=300)
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        debs = glob.glob(os.path.join(out, "*.deb"))
        self.assertEqual([os.path.basename(d) for d in debs], [f"git-locks_{self.version}_{arch}.deb"])
        deb = debs[0]

        fields = {f: run(["dpkg-deb", "--field", deb, f]).stdout.strip()
                  for f in ("Package", "Version", "Architecture", "Section", "Depends", "Maintainer")}
        self.assertEqual(fields["Package"], "git-locks")
        self.assertEqual(fields["Version"], self.version)
        self.assertEqual(fields["Architecture"], arch)
        self.assertEqual(fields["Section"], "vcs")
        self.assertTrue(fields["Maintainer"])
        depends = [d.strip().split()[0] for d in fields["Depends"].split(",") if d.strip()]
        for needed in ("git", "libc6", "libsodium23"):
            self.assertIn(needed, depends, fields["Depends"])
        # libgit2 is a dependency exactly when the binary links the shared
        # one: the static libgit2 of toolchains/native-deps.sh (the default
        # build) is inside it, and needs zlib and http-parser instead.
        cli = os.path.join(self.release, "tools", "cli", "git-locks")
        if "libgit2.so" in run(["ldd", cli]).stdout:
            self.assertIn("libgit2-1.5", depends, fields["Depends"])
        else:
            self.assertNotIn("libgit2-1.5", depends, fields["Depends"])
            for needed in ("zlib1g", "libhttp-parser2.9"):
                self.assertIn(needed, depends, fields["Depends"])
        # cpp-httplib is header-only there: neither it nor OpenSSL is loaded.
        if "libcpp-httplib.so" not in run(["ldd", cli]).stdout:
            for absent in ("libcpp-httplib0.11", "libssl3"):
                self.assertNotIn(absent, depends, fields["Depends"])
        run(["dpkg-deb", "--info", deb])

        listing = run(["dpkg-deb", "--contents", deb]).stdout
        files = {line.split()[-1] for line in listing.splitlines() if line.strip()}
        for path in DEB_PATHS:
            self.assertIn(path, files)
        # The tool only: no static library or headers in the package.
        self.assertFalse([f for f in files if f.endswith(".a") or "/include/" in f], listing)

        root = os.path.join(self.tmp, "root")
        run(["dpkg-deb", "-x", deb, root])
        binary = os.path.join(root, "usr", "bin", "git-locks")
        self.assertEqual(run([binary, "--version"], env=self.env).stdout, f"git-locks {self.version}\n")
        self.serve_and_check(binary, os.path.join(root, "usr", "share", "git-locks", "web"))

        # Every dependency resolves from this machine's apt sources; nothing
        # is installed (--simulate), so this runs as any user.
        r = run(["apt-get", "install", "--simulate", "--no-install-recommends", deb], env=clean_env(LC_ALL="C"),
                timeout=300)
        self.assertRegex(r.stdout, r"(?m)^Inst git-locks ")


if __name__ == "__main__":
    unittest.main()
