#!/usr/bin/env python3
"""Tests of the linearizability checker: histories that must pass and must fail."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lincheck  # noqa: E402


def op(kind, t0, t1, version, value=None, status="OK", key="k", client=0):
    return {"client": client, "op": kind, "key": key, "value": value, "version": version,
            "status": status, "invoke_ns": t0, "complete_ns": t1, "node": "n1"}


class Passing(unittest.TestCase):
    def assertLinear(self, ops):
        self.assertEqual(lincheck.check(ops), [])

    def test_sequential(self):
        self.assertLinear([op("put", 0, 10, 1, "a"), op("get", 20, 30, 1, "a"),
                           op("put", 40, 50, 2, "b"), op("get", 60, 70, 2, "b")])

    def test_concurrent_read_may_see_old_or_new(self):
        w = op("put", 10, 100, 2, "b")
        self.assertLinear([op("put", 0, 5, 1, "a"), w, op("get", 20, 30, 1, "a"),
                           op("get", 40, 50, 2, "b", client=1)])

    def test_read_before_any_write(self):
        self.assertLinear([op("get", 0, 5, 0, None, "NOT_FOUND"), op("put", 10, 20, 1, "a")])

    def test_delete_is_a_versioned_tombstone(self):
        self.assertLinear([op("put", 0, 5, 1, "a"), op("del", 10, 20, 2),
                           op("get", 30, 40, 2, None, "NOT_FOUND")])

    def test_timed_out_write_may_be_seen(self):
        self.assertLinear([op("put", 0, 5, 1, "a"), op("put", 10, 60, None, "z", "TIMEOUT"),
                           op("get", 30, 40, 7, "z")])

    def test_failed_ops_constrain_nothing(self):
        self.assertLinear([op("put", 0, 5, 1, "a"), op("get", 10, 20, None, None, "UNAVAILABLE"),
                           op("get", 30, 40, 1, "a")])

    def test_keys_are_independent(self):
        self.assertLinear([op("put", 0, 5, 5, "a", key="x"), op("get", 10, 20, 1, "b", key="y"),
                           op("put", 0, 3, 1, "b", key="y")])


class Failing(unittest.TestCase):
    def assertViolation(self, ops, word):
        errors = lincheck.check(ops)
        self.assertTrue(errors, "expected a violation")
        self.assertTrue(any(word in e for e in errors), errors)

    def test_stale_read_after_write_completed(self):
        self.assertViolation([op("put", 0, 5, 1, "a"), op("put", 10, 20, 2, "b"),
                              op("get", 30, 40, 1, "a")], "stale")

    def test_read_goes_back_in_time(self):
        # Both reads overlap the write; the second starts after the first saw v2.
        self.assertViolation([op("put", 0, 5, 1, "a"), op("put", 10, 100, 2, "b"),
                              op("get", 20, 30, 2, "b"), op("get", 40, 50, 1, "a", client=1)],
                             "stale")

    def test_read_from_the_future(self):
        self.assertViolation([op("get", 0, 5, 1, "a"), op("put", 10, 20, 1, "a")],
                             "began later")

    def test_fabricated_value(self):
        self.assertViolation([op("put", 0, 5, 1, "a"), op("get", 10, 20, 1, "zzz")],
                             "but that write wrote")

    def test_unknown_version(self):
        self.assertViolation([op("put", 0, 5, 1, "a"), op("get", 10, 20, 9, "a")],
                             "no write produced")

    def test_write_ordered_before_earlier_write(self):
        self.assertViolation([op("put", 0, 5, 2, "a"), op("put", 10, 20, 1, "b")], "stale")

    def test_read_after_delete_sees_old_value(self):
        self.assertViolation([op("put", 0, 5, 1, "a"), op("del", 10, 20, 2),
                              op("get", 30, 40, 1, "a")], "stale")

    def test_duplicate_versions(self):
        self.assertViolation([op("put", 0, 5, 1, "a"), op("put", 10, 20, 1, "b")],
                             "two writes")


def rop(kind, t0, t1, value=None, status="OK", key="k"):
    """An operation of a RESP client's history: no version."""
    return op(kind, t0, t1, 0, value, status if value is not None or kind == "put" else
              ("NOT_FOUND" if status == "OK" else status), key)


class ByValues(unittest.TestCase):
    def ok(self, ops):
        self.assertEqual(lincheck.check(ops, by_values=True), [])

    def bad(self, ops, word):
        errors = lincheck.check(ops, by_values=True)
        self.assertTrue(any(word in e for e in errors), errors)

    def test_sequential_and_concurrent(self):
        self.ok([rop("get", 0, 1), rop("put", 2, 5, "a"), rop("get", 6, 7, "a"),
                 rop("put", 10, 30, "b"), rop("get", 12, 14, "a"), rop("get", 20, 25, "b"),
                 rop("get", 31, 32, "b")])

    def test_failed_write_seen_late(self):
        self.ok([rop("put", 0, 5, "a"), rop("put", 10, 11, "b", status="TIMEOUT"),
                 rop("get", 20, 21, "a"), rop("get", 30, 31, "b")])

    def test_stale_read(self):
        self.bad([rop("put", 0, 5, "a"), rop("put", 10, 20, "b"), rop("get", 30, 40, "a")],
                 "stale")

    def test_reads_go_back(self):
        self.bad([rop("put", 0, 5, "a"), rop("put", 10, 100, "b"), rop("get", 20, 30, "b"),
                  rop("get", 40, 50, "a")], "stale")

    def test_not_found_after_a_write(self):
        self.bad([rop("put", 0, 5, "a"), rop("get", 10, 20)], "stale")

    def test_read_from_the_future(self):
        self.bad([rop("get", 0, 5, "a"), rop("put", 10, 20, "a")], "began later")

    def test_fabricated_value(self):
        self.bad([rop("put", 0, 5, "a"), rop("get", 10, 20, "zzz")], "no write wrote")


if __name__ == "__main__":
    unittest.main()
