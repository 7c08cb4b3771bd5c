"""`cmake --install` of the release build into a scratch prefix (component
cli: the binary, the man page, the bash completion), then what a user runs
from there: git-locks and `git locks`, `git help locks`, `man -w`, and
`git-locks web` finding its page under PREFIX/share/git-locks/web wherever
the prefix is, even after the prefix moved.

The real page is the wasm preset's (tests/install/site_deb.py checks it
installed and packaged); here a stand-in page checks where the installed
binary looks."""

import gzip
import os
import re
import shutil
import unittest

from support import Scratch, WebServer, clean_env, cmake_install, env_var, run


class InstalledPrefix(Scratch):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.build = env_var("GITLOCKS_BUILD_DIR")
        cls.version = env_var("GITLOCKS_VERSION")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        cmake_install(cls.build, cls.prefix, component="cli")
        cls.bin = os.path.join(cls.prefix, "bin")
        cls.env = clean_env(cls.bin, HOME=os.path.join(cls.tmp, "home"), GIT_CONFIG_NOSYSTEM="1",
                            GIT_LOCKS_KEY=os.path.join(cls.tmp, "actor.key"), MANPAGER="cat", PAGER="cat",
                            MANWIDTH="100", LC_ALL="C.UTF-8")
        os.makedirs(cls.env["HOME"])

    def test_files(self):
        exe = os.path.join(self.bin, "git-locks")
        self.assertTrue(os.access(exe, os.X_OK), exe)
        page = os.path.join(self.prefix, "share", "man", "man1", "git-locks.1.gz")
        with gzip.open(page, "rt") as f:
            roff = f.read()
        self.assertIn(".TH GIT-LOCKS \"1\"", roff)
        sections = re.findall(r'^\.SH "?([^"\n]*)"?$', roff, re.M)
        self.assertEqual(sections, ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "GLOBAL FLAGS",
                                    "GIT'S SSH SIGNING PROGRAM", "EXIT STATUS", "ENVIRONMENT", "SEE ALSO"])
        self.assertIn("\nclaim [\\-\\-mode exclusive|shared|intent] [\\-\\-ttl DUR] [\\-\\-note TEXT] [\\-\\-wait[=DUR]] PATH...\n", roff)
        completion = os.path.join(self.prefix, "share", "bash-completion", "completions", "git-locks")
        with open(completion) as f:
            self.assertIn("_git_locks()", f.read())
        # The cli component is the tool only: no library, no page.
        self.assertFalse(os.path.exists(os.path.join(self.prefix, "lib")))
        self.assertFalse(os.path.exists(os.path.join(self.prefix, "include")))

    def test_version_as_git_locks_and_as_git_subcommand(self):
        want = f"git-locks {self.version}\n"
        self.assertEqual(run([os.path.join(self.bin, "git-locks"), "--version"], env=self.env).stdout, want)
        self.assertEqual(run(["git", "locks", "--version"], env=self.env).stdout, want)

    def test_git_locks_in_a_repository(self):
        repo = self.new_repo("repo", self.env)
        out = run(["git", "locks", "status"], cwd=repo, env=self.env).stdout
        self.assertIn("no lock store", out)
        run(["git", "locks", "init"], cwd=repo, env=self.env)
        run(["git", "locks", "claim", "--note", "install test", "src/a.c"], cwd=repo, env=self.env)
        out = run(["git", "locks", "status"], cwd=repo, env=self.env).stdout
        self.assertIn("src/a.c", out)

    def assert_page(self, text):
        self.assertRegex(text, r"git-locks \S+ Leases on paths and counted resources, stored in a Git ref")
        self.assertIn("claim [--mode exclusive|shared|intent]", text)
        self.assertIn("EXIT STATUS", text)
        self.assertIn("GIT_LOCKS_KEY", text)

    def test_git_help_shows_the_man_page(self):
        # man-db finds PREFIX/share/man from PATH (PREFIX/bin): no MANPATH.
        where = run(["man", "-w", "git-locks"], env=self.env).stdout.strip()
        self.assertEqual(where, os.path.join(self.prefix, "share", "man", "man1", "git-locks.1.gz"))
        for args in (["git", "-c", "help.format=man", "help", "locks"], ["git", "-c", "help.format=man", "locks",
                                                                          "--help"]):
            r = run(args, env=self.env)
            self.assert_page(r.stdout)
            self.assertNotIn("warning", r.stderr)

    def test_web_finds_the_page_under_the_prefix_wherever_it_is(self):
        site = os.path.join(self.tmp, "moved", "share", "git-locks", "web")
        self.addCleanup(shutil.rmtree, os.path.join(self.tmp, "moved"), ignore_errors=True)
        shutil.copytree(self.prefix, os.path.join(self.tmp, "moved"))
        os.makedirs(os.path.join(site, "pkg"))
        with open(os.path.join(site, "index.html"), "w") as f:
            f.write("<!doctype html><title>stand-in page</title>\n")
        with open(os.path.join(site, "pkg", "browser.mjs"), "w") as f:
            f.write("export {};\n")
        repo = self.new_repo("web-repo", self.env)
        # Moved prefix, no --site, no GIT_LOCKS_WEB_DIR: bin/../share/git-locks/web.
        server = WebServer(os.path.join(self.tmp, "moved", "bin", "git-locks"), repo, self.env)
        try:
            self.assertEqual(server.info["site"], os.path.realpath(site))
            status, ctype, body = server.get("/")
            self.assertEqual(status, 200)
            self.assertIn("text/html", ctype)
            self.assertEqual(body, b"<!doctype html><title>stand-in page</title>\n")
        finally:
            server.stop()
        # Without a page the installed binary says so (exit 64), it serves nothing.
        r = run([os.path.join(self.bin, "git-locks"), "web", "--port", "0"], cwd=repo, env=self.env, check=False)
        self.assertEqual(r.returncode, 64, r.stderr)
        self.assertIn("the page is not there", r.stderr)


if __name__ == "__main__":
    unittest.main()
