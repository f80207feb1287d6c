"""Finding the coordinators of groups: FindCoordinator, asked of any live broker."""

from __future__ import annotations

from collections.abc import Sequence

from client.group.cluster_view import ClusterView
from protocol.apis.groups import Coordinator, CoordinatorType, FindCoordinatorRequest, FindCoordinatorResponse
from protocol.errors import ErrorCode, KafkaError
from transport.connection import KafkaConnectionError


async def find_coordinators(metadata: ClusterView, group_ids: Sequence[str]) -> dict[str, Coordinator]:
    """The coordinator of each group (or the error that kept it from being found, in its `error_code`), asked of the
    known brokers in turn until one answers (the brokers are learnt again if none does). Raises
    KafkaConnectionError if no broker answers."""
    request = FindCoordinatorRequest(key_type=CoordinatorType.GROUP, keys=list(dict.fromkeys(group_ids)))
    problems: list[str] = []
    for attempt in range(2):
        if attempt or not metadata.brokers:
            await metadata.refresh([])
        for broker_id in sorted(metadata.brokers):
            try:
                connection = await metadata.connection(broker_id)
                response: FindCoordinatorResponse = await connection.request(request)
            except (KafkaConnectionError, KafkaError) as e:
                problems.append(f"broker {broker_id}: {e}")
                continue
            return {c.key: c for c in response.coordinators}
    raise KafkaConnectionError("no broker answered FindCoordinator: " + "; ".join(problems))


async def find_coordinator(metadata: ClusterView, group_id: str) -> Coordinator:
    """The coordinator of one group; KafkaError with the error that kept it from being found (retriable ones such as
    COORDINATOR_NOT_AVAILABLE while the offsets topic is created), KafkaConnectionError if no broker answered."""
    found = (await find_coordinators(metadata, [group_id])).get(group_id)
    if found is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no coordinator in the answer for group {group_id!r}")
    error = ErrorCode.from_code(found.error_code)
    if error != ErrorCode.NONE:
        raise KafkaError(error, found.error_message or f"cannot find the coordinator of group {group_id!r}")
    return found
