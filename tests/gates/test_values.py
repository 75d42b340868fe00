"""Resolving `values:`: literals, keys of JSON/YAML files under the root, evidence counters."""

from __future__ import annotations

import json

import pytest

from redfirst.gates import evidence, observations, values
from redfirst.gates.model import ValueSpec


@pytest.fixture
def root(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(
        {"num_hidden_layers": 28, "text_config": {"heads": 16, "ratio": 0.5}, "layers": [{"size": 7}],
         "name": "qwen3", "flag": True, "nothing": None}
    ))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "model.yaml").write_text("model:\n  experts: 64\n  big: .inf\n")
    return tmp_path


def recorded(tmp_path, **counters):
    directory = tmp_path / "evidence"
    rec = evidence.Recorder(directory)
    for name, value in counters.items():
        for v in value if isinstance(value, list) else [value]:
            rec.counter(name, v)
    return observations.read(directory)


def test_literals_files_and_counters_resolve(root):
    ev = recorded(root, segments=[3, 29])
    resolved, problems = values.resolve(
        {
            "two": ValueSpec(literal=2),
            "layers": ValueSpec(file="config.json", key="num_hidden_layers"),
            "heads": ValueSpec(file="config.json", key="text_config.heads"),
            "ratio": ValueSpec(file="config.json", key="text_config.ratio"),
            "first_size": ValueSpec(file="config.json", key="layers.0.size"),
            "experts": ValueSpec(file="sub/model.yaml", key="model.experts"),
            "segments": ValueSpec(evidence="segments"),
        },
        root,
        ev,
    )
    assert problems == []
    assert resolved == {"two": 2, "layers": 28, "heads": 16, "ratio": 0.5, "first_size": 7, "experts": 64,
                        "segments": 29}


def test_specs_may_come_as_the_models_pairs(root):
    resolved, problems = values.resolve((("n", ValueSpec(literal=1.5)),), root, None)
    assert (resolved, problems) == ({"n": 1.5}, [])


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (ValueSpec(file="missing.json", key="a"), "value 'v': file missing.json not found (under "),
        (ValueSpec(file="config.json", key="num_layers"), "value 'v': config.json has no key 'num_layers'"),
        (ValueSpec(file="config.json", key="text_config.heads.x"), "config.json has no key 'text_config.heads.x'"),
        (ValueSpec(file="config.json", key="layers.3.size"), "config.json has no key 'layers.3.size'"),
        (ValueSpec(file="config.json", key="name"), "config.json key 'name' is 'qwen3', not a finite number"),
        (ValueSpec(file="config.json", key="flag"), "config.json key 'flag' is True, not a finite number"),
        (ValueSpec(file="config.json", key="nothing"), "key 'nothing' is None, not a finite number"),
        (ValueSpec(file="config.json", key="text_config"), "key 'text_config' is {"),
        (ValueSpec(file="sub/model.yaml", key="model.big"), "key 'model.big' is inf, not a finite number"),
        (ValueSpec(file="config.json"), "value 'v': file config.json needs a key"),
        (ValueSpec(evidence="segments"), "value 'v': evidence counter 'segments' was not recorded"),
        (ValueSpec(literal=True), "value 'v': literal True is not a finite number"),
        (ValueSpec(literal=float("nan")), "value 'v': literal nan is not a finite number"),
        (ValueSpec(), "value 'v': no literal, file or evidence given"),
    ],
)
def test_an_unresolved_value_is_a_problem_naming_file_and_key(root, spec, problem):
    resolved, problems = values.resolve({"v": spec, "ok": ValueSpec(literal=1)}, root, recorded(root))
    assert resolved == {"ok": 1}  # the missing value is absent, never a default
    assert len(problems) == 1 and problem in problems[0], problems


def test_no_evidence_at_all_leaves_counter_values_unresolved(root):
    resolved, problems = values.resolve({"segments": ValueSpec(evidence="segments")}, root, None)
    assert resolved == {}
    assert problems == ["value 'segments': evidence counter 'segments' was not recorded"]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.json", "{not json", "value 'v': cannot read bad.json: Expecting property name"),
        ("bad.yaml", "a: [1, 2\n", "value 'v': cannot read bad.yaml: while parsing a flow sequence"),
        ("nan.json", '{"a": NaN}', "value 'v': nan.json key 'a' is nan, not a finite number"),
    ],
)
def test_an_unreadable_file_is_a_problem_not_a_traceback(root, name, text, message):
    (root / name).write_text(text)
    resolved, problems = values.resolve({"v": ValueSpec(file=name, key="a")}, root, None)
    assert resolved == {}
    assert len(problems) == 1 and problems[0].startswith(message), problems
