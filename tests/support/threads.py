"""Worker threads whose failures reach the test: an exception raised in a
thread (a failed assertion included) is re-raised in the test's own thread at
join, and a thread still running at the deadline fails the test instead of
being forgotten. Shared by the Python suites (cli, notary, remote)."""

import threading
import time


class Workers:
    """Starts one daemon thread per zero-argument callable at once."""

    def __init__(self, *calls):
        self.results = [None] * len(calls)
        self.errors = [None] * len(calls)
        self.threads = [threading.Thread(target=self._body, args=(i, c), daemon=True) for i, c in enumerate(calls)]
        for t in self.threads:
            t.start()

    def _body(self, i, call):
        try:
            self.results[i] = call()
        except BaseException as e:  # handed to the test's thread at join
            self.errors[i] = e

    def join(self, timeout):
        """Waits at most `timeout` seconds for all; returns their results in
        order, or raises the first thread's exception, or AssertionError for
        threads that are still running."""
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        hung = [i for i, t in enumerate(self.threads) if t.is_alive()]
        if hung:
            raise AssertionError(f"worker threads {hung} of {len(self.threads)} still running after {timeout} s")
        failed = [e for e in self.errors if e is not None]
        if failed:
            if len(failed) > 1:
                failed[0].add_note(f"{len(failed) - 1} more of {len(self.threads)} worker threads failed: " +
                                   "; ".join(repr(e)[:300] for e in failed[1:]))
            raise failed[0]
        return self.results


def run_parallel(calls, timeout):
    """Runs every callable in its own thread; see Workers.join."""
    return Workers(*calls).join(timeout)
