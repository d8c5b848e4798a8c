"""How ``kconform diff-acls`` secures a reference broker it starts itself: its clients' listener
(``targets.client_listener``) on SASL_PLAINTEXT with the set-up's principals and the admin (its only
super user) as PLAIN users, with Kafka's StandardAuthorizer; and the client properties the admin logs in
with. Pure: settings in, settings out."""

from __future__ import annotations

from .acl_setup import AclSetup

__all__ = ["ADMIN_USER", "PROTOCOL", "STANDARD_AUTHORIZER", "admin_properties", "secured_properties"]

PROTOCOL = "SASL_PLAINTEXT"

ADMIN_USER = "admin"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def secured_properties(setup: AclSetup, admin_password: str) -> dict[str, str]:
    """Broker properties: users as ``PlainLoginModule``'s ``user_<name>`` options, ACLs enforced,
    nothing allowed where no ACL is found (Kafka's default)."""
    users = [(ADMIN_USER, admin_password), *((p.user, p.password) for p in setup.principals)]
    jaas = f"{_PLAIN} required " + " ".join(f'user_{user}="{password}"' for user, password in users) + ";"
    return {
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.external.plain.sasl.jaas.config": jaas,
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": f"User:{ADMIN_USER}",
        "allow.everyone.if.no.acl.found": "false",
    }


def admin_properties(admin_password: str) -> dict[str, str]:
    return {
        "security.protocol": PROTOCOL,
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": f'{_PLAIN} required username="{ADMIN_USER}" password="{admin_password}";',
    }
