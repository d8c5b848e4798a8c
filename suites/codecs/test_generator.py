"""The committed message modules are exactly what the generator makes from the definitions."""

from __future__ import annotations

from pathlib import Path

import pytest

from kconform.codecs.generate.__main__ import OUT_DIR, main, render
from kconform.codecs.generate.spec import SpecError, parse_message, snake_case, strip_comments
from kconform.codecs.generate.versions import Versions


def test_committed_modules_match_the_generator(spec_dir, tmp_path):
    files = render(spec_dir / "message", spec_dir / "errors.tsv")
    committed = {p.name for p in OUT_DIR.glob("*.py") if p.name != "__init__.py"}
    assert committed == set(files), "stale or missing generated modules"
    for name, text in files.items():
        assert (OUT_DIR / name).read_text() == text, f"{name} differs: run python -m kconform.codecs.generate"
    # and the command writes the same into an empty folder, and --check agrees
    assert main(["--spec", str(spec_dir / "message"), "--out", str(tmp_path)]) == 0
    assert main(["--spec", str(spec_dir / "message"), "--out", str(tmp_path), "--check"]) == 0
    (tmp_path / "produce.py").write_text("# edited\n")
    assert main(["--spec", str(spec_dir / "message"), "--out", str(tmp_path), "--check"]) == 1


def test_generated_code_carries_no_prose(spec_dir):
    text = "".join(p.read_text() for p in OUT_DIR.glob("*.py"))
    for phrase in ("Licensed to the Apache", "The topic name", "about"):
        assert phrase not in text


def test_versions_parse():
    assert Versions.parse("3+").as_tuple() == (3, 0x7FFF)
    assert Versions.parse("0-2").as_tuple() == (0, 2)
    assert Versions.parse("5").as_tuple() == (5, 5)
    assert Versions.parse("none").empty
    assert Versions.parse("1-4").intersect(Versions.parse("3+")).as_tuple() == (3, 4)
    with pytest.raises(ValueError):
        Versions.parse("4-1")


def test_names():
    assert snake_case("ThrottleTimeMs") == "throttle_time_ms"
    assert snake_case("ISRNodes") == "isr_nodes"
    assert snake_case("TopicId") == "topic_id"


def test_comments_are_stripped_outside_strings():
    assert strip_comments('{"a": "x//y"} // note') == '{"a": "x//y"} '


def _doc(**changes):
    doc = {
        "apiKey": 99,
        "type": "request",
        "name": "TestRequest",
        "validVersions": "0-3",
        "flexibleVersions": "2+",
        "fields": [{"name": "A", "type": "int32", "versions": "0+"}],
    }
    doc.update(changes)
    return doc


@pytest.mark.parametrize(
    "fields, error",
    [
        ([{"name": "A", "type": "int32", "versions": "0+", "nullableVersions": "0+"}], "cannot be nullable"),
        (
            [{"name": "A", "type": "string", "versions": "0+", "taggedVersions": "0+", "tag": 0}],
            "not flexible",
        ),
        ([{"name": "A", "type": "[]Missing", "versions": "0+"}], "never defined"),
        ([{"name": "A", "type": "int8", "versions": "0+", "default": "300"}], "out of range"),
        ([{"name": "A", "type": "frob", "versions": "0+"}], "unknown type"),
        (
            [
                {"name": "A", "type": "int8", "versions": "0+"},
                {"name": "A", "type": "int8", "versions": "0+"},
            ],
            "duplicate",
        ),
    ],
)
def test_spec_model_rejects_broken_definitions(fields, error):
    with pytest.raises(SpecError, match=error):
        parse_message(_doc(fields=fields))


def test_missing_spec_dir_is_a_clear_error(tmp_path, capsys):
    assert main(["--spec", str(tmp_path / "nowhere")]) == 2
    assert "no message definitions" in capsys.readouterr().err


def test_out_dir_is_the_package():
    assert OUT_DIR == Path(__file__).resolve().parents[2] / "codecs" / "messages"
