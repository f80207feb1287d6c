"""Which broker epochs a controller request may carry (Kafka's isBrokerEpochStale, KIP-380)."""

from protocol.apis.replica_control import UNKNOWN_BROKER_EPOCH, is_broker_epoch_stale


def test_a_request_for_an_older_registration_is_stale():
    assert is_broker_epoch_stale(41, 42)


def test_the_current_registration_and_a_newer_one_the_broker_has_not_learnt_yet_are_not_stale():
    assert not is_broker_epoch_stale(42, 42)
    assert not is_broker_epoch_stale(43, 42)


def test_a_request_that_does_not_know_the_broker_epoch_is_never_stale():
    assert not is_broker_epoch_stale(UNKNOWN_BROKER_EPOCH, 42)
