"""The contract ships: docs/guide.md covers each part, docs/reference.md is what the shipped
schemas generate, `gates schema --config` describes redfirst.yaml, README links them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml

from redfirst.gates.docgen import reference

REPO = Path(__file__).resolve().parents[2]


def test_the_reference_is_generated_from_the_current_schemas():
    assert (REPO / "docs" / "reference.md").read_text() == reference(), \
        "docs/reference.md is stale: python -m redfirst.gates.docgen > docs/reference.md"


def test_the_guide_covers_every_part():
    guide = (REPO / "docs" / "guide.md").read_text()
    for heading in ("## Gate files", "## Drivers and formats", "## Evidence protocol", "## Mutations", "## Leases",
                    "## Record checkers", "## GitHub Actions", "## Verdicts and exit codes"):
        assert heading in guide, heading


def test_readme_links_the_guide_not_a_document_beside_the_repository():
    readme = (REPO / "README.md").read_text()
    assert "(docs/guide.md)" in readme and "(docs/reference.md)" in readme
    assert "keeps beside this repository" not in readme


def test_gates_schema_config_accepts_real_configs_and_names_a_wrong_key():
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "schema", "--config"], capture_output=True,
                          text=True, check=True)
    schema = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    configs = [REPO / "redfirst.yaml", *REPO.glob("examples/*/redfirst.yaml")]
    for path in configs:
        jsonschema.validate(yaml.safe_load(path.read_text()) or {}, schema)
    for bad in ({"checkers": {"append_onyl": []}}, {"leases": {"backend": "pbs"}}, {"gates": {"path": ["g"]}}):
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(bad))
        assert errors, bad


def test_every_key_of_every_shipped_file_has_a_description_a_type_and_an_example():
    from redfirst.gates.docgen import shipped, undocumented

    missing = {title: undocumented(schema) for title, _, schema in shipped()}
    assert not any(missing.values()), missing


def test_the_key_walk_reaches_keys_inside_list_entries_of_a_branch_and_a_conditional():
    from redfirst.gates.docgen import keys, undocumented

    schema = {"$defs": {"entry": {"type": "object", "required": ["path"], "properties": {
        "path": {"type": "string", "description": "the file", "examples": ["a.md"]},
        "mode": {"enum": ["insert", "tail"], "default": "insert"}}}},
        "if": {"type": "array"}, "then": {"type": "array", "items": {"$ref": "#/$defs/entry"}},
        "else": {"type": "object", "properties": {"on": {"anyOf": [
            {"type": "array", "items": {"$ref": "#/$defs/entry"}}, {"const": False}]}}}}
    found = {k.path: k for k in keys(schema)}
    assert set(found) == {"[].path", "[].mode", "on", "on[].path", "on[].mode"}
    assert (found["[].path"].required, found["[].mode"].default) == (True, '`"insert"`')
    assert "[].mode: no description" in undocumented(schema) and "on: no example" in undocumented(schema)
    assert not any(m.startswith("[].path") for m in undocumented(schema))
    schema["$defs"]["entry"]["properties"]["path"]["examples"] = [3]
    assert any(m.startswith("[].path: wrong example") for m in undocumented(schema))
