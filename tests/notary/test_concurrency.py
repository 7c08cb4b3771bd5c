"""Concurrent admissions: serialised, monotonic, all persisted."""

import json
import os
import threading
import unittest

from support import MAX_SAFE, NotaryCase, Workers, run_parallel

PARALLEL = 50


class Concurrency(NotaryCase):
    def admit_all(self, n, requests):
        barrier = threading.Barrier(len(requests))

        def worker(i):
            barrier.wait(30)
            return n.admit(requests[i])

        return run_parallel([lambda i=i: worker(i) for i in range(len(requests))], 90)

    def check_all_admitted(self, results):
        times = []
        for status, body in results:
            self.assertEqual(status, 200, body)
            times.append(json.loads(body)["attestation"]["admitted_at_ms"])
        self.assertEqual(self.high_water(), max(times))
        return times

    def test_parallel_admissions_on_the_system_clock_all_succeed(self):
        # T is read under the admission lock: were it read outside, a request
        # that read T early could meet a mark persisted by a later one and get
        # 409. All 200 means every T was >= every T signed before it.
        n = self.serve(test_clock=False)
        packets = [os.path.join(self.tmp, "p%d.json" % i) for i in range(PARALLEL)]
        requests = [self.make_request(0, MAX_SAFE, p) for p in packets]
        results = self.admit_all(n, requests)
        times = self.check_all_admitted(results)
        for i in (0, PARALLEL // 2, PARALLEL - 1):
            v = self.check_attestation(packets[i], results[i][1], allow_test_clock=False)
            self.assertTrue(v["ok"], v)
            self.assertEqual(v["admitted_at_ms"], times[i])

    def test_parallel_admissions_while_the_test_clock_advances(self):
        n = self.serve()
        self.set_clock(10_000)
        requests = [self.make_request(0, MAX_SAFE) for _ in range(PARALLEL)]
        stop = threading.Event()

        def tick():
            t = 10_000
            while not stop.is_set():
                t += 1
                self.set_clock(t)

        ticker = Workers(tick)
        try:
            results = self.admit_all(n, requests)
        finally:
            stop.set()
        ticker.join(30)  # a clock write that failed fails the test
        times = self.check_all_admitted(results)
        self.assertGreaterEqual(min(times), 10_000)


if __name__ == "__main__":
    unittest.main()
