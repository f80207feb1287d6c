"""The nftables rules of a network cut, built without running nft: sides, addresses, the script, the listing."""

from __future__ import annotations

import pytest

from client.netsplit import Cut, NetsplitError, check_addresses, cut_script, cuts_in_listing, make_cut, table_name

ADDRESSES = {"zk": "127.9.8.1", "1": "127.9.8.2", "2": "127.9.8.3", "3": "127.9.8.4"}


def test_isolating_a_broker_drops_both_directions_between_its_address_and_the_others():
    cut = make_cut("1", "2,3,zk", ADDRESSES)
    assert cut == Cut(("1",), ("2", "3", "zk"))
    script = cut_script(table_name(ADDRESSES), cut, ADDRESSES)
    rules = [line for line in script.splitlines() if line.startswith("add rule")]
    assert rules == [
        'add rule inet mk_9_8 input iifname "lo" ip saddr { 127.9.8.2 } '
        'ip daddr { 127.9.8.3, 127.9.8.4, 127.9.8.1 } drop comment "1 <-> 2,3,zk"',
        'add rule inet mk_9_8 input iifname "lo" ip saddr { 127.9.8.3, 127.9.8.4, 127.9.8.1 } '
        'ip daddr { 127.9.8.2 } drop comment "1 <-> 2,3,zk"',
    ]
    assert script.startswith("add table inet mk_9_8\nadd chain inet mk_9_8 input { type filter hook input")


def test_a_one_way_cut_drops_only_from_a_to_b():
    cut = make_cut("2", "zk", ADDRESSES, one_way=True)
    rules = [line for line in cut_script("mk_9_8", cut, ADDRESSES).splitlines() if line.startswith("add rule")]
    assert rules == ['add rule inet mk_9_8 input iifname "lo" ip saddr { 127.9.8.3 } ip daddr { 127.9.8.1 } '
                     'drop comment "2 -> zk"']


@pytest.mark.parametrize(("a", "b", "message"), [
    ("1", "1,zk", "both sides"),
    ("4", "zk", "no member 4"),
    ("", "zk", "comma-separated"),
    ("1,,2", "zk", "comma-separated"),
    ("ZooKeeper", "1", "no member zookeeper"),
])
def test_bad_sides_are_refused_with_a_clear_error(a, b, message):
    with pytest.raises(NetsplitError, match=message):
        make_cut(a, b, ADDRESSES)


def test_members_are_case_insensitive_and_repeats_collapse():
    assert make_cut("ZK", "3,3,1", ADDRESSES) == Cut(("zk",), ("3", "1"))


@pytest.mark.parametrize(("addresses", "message"), [
    ({"zk": "10.0.0.1", "1": "127.9.8.2"}, "outside 127.0.0.0/8"),
    ({"zk": "127.0.0.1", "1": "127.0.0.1"}, "share the address"),
    ({"zk": "127.9.8.1", "1": "localhost"}, "no IP address"),
])
def test_only_distinct_loopback_addresses_are_ever_written_into_a_rule(addresses, message):
    with pytest.raises(NetsplitError, match=message):
        cut_script("mk_9_8", Cut(("1",), ("zk",)), addresses)
    with pytest.raises(NetsplitError, match=message):
        check_addresses(addresses)


def test_the_table_is_named_after_the_cluster_block():
    assert table_name(ADDRESSES) == "mk_9_8"
    with pytest.raises(NetsplitError, match="not in one 127"):
        table_name({"zk": "127.9.8.1", "1": "127.9.7.2"})


def test_cuts_are_read_back_from_rule_comments_once_each_in_order():
    def rule(comment: str | None) -> dict:
        body = {"family": "inet", "table": "mk_9_8", "chain": "input", "expr": []}
        return {"rule": body | ({"comment": comment} if comment is not None else {})}

    listing = {"nftables": [
        {"metainfo": {"version": "1.0.6"}},
        {"table": {"family": "inet", "name": "mk_9_8"}},
        rule("1 <-> 2,3,zk"), rule("1 <-> 2,3,zk"), rule("2 -> zk"), rule(None), rule("someone else's"),
    ]}
    assert cuts_in_listing(listing) == [Cut(("1",), ("2", "3", "zk")), Cut(("2",), ("zk",), one_way=True)]
    assert [str(c) for c in cuts_in_listing(listing)] == ["1 <-> 2,3,zk", "2 -> zk"]
