"""AlterUserScramCredentials (51) and DescribeUserScramCredentials (50) over the wire, one rule of Kafka's
a test: the controller's checks and messages (``ScramControlManager.alterCredentials``), the stored and
server keys it derives from the client's salted password (``ScramFormatter``, RFC 5802), describing
from the image (``ScramImage.describe``), credentials kept in the metadata log across a restart,
forwarding from brokers without the controller role, and librdkafka's admin client as an independent
peer. The expected keys are derived here with hashlib and hmac, not with the broker's own functions."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AlterUserScramCredentialsRequest,
    ApiVersionsRequest,
    DescribeUserScramCredentialsRequest,
)
from kconform.codecs.releases import kafka_release
from kconform.reference_broker.cluster_metadata import ClusterImage
from kconform.reference_broker.controller.scram import alter_credentials
from kconform.reference_broker.node import BrokerNode

from ...support.rawclient import RawClient

SHA256, SHA512 = 1, 2
HASHES = {SHA256: "sha256", SHA512: "sha512"}
Upsert = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
Delete = AlterUserScramCredentialsRequest.ScramCredentialDeletion
TWICE = "A user credential cannot be altered twice in the same request"


def salted(mechanism: int, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password, salt, iterations)


def rfc5802_keys(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    """(StoredKey, ServerKey) of RFC 5802 section 3."""
    name = HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", name).digest()
    stored_key = hashlib.new(name, client_key).digest()
    return stored_key, hmac.new(salted_password, b"Server Key", name).digest()


def upsert(name: str, mechanism: int = SHA256, iterations: int = 4096, password: bytes = b"secret") -> Upsert:
    salt = f"salt-{name}".encode()
    return Upsert(
        name=name,
        mechanism=mechanism,
        iterations=iterations,
        salt=salt,
        salted_password=salted(mechanism, password, salt, iterations),
    )


def alter_request(*, upsertions=(), deletions=()) -> AlterUserScramCredentialsRequest:
    return AlterUserScramCredentialsRequest(upsertions=list(upsertions), deletions=list(deletions))


def describe_request(users: list[str] | None) -> DescribeUserScramCredentialsRequest:
    names = None if users is None else [DescribeUserScramCredentialsRequest.UserName(name=u) for u in users]
    return DescribeUserScramCredentialsRequest(users=names)


def outcomes(response) -> dict[str, tuple[int, str | None]]:
    by_user = {r.user: (r.error_code, r.error_message) for r in response.results}
    assert len(by_user) == len(response.results), "one result per user"
    return by_user


def described(response) -> dict[str, object]:
    """user -> sorted (mechanism, iterations) pairs, or the (code, message) of its error."""
    assert (response.error_code, response.error_message) == (Errors.NONE, "")
    return {
        r.user: sorted((c.mechanism, c.iterations) for c in r.credential_infos)
        if r.error_code == Errors.NONE
        else (r.error_code, r.error_message)
        for r in response.results
    }


def run_node(data_dir: Path, scenario, *, kafka_version: str | None = None):
    """Start a combined-mode node on a free port, run ``scenario(client, node)`` with a raw client, stop."""

    async def main():
        props = {"node.id": "1", "log.dirs": str(data_dir)}
        release = kafka_release(kafka_version) if kafka_version else None
        node = BrokerNode.from_config_file(None, props, kafka_release=release)
        host, port = await node.start("127.0.0.1", 0)
        try:
            async with await RawClient.connect(host, port, client_id="scram-tests") as client:
                return await scenario(client, node)
        finally:
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


async def alter(client, **changes):
    return await client.call(51, 0, alter_request(**changes))


async def describe(client, users: list[str] | None = None):
    return await client.call(50, 0, describe_request(users))


# ---- altering and the stored keys ---------------------------------------------------------------


def test_upserted_credentials_hold_the_rfc5802_keys_of_the_salted_password(tmp_path):
    """ScramControlManager.finishUpsertion: storedKey = H(HMAC(salted, "Client Key")), serverKey =
    HMAC(salted, "Server Key"); the salt and iterations are kept as sent."""
    alice, bob = upsert("alice", SHA256, 4096, b"pw-a"), upsert("bob", SHA512, 8192, b"pw-b")

    async def scenario(client, node):
        answer = await alter(client, upsertions=[alice, bob])
        return answer, node.image.scram_credential("SCRAM-SHA-256", "alice"), node.image

    answer, stored, image = run_node(tmp_path, scenario)
    assert outcomes(answer) == {"alice": (Errors.NONE, None), "bob": (Errors.NONE, None)}
    for sent, sasl_name in ((alice, "SCRAM-SHA-256"), (bob, "SCRAM-SHA-512")):
        credential = image.scram_credential(sasl_name, sent.name)
        expected = rfc5802_keys(sent.mechanism, sent.salted_password)
        assert (credential.stored_key, credential.server_key) == expected
        assert (credential.salt, credential.iterations) == (sent.salt, sent.iterations)
    assert stored is image.scram_credential("SCRAM-SHA-256", "alice")
    assert image.scram_credential("SCRAM-SHA-512", "alice") is None  # per mechanism
    assert image.scram_credential("PLAIN", "alice") is None
    assert "salted" not in repr(stored) and "key" not in repr(stored)  # secrets stay out of logs


def test_each_error_has_kafkas_code_and_message(tmp_path):
    """validateScramUsernameAndMechanism, then validateUpsertion's iteration bounds (4096..16384, both
    ends allowed) and validateDeletion's existence check."""

    async def scenario(client, node):
        await alter(client, upsertions=[upsert("existing")])
        return await alter(
            client,
            deletions=[
                Delete(name="ghost", mechanism=SHA256),  # no such credential
                Delete(name="", mechanism=SHA256),
                Delete(name="existing", mechanism=SHA512),  # the user exists, not this mechanism
                Delete(name="weird-deletion", mechanism=3),
            ],
            upsertions=[
                upsert("few", iterations=4095),
                upsert("lowest", iterations=4096),
                upsert("highest", SHA512, iterations=16384),
                upsert("many", iterations=16385),
                Upsert(name="unknown", mechanism=0, iterations=4096, salt=b"s", salted_password=b"p"),
                Upsert(name="", mechanism=7, iterations=1),  # the empty name is checked first
            ],
        )

    assert outcomes(run_node(tmp_path, scenario)) == {
        "ghost": (Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "": (Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "existing": (Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "weird-deletion": (Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "few": (Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "lowest": (Errors.NONE, None),
        "highest": (Errors.NONE, None),
        "many": (Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "unknown": (Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    }


def test_a_user_altered_twice_is_a_duplicate_and_nothing_of_it_is_written(tmp_path):
    """alterCredentials keys alterations by user name: a second mention, in the deletions or the
    upsertions and whatever its mechanism, takes back the first and is DUPLICATE_RESOURCE; a mention
    after an error is passed over, so the first error stays."""

    async def scenario(client, node):
        await alter(client, upsertions=[upsert("kept"), upsert("kept", SHA512)])  # twice: neither kept
        await alter(client, upsertions=[upsert("both")])
        answer = await alter(
            client,
            deletions=[Delete(name="both", mechanism=SHA256), Delete(name="ghost", mechanism=SHA256)],
            upsertions=[
                upsert("both", SHA512),  # deleted and upserted
                upsert("ghost"),  # its deletion already failed
                upsert("thrice"),
                upsert("thrice", SHA512),
                upsert("thrice", iterations=1),
            ],
        )
        return answer, await describe(client)

    answer, everyone = run_node(tmp_path, scenario)
    assert outcomes(answer) == {
        "both": (Errors.DUPLICATE_RESOURCE, TWICE),
        "ghost": (Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "thrice": (Errors.DUPLICATE_RESOURCE, TWICE),
    }
    assert described(everyone) == {"both": [(SHA256, 4096)]}  # the first request stored nothing


def test_deleting_one_mechanism_keeps_the_other(tmp_path):
    async def scenario(client, node):
        await alter(client, upsertions=[upsert("alice", SHA256, 4096), upsert("bob", SHA512, 5000)])
        await alter(client, upsertions=[upsert("alice", SHA512, 6000)])
        first = await alter(client, deletions=[Delete(name="alice", mechanism=SHA256)])
        after_one = await describe(client, ["alice"])
        second = await alter(client, deletions=[Delete(name="alice", mechanism=SHA512)])
        return first, after_one, second, await describe(client, ["alice", "bob"])

    first, after_one, second, after_both = run_node(tmp_path, scenario)
    assert outcomes(first) == outcomes(second) == {"alice": (Errors.NONE, None)}
    assert described(after_one) == {"alice": [(SHA512, 6000)]}
    assert described(after_both) == {
        "alice": (
            Errors.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: alice",
        ),
        "bob": [(SHA512, 5000)],
    }


# ---- describing -----------------------------------------------------------------------------------


def test_describe_all_and_some(tmp_path):
    """ScramImage.describe: null or empty users mean every user with a credential; a name asked twice is
    DUPLICATE_RESOURCE, a user without credentials RESOURCE_NOT_FOUND, each with the name in the message."""

    async def scenario(client, node):
        empty = await describe(client, None)
        await alter(client, upsertions=[upsert("ann", SHA256), upsert("ann", SHA512)])  # duplicate: none
        await alter(client, upsertions=[upsert("ann", SHA256, 4100), upsert("ben", SHA512, 4200)])
        await alter(client, upsertions=[upsert("ann", SHA512, 4300)])
        return (
            empty,
            await describe(client, None),
            await describe(client, []),
            await describe(client, ["ben", "zed", "ann", "ben"]),
        )

    empty, everyone, empty_list, some = run_node(tmp_path, scenario)
    assert described(empty) == {}
    assert (
        described(everyone)
        == described(empty_list)
        == {
            "ann": [(SHA256, 4100), (SHA512, 4300)],
            "ben": [(SHA512, 4200)],
        }
    )
    assert len(everyone.results) == 2
    assert described(some) == {
        "ben": (
            Errors.DUPLICATE_RESOURCE,
            "Cannot describe SCRAM credentials for the same user twice in a single request: ben",
        ),
        "zed": (Errors.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: zed"),
        "ann": [(SHA256, 4100), (SHA512, 4300)],
    }
    assert len(some.results) == 3  # each name once


def test_api_versions_advertises_both_apis_for_the_releases_that_have_them(tmp_path):
    """Both came with Kafka 2.7 (KIP-554), at version 0 only."""

    async def advertised(client, node):
        answer = await client.call(18, 0, ApiVersionsRequest())
        return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys if k.api_key in (50, 51)}

    assert run_node(tmp_path / "new", advertised) == {50: (0, 0), 51: (0, 0)}
    assert run_node(tmp_path / "old", advertised, kafka_version="2.6") == {}


# ---- the metadata log ------------------------------------------------------------------------------


def test_credentials_survive_a_restart(tmp_path):
    """UserScramCredentialRecord and RemoveUserScramCredentialRecord live in __cluster_metadata and are
    replayed on start like every other record."""
    carol = upsert("carol", SHA512, 9000, b"pw-c")

    async def first_life(client, node):
        await alter(client, upsertions=[upsert("dan"), carol, upsert("erin")])
        return await alter(client, deletions=[Delete(name="erin", mechanism=SHA256)])

    async def second_life(client, node):
        return await describe(client), node.image.scram_credential("SCRAM-SHA-512", "carol")

    assert outcomes(run_node(tmp_path, first_life)) == {"erin": (Errors.NONE, None)}
    everyone, credential = run_node(tmp_path, second_life)
    assert described(everyone) == {"dan": [(SHA256, 4096)], "carol": [(SHA512, 9000)]}
    assert (credential.stored_key, credential.server_key) == rfc5802_keys(SHA512, carol.salted_password)


# ---- the controller's rule as a property -------------------------------------------------------

names = st.sampled_from(["", "a", "b", "c"])
mechanisms = st.sampled_from([0, SHA256, SHA512, 3])
iterations = st.sampled_from([1, 4095, 4096, 10_000, 16384, 16385])


@settings(max_examples=200)
@given(
    existing=st.lists(st.tuples(names.filter(bool), st.sampled_from([SHA256, SHA512])), max_size=4),
    deletions=st.lists(st.tuples(names, mechanisms), max_size=4),
    upsertions=st.lists(st.tuples(names, mechanisms, iterations), max_size=4),
)
def test_one_result_per_named_user_and_records_only_for_successes(existing, deletions, upsertions):
    """Every user named gets exactly one result; a success is written as one record of the user's single
    alteration, and the image after replay holds exactly what the successes say."""
    image = ClusterImage()
    seed, _ = alter_credentials(image.scram, alter_request(upsertions=[upsert(n, m) for n, m in existing]))
    for offset, record in enumerate(seed):
        image.replay(record, offset)
    before = {(n, m) for n in "abc" for m in (SHA256, SHA512) if image.scram.get(m, n) is not None}
    request = alter_request(
        deletions=[Delete(name=n, mechanism=m) for n, m in deletions],
        upsertions=[
            Upsert(name=n, mechanism=m, iterations=i, salt=b"s", salted_password=b"p")
            for n, m, i in upsertions
        ],
    )
    records, results = alter_credentials(image.scram, request)
    by_user = {r.user: r.error_code for r in results}
    assert len(by_user) == len(results)
    assert set(by_user) == {n for n, _ in deletions} | {n for n, _, _ in upsertions}
    assert sorted(r.name for r in records) == sorted(u for u, code in by_user.items() if code == Errors.NONE)
    for offset, record in enumerate(records, start=len(seed)):
        image.replay(record, offset)
    after = {(n, m) for n in "abc" for m in (SHA256, SHA512) if image.scram.get(m, n) is not None}
    removed = {(r.name, r.mechanism) for r in records if not hasattr(r, "stored_key")}
    added = {(r.name, r.mechanism) for r in records if hasattr(r, "stored_key")}
    assert removed <= before
    assert after == (before - removed) | added


def test_results_follow_javas_hash_map_order():
    """Kafka lists results in HashMap order: by bucket (String.hashCode spread and masked by the table
    size), insertion order within a bucket, the table doubling past 3/4 full. "Aa" and "BB" share a
    hash; "p" (112) is bucket 0 of 16 but bucket 16 of 32, after "a" (97, bucket 1)."""
    from kconform.reference_broker.java_hash_map import JavaHashMap

    small: JavaHashMap[int] = JavaHashMap()
    for key in ("p", "BB", "a", "Aa"):
        small.put(key, 0)
    assert small.keys() == ["p", "BB", "Aa", "a"]  # bucket 0 (112, 2112, 2112 & 15), then bucket 1
    grown: JavaHashMap[int] = JavaHashMap()
    for key in ["p", *"abcdefghijkl"]:  # 13 keys: the table has grown to 32
        grown.put(key, 0)
    assert grown.keys() == [*"abcdefghijkl", "p"]


# ---- a cluster: forwarding ------------------------------------------------------------------------


@pytest.mark.slow
def test_brokers_forward_alterations_and_describe_from_their_own_image(tmp_path):
    """A broker without the controller role forwards AlterUserScramCredentials to the controller
    (KafkaApis: always forwarded); every broker describes from the metadata it fetched. With the
    controller gone, the broker answers every user with the forwarding error (ForwardingManager)."""
    from kconform.reference_broker.cluster_processes import start_cluster

    from ..cluster.test_failover import wait_for

    cluster = start_cluster(tmp_path / "cluster", 3)
    try:

        def ask(broker_id: int, talk):
            node = cluster.brokers[broker_id]

            async def session():
                async with await RawClient.connect(node.host, node.port, client_id="scram-cluster") as client:
                    return await talk(client)

            return asyncio.run(asyncio.wait_for(session(), 90))

        answer = ask(2, lambda client: alter(client, upsertions=[upsert("fran", SHA512, 7000)]))
        assert outcomes(answer) == {"fran": (Errors.NONE, None)}
        for broker_id in (1, 2, 3):
            wait_for(
                lambda b=broker_id: (
                    described(ask(b, lambda c: describe(c, ["fran"]))) == {"fran": [(SHA512, 7000)]}
                ),
                15,
                f"fran's credential on broker {broker_id}",
            )
        gone = ask(3, lambda client: alter(client, deletions=[Delete(name="fran", mechanism=SHA512)]))
        assert outcomes(gone) == {"fran": (Errors.NONE, None)}
        again = ask(1, lambda client: alter(client, deletions=[Delete(name="fran", mechanism=SHA512)]))
        assert outcomes(again)["fran"][0] == Errors.RESOURCE_NOT_FOUND  # the controller's image moved
        # no controller: AlterUserScramCredentialsRequest.getErrorResponse, every user named, sorted
        cluster.kill(0)
        stranded = ask(2, lambda client: client.call(51, 0, alter_request(
            upsertions=[upsert("zoe")], deletions=[Delete(name="amy", mechanism=SHA256)]
        ), timeout=60))  # fmt: skip
        assert [(r.user, r.error_code, r.error_message) for r in stranded.results] == [
            ("amy", Errors.REQUEST_TIMED_OUT, None),
            ("zoe", Errors.REQUEST_TIMED_OUT, None),
        ]
    finally:
        cluster.stop()


# ---- an independent client: librdkafka's admin client ---------------------------------------------


@pytest.mark.peer
def test_librdkafkas_admin_client_alters_and_describes(tmp_path):
    """confluent-kafka salts the password itself (PBKDF2); the node keeps the RFC 5802 keys of it and
    describes the credentials back to the client."""
    admin_module = pytest.importorskip("confluent_kafka.admin")
    ScramCredentialInfo, ScramMechanism = admin_module.ScramCredentialInfo, admin_module.ScramMechanism
    salt = b"librdkafka-salt"

    def with_client(bootstrap: str):
        client = admin_module.AdminClient({"bootstrap.servers": bootstrap})
        upsertion = admin_module.UserScramCredentialUpsertion(
            "grace", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 5000), b"grace-pw", salt
        )
        missing = admin_module.UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_512)
        futures = client.alter_user_scram_credentials([upsertion, missing], request_timeout=15)
        futures["grace"].result(timeout=20)
        with pytest.raises(admin_module.KafkaException) as refused:
            futures["nobody"].result(timeout=20)
        description = client.describe_user_scram_credentials(["grace"], request_timeout=15)
        return refused.value.args[0].code(), description["grace"].result(timeout=20)

    async def main():
        node = BrokerNode.from_config_file(None, {"node.id": "1", "log.dirs": str(tmp_path)})
        host, port = await node.start("127.0.0.1", 0)
        try:  # the blocking client in a thread, the node on this loop
            answers = await asyncio.to_thread(with_client, f"{host}:{port}")
            return answers, node.image.scram_credential("SCRAM-SHA-256", "grace")
        finally:
            await node.stop()

    (refused_code, description), credential = asyncio.run(asyncio.wait_for(main(), 90))
    assert refused_code == Errors.RESOURCE_NOT_FOUND
    infos = [(i.mechanism, i.iterations) for i in description.scram_credential_infos]
    assert infos == [(ScramMechanism.SCRAM_SHA_256, 5000)]
    expected = rfc5802_keys(SHA256, salted(SHA256, b"grace-pw", salt, 5000))
    assert (credential.salt, credential.iterations) == (salt, 5000)
    assert (credential.stored_key, credential.server_key) == expected
