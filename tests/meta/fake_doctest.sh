#!/bin/sh
# A stand-in for the doctest binary in meta/unit_registry_selftest: it lists
# three cases, one of whose names selects nothing under ctest (a comma).
case "$1" in
  --count)
    echo "[doctest] unskipped test cases passing the current filters: 3" ;;
  --list-test-cases)
    echo "[doctest] listing all test case names"
    echo "==============================================================================="
    echo "plain case"
    echo "second case"
    echo "claim: exclusive conflicts, shared admitted"
    echo "==============================================================================="
    echo "[doctest] unskipped test cases passing the current filters: 3" ;;
  *) exit 2 ;;
esac
