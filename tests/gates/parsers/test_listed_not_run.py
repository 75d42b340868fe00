"""A case counts only when it ran: the list modes of every framework (names printed, nothing run)
are never GREEN, through the real `gates run` over the real frameworks' output (issue 33)."""

from __future__ import annotations

import shutil

import pytest


def _gate(fmt: str, run: list[object], extra: str = "") -> str:
    argv = ", ".join(f'"{a}"' for a in run)
    return f"""
        gate: g
        driver: {{type: command, run: [{argv}], format: {fmt}{extra}}}
    """


def _not_green(item: dict[str, object]) -> None:
    assert item["verdict"] == "NO_DECISION", item


def test_gtest_list_tests_with_its_xml_report_lists_cases_that_never_ran(gtest_bin, run_program, gates_run, tmp_path):
    # GoogleTest writes the listed tests as <testcase> elements with no status, result or time
    listed = tmp_path / "list.xml"
    run_program([gtest_bin, "--gtest_list_tests", f"--gtest_output=xml:{listed}"])
    assert "<testcase" in listed.read_text() and "status=" not in listed.read_text()
    _not_green(gates_run(tmp_path, _gate("junit", [gtest_bin, "--gtest_list_tests", "--gtest_output=xml:report.xml"],
                                         ", junit: report.xml")))


@pytest.mark.parametrize("flag", ["--gtest_list_tests", "--gtest_also_run_disabled_tests --gtest_list_tests"])
def test_gtest_list_tests_is_not_green(gtest_bin, gates_run, tmp_path, flag):
    _not_green(gates_run(tmp_path, _gate("gtest", [gtest_bin, *flag.split()])))


@pytest.mark.parametrize("flag", ["-ltc", "--list-test-cases", "-c", "--count", "-lts"])
def test_doctest_list_and_count_are_not_green(doctest_bin, gates_run, tmp_path, flag):
    _not_green(gates_run(tmp_path, _gate("doctest", [doctest_bin, flag])))


@pytest.mark.parametrize("flag", ["--list-tests", "--list-tags"])
def test_catch2_list_modes_are_not_green(catch2_bin, gates_run, tmp_path, flag):
    _not_green(gates_run(tmp_path, _gate("catch2", [catch2_bin, flag])))


def test_ctest_show_only_is_not_green(ctest_build, gates_run, tmp_path):
    for n, fmt in enumerate(("ctest", "junit")):
        extra = ", junit: report.xml" if fmt == "junit" else ""
        _not_green(gates_run(tmp_path / str(n), _gate(fmt, ["ctest", "--test-dir", ctest_build, "-N",
                                                           "--output-junit", tmp_path / str(n) / "proj" / "report.xml"],
                                                      extra)))


def test_meson_list_is_not_green(gates_run, run_program, missing_component, tmp_path):
    if not (shutil.which("meson") and shutil.which("ninja")):
        missing_component("meson and ninja on PATH")
    project = tmp_path / "mp"
    project.mkdir()
    (project / "meson.build").write_text("project('p', 'c')\ntest('t1', find_program('true'))\n")
    assert run_program(["meson", "setup", project / "b", project]).returncode == 0
    _not_green(gates_run(tmp_path, _gate("meson", ["meson", "test", "-C", project / "b", "--list"])))


def test_tap_stream_of_skips_only_is_not_green(gates_run, tmp_path):
    stream = tmp_path / "skips.tap"
    stream.write_text("1..2\nok 1 - a # SKIP no device\nok 2 - b # skip\n")
    _not_green(gates_run(tmp_path, _gate("tap", ["cat", stream])))
