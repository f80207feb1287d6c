"""The broker's registration in ZooKeeper: the cluster it joins (/cluster/id, created by the first broker), and the
ephemeral /brokers/ids/<id> of its session, whose czxid is the broker epoch (Kafka's KafkaZkClient.registerBroker)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence

from protocol.endpoint import EndPoint
from zk import znodes
from zk.client import NodeExistsError, ZkClient, ZkError, ensure_top_level_paths

log = logging.getLogger(__name__)


class BrokerIdInUseError(ZkError):
    """Another live session holds the registration of this broker id."""


async def get_or_create_cluster_id(zk: ZkClient) -> str:
    """The cluster id in /cluster/id, created with a random one if there is none yet (Kafka's
    getOrGenerateClusterId): every broker of a cluster reads the same id, whichever created it."""
    got = await zk.get_or_none(znodes.CLUSTER_ID_PATH)
    if got is None:
        with contextlib.suppress(NodeExistsError):  # another broker created it meanwhile
            await zk.create(znodes.CLUSTER_ID_PATH, znodes.encode_cluster_id(znodes.new_cluster_id()), makepath=True)
        got = await zk.get(znodes.CLUSTER_ID_PATH)
    return znodes.decode_cluster_id(got[0])


async def register_broker(
    zk: ZkClient, broker_id: int, endpoints: Sequence[EndPoint], *, rack: str | None = None, wait_ms: int = 0
) -> int:
    """Register this broker and its advertised endpoints: the ephemeral /brokers/ids/<id> of this session.
    Returns the broker epoch (the registration's czxid).

    A registration left by this same session counts as ours. One held by another live session is
    waited out for up to `wait_ms` (a killed broker's znode stays until its session times out), then
    refused with BrokerIdInUseError."""
    await ensure_top_level_paths(zk)
    path = znodes.broker_path(broker_id)
    deadline = time.monotonic() + wait_ms / 1000
    while True:
        with contextlib.suppress(NodeExistsError):
            await zk.create(path, znodes.encode_broker(endpoints, int(time.time() * 1000), rack), ephemeral=True)
        stat = await zk.exists(path)
        if stat is not None and stat.ephemeral_owner == zk.session_id:
            log.info("Registered broker %d at %s, broker epoch %d", broker_id, ",".join(map(str, endpoints)),
                     stat.czxid)
            return stat.czxid
        if stat is not None and time.monotonic() >= deadline:
            raise BrokerIdInUseError(
                f"broker.id {broker_id} is already registered at {path} by another live ZooKeeper session "
                f"(0x{stat.ephemeral_owner:x}): another broker runs with this id, or a killed one's session "
                "has not timed out yet"
            )
        await asyncio.sleep(0.1)
