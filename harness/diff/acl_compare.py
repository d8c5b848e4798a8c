"""What Kafka's authorizer rules fix about a probe's outcome, and the comparison of two targets' outcomes
per (principal, probe) with who deviates. Pure: outcomes and expectations in, differences out.

An outcome is a short normalised text: the error name that matters (``TOPIC_AUTHORIZATION_FAILED``), with
the authorized-operation bits where the probe reads them (``NONE ops=DESCRIBE,READ``), or what became of
the connection (``no answer: closed``, ``login failed: ...``). An expectation is either the whole outcome
(where the ACLs alone decide it: a refusal, the operation bits) or "no authorization failure" (past the
check, the answer depends on more than the ACLs). The verdict names the side whose outcome its own
expectation rejects: the expectation comes from ``reference_broker/security/authorizer.py``, which decides
as Kafka's ``StandardAuthorizer`` (``StandardAuthorizerData.authorize``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kconform.reference_broker.security.acls import Operation, ResourceType
from kconform.reference_broker.security.authorizer import Authorizer
from kconform.reference_broker.security.principals import KafkaPrincipal

__all__ = [
    "AUTHORIZATION_FAILURES",
    "AclDifference",
    "Decider",
    "Expectation",
    "compare_sides",
    "deviating_sides",
    "kafka_mismatches",
]

# The error names an authorization check answers (Kafka's *AuthorizationException codes).
AUTHORIZATION_FAILURES = frozenset(
    {
        "TOPIC_AUTHORIZATION_FAILED",
        "GROUP_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
    }
)
NOT_REFUSED = "no authorization failure"


@dataclass(frozen=True)
class Expectation:
    """``outcome`` None: any answer but an authorization failure; else exactly that outcome. ``reason``
    lists the authorizer's answers it follows from."""

    outcome: str | None
    reason: str

    def met_by(self, outcome: str) -> bool:
        if self.outcome is not None:
            return outcome == self.outcome
        error = outcome.split(" ", 1)[0]
        return error.isupper() and error not in AUTHORIZATION_FAILURES

    @property
    def kafka(self) -> str:
        return self.outcome or NOT_REFUSED


@dataclass
class Decider:
    """The authorizer's answers for one principal from one host, each question kept for the reason."""

    authorizer: Authorizer
    principal: KafkaPrincipal
    host: str
    asked: list[str] = field(default_factory=list)

    def may(self, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        allowed = self.authorizer.authorize(self.principal, self.host, operation, resource_type, name)
        self.asked.append(
            f"{operation.name} on {resource_type.name} {name}: {'allowed' if allowed else 'denied'}"
        )
        return allowed

    def operations(self, resource_type: ResourceType, name: str, candidates) -> str:
        """The ``ops=`` text of an authorized-operations bit set: the candidates allowed, by name."""
        bits = self.authorizer.operations_allowed(self.principal, self.host, resource_type, name, candidates)
        return operation_names(bits)

    def expect(self, outcome: str | None) -> Expectation:
        reason, self.asked = "; ".join(self.asked), []
        return Expectation(outcome, reason)


def operation_names(bits: int) -> str:
    """``ops=A,B`` from an authorized-operations bit set (bit n: operation n), by name, sorted."""
    names = sorted(op.name for op in Operation if op > Operation.ANY and bits & (1 << int(op)))
    return "ops=" + (",".join(names) or "none")


@dataclass(frozen=True)
class AclDifference:
    principal: str
    probe: str
    a: str
    b: str
    kafka_a: str  # what Kafka's rules give on each side (the same unless the set-ups differ)
    kafka_b: str
    reason: str
    sides: tuple[str, ...] | None  # the deviating sides ("a", "b"); None: the rules cannot tell

    def verdict(self, names: tuple[str, str]) -> str:
        if self.sides is None:
            return f"unknown: both answers fit Kafka's rules ({self.kafka_a})"
        deviating = [names["ab".index(side)] for side in self.sides]
        if len(deviating) == 2:
            return f"both deviate from Kafka, which answers {self.kafka_a}"
        kafka = self.kafka_a if self.sides == ("a",) else self.kafka_b
        return f"{deviating[0]} deviates from Kafka, which answers {kafka}"

    def to_json(self, names: tuple[str, str]) -> dict:
        return {
            "principal": self.principal,
            "probe": self.probe,
            names[0]: self.a,
            names[1]: self.b,
            "a": self.a,
            "b": self.b,
            "kafka": self.kafka_a if self.kafka_a == self.kafka_b else [self.kafka_a, self.kafka_b],
            "deviates": None if self.sides is None else [names["ab".index(s)] for s in self.sides],
            "sides": None if self.sides is None else list(self.sides),
            "verdict": self.verdict(names),
            "authorizer": self.reason,
        }


def deviating_sides(a: str, b: str, expect_a: Expectation, expect_b: Expectation) -> tuple[str, ...] | None:
    """The sides whose outcome their expectation rejects; None when both outcomes fit (the difference is
    not the authorizer's to judge)."""
    sides = tuple(
        side
        for side, outcome, expected in (("a", a, expect_a), ("b", b, expect_b))
        if not expected.met_by(outcome)
    )
    return sides or None


Key = tuple[str, str]  # (principal, probe id)


def compare_sides(
    a: dict[Key, str],
    b: dict[Key, str],
    expect_a: dict[Key, Expectation],
    expect_b: dict[Key, Expectation],
) -> list[AclDifference]:
    """Every (principal, probe) both sides ran whose outcomes differ, in the order side a ran them."""
    differences = []
    for key in (k for k in a if k in b and a[k] != b[k]):
        ea, eb = expect_a[key], expect_b[key]
        differences.append(
            AclDifference(
                *key, a[key], b[key], ea.kafka, eb.kafka, ea.reason, deviating_sides(a[key], b[key], ea, eb)
            )
        )
    return differences


def kafka_mismatches(outcomes: dict[Key, str], expectations: dict[Key, Expectation]) -> list[Key]:
    """The (principal, probe) pairs whose outcome Kafka's rules reject, whether or not the other target
    agrees: two targets wrong alike show no difference, but still show here."""
    return [key for key, outcome in outcomes.items() if not expectations[key].met_by(outcome)]
