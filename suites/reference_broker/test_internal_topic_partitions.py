"""A group's or a transactional id's coordinator partition, checked against Java itself.

Kafka picks the partition as ``Utils.abs(id.hashCode()) % partitions`` (``GroupCoordinatorService
.partitionFor``, ``TransactionStateManager.partitionFor``): Java's ``String.hashCode`` over UTF-16 code
units, and ``Utils.abs`` mapping Integer.MIN_VALUE to 0 where ``Math.abs`` would stay negative. The
oracle is a JVM: the same ids are hashed by ``String.hashCode`` in a small Java program and compared."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.reference_broker.internal_topics import java_string_hash, partition_for

# Known values of String.hashCode, including the famous id that hashes to Integer.MIN_VALUE.
VECTORS = {
    "": 0,
    "a": 97,
    "Aa": 2112,
    "BB": 2112,
    "hello": 99162322,
    "polygenelubricants": -(2**31),
    "\U0001f600": 1772899,  # one code point outside the BMP: two UTF-16 code units, 0xD83D 0xDE00
}

_JAVA = """
import java.io.*;
import java.nio.charset.StandardCharsets;
public class Hashes {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String id = new String(java.util.HexFormat.of().parseHex(line), StandardCharsets.UTF_8);
            int h = id.hashCode();
            int abs = h == Integer.MIN_VALUE ? 0 : Math.abs(h);
            System.out.println(h + " " + (abs % 50));
        }
    }
}
"""


def test_known_string_hashes():
    for text, expected in VECTORS.items():
        assert java_string_hash(text) == expected, text
    # Utils.abs(Integer.MIN_VALUE) is 0, so such an id lives in partition 0 of any count
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("Aa", 50) == partition_for("BB", 50) == 2112 % 50


@pytest.fixture(scope="module")
def java_hashes(tmp_path_factory):
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.fail("a JDK (javac and java, 17+) is needed: it is the oracle here, and Spark needs it too")
    folder = tmp_path_factory.mktemp("java")
    (folder / "Hashes.java").write_text(_JAVA)
    subprocess.run(["javac", "Hashes.java"], cwd=folder, check=True, capture_output=True, timeout=120)

    def run(ids: list[str]) -> list[tuple[int, int]]:
        # UTF-8 in hex, one id a line: ids may hold newlines and any code point but lone surrogates
        text = "".join(i.encode().hex() + "\n" for i in ids)
        done = subprocess.run(
            ["java", "-cp", str(folder), "Hashes"], input=text, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return [tuple(int(x) for x in line.split()) for line in done.stdout.splitlines()]

    return run


_IDS = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=5, deadline=None)
@given(ids=st.lists(_IDS, min_size=50, max_size=200))
def test_hash_and_partition_equal_javas(java_hashes, ids):
    ids = [*ids, *VECTORS]
    theirs = java_hashes(ids)
    ours = [(java_string_hash(i), partition_for(i, 50)) for i in ids]
    assert ours == theirs
