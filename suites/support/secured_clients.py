"""Real Kafka clients over TLS and SASL: each function produces ``count`` values with acks=all to a
topic and reads them back with a consumer group, returning (acked, read values), or raises
``ClientRefused`` with the client's own error when it cannot connect or authenticate."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

KAFKAJS_HOME = Path(os.environ.get("KCONFORM_KAFKAJS_HOME", Path.home() / ".cache" / "kconform" / "kafkajs"))
KAFKAJS_SCRIPT = Path(__file__).parent.parent / "reference_broker" / "live" / "clients" / "kafkajs_secured.js"


class ClientRefused(Exception):
    pass


@dataclass(frozen=True)
class Security:
    protocol: str  # SSL, SASL_PLAINTEXT, SASL_SSL
    ca: Path | None = None
    cert: Path | None = None  # a client certificate (mutual TLS)
    key: Path | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None


def kafkajs_available() -> bool:
    return shutil.which("node") is not None and (KAFKAJS_HOME / "node_modules" / "kafkajs").is_dir()


def _values(count: int) -> list[str]:
    return [f"v-{i}" for i in range(count)]


# ---- librdkafka (confluent-kafka and kcat take the same properties) -------------------------------------


def librdkafka_properties(bootstrap: str, s: Security) -> dict[str, str]:
    props = {"bootstrap.servers": bootstrap, "security.protocol": s.protocol}
    if s.ca:
        props["ssl.ca.location"] = str(s.ca)
    if s.cert:
        props["ssl.certificate.location"], props["ssl.key.location"] = str(s.cert), str(s.key)
    if s.mechanism:
        props |= {"sasl.mechanisms": s.mechanism, "sasl.username": s.username, "sasl.password": s.password}
    return props


def confluent_kafka(bootstrap: str, s: Security, topic: str, count: int) -> tuple[int, list[str]]:
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

    props = librdkafka_properties(bootstrap, s)
    errors: list = []
    producer = Producer({**props, "acks": "all", "error_cb": errors.append, "message.timeout.ms": 15000})
    acked = []
    for value in _values(count):
        producer.produce(topic, value.encode(), on_delivery=lambda e, m: acked.append(e is None))
    deadline = time.monotonic() + 20
    refusals = (KafkaError._AUTHENTICATION, KafkaError._SSL)
    while len(acked) < count and time.monotonic() < deadline:
        producer.poll(0.1)
        if any(e.code() in refusals for e in errors):
            break
    auth = [e for e in errors if e.code() in refusals]
    if auth or not any(acked):
        raise ClientRefused(str(auth[0] if auth else errors[:1] or "nothing acknowledged"))
    consumer = Consumer({**props, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    read, deadline = [], time.monotonic() + 30
    try:
        while len(read) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                read.append(message.value().decode())
    except KafkaException as exc:
        raise ClientRefused(str(exc)) from None
    finally:
        consumer.close()
    return sum(acked), read


def kcat(bootstrap: str, s: Security, topic: str, count: int) -> tuple[int, list[str]]:
    options = [arg for k, v in librdkafka_properties(bootstrap, s).items() for arg in ("-X", f"{k}={v}")]
    produced = subprocess.run(
        ["kcat", *options, "-P", "-t", topic, "-X", "acks=all"],
        input="\n".join(_values(count)) + "\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if produced.returncode != 0:
        raise ClientRefused(produced.stderr.strip()[-400:])
    consumed = subprocess.run(
        ["kcat", *options, "-C", "-t", topic, "-o", "beginning", "-e", "-c", str(count)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if consumed.returncode != 0:
        raise ClientRefused(consumed.stderr.strip()[-400:])
    return count, consumed.stdout.split()


# ---- kafka-python and aiokafka --------------------------------------------------------------------------


def _python_security(s: Security, *, aio: bool) -> dict:
    kw: dict = {"security_protocol": s.protocol}
    if s.protocol.endswith("SSL"):
        if aio:
            from aiokafka.helpers import create_ssl_context

            kw["ssl_context"] = create_ssl_context(
                cafile=str(s.ca), certfile=s.cert and str(s.cert), keyfile=s.key and str(s.key)
            )
        else:
            kw |= {"ssl_cafile": str(s.ca), "ssl_check_hostname": True}
            if s.cert:
                kw |= {"ssl_certfile": str(s.cert), "ssl_keyfile": str(s.key)}
    if s.mechanism:
        kw |= {
            "sasl_mechanism": s.mechanism,
            "sasl_plain_username": s.username,
            "sasl_plain_password": s.password,
        }
    return kw


def kafka_python(bootstrap: str, s: Security, topic: str, count: int) -> tuple[int, list[str]]:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError

    kw = _python_security(s, aio=False)
    heard = _Heard()  # kafka-python retries a refused login until its deadline: keep what it logged
    logging.getLogger("kafka").addHandler(heard)
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", max_block_ms=10000, **kw)
        futures = [producer.send(topic, value.encode()) for value in _values(count)]
        acked = sum(1 for f in futures if f.get(timeout=20))
        producer.close()
        consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"g-{topic}",
                                 auto_offset_reset="earliest", consumer_timeout_ms=10000, **kw)  # fmt: skip
        read = []
        for message in consumer:
            read.append(message.value.decode())
            if len(read) >= count:
                break
        consumer.close()
    except KafkaError as exc:
        refusals = [m for m in heard.messages if "Authentication" in m] or heard.messages[-1:]
        raise ClientRefused(f"{type(exc).__name__}: {exc}; {refusals[:1]}") from None
    finally:
        logging.getLogger("kafka").removeHandler(heard)
    return acked, read


class _Heard(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def aiokafka(bootstrap: str, s: Security, topic: str, count: int) -> tuple[int, list[str]]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import KafkaError

    async def run() -> tuple[int, list[str]]:
        kw = _python_security(s, aio=True)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **kw)
        await producer.start()
        try:
            acked = 0
            for value in _values(count):
                await producer.send_and_wait(topic, value.encode())
                acked += 1
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"g-{topic}",
                                    auto_offset_reset="earliest", **kw)  # fmt: skip
        await consumer.start()
        read = []
        try:
            deadline = time.monotonic() + 30
            while len(read) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                read += [m.value.decode() for messages in batches.values() for m in messages]
        finally:
            await consumer.stop()
        return acked, read

    heard = _Heard()  # aiokafka logs the broker's reason and raises a generic bootstrap error
    logging.getLogger("aiokafka").addHandler(heard)
    try:
        return asyncio.run(run())
    except KafkaError as exc:
        refusals = [m for m in heard.messages if "Authentication" in m] or heard.messages[-1:]
        raise ClientRefused(f"{type(exc).__name__}: {exc}; {refusals[:1]}") from None
    finally:
        logging.getLogger("aiokafka").removeHandler(heard)


# ---- kafkajs (npm) --------------------------------------------------------------------------------------


def kafkajs(bootstrap: str, s: Security, topic: str, count: int) -> tuple[int, list[str]]:
    spec = {
        "bootstrap": bootstrap,
        "topic": topic,
        "count": count,
        "group": f"g-{topic}",
        "ssl": None,
        "sasl": None,
    }
    if s.protocol.endswith("SSL"):
        spec["ssl"] = {"ca": str(s.ca), "cert": s.cert and str(s.cert), "key": s.key and str(s.key)}
    if s.mechanism:
        spec["sasl"] = {"mechanism": s.mechanism.lower(), "username": s.username, "password": s.password}
    env = {**os.environ, "NODE_PATH": str(KAFKAJS_HOME / "node_modules")}
    done = subprocess.run(["node", str(KAFKAJS_SCRIPT), json.dumps(spec)], capture_output=True, text=True,
                          timeout=120, env=env)  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise ClientRefused(f"kafkajs printed no result: {done.stderr[-400:]}")
    result = json.loads(lines[-1])
    if "error" in result:
        raise ClientRefused(f"{result.get('type')}: {result['error']}")
    return result["acked"], result["read"]


CLIENTS = {
    "confluent-kafka": confluent_kafka,
    "kafka-python": kafka_python,
    "aiokafka": aiokafka,
    "kcat": kcat,
    "kafkajs": kafkajs,
}
