"""The committed extract and modules are exactly what the generator makes, from the extract alone and,
where Apache Kafka's definitions are beside the project, from those."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kconform.codecs.generate.command import CODECS_DIR, OUT_DIR, main, render, stale_files
from kconform.codecs.generate.extract import (
    DEFINITIONS_DIR,
    build_extract,
    layout_at,
    merge_layers,
    source_layers,
)
from kconform.codecs.generate.spec import SpecError, parse_message, snake_case, strip_comments
from kconform.codecs.generate.versions import Versions


def test_committed_modules_match_the_generator(tmp_path):
    files = render(DEFINITIONS_DIR)
    assert stale_files(files, CODECS_DIR) == [], "run python -m kconform.codecs.generate"
    # and the command writes the same into an empty folder, and --check agrees
    assert main(["--out", str(tmp_path)]) == 0
    assert main(["--out", str(tmp_path), "--check"]) == 0
    (tmp_path / "messages" / "produce.py").write_text("# edited\n")
    (tmp_path / "metadata_records" / "left_over.py").write_text("# a record that no longer exists\n")
    assert main(["--out", str(tmp_path), "--check"]) == 1
    assert main(["--out", str(tmp_path)]) == 0
    assert not (tmp_path / "metadata_records" / "left_over.py").exists()


def test_committed_extract_is_what_kafkas_definitions_give(spec_dir):
    """Runs only where ../shared/kafka-spec (or $KCONFORM_KAFKA_SPEC) is present; a clone alone
    builds from the committed extract."""
    extract = build_extract(source_layers(spec_dir))
    committed = {
        str(p.relative_to(DEFINITIONS_DIR)): p.read_text() for p in DEFINITIONS_DIR.rglob("*") if p.is_file()
    }
    assert sorted(extract) == sorted(committed)
    for name, text in extract.items():
        assert committed[name] == text, f"{name} differs: run kconform codecs refresh-spec {spec_dir}"
    assert main(["--from", str(spec_dir), "--check"]) == 0
    from click.testing import CliRunner

    from kconform.harness.cli import cli

    result = CliRunner().invoke(cli, ["codecs", "refresh-spec", str(spec_dir), "--check"])
    assert result.exit_code == 0, result.output


def test_extract_carries_facts_only(spec_dir):
    text = "".join(p.read_text() for p in DEFINITIONS_DIR.rglob("*") if p.is_file())
    assert '"about"' not in text and "//" not in text and "Licensed to the Apache" not in text
    # the error table keeps its facts, not Kafka's default messages
    assert (DEFINITIONS_DIR / "errors.tsv").read_text().splitlines()[0].split("\t") == [
        "code",
        "name",
        "exception",
        "retriable",
        "invalid_metadata",
    ]


def test_generated_code_carries_no_prose():
    text = "".join(p.read_text() for p in CODECS_DIR.glob("*_records/*.py")) + "".join(
        p.read_text() for p in OUT_DIR.glob("*.py")
    )
    for phrase in ("Licensed to the Apache", "The topic name", "about"):
        assert phrase not in text


def test_generated_files_carry_the_generated_marker():
    for path in [*OUT_DIR.glob("*.py"), *CODECS_DIR.glob("*_records/*.py")]:
        if path.name == "__init__.py" and path.parent == OUT_DIR:
            continue  # the hand-written lazy loader
        assert path.read_text().startswith("# @generated"), path


def _msg(name, valid, fields, **extra):
    return {
        "apiKey": 99,
        "type": "request",
        "name": name,
        "validVersions": valid,
        "flexibleVersions": "none",
        "fields": fields,
        **extra,
    }


def test_layers_join_into_every_version_any_release_had():
    old = _msg(
        "TestRequest",
        "0-3",
        [
            {"name": "Legacy", "type": "int8", "versions": "0-1"},
            {"name": "A", "type": "int32", "versions": "0+"},
        ],
    )
    new = _msg(
        "TestRequest",
        "2-5",
        [
            {"name": "A", "type": "int32", "versions": "0+"},
            {"name": "B", "type": "string", "versions": "5+"},
        ],
    )
    (merged,) = merge_layers([[old], [new]])
    assert merged["validVersions"] == "0-5"
    # the field only removed versions had is back, where it stood
    assert [f["name"] for f in merged["fields"]] == ["Legacy", "A", "B"]
    for version in range(4):
        assert layout_at(merged, version) == layout_at(old, version)


def test_a_newer_file_that_changes_an_old_layout_is_refused():
    old = _msg("TestRequest", "0-3", [{"name": "A", "type": "int32", "versions": "0+"}])
    new = _msg("TestRequest", "2-5", [{"name": "A", "type": "int64", "versions": "0+"}])
    with pytest.raises(SpecError, match="v0: the newer definition changes"):
        merge_layers([[old], [new]])


def test_a_renamed_field_keeps_its_bytes_and_takes_the_newer_name():
    old = _msg(
        "OldNameRequest",
        "0",
        [
            {
                "name": "Things",
                "type": "[]Thing",
                "versions": "0+",
                "fields": [{"name": "N", "type": "int8", "versions": "0+"}],
            }
        ],
    )
    new = _msg(
        "NewNameRequest",
        "0-1",
        [
            {
                "name": "Items",
                "type": "[]Item",
                "versions": "0+",
                "fields": [{"name": "N", "type": "int8", "versions": "0+"}],
            }
        ],
    )
    (merged,) = merge_layers([[old], [new]])  # joined by API key, the newer name wins
    assert merged["name"] == "NewNameRequest" and merged["validVersions"] == "0-1"
    assert [f["name"] for f in merged["fields"]] == ["Items"]


def test_an_unreleased_version_may_change_and_a_dropped_one_is_gone():
    old_req = _msg(
        "TestRequest", "0-1", [{"name": "A", "type": "int8", "versions": "0+"}], latestVersionUnstable=True
    )
    old_resp = dict(
        _msg("TestResponse", "0-1", [{"name": "A", "type": "int8", "versions": "0+"}]), type="response"
    )
    new_req = _msg(
        "TestRequest",
        "0-1",
        [{"name": "A", "type": "int8", "versions": "0+"}, {"name": "B", "type": "int8", "versions": "1+"}],
    )
    new_resp = dict(
        _msg("TestResponse", "0-1", [{"name": "A", "type": "int16", "versions": "1+"}]), type="response"
    )
    with pytest.raises(SpecError, match="TestResponse v0"):
        merge_layers([[old_req, old_resp], [new_req, new_resp]])
    gone = _msg("TestRequest", "2", [{"name": "A", "type": "int8", "versions": "0+"}])
    (merged,) = merge_layers([[old_req], [gone]])
    assert merged["validVersions"] == "0-2"


def test_refresh_lays_a_newer_release_over_the_extract(tmp_path):
    """``--from`` a plain folder of one release's definitions keeps every older version."""
    definitions = tmp_path / "definitions"
    shutil.copytree(DEFINITIONS_DIR, definitions)
    newer = tmp_path / "kafka-9.9"
    newer.mkdir()
    doc = json.loads((DEFINITIONS_DIR / "messages" / "MetadataRequest.json").read_text())
    top = Versions.parse(doc["validVersions"]).highest
    doc["validVersions"] = f"4-{top + 1}"
    (newer / "MetadataRequest.json").write_text("// a comment\n" + json.dumps(doc))
    resp = json.loads((DEFINITIONS_DIR / "messages" / "MetadataResponse.json").read_text())
    resp["validVersions"] = f"4-{top + 1}"
    (newer / "MetadataResponse.json").write_text(json.dumps(resp))
    out = tmp_path / "out"
    assert main(["--definitions", str(definitions), "--from", str(newer), "--out", str(out)]) == 0
    merged = json.loads((definitions / "messages" / "MetadataRequest.json").read_text())
    assert merged["validVersions"] == f"0-{top + 1}"
    assert f"({0}, {top + 1})" in (out / "messages" / "_registry.py").read_text()


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


def test_missing_definitions_are_a_clear_error(tmp_path, capsys):
    assert main(["--definitions", str(tmp_path / "nowhere")]) == 2
    assert "no message definitions" in capsys.readouterr().err
    assert main(["--from", str(tmp_path / "nowhere")]) == 2
    assert "no message definitions" in capsys.readouterr().err


def test_out_dir_is_the_package():
    assert CODECS_DIR == Path(__file__).resolve().parents[2] / "codecs"
    assert OUT_DIR == CODECS_DIR / "messages"
