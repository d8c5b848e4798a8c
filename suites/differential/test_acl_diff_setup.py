"""The ACL set-up of ``kconform diff-acls``: the default exercises every rule it promises, a written set-up
reads back as written, names get the run prefix where a pattern still covers them, and a bad file is one
``SetupError`` naming the entry (exit 2 and one ``Error:`` line from the command)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.harness.cli import cli
from kconform.harness.diff.acl_setup import AclSetup, SetupError, load_setup, parse_setup, setup_from_data
from kconform.reference_broker.security.acls import (
    Operation,
    PatternType,
    Permission,
    ResourceType,
    validate_new_binding,
)
from kconform.reference_broker.security.authorizer import CLUSTER_NAME


def test_the_default_set_up_exercises_each_rule():
    setup = load_setup(None)
    rules = setup.acls
    users = {p.user for p in setup.principals}
    assert {r.pattern_type for r in rules} == {PatternType.LITERAL, PatternType.PREFIXED}
    # a DENY on a resource that an ALLOW of the same principal also covers
    denies = [r for r in rules if r.permission == Permission.DENY]
    assert any(
        a.principal == d.principal
        and a.permission == Permission.ALLOW
        and a.resource_type == d.resource_type
        and a.binding("").resource_matches(d.resource_type, d.resource_name)
        for d in denies
        for a in rules
    )
    assert any(r.resource_type == ResourceType.TOPIC and r.resource_name == "*" for r in rules)
    assert {ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.CLUSTER} <= {
        r.resource_type for r in rules
    }
    cluster_ops = {r.operation for r in rules if r.resource_type == ResourceType.CLUSTER}
    assert {Operation.CREATE, Operation.DESCRIBE} <= cluster_ops
    with_acls = {r.principal.partition(":")[2] for r in rules}
    assert users - with_acls  # a principal with no ACLs at all
    only_deny = {
        u
        for u in with_acls
        if all(r.permission == Permission.DENY for r in rules if r.principal == f"User:{u}")
    }
    assert only_deny  # and one with nothing but a DENY


def test_names_take_the_run_prefix_where_patterns_still_cover_them():
    setup = load_setup(None)
    by_name = {(b.resource_type, b.resource_name, b.pattern_type) for b in setup.bindings("run1-")}
    assert (ResourceType.TOPIC, "run1-pay-", PatternType.PREFIXED) in by_name
    assert (ResourceType.TOPIC, "*", PatternType.LITERAL) in by_name  # the wildcard stays the wildcard
    assert (ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL) in by_name
    prefixed = next(b for b in setup.bindings("run1-") if b.pattern_type == PatternType.PREFIXED)
    assert prefixed.resource_matches(ResourceType.TOPIC, "run1-pay-audit")
    assert not prefixed.resource_matches(ResourceType.TOPIC, "pay-audit")  # an earlier run's names


def _acl(**fields) -> str:
    base = {"resource_type": "TOPIC", "resource_name": "t", "principal": "User:u", "operation": "READ"}
    base.update(fields)
    lines = [f"{k} = {v!r}".replace("'", '"') for k, v in base.items() if v is not None]
    return '[[principal]]\nuser = "u"\npassword = "p"\n[[acl]]\n' + "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (_acl(colour="red"), "acl 1: unknown field 'colour'"),
        (_acl(operation="FROBNICATE"), "unknown operation 'FROBNICATE'"),
        (_acl(operation="ANY"), "unknown operation 'ANY'"),  # a filter's value, never a binding's
        (_acl(pattern_type="MATCH"), "unknown pattern_type 'MATCH'"),
        (_acl(pattern_type="PREFIXED", resource_name="*"), "prefixed pattern cannot be the wildcard"),
        (_acl(resource_type="BROKER"), "unknown resource_type 'BROKER'"),
        (_acl(permission="MAYBE"), "unknown permission 'MAYBE'"),
        (_acl(principal="alice"), "must read User:<name>"),
        (_acl(host="somewhere"), "must be '*' or an IP address"),
        (_acl(resource_type="CLUSTER", resource_name="other"), "the cluster resource is the literal"),
        (_acl(resource_name=None), "resource_name is missing"),
        (_acl(operation=3), "operation must be a non-empty string"),
        ('[[principal]]\nuser = "u"\n', "principal 1: password is missing"),
        ('[[principal]]\nuser = "u"\npassword = "p"\n[[principal]]\nuser = "u"\npassword = "q"\n', "twice"),
        ('[[principal]]\nuser = "a b"\npassword = "p"\n', "may hold only letters"),
        ('[[principal]]\nuser = "u"\npassword = "p\\""\n', "JAAS quoting"),
        ('[resources]\ntopics = ["bad/name"]\n', "no legal Kafka topic name"),
        ('[resources]\nqueues = ["q"]\n', "unknown field 'queues'"),
        ('[resources]\ngroups = ["g", "g"]\n', "names one twice"),
        ("principal = 3\n", "write each as a [[table]]"),
        ("[users]\n", "unknown field 'users'"),
        ("[[acl]\n", "not valid TOML"),
    ],
)
def test_a_bad_set_up_names_what_is_wrong(text, says):
    with pytest.raises(SetupError, match="^f.toml: .*") as caught:
        parse_setup(text, source="f.toml")
    assert says in str(caught.value)


def test_the_command_refuses_a_bad_file_with_one_error_line_before_any_target(tmp_path):
    bad = tmp_path / "acls.toml"
    bad.write_text(_acl(operation="FROBNICATE"))
    result = CliRunner().invoke(
        cli, ["diff-acls", "--a", "reference", "--b", "reference", "--setup", str(bad)]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "FROBNICATE" in lines[0]
    missing = CliRunner().invoke(
        cli, ["diff-acls", "--a", "reference", "--b", "reference", "--setup", "nope"]
    )
    assert missing.exit_code == 2 and "cannot read it" in missing.output


def test_a_target_without_a_sasl_admin_is_refused_before_it_is_reached():
    result = CliRunner().invoke(cli, ["diff-acls", "--a", "bootstrap:127.0.0.1:1", "--b", "reference"])
    assert result.exit_code == 2
    assert "needs a SASL admin" in result.output and "Traceback" not in result.output


# ---- properties ---------------------------------------------------------------------------------

_names = st.from_regex(r"[a-z][a-z0-9._-]{0,12}", fullmatch=True)


@st.composite
def acl_rules(draw, users):
    resource_type = draw(st.sampled_from(["TOPIC", "GROUP", "TRANSACTIONAL_ID", "CLUSTER"]))
    if resource_type == "CLUSTER":
        name, pattern = CLUSTER_NAME, "LITERAL"
    else:
        pattern = draw(st.sampled_from(["LITERAL", "PREFIXED"]))
        name = draw(_names if pattern == "PREFIXED" else st.one_of(_names, st.just("*")))
    return {
        "resource_type": draw(st.sampled_from([resource_type, resource_type.lower()])),
        "resource_name": name,
        "pattern_type": pattern,
        "principal": "User:" + draw(st.sampled_from([*users, "*"])),
        "host": draw(st.sampled_from(["*", "127.0.0.1", "::1"])),
        "operation": draw(st.sampled_from([o.name for o in Operation if o > Operation.ANY])),
        "permission": draw(st.sampled_from(["ALLOW", "DENY"])),
    }


@st.composite
def set_ups(draw):
    users = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    return {
        "principal": [
            {"user": u, "password": draw(st.text("abcXYZ019-_ ", min_size=1, max_size=10))} for u in users
        ],
        "resources": {
            "topics": draw(st.lists(_names, max_size=3, unique=True)),
            "groups": draw(st.lists(_names, max_size=2, unique=True)),
            "transactional_ids": draw(st.lists(_names, max_size=2, unique=True)),
        },
        "acl": draw(st.lists(acl_rules(users), max_size=6)),
    }


def _toml(data: dict) -> str:
    def value(v):
        return "[" + ", ".join(value(x) for x in v) + "]" if isinstance(v, list) else f'"{v}"'

    out = ["[resources]\n" + "".join(f"{k} = {value(v)}\n" for k, v in data["resources"].items())]
    for table in ("principal", "acl"):
        out += [f"[[{table}]]\n" + "".join(f"{k} = {value(v)}\n" for k, v in e.items()) for e in data[table]]
    return "\n".join(out)


@settings(max_examples=150, deadline=None)
@given(set_ups())
def test_a_written_set_up_reads_back_as_written(data):
    setup = parse_setup(_toml(data))
    assert isinstance(setup, AclSetup)
    assert [(p.user, p.password) for p in setup.principals] == [
        (p["user"], p["password"]) for p in data["principal"]
    ]
    assert setup.topics == tuple(data["resources"]["topics"])
    assert [
        (r.resource_type.name, r.resource_name, r.pattern_type.name, r.principal, r.host, r.operation.name,
         r.permission.name)
        for r in setup.acls
    ] == [
        (a["resource_type"].upper(), a["resource_name"], a["pattern_type"], a["principal"], a["host"],
         a["operation"], a["permission"])
        for a in data["acl"]
    ]  # fmt: skip
    for binding in setup.bindings("kc-acl-x-a-"):  # every binding is one CreateAcls takes
        validate_new_binding(binding)


FIELDS = ["user", "password", "resource_type", "resource_name", "pattern_type", "principal", "host",
          "operation", "permission", "topics"]  # fmt: skip
_junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["principal", "resources", "acl"]),
        st.one_of(_junk, st.lists(st.dictionaries(st.sampled_from(FIELDS), _junk, max_size=4), max_size=2)),
        max_size=3,
    )
)
def test_any_shape_of_data_is_a_set_up_or_a_setup_error(data):
    try:
        setup_from_data(data)
    except SetupError as exc:
        assert str(exc).startswith("the default set-up: ")
