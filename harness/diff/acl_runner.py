"""One target's side of ``kconform diff-acls``: apply the set-up as the admin principal, run the probe
catalogue as each principal over a connection logged in with its own credentials, record normalised
outcomes, and compute what Kafka's authorizer rules give for each from the same set-up; then take the
set-up away. The comparison of two sides is ``acl_compare.compare_sides``."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from kconform.reference_broker.security.authorizer import Authorizer
from kconform.reference_broker.security.principals import KafkaPrincipal

from ..client.errors import ClientError
from ..client.network import parse_bootstrap
from ..client.raw import RawClient, UnexpectedReply
from ..client.security import ClientSecurity, SaslCredentials
from .acl_admin import AclAdmin
from .acl_compare import Decider, Expectation
from .acl_probes import Probe, probe_catalogue
from .acl_setup import AclSetup, Principal

__all__ = ["SideRun", "run_side"]

Key = tuple[str, str]


@dataclass
class SideRun:
    name: str
    prefix: str
    outcomes: dict[Key, str] = field(default_factory=dict)
    expectations: dict[Key, Expectation] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # probes the target does not offer the version of
    notes: list[str] = field(default_factory=list)


def local_address(host: str, port: int) -> str:
    """The address this machine reaches ``host`` from: the host an ACL's host field is compared with
    (a UDP socket's connect only picks the route; nothing is sent)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((host, port))
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def offered(probe: Probe, versions: dict[int, tuple[int, int]]) -> bool:
    span = versions.get(probe.api_key)
    return span is not None and span[0] <= probe.version <= span[1]


async def run_side(
    name: str,
    bootstrap: str,
    admin: ClientSecurity,
    setup: AclSetup,
    prefix: str,
    versions: dict[int, tuple[int, int]],
    *,
    timeout: float = 15.0,
) -> SideRun:
    """``admin``: the target's security, logged in as a super user; each principal logs in with the same
    protocol and mechanism and its own user name and password."""
    run = SideRun(name, prefix)
    host, port = parse_bootstrap(bootstrap)[0]
    topics = [prefix + t for t in setup.topics]
    groups = [prefix + g for g in setup.groups]
    bindings = setup.bindings(prefix)
    admin_ops = AclAdmin(bootstrap, admin, timeout=timeout)
    try:
        await admin_ops.create_topics(topics)
        await admin_ops.create_groups(groups, topics[0] if topics else None)
        await admin_ops.create_transactional_ids([prefix + t for t in setup.transactional_ids])
        try:
            await admin_ops.create_acls(bindings)
            await admin_ops.wait_for_acls(bindings)
            probes = probe_catalogue(setup, prefix)
            run.skipped = [f"{p.id} (v{p.version} not offered)" for p in probes if not offered(p, versions)]
            probes = [p for p in probes if offered(p, versions)]
            authorizer = Authorizer.of(bindings, f"User:{admin.sasl.username}", False)
            client_host = local_address(host, port)
            for principal in setup.principals:
                decider = Decider(authorizer, KafkaPrincipal("User", principal.user), client_host)
                for probe in probes:
                    run.expectations[(principal.user, probe.id)] = probe.expect(decider)
                security = ClientSecurity(
                    admin.protocol,
                    admin.ssl_context,
                    SaslCredentials(admin.sasl.mechanism, principal.user, principal.password),
                )
                outcomes = await _probe_as(principal, security, host, port, probes, admin_ops, timeout)
                run.outcomes.update(((principal.user, probe_id), o) for probe_id, o in outcomes.items())
        finally:
            await admin_ops.delete_acls(bindings)
    finally:
        try:
            await admin_ops.delete_resources(topics, groups)
        finally:
            run.notes += admin_ops.notes
            await admin_ops.close()
    return run


async def _probe_as(
    principal: Principal,
    security: ClientSecurity,
    host: str,
    port: int,
    probes: list[Probe],
    admin: AclAdmin,
    timeout: float,
) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    client: RawClient | None = None
    try:
        for probe in probes:
            if client is None or client.closed:
                try:
                    client = await RawClient.connect(host, port, security=security, timeout=timeout)
                except ClientError as exc:  # AuthenticationFailed among them: the same for every probe
                    refused = f"login failed: {getattr(exc, 'name', type(exc).__name__)}"
                    return outcomes | {p.id: refused for p in probes if p.id not in outcomes}
                except (OSError, TimeoutError, UnexpectedReply) as exc:
                    outcomes[probe.id] = f"no connection: {type(exc).__name__}"
                    client = None
                    continue
            outcomes[probe.id] = await _ask(client, probe, timeout)
            if probe.deletes_topic and outcomes[probe.id] == "NONE":  # later principals find it again
                await admin.create_topic(probe.deletes_topic)
    finally:
        if client is not None:
            await client.close()
    return outcomes


async def _ask(client: RawClient, probe: Probe, timeout: float) -> str:
    try:
        reply = await client.request(probe.api_key, probe.version, probe.request, timeout=timeout)
    except (TimeoutError, OSError, UnexpectedReply) as exc:
        return f"no answer: {type(exc).__name__}"
    if not reply.answered:
        return f"no answer: {reply.fate}"
    try:
        return probe.outcome(reply.body)
    except (AttributeError, IndexError, TypeError):
        return "answer without the probed entry"
