"""Regression tests the differential fuzzer wrote (tests/fuzz)."""
