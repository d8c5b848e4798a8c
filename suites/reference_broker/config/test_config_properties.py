"""The .properties reader against java.util.Properties.load's rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.reference_broker.config import ConfigError, load_properties, parse_properties


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=1", {"a": "1"}),
        ("a:1", {"a": "1"}),
        ("a 1", {"a": "1"}),
        ("a = 1", {"a": "1"}),
        ("a\t:\t1", {"a": "1"}),
        ("   a=1", {"a": "1"}),  # leading blanks of a line are not part of the key
        ("a=1   ", {"a": "1   "}),  # trailing blanks are part of the value
        ("a==1", {"a": "=1"}),  # only the first separator separates
        ("a = = 1", {"a": "= 1"}),
        ("a   :b", {"a": "b"}),  # blanks then one separator
        ("a", {"a": ""}),
        ("a=", {"a": ""}),
        ("=1", {"": "1"}),
        ("a\\=b=c", {"a=b": "c"}),  # escaped separator belongs to the key
        ("a\\ b=c", {"a b": "c"}),
        ("a\\:b c", {"a:b": "c"}),
        ("a=x\\ty\\nz\\rw\\f", {"a": "x\ty\nz\rw\f"}),
        ("a=\\u0041\\u00e9", {"a": "Aé"}),
        ("a=\\q\\\\", {"a": "q\\"}),  # unknown escapes stand for the character
        ("# comment\n! also\na=1", {"a": "1"}),
        ("  # indented comment\na=1", {"a": "1"}),
        ("a=1 # not a comment", {"a": "1 # not a comment"}),
        ("a=1\na=2", {"a": "2"}),  # the later key wins
        ("\n\n  \t\na=1\n\n", {"a": "1"}),
        ("a=1\r\nb=2\rc=3", {"a": "1", "b": "2", "c": "3"}),
    ],
)
def test_single_lines(text, expected):
    assert parse_properties(text) == expected


def test_line_continuations():
    text = "listeners=PLAINTEXT://:9092,\\\n    CONTROLLER://:9093\nnext=1"
    assert parse_properties(text) == {"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "next": "1"}


def test_continuation_keeps_a_hash_as_value():
    assert parse_properties("a=1\\\n  # two") == {"a": "1# two"}


def test_an_even_number_of_backslashes_does_not_continue():
    assert parse_properties("a=x\\\\\nb=2") == {"a": "x\\", "b": "2"}


def test_comment_lines_never_continue():
    assert parse_properties("# comment \\\na=1") == {"a": "1"}


def test_continuation_onto_a_blank_line_ends_the_value():
    assert parse_properties("a=1\\\n\nb=2") == {"a": "1", "b": "2"}


def test_continuation_at_end_of_input_drops_the_backslash():
    assert parse_properties("a=1\\") == {"a": "1"}


def test_continuation_in_the_key():
    assert parse_properties("lo\\\n  g.dirs=/x") == {"log.dirs": "/x"}


def test_malformed_unicode_escape():
    with pytest.raises(ConfigError, match=r"Malformed \\uxxxx encoding"):
        parse_properties("a=\\u12g4")


def test_file_is_read_as_iso_8859_1(tmp_path):
    path = tmp_path / "server.properties"
    path.write_bytes("a=caf\u00e9\n".encode())  # UTF-8 bytes C3 A9, read as two Latin-1 characters
    assert load_properties(path) == {"a": "caf\u00c3\u00a9"}


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read properties file"):
        load_properties(tmp_path / "absent.properties")


def test_malformed_file_names_the_file(tmp_path):
    path = tmp_path / "bad.properties"
    path.write_text("a=\\uZZZZ\n")
    with pytest.raises(ConfigError, match="bad.properties"):
        load_properties(path)


def _store_escape(text: str, *, is_key: bool) -> str:
    """``Properties.saveConvert``: what ``Properties.store`` writes, so that ``load`` reads it back."""
    out = []
    for i, ch in enumerate(text):
        if ch == " ":
            out.append("\\ " if i == 0 or is_key else " ")
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        elif ch in "=:#!\\":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            utf16 = ch.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{utf16[i]:02x}{utf16[i + 1]:02x}" for i in range(0, len(utf16), 2))
        else:
            out.append(ch)
    return "".join(out)


@given(st.dictionaries(st.text(max_size=12), st.text(max_size=20), max_size=6))
def test_what_java_stores_reads_back(properties):
    text = "#comment\n" + "".join(
        f"{_store_escape(k, is_key=True)}={_store_escape(v, is_key=False)}\n" for k, v in properties.items()
    )
    assert parse_properties(text) == properties


def test_escaped_surrogate_pairs_make_one_character():
    assert parse_properties("smile=\\ud83d\\ude00") == {"smile": "\U0001f600"}
