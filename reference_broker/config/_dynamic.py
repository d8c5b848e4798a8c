"""Dynamic broker configs read back from the metadata log, Kafka 4.0's way.

The controller stores a BROKER resource's configs as it is given them (the forwarding broker validated
them); every node then takes the cluster default (resource name "") and its own layer (its node id) into
its configuration (``DynamicConfigPublisher``, ``DynamicBrokerConfig.updateDefaultConfig`` and
``updateBrokerConfig``). What ``fromPersistentProps`` would ignore is left out and named; a layer whose
whole configuration Kafka would refuse leaves the node's configuration as it was.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._broker import BrokerConfig
from ._definitions import BROKER_CONFIGS, UpdateMode
from ._errors import ConfigError

__all__ = ["LISTENER_ONLY_CONFIGS", "persisted_layer", "with_persisted_dynamic"]

# SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only with a listener prefix (DynamicSecurityConfigs).
LISTENER_ONLY_CONFIGS = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
)


def _parses(name: str, value: str) -> bool:
    try:
        BROKER_CONFIGS[name].parse(value)
    except ConfigError:
        return False
    return True


def persisted_layer(props: Mapping[str, str], *, per_broker: bool) -> tuple[dict[str, str], list[str]]:
    """``DynamicBrokerConfig.fromPersistentProps``: a stored dynamic layer without the values that do not
    parse, the read-only configs, the security configs without a listener prefix and, at cluster level,
    the per-broker configs; and a line for each kind left out."""
    level = "per-broker" if per_broker else "cluster default"
    ignored = (
        ("values that do not parse", lambda n, v: n in BROKER_CONFIGS and not _parses(n, v)),
        (
            "read-only configs",
            lambda n, v: n in BROKER_CONFIGS and BROKER_CONFIGS[n].update_mode is UpdateMode.READ_ONLY,
        ),
        ("security configs without a listener prefix", lambda n, v: n in LISTENER_ONLY_CONFIGS),
        (
            "per-broker configs",
            lambda n, v: (
                not per_broker
                and n in BROKER_CONFIGS
                and BROKER_CONFIGS[n].update_mode is UpdateMode.PER_BROKER
            ),
        ),
    )
    kept, problems = dict(props), []
    for what, test in ignored:
        dropped = sorted(name for name, value in kept.items() if test(name, value))
        if dropped:
            problems.append(f"the dynamic {level} configs hold {what}, ignored: {', '.join(dropped)}")
            for name in dropped:
                del kept[name]
    return kept, problems


def with_persisted_dynamic(
    config: BrokerConfig, *, cluster_default: Mapping[str, str], per_broker: Mapping[str, str]
) -> tuple[BrokerConfig, list[str]]:
    """``config`` with the stored dynamic layers in place (the cluster default first, then the node's
    own), and what was ignored or refused on the way."""
    problems: list[str] = []
    for props, is_per_broker in ((cluster_default, False), (per_broker, True)):
        layer, ignored = persisted_layer(props, per_broker=is_per_broker)
        problems += ignored
        try:
            if is_per_broker:
                config = config.with_dynamic(per_broker=layer)
            else:
                config = config.with_dynamic(cluster_default=layer)
        except ConfigError as exc:  # updateCurrentConfig: the new configuration is refused, the old stays
            level = "per-broker" if is_per_broker else "cluster default"
            problems.append(f"the dynamic {level} configs could not be applied, kept as they were: {exc}")
    return config, problems
