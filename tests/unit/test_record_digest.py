"""A record's digest (the history check's identity of a record) tells apart every key and value that differ, nulls
and empty bytes included, and only those."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verifier.record_digest import DIGEST_BYTES, record_digest

maybe_bytes = st.none() | st.binary(max_size=64)


@given(maybe_bytes, maybe_bytes)
def test_the_same_key_and_value_have_the_same_digest(key, value):
    digest = record_digest(key, value)
    assert len(digest) == DIGEST_BYTES
    assert record_digest(None if key is None else bytes(key), None if value is None else bytes(value)) == digest


@given(maybe_bytes, maybe_bytes, maybe_bytes, maybe_bytes)
def test_records_that_differ_have_different_digests(key, value, other_key, other_value):
    if (key, value) != (other_key, other_value):
        assert record_digest(key, value) != record_digest(other_key, other_value)


@pytest.mark.parametrize(("one", "other"), [
    ((None, b"v"), (b"", b"v")),  # a null key is not an empty one
    ((b"k", None), (b"k", b"")),  # nor a null value an empty one
    ((b"ab", b"c"), (b"a", b"bc")),  # where the key ends and the value starts counts
    ((None, b"kv"), (b"kv", None)),
])
def test_records_whose_bytes_run_together_still_differ(one, other):
    assert record_digest(*one) != record_digest(*other)
