"""The producer is idempotent by default with acks=all, as Kafka's clients since 3.0: acks 0 or 1 turn the default
off (with a note), enable_idempotence=False turns it off, and asking for it with acks other than all is an error."""

from __future__ import annotations

import logging

import pytest

from client.producer import Producer

BOOTSTRAP = "127.0.0.1:1"  # never contacted: the producer connects on its first send


async def test_the_default_producer_is_idempotent_with_acks_all():
    producer = Producer(BOOTSTRAP)
    assert producer.acks == -1
    assert producer.identity is not None


@pytest.mark.parametrize("acks", ["1", "0", 1, 0])
async def test_acks_zero_or_one_turn_the_default_off_with_a_note(acks, caplog):
    with caplog.at_level(logging.INFO, logger="client"):
        producer = Producer(BOOTSTRAP, acks=acks)
    assert producer.identity is None
    assert f"idempotence is disabled because acks is set to {acks}, not to all" in caplog.text


async def test_enable_idempotence_false_turns_it_off_with_acks_all():
    assert Producer(BOOTSTRAP, acks="all", enable_idempotence=False).identity is None


@pytest.mark.parametrize("acks", ["1", "0"])
async def test_explicit_idempotence_with_acks_other_than_all_is_refused(acks):
    with pytest.raises(ValueError, match="must set acks to all"):
        Producer(BOOTSTRAP, acks=acks, enable_idempotence=True)
