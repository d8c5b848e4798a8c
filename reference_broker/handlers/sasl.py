"""SaslHandshake and SaslAuthenticate as the broker's request handlers see them: only after a
connection is past authentication, or on a listener without SASL (``KafkaApis``). During
authentication the listener's authenticator answers them itself (``security.authenticator``)."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import SaslAuthenticateResponse, SaslHandshakeResponse

from . import handles


@handles(17)
async def sasl_handshake(broker, ctx, request) -> SaslHandshakeResponse:
    # KafkaApis.handleSaslHandshakeRequest: no mechanisms listed, whatever the listener offers
    return SaslHandshakeResponse(error_code=Errors.ILLEGAL_SASL_STATE, mechanisms=[])


@handles(36)
async def sasl_authenticate(broker, ctx, request) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(
        error_code=Errors.ILLEGAL_SASL_STATE,
        error_message="SaslAuthenticate request received after successful authentication",
    )
