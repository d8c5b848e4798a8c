#!/usr/bin/env python3
"""Smoke test of the docker target for one Kafka version: start apache/kafka, ask its ApiVersions,
create a topic, produce with kconform's producer, read back with librdkafka (confluent-kafka), stop.

    python ci/docker-smoke.py 3.9.1 [--brokers 3] [--records 10] [--logs-dir DIR]

Exit status 0 when every record came back, in order; 1 (with the reason) otherwise."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time


async def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from kconform.harness.client.producer import Producer

    async with Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        for value in values:
            await producer.send_and_wait(topic, value)


def consume(bootstrap: str, topic: str, count: int, timeout: float) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kconform-smoke",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                raise RuntimeError(f"consumer error: {message.error()}")
            got.append(message.value())
        return got
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version", help="Kafka version or apache/kafka tag, e.g. 4.0 or 3.9.1")
    parser.add_argument("--brokers", type=int, default=1)
    parser.add_argument("--records", type=int, default=10)
    parser.add_argument("--logs-dir", default=None, help="where container logs go if startup fails")
    parser.add_argument("--timeout", type=float, default=180.0, help="startup timeout, seconds")
    args = parser.parse_args(argv)

    from kconform.harness.targets.base import TargetError
    from kconform.harness.targets.docker_target import DockerTarget

    target = DockerTarget(
        f"docker:{args.version}",
        version=args.version,
        brokers=args.brokers,
        logs_dir=args.logs_dir,
        startup_timeout=args.timeout,
    )
    started = time.monotonic()
    try:
        target.start()
        print(
            f"started {target.image} ({args.brokers} broker(s)) at {target.bootstrap} "
            f"in {time.monotonic() - started:.1f} s",
            flush=True,
        )
        versions = target.api_versions()
        print(f"ApiVersions: {len(versions)} APIs advertised", flush=True)
        topic = "kconform-smoke"
        target.create_topic(topic, partitions=1, replication_factor=min(3, args.brokers))
        values = [b"v%d" % i for i in range(args.records)]
        asyncio.run(produce(target.bootstrap, topic, values))
        print(f"produced {len(values)} records to {topic}", flush=True)
        got = consume(target.bootstrap, topic, len(values), timeout=60)
        if got != values:
            print(f"FAILED: consumed {got!r}, expected {values!r}", file=sys.stderr)
            return 1
        print(f"consumed {len(got)} records back, in order: ok", flush=True)
        return 0
    except (TargetError, RuntimeError, OSError) as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        target.stop()


if __name__ == "__main__":
    sys.exit(main())
