"""At least 10,000 hostile frames at a secured broker while a well-behaved client works beside them:
mutated SASL exchanges (handshakes, PLAIN and SCRAM tokens with bytes flipped, cut or repeated, other
requests mid-handshake, raw v0 tokens), garbage and mutated TLS handshakes on the TLS port, and mutated
Kafka requests on the plaintext port. The broker stays up, the steady client sees no error, and every
listener still answers at the end. Seeded (``KCONFORM_FUZZ_SEED``) and bounded."""

from __future__ import annotations

import asyncio
import os
import random
import ssl

import pytest

from kconform.codecs import encode_request, size_prefixed
from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ApiVersionsRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kconform.codecs.sasl import client_for
from kconform.reference_broker.node import BrokerNode

from ...support.certificates import TestAuthority
from ...support.rawclient import RawClient

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("KCONFORM_FUZZ_SEED", "2411"))
WANTED_FRAMES = 10_000
WORKERS = 24
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def _mutate(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if choice < 0.4 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif choice < 0.6 and data:
            del data[rng.randrange(len(data)) :]
        elif choice < 0.8:
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.randbytes(rng.randint(1, 16))
        else:
            data += data[: rng.randint(0, len(data))]
    return bytes(data)


def _frame(api_key: int, version: int, body, correlation: int = 1) -> bytes:
    return encode_request(api_key, version, correlation, "fuzz", body)


class Counter:
    frames = 0
    kinds: dict[str, int] = {}
    steady_calls = 0


async def _send_all(host: str, port: int, frames: list[bytes], *, tls: ssl.SSLContext | None = None) -> None:
    """Send frames (each size-prefixed unless it is raw garbage), read whatever comes, never wait long."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=tls), 5)
    except (OSError, ssl.SSLError, TimeoutError):
        return
    try:
        for frame in frames:
            writer.write(frame)
            Counter.frames += 1
        await asyncio.wait_for(writer.drain(), 5)
        await asyncio.wait_for(reader.read(1 << 16), 0.3)
    except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.transport.abort()


def _sasl_attack(rng: random.Random) -> list[bytes]:
    mechanism = rng.choice(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "", "x" * 300])
    handshake_version = rng.choice([0, 1, 1, 1])
    frames = []
    if rng.random() < 0.3:
        frames.append(
            size_prefixed(
                _frame(18, 3, ApiVersionsRequest(client_software_name="f", client_software_version="1"))
            )
        )
    frames.append(size_prefixed(_frame(17, handshake_version, SaslHandshakeRequest(mechanism=mechanism))))
    real = mechanism if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") else "PLAIN"
    client = client_for(real, username="alice", password=rng.choice(["alice-secret", "wrong"]))
    token = client.initial()
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.5:
            token = _mutate(rng, token)
        if rng.random() < 0.15:  # another request in the middle of the exchange
            frames.append(size_prefixed(_frame(3, 12, MetadataRequest(topics=None))))
        if handshake_version == 0:
            frames.append(size_prefixed(token))
        else:
            body = _frame(36, rng.choice([0, 1, 2]), SaslAuthenticateRequest(auth_bytes=token))
            frames.append(size_prefixed(_mutate(rng, body) if rng.random() < 0.3 else body))
    return frames


def _tls_attack(rng: random.Random) -> list[bytes]:
    # a TLS record header with random contents, a plaintext Kafka request, or noise
    kind = rng.random()
    if kind < 0.4:
        return [bytes([0x16, 0x03, rng.choice([1, 3])]) + rng.randbytes(rng.randint(0, 600))]
    if kind < 0.7:
        return [
            size_prefixed(
                _frame(18, 3, ApiVersionsRequest(client_software_name="f", client_software_version="1"))
            )
        ]
    return [rng.randbytes(rng.randint(1, 2000))]


def _plaintext_attack(rng: random.Random) -> list[bytes]:
    base = _frame(3, rng.randint(1, 12), MetadataRequest(topics=None))  # v0 has no "all topics" null
    return [size_prefixed(_mutate(rng, base)) for _ in range(rng.randint(1, 5))]


@pytest.fixture
def secured_node(tmp_path):
    authority = TestAuthority(tmp_path / "tls")
    server = authority.issue("broker", server=True, CN="localhost")
    props = {
        "node.id": "1",
        "log.dirs": str(tmp_path / "data"),
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.combined),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "connection.failed.authentication.delay.ms": "0",
    }
    for listener in ("sasl_plaintext", "sasl_ssl"):
        props[f"listener.name.{listener}.plain.sasl.jaas.config"] = PLAIN_JAAS
        for mechanism in ("scram-sha-256", "scram-sha-512"):
            props[f"listener.name.{listener}.{mechanism}.sasl.jaas.config"] = SCRAM_JAAS
    return BrokerNode.from_config_file(None, props), authority


def test_ten_thousand_hostile_frames_leave_a_secured_broker_and_its_steady_client_unharmed(secured_node):
    node, authority = secured_node
    Counter.frames, Counter.kinds, Counter.steady_calls = 0, {}, 0

    async def run() -> list[str]:
        await node.start()
        where = {li.name: (li.host, li.port) for li in node.listeners.bound}
        errors: list[str] = []
        done = asyncio.Event()

        async def steady() -> None:
            async with await RawClient.connect(*where["PLAINTEXT"], client_id="steady") as client:
                while not done.is_set():
                    answer = await client.call(3, 12, MetadataRequest(topics=None))
                    Counter.steady_calls += 1
                    if answer.brokers == [] or getattr(answer, "error_code", 0) not in (0, None):
                        errors.append(f"steady Metadata answered {answer}")
                    await asyncio.sleep(0.01)

        async def attacker(index: int) -> None:
            rng = random.Random(SEED * 1000 + index)
            loose = ssl.create_default_context()
            loose.check_hostname, loose.verify_mode = False, ssl.CERT_NONE
            while Counter.frames < WANTED_FRAMES:
                pick = rng.random()
                kind = (
                    "sasl" if pick < 0.45 else "sasl_ssl" if pick < 0.55 else "tls" if pick < 0.8 else "plain"
                )
                Counter.kinds[kind] = Counter.kinds.get(kind, 0) + 1
                if pick < 0.45:
                    await _send_all(*where["SASL_PLAINTEXT"], _sasl_attack(rng))
                elif pick < 0.55:
                    await _send_all(*where["SASL_SSL"], _sasl_attack(rng), tls=loose)
                elif pick < 0.8:
                    await _send_all(*where["SSL"], _tls_attack(rng))
                else:
                    await _send_all(*where["PLAINTEXT"], _plaintext_attack(rng))

        steady_task = asyncio.create_task(steady())
        try:
            await asyncio.wait_for(asyncio.gather(*(attacker(i) for i in range(WORKERS))), 240)
        finally:
            done.set()
            await steady_task
        for name in ("PLAINTEXT", "SASL_PLAINTEXT"):
            async with await RawClient.connect(*where[name], client_id="after") as client:
                answer = await client.call(
                    18, 3, ApiVersionsRequest(client_software_name="a", client_software_version="1")
                )
                errors += (
                    [] if answer.error_code == Errors.NONE else [f"{name} ApiVersions {answer.error_code}"]
                )
        await node.stop()
        return errors

    errors = asyncio.run(run())
    assert Counter.frames >= WANTED_FRAMES, f"only {Counter.frames} frames sent (seed {SEED})"
    assert errors == [], f"seed {SEED}: {errors[:5]}"
    assert min(Counter.kinds.values()) >= 100 and len(Counter.kinds) == 4, Counter.kinds
    assert Counter.steady_calls >= 20, "the steady client kept working throughout"
