"""``--target-config FILE``: Java client properties (``security.protocol``, ``ssl.*``, ``sasl.*``) for
reaching every target of a command, read and checked before any target starts. A target spec may add
its own (``bootstrap:HOST:PORT@security.protocol=SSL,...``), which win over the file's.

``--broker-config FILE``: broker properties (Kafka's names: key stores, ``sasl.enabled.mechanisms``,
JAAS) that secure the brokers a command starts (reference, reference:N, docker:V[:N]) to match the clients'
``security.protocol`` (``targets.client_listener``)."""

from __future__ import annotations

import click

__all__ = ["TARGET_CONFIG_HELP", "TargetConfigProblem", "broker_config_option", "target_config_option"]


class TargetConfigProblem(click.ClickException):
    """Client properties that cannot work: one ``Error:`` line and exit 2, before any target starts."""

    exit_code = 2


TARGET_CONFIG_HELP = (
    "a Java-style properties file of client settings for every target (security.protocol, "
    "ssl.truststore.location, sasl.mechanism, sasl.jaas.config ...); a target spec's own "
    "@key=value options win"
)


def _load(_ctx: click.Context, _param: click.Parameter, value: str | None) -> dict[str, str]:
    if value is None:
        return {}
    from ..client.config import AdminConfig, ClientConfigError
    from ..client.properties import read_properties
    from ..client.security import security_from_config

    try:
        properties = read_properties(value)
        security_from_config(AdminConfig(properties))  # unknown names, bad values, unreadable stores
    except ClientConfigError as exc:
        text = str(exc)
        raise TargetConfigProblem(
            text if text.startswith(value) else f"--target-config {value}: {text}"
        ) from None
    return properties


def target_config_option(function):
    return click.option(
        "--target-config",
        "target_config",
        default=None,
        metavar="FILE",
        callback=_load,
        help=TARGET_CONFIG_HELP,
    )(function)


def _load_broker(_ctx: click.Context, _param: click.Parameter, value: str | None) -> dict[str, str]:
    if value is None:
        return {}
    from ..client.config import ClientConfigError
    from ..client.properties import read_properties
    from ..targets.client_listener import OWNED_LISTENER_SETTINGS

    try:
        properties = read_properties(value)
    except ClientConfigError as exc:
        text = str(exc)
        raise TargetConfigProblem(
            text if text.startswith(value) else f"--broker-config {value}: {text}"
        ) from None
    owned = sorted(set(OWNED_LISTENER_SETTINGS) & set(properties))
    if owned:
        raise TargetConfigProblem(f"--broker-config {value}: kconform sets {', '.join(owned)} itself")
    return properties


def broker_config_option(function):
    return click.option(
        "--broker-config",
        "broker_config",
        default=None,
        metavar="FILE",
        callback=_load_broker,
        help="broker properties securing the brokers kconform starts (reference, reference:N, docker) to "
        "match --target-config's security.protocol: key stores, sasl.enabled.mechanisms, JAAS; "
        "the clients' listener is named EXTERNAL",
    )(function)
