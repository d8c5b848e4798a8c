"""What a real client does before it talks to a coordinator: FindCoordinator, which creates the
internal topic the first time (KafkaApis.getCoordinator) so that this broker leads its partitions."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import FindCoordinatorRequest

FIND_COORDINATOR = 10
GROUP, TRANSACTION = 0, 1


async def find_coordinator(client, key: str, key_type: int = TRANSACTION, *, attempts: int = 20):
    """FindCoordinator v4 for one key until it is answered (the first call creates the topic)."""
    request = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key])
    for _ in range(attempts):
        response = await client.call(FIND_COORDINATOR, 4, request)
        answer = response.coordinators[0]
        if answer.error_code == Errors.NONE:
            return answer
    raise AssertionError(f"no coordinator for {key!r}: error {answer.error_code}")
