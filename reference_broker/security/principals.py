"""Who a connection is: Kafka's principals and how its default builder makes them.

``DefaultKafkaPrincipalBuilder``: a plaintext connection, or TLS without a client certificate, is
``User:ANONYMOUS``; a client certificate gives ``User:<its subject DN, RFC 2253>`` passed through
``ssl.principal.mapping.rules`` (``SslPrincipalMapper``); SASL gives ``User:<authorization id>``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..config import ConfigError

__all__ = ["ANONYMOUS", "KafkaPrincipal", "SslPrincipalMapper", "NoMatchingRule", "subject_dn"]


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")

# One rule (DEFAULT, or RULE:pattern/replacement/[LU]) and the separator after it, as Kafka splits them.
_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class NoMatchingRule(Exception):
    pass


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern | None  # None: DEFAULT, the DN as it is
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(_python_replacement(self.replacement, self.pattern.groups), dn)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules``: the first rule that applies names the principal."""

    def __init__(self, rules: str | None) -> None:
        self.rules = _parse(rules if rules is not None else "DEFAULT")

    def name(self, dn: str) -> str:
        for rule in self.rules:
            mapped = rule.apply(dn)
            if mapped is not None:
                return mapped
        raise NoMatchingRule(f"No rules apply to {dn}")


def _parse(text: str) -> list[_Rule]:
    rules = []
    for match in _SPLITTER.finditer(text.strip()):
        rule = match.group(1)
        parsed = _PARSER.match(rule)
        if parsed is None or parsed.end() != len(rule):
            raise ConfigError(f"Invalid rule: `{rule}` in ssl.principal.mapping.rules")
        if parsed.group(1):
            rules.append(_Rule(None))
        elif parsed.group(2) is not None:
            try:
                pattern = re.compile(parsed.group(2))
            except re.error as exc:
                raise ConfigError(f"Invalid rule: {rule}: {exc}") from None
            rules.append(_Rule(pattern, parsed.group(3), parsed.group(4)))
        elif parsed.group(5):
            raise ConfigError(f"Invalid rule: {rule}")
        if match.end() == len(text.strip()):
            break
    return rules


def _python_replacement(java: str, groups: int) -> str:
    """A Java replacement string (``$1``) as Python's (``\\g<1>``); a back reference past the groups
    loses trailing digits until it fits, as Kafka's mapper treats it."""
    out, position = [], 0
    for match in _BACK_REFERENCE.finditer(java):
        out.append(java[position : match.start()].replace("\\", "\\\\"))
        digits = match.group(1)
        index = int(digits)
        while index > groups and index >= 10:
            index //= 10
        literal = digits[len(str(index)) :]
        out.append(f"\\g<{index}>{literal}" if 0 < index <= groups else match.group(0).replace("\\", "\\\\"))
        position = match.end()
    out.append(java[position:].replace("\\", "\\\\"))
    return "".join(out)


def subject_dn(der_certificate: bytes) -> str:
    """A certificate's subject as the RFC 2253 string Java's ``X500Principal.getName()`` gives."""
    from cryptography import x509

    return x509.load_der_x509_certificate(der_certificate).subject.rfc4514_string()
