"""InitProducerId (key 22) for idempotent producers.

Without a transactional id Kafka's TransactionCoordinator always hands out a fresh producer id at epoch
0, whatever id and epoch the request carries (KIP-360 bumps apply to transactional ids only). Transactional
ids need the transaction coordinator, which this node does not run yet: they get
COORDINATOR_NOT_AVAILABLE, a retriable answer."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import InitProducerIdResponse

from . import handles


@handles(22)
async def init_producer_id(broker, ctx, request) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        return InitProducerIdResponse(
            error_code=Errors.COORDINATOR_NOT_AVAILABLE, producer_id=-1, producer_epoch=-1
        )
    return InitProducerIdResponse(
        error_code=Errors.NONE, producer_id=broker.producer_ids.next_id(), producer_epoch=0
    )
