"""Reading evidence.jsonl: records with line numbers, and a problem for everything malformed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from redfirst.gates import dtypes, evidence, observations
from redfirst.gates.observations import EvidenceError


def write_lines(directory: Path, *lines: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / evidence.FILE, "a", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    return directory


def record(**fields) -> str:
    return json.dumps(fields)


def test_writer_output_reads_back_with_line_numbers(tmp_path):
    rec = evidence.Recorder(tmp_path)
    rec.counter("segments_captured", 29)
    logits = np.arange(500, dtype=np.float32).reshape(5, 100)
    rec.tensor("logits.graph", logits, step=3)
    rec.observation("cuda-graph", variant="dense", replays_passed=4)
    got = observations.read(tmp_path)
    assert got.present and got.problems == ()
    assert got.counter_records == (observations.CounterRecord("segments_captured", 29, 1),)
    (tensor,) = got.tensors
    assert (tensor.name, tensor.dtype, tensor.shape, tensor.step, tensor.line) == (
        "logits.graph", "float32", (5, 100), 3, 2,
    )
    assert (observations.load_tensor(tmp_path, tensor) == logits).all()
    (obs,) = got.observations
    assert (obs.kind, obs.line, obs.data["replays_passed"]) == ("cuda-graph", 3, 4)


def test_a_counter_recorded_several_times_keeps_every_value_and_the_last_counts(tmp_path):
    write_lines(tmp_path, record(counter="replays", value=1), record(counter="other", value=0.5),
                record(counter="replays", value=4))
    got = observations.read(tmp_path)
    assert got.counters == {"replays": (1, 4), "other": (0.5,)}
    assert got.counter("replays") == 4
    assert got.counter("never") is None


def test_no_evidence_file_is_absent_evidence_not_a_problem(tmp_path):
    got = observations.read(tmp_path / "nothing-here")
    assert not got.present
    assert (got.counters, got.tensors, got.problems) == ({}, (), ())


def test_blank_lines_are_ignored(tmp_path):
    write_lines(tmp_path, "", record(counter="a", value=1), "   ")
    got = observations.read(tmp_path)
    assert got.counter("a") == 1 and got.problems == ()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json at all", "not JSON"),
        ('{"counter": "a", "value": NaN}', "not JSON: NaN is not JSON"),
        ('{"counter": "a", "value": Infinity}', "not JSON: Infinity is not JSON"),
        ("[1, 2]", "a record must be a JSON object"),
        (record(metric="a", value=1), "unknown record type"),
        (record(counter="a", tensor="b", value=1), "ambiguous record (counter, tensor)"),
        (record(counter="a", value="29"), "counter 'a' value must be a number, got \"29\""),
        (record(counter="a", value=True), "counter 'a' value must be a number, got true"),
        (record(counter="a"), "counter 'a' has no value"),
        (record(counter="", value=1), "counter name must be a non-empty string"),
        (record(counter="a", value=1, unit="ms"), "unknown counter field(s): unit"),
        (record(tensor="t", dtype="complex64", shape=[1], file="t.bin"), "unknown dtype 'complex64'"),
        (record(tensor="t", dtype=4, shape=[1], file="t.bin"), "dtype must be a string"),
        (record(tensor="t", dtype="float32", shape=[-1], file="t.bin"), "shape must be a list of non-negative"),
        (record(tensor="t", dtype="float32", shape="4", file="t.bin"), "shape must be a list of non-negative"),
        (record(tensor="t", dtype="float32", shape=[True], file="t.bin"), "shape must be a list of non-negative"),
        (record(tensor="t", dtype="float32", shape=[1], file="t.bin", step=-1), "step must be a non-negative"),
        (record(tensor="t", dtype="float32", shape=[1], file="t.bin", step=1.5), "step must be a non-negative"),
        (record(tensor="t", dtype="float32", shape=[1]), "file must be a non-empty string"),
        (record(tensor="t", dtype="float32", shape=[1], file="gone.bin"), "file 'gone.bin' is missing"),
        (record(tensor="t", dtype="float32", shape=[1], file="../t.bin"), "leaves the evidence folder"),
        (record(tensor="t", dtype="float32", shape=[1], file="sub/../../t.bin"), "leaves the evidence folder"),
        (record(tensor="t", dtype="float32", shape=[1], file="/etc/passwd"), "leaves the evidence folder"),
        (record(tensor="t", dtype="float32", shape=[1], file="C:\\t.bin"), "leaves the evidence folder"),
        (record(tensor="t", dtype="float32", shape=[1], file="..\\t.bin"), "leaves the evidence folder"),
        (record(observation=3, x=1), "observation kind must be a non-empty string"),
    ],
)
def test_each_malformed_line_is_a_problem_with_its_line_number(tmp_path, line, message):
    (tmp_path / "t.bin").write_bytes(b"\0" * 4)
    directory = write_lines(tmp_path / "ev", record(counter="good", value=1), line, record(counter="after", value=2))
    (directory / "t.bin").write_bytes(b"\0" * 4)
    got = observations.read(directory)
    assert len(got.problems) == 1, got.problems
    assert got.problems[0].startswith("evidence.jsonl:2: ")
    assert message in got.problems[0]
    # The lines around the bad one are still read.
    assert got.counters == {"good": (1,), "after": (2,)}
    assert got.tensors == ()


def test_a_line_cut_off_without_its_newline_is_a_problem(tmp_path):
    write_lines(tmp_path, record(counter="a", value=1))
    with open(tmp_path / evidence.FILE, "a") as f:
        f.write('{"counter": "b", "value": 2}')  # the writer was killed before the newline
    got = observations.read(tmp_path)
    assert got.problems == ("evidence.jsonl:2: incomplete last line (no newline)",)
    assert got.counter("b") is None


def test_a_line_that_is_not_utf8_is_a_problem(tmp_path):
    write_lines(tmp_path, record(counter="a", value=1))
    with open(tmp_path / evidence.FILE, "ab") as f:
        f.write(b'{"counter": "\xff", "value": 2}\n')
    assert observations.read(tmp_path).problems == ("evidence.jsonl:2: not UTF-8",)


def test_a_tensor_file_linked_outside_the_folder_is_a_problem(tmp_path):
    outside = tmp_path / "secret.bin"
    outside.write_bytes(b"\0" * 4)
    directory = tmp_path / "ev"
    directory.mkdir()
    os.symlink(outside, directory / "t.bin")
    write_lines(directory, record(tensor="t", dtype="float32", shape=[1], file="t.bin"))
    (problem,) = observations.read(directory).problems
    assert problem == "evidence.jsonl:1: tensor 't' file 't.bin' leaves the evidence folder (link)"


@pytest.mark.parametrize("size", [15, 17, 0])
def test_a_raw_file_of_the_wrong_size_is_a_problem_never_truncated(tmp_path, size):
    (tmp_path / "t.bin").write_bytes(b"\1" * size)
    write_lines(tmp_path, record(tensor="t", dtype="float32", shape=[2, 2], file="t.bin"))
    got = observations.read(tmp_path)
    assert got.problems == (
        f"evidence.jsonl:1: tensor 't' file 't.bin' has {size} bytes, float32 x [2, 2] needs 16",
    )
    assert got.tensors == ()
    forged = observations.TensorRecord("t", "float32", (2, 2), "t.bin", None, 1)
    with pytest.raises(EvidenceError, match="has .* bytes, float32 x \\[2, 2\\] needs 16"):
        observations.load_tensor(tmp_path, forged)


def test_load_tensor_refuses_a_record_whose_file_leaves_the_folder(tmp_path):
    (tmp_path / "t.bin").write_bytes(b"\0" * 4)
    forged = observations.TensorRecord("t", "float32", (1,), "../t.bin", None, 7)
    with pytest.raises(EvidenceError, match="evidence.jsonl:7: .* leaves the evidence folder"):
        observations.load_tensor(tmp_path / "sub", forged)


def test_the_same_tensor_and_step_recorded_twice_is_ambiguous(tmp_path):
    rec = evidence.Recorder(tmp_path)
    rec.tensor("out", np.zeros(2, np.float32), step=1)
    rec.tensor("out", np.ones(2, np.float32), step=2)
    rec.tensor("out", np.ones(2, np.float32), step=1)
    got = observations.read(tmp_path)
    # every record is kept, so a comparison of step 1 is NO_DECISION, never decided on one of the two
    assert [t.step for t in got.tensor_records("out")] == [1, 2, 1]
    assert got.problems == (
        "evidence.jsonl:3: tensor 'out' step 1 recorded again (first on line 1); which one to compare is ambiguous",
    )


def test_two_tensor_records_over_one_file_are_a_problem(tmp_path):
    (tmp_path / "logits.bin").write_bytes(b"\0" * 8)
    write_lines(tmp_path, record(tensor="logits.eager", dtype="float32", shape=[2], file="logits.bin"),
                record(tensor="logits.graph", dtype="float32", shape=[2], file="logits.bin"),
                record(tensor="logits.graph2", dtype="float32", shape=[2], file="./logits.bin"))
    got = observations.read(tmp_path)
    assert [t.name for t in got.tensors] == ["logits.eager"]
    assert got.problems == (
        "evidence.jsonl:2: tensor 'logits.graph' file 'logits.bin' is already the file of tensor 'logits.eager' "
        "(line 1); data compared with itself proves nothing",
        "evidence.jsonl:3: tensor 'logits.graph2' file './logits.bin' is already the file of tensor "
        "'logits.eager' (line 1); data compared with itself proves nothing",
    )


@pytest.mark.parametrize("dtype", sorted(dtypes.DTYPES))
def test_every_dtype_round_trips_its_bit_patterns_through_raw_files(tmp_path, dtype):
    dt = dtypes.lookup(dtype)
    top = 2 if dtype == "bool" else 1 << (8 * dt.itemsize)
    bits = np.random.default_rng(5).integers(0, top, size=(3, 7), dtype=np.uint64).astype(dt.bits)
    rec = evidence.Recorder(tmp_path)
    if dt.held_as_bits:
        rec.tensor("x", bits, dtype=dtype)  # numpy cannot hold the type: its bit patterns are given
    else:
        rec.tensor("x", bits.view(dt.storage))
    (tensor,) = observations.read(tmp_path).tensors
    assert tensor.dtype == dtype
    loaded = observations.load_tensor(tmp_path, tensor)
    assert loaded.dtype == dt.storage and loaded.shape == (3, 7)
    assert (loaded.view(dt.bits) == bits).all()


def test_a_zero_dim_tensor_keeps_its_empty_shape(tmp_path):
    evidence.Recorder(tmp_path).tensor("scalar", np.float64(-0.0))
    (tensor,) = observations.read(tmp_path).tensors
    assert tensor.shape == () and tensor.values == 1
    loaded = observations.load_tensor(tmp_path, tensor)
    assert loaded.shape == () and loaded.view(np.uint64) == 1 << 63


def test_an_empty_tensor_reads_as_zero_values(tmp_path):
    evidence.Recorder(tmp_path).tensor("none", np.zeros((0, 4), np.float32))
    (tensor,) = observations.read(tmp_path).tensors
    assert tensor.values == 0 and observations.load_tensor(tmp_path, tensor).shape == (0, 4)


def test_the_writer_names_bool_and_big_endian_arrays_by_protocol_dtype(tmp_path):
    rec = evidence.Recorder(tmp_path)
    rec.tensor("mask", np.array([True, False]))
    rec.tensor("big", np.array([1.0, -2.0], dtype=">f4"))
    mask, big = observations.read(tmp_path).tensors
    assert (mask.dtype, big.dtype) == ("bool", "float32")
    assert observations.load_tensor(tmp_path, big).tolist() == [1.0, -2.0]


def test_the_writer_refuses_dtypes_the_protocol_cannot_carry(tmp_path):
    rec = evidence.Recorder(tmp_path)
    with pytest.raises(TypeError, match="unknown dtype 'complex64'"):
        rec.tensor("z", np.zeros(2, np.complex64))
    with pytest.raises(TypeError, match="is not 2-byte bfloat16"):
        rec.tensor("b", np.zeros(2, np.uint32), dtype="bfloat16")


def test_the_module_helpers_write_to_the_folder_named_by_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(evidence.ENV, str(tmp_path))
    assert evidence.counter("replays", 4)
    assert evidence.tensor("h", np.array([0x3F80], np.uint16), step=0, dtype="bfloat16")
    got = observations.read(tmp_path)
    assert got.counter("replays") == 4
    assert [(t.name, t.dtype, t.step) for t in got.tensors] == [("h", "bfloat16", 0)]
    monkeypatch.delenv(evidence.ENV)
    assert not evidence.counter("replays", 5)  # outside a gate: a no-op


def test_two_writers_of_one_folder_never_share_a_tensor_file(tmp_path):
    first, second = evidence.Recorder(tmp_path), evidence.Recorder(tmp_path)
    first.tensor("out", np.zeros(1, np.int8))
    second.tensor("out", np.ones(1, np.int8))
    lines = (tmp_path / evidence.FILE).read_text().splitlines()
    files = [json.loads(line)["file"] for line in lines]
    assert len(set(files)) == 2
    assert [(tmp_path / f).read_bytes() for f in files] == [b"\0", b"\1"]


def npy_record(directory: Path, name: str, array: np.ndarray, dtype: str, shape=None) -> None:
    np.save(directory / f"{name}.npy", array)
    write_lines(directory, record(tensor=name, dtype=dtype, shape=list(array.shape if shape is None else shape),
                                  file=f"{name}.npy"))


def test_npy_files_load_in_c_order_little_endian(tmp_path):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    npy_record(tmp_path, "big_endian", values.astype(">f4"), "float32")
    npy_record(tmp_path, "fortran", np.asfortranarray(values), "float32")
    npy_record(tmp_path, "bf16", np.array([0x3F80, 0xC000], dtype=np.uint16), "bfloat16")
    got = observations.read(tmp_path)
    assert got.problems == ()
    big, fortran, bf16 = (observations.load_tensor(tmp_path, t) for t in got.tensors)
    assert (big == values).all() and big.dtype == np.dtype("<f4")
    assert (fortran == values).all() and fortran.flags.c_contiguous
    assert bf16.dtype == np.uint16 and bf16.tolist() == [0x3F80, 0xC000]


def test_npy_files_that_disagree_with_their_record_are_problems(tmp_path):
    npy_record(tmp_path, "shape", np.zeros((2, 3), np.float32), "float32", shape=[3, 2])
    npy_record(tmp_path, "dtype", np.zeros(3, np.float64), "float32")
    npy_record(tmp_path, "objects", np.array([1, "a"], dtype=object), "int64")
    np.save(tmp_path / "cut.npy", np.zeros(100, np.float32))
    data = (tmp_path / "cut.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:-4])
    write_lines(tmp_path, record(tensor="cut", dtype="float32", shape=[100], file="cut.npy"))
    (tmp_path / "junk.npy").write_bytes(b"not an npy file")
    write_lines(tmp_path, record(tensor="junk", dtype="float32", shape=[1], file="junk.npy"))
    got = observations.read(tmp_path)
    assert got.tensors == ()
    assert got.problems == (
        "evidence.jsonl:1: tensor 'shape' file 'shape.npy' holds shape [2, 3], the record says [3, 2]",
        "evidence.jsonl:2: tensor 'dtype' file 'dtype.npy' holds float64, the record says float32",
        "evidence.jsonl:3: tensor 'objects' file 'objects.npy' holds object, the record says int64",
        "evidence.jsonl:4: tensor 'cut' file 'cut.npy' has 396 data bytes, float32 x [100] needs 400",
        got.problems[4],
    )
    assert got.problems[4].startswith("evidence.jsonl:5: tensor 'junk' file 'junk.npy' is not a readable .npy")
