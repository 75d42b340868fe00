"""The command-line conventions all four commands (gates, mutate, leases, checkers) keep, as a user
meets them through the real console programs: one JUnit root shape, written even when a run stops on
a bad file; colour only where wanted (`--color`, `NO_COLOR`, a real terminal through a pty); `-q`/`-v`;
shell completion; configuration from pyproject.toml's `[tool.redfirst]`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

MODULES = {"gates": "redfirst.gates.cli", "mutate": "redfirst.mutations.cli", "leases": "redfirst.leases.cli",
           "checkers": "redfirst.checkers.cli"}
GATE = """gate: adds
driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
"""


def cli(command: str, *args: str, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", MODULES[command], *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for step in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", *step], cwd=root, check=True, capture_output=True)
    return root


def junit_root(path: Path) -> ET.Element:
    return ET.parse(path).getroot()


def test_gates_run_stopped_by_a_bad_gate_file_still_writes_its_junit_under_a_testsuites_root(tmp_path: Path):
    root = project(tmp_path, {"redfirst.yaml": "gates: {paths: [gates]}\n", "gates/bad.yaml": "gate: x\ndrvier: {}\n"})
    (root / "out").mkdir()
    (root / "out/junit.xml").write_text('<testsuite tests="1" failures="0"><testcase name="old"/></testsuite>')
    proc = cli("gates", "run", "--junit", "out/junit.xml", cwd=root)
    assert proc.returncode == 2, proc.stderr
    top = junit_root(root / "out/junit.xml")
    assert top.tag == "testsuites" and top.get("errors") == "1" and top.get("failures") == "0"
    [suite] = top
    [case] = suite.iter("testcase")
    error = case.find("error")
    assert error is not None and "bad.yaml:" in error.get("message", ""), ET.tostring(top, encoding="unicode")
    assert "old" not in (root / "out/junit.xml").read_text()


def test_gates_and_mutate_junit_share_the_root_shape_with_totals(tmp_path: Path):
    root = project(tmp_path, {"redfirst.yaml": "gates: {paths: [gates]}\n", "gates/adds.yaml": GATE,
                              "a.py": "x = 1\n",
                              "mutations/bad.yaml": "mutation: m\nfile: a.py\nanchor: x\nreplace: y\nexpect: {red: [nope]}\n"})
    gates = cli("gates", "run", "--junit", "g.xml", cwd=root)
    mutate = cli("mutate", "--junit", "m.xml", cwd=root)
    assert (gates.returncode, mutate.returncode) == (0, 2), gates.stderr + mutate.stderr
    for name, tests, errors in (("g.xml", "1", "0"), ("m.xml", "1", "1")):
        top = junit_root(root / name)
        assert (top.tag, top.get("tests"), top.get("errors")) == ("testsuites", tests, errors), name
        assert [s.tag for s in top] == ["testsuite"] and top[0].get("tests") == tests


def on_a_terminal(command: str, *args: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run a command with stdout and stderr on a real terminal (a pty); what it wrote, and its exit."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", MODULES[command], *args], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, env={**os.environ, "TERM": "xterm", **env})
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:   # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    return proc.wait(timeout=120), out.decode(errors="replace")


ESC = "\x1b["


def test_colour_only_where_wanted_on_a_real_terminal_and_never_under_no_color(tmp_path: Path):
    root = project(tmp_path, {"redfirst.yaml": "gates: {paths: [gates]}\n", "gates/adds.yaml": GATE})
    plain_env = {"NO_COLOR": ""}
    code, out = on_a_terminal("gates", "run", cwd=root, env=plain_env)
    assert code == 0 and ESC in out, out            # a terminal, nothing said: colour (the test can fail)
    for args, env in ((("run",), {"NO_COLOR": "1"}), (("run", "--color", "never"), plain_env)):
        code, out = on_a_terminal("gates", *args, cwd=root, env=env)
        assert code == 0 and "GREEN" in out and ESC not in out, (args, env, out)
    forced = cli("gates", "run", "--color", "always", cwd=root)
    assert forced.returncode == 0 and ESC in forced.stdout, forced.stdout


def test_every_command_takes_color_quiet_and_verbose(tmp_path: Path):
    from redfirst.clitools import all_parsers, walk

    lacking = []
    for command, top in all_parsers().items():   # every subcommand's parser, as argparse holds it
        for words, parser in walk(top):
            options = {o: a for a in parser._actions for o in a.option_strings}
            if not {"--color", "-q", "-v"} <= set(options) or list(options["--color"].choices or ()) != ["auto", "always", "never"]:
                lacking.append((command, *words))
    assert not lacking, lacking
    root = project(tmp_path, {"redfirst.yaml": "gates: {paths: [gates]}\n", "gates/adds.yaml": GATE})
    for command, args in (("gates", ("list",)), ("mutate", ("check",)), ("leases", ("boxes",)),
                          ("checkers", ("list",))):
        proc = cli(command, *args, "--color", "never", "-q", "-v", cwd=root)   # as the real program parses them
        assert "unrecognized arguments" not in proc.stderr and proc.returncode in (0, 3), (command, proc.stderr)
    wrong = cli("checkers", "list", "--color", "sometimes", cwd=root)
    assert wrong.returncode == 2 and "--color" in wrong.stderr and "Traceback" not in wrong.stderr, wrong.stderr


def test_quiet_and_verbose_change_what_each_command_says(tmp_path: Path):
    root = project(tmp_path, {"redfirst.yaml": "gates: {paths: [gates]}\n", "gates/adds.yaml": GATE})
    plain, verbose, quiet = (cli("gates", "run", *flag, cwd=root) for flag in ((), ("-v",), ("-q",)))
    shown = [run.stdout.split("\n")[1].split()[-1] for run in (plain, verbose)]
    assert [len(e) for e in shown] == [12, 64] and all(int(e, 16) for e in shown), plain.stdout + verbose.stdout
    assert "gates: 1 gate(s) selected" in plain.stderr and "selected" not in quiet.stderr
    backend = cli("leases", "boxes", "-v", cwd=root)
    assert backend.returncode == 0 and "leases: backend local" in backend.stderr, backend.stderr
    assert "leases: backend" not in cli("leases", "boxes", cwd=root).stderr


def shell_tool(name: str) -> str:
    import shutil

    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing: .ci/setup installs it")
        pytest.skip(f"no {name} (.ci/setup installs it)")
    return found


def test_bash_completes_every_subcommand_option_choice_and_path(tmp_path: Path):
    bash = shell_tool("bash")
    script = tmp_path / "complete.bash"
    script.write_text(cli("gates", "completion", "bash", cwd=tmp_path).stdout)
    (tmp_path / "shard-1.json").write_text("{}")

    def complete(*words: str) -> set[str]:
        probe = (f"source {script}; COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; "
                 "_redfirst_complete; printf '%s\\n' \"${COMPREPLY[@]}\"")
        return set(subprocess.run([bash, "-c", probe], capture_output=True, text=True, check=True,
                                  cwd=tmp_path).stdout.split())

    assert {"check", "sweep", "promote", "hazards", "merge"} <= complete("mutate", "")
    assert {"--evidence", "--junit", "--json"} <= complete("mutate", "merge", "--")
    assert complete("mutate", "merge", "sha") == {"shard-1.json"}          # its reports are files
    assert complete("gates", "run", "--junit", "sh") == {"shard-1.json"}    # an option that takes a path
    assert complete("gates", "run", "--color", "") == {"auto", "always", "never"}
    assert complete("checkers", "run", "--format", "s") == {"sarif"}
    assert {"--color", "-q", "-v"} <= complete("leases", "boxes", "-")


def test_fish_and_zsh_load_the_completion_and_fish_completes_like_bash(tmp_path: Path):
    fish, zsh = shell_tool("fish"), shell_tool("zsh")
    for shell in ("fish", "zsh"):
        (tmp_path / f"complete.{shell}").write_text(cli("gates", "completion", shell, cwd=tmp_path).stdout)
    (tmp_path / "shard-1.json").write_text("{}")

    def complete(line: str) -> set[str]:
        proc = subprocess.run([fish, "--no-config", "-c", f"source complete.fish; complete -C {line!r}"],
                              capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
        return {row.split("\t")[0] for row in proc.stdout.splitlines()}

    assert {"check", "sweep", "promote", "hazards", "merge"} <= complete("mutate ")
    assert {"--evidence", "--junit"} <= complete("mutate merge --")
    assert "--require-proven" not in complete("mutate merge --")
    assert complete("mutate merge sha") == {"shard-1.json"}
    assert complete("gates run --junit sh") == {"shard-1.json"}
    assert complete("gates run --color ") == {"auto", "always", "never"}
    loaded = subprocess.run([zsh, "-f", "-c", "source ./complete.zsh && whence -w _redfirst_complete"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert loaded.returncode == 0 and "function" in loaded.stdout and not loaded.stderr, loaded.stderr


PYPROJECT = """[project]
name = "toy"

[tool.redfirst.gates]
paths = ["checks"]

[tool.redfirst.leases.boxes.thor]
gpus = 2

[tool.redfirst.checkers]
append_only = [{path = "LOG.md"}]
"""


def test_pyproject_tool_redfirst_configures_every_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "leases.db"))
    root = project(tmp_path, {"pyproject.toml": PYPROJECT, "checks/adds.yaml": GATE, "LOG.md": "one\n"})
    ran = cli("gates", "run", cwd=root)   # the gate folder is pyproject's `checks`
    assert ran.returncode == 0 and "adds" in ran.stdout, ran.stdout + ran.stderr
    assert "thor" in cli("leases", "boxes", cwd=root).stdout
    (root / "LOG.md").write_text("two\n")
    for step in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "rewrite the log"]):
        subprocess.run(["git", *step], cwd=root, check=True, capture_output=True)
    checked = cli("checkers", "run", "--base", "HEAD~1", cwd=root)
    assert checked.returncode == 1 and "LOG.md" in checked.stdout and "append-only" in checked.stdout, \
        checked.stdout + checked.stderr


def test_redfirst_yaml_and_tool_redfirst_both_present_is_a_config_error_naming_both(tmp_path: Path):
    root = project(tmp_path, {"pyproject.toml": PYPROJECT, "redfirst.yaml": "gates: {paths: [gates]}\n",
                              "checks/adds.yaml": GATE})
    for command, args in (("gates", ("check",)), ("gates", ("run",)), ("mutate", ("check",)), ("leases", ("boxes",)),
                          ("checkers", ("run", "--base", "HEAD"))):
        proc = cli(command, *args, cwd=root)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "redfirst.yaml" in proc.stderr and "pyproject.toml" in proc.stderr and "[tool.redfirst]" in proc.stderr, \
            (command, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_a_bad_key_under_tool_redfirst_names_pyproject_and_its_line(tmp_path: Path):
    root = project(tmp_path, {"pyproject.toml": '[project]\nname = "toy"\n\n[tool.redfirst.gates]\npaths = 3\n'})
    proc = cli("gates", "check", cwd=root)
    assert proc.returncode == 2 and "pyproject.toml:5:" in proc.stderr and "paths" in proc.stderr, proc.stderr


def test_no_gate_files_names_the_file_that_configures_the_gate_folders(tmp_path: Path):
    root = project(tmp_path, {"pyproject.toml": '[tool.redfirst.gates]\npaths = ["checks"]\n', "checks/.keep": ""})
    proc = cli("gates", "check", cwd=root)
    assert proc.returncode == 3 and "pyproject.toml [tool.redfirst] gates.paths" in proc.stdout, proc.stdout


def test_a_broken_pyproject_without_tool_redfirst_in_a_subfolder_is_not_a_project_root(tmp_path: Path):
    root = project(tmp_path, {"redfirst.yaml": "gates: {paths: [gates]}\n", "gates/adds.yaml": GATE,
                              "vendored/pyproject.toml": "[project\nname = 'broken'\n"})
    proc = cli("gates", "check", cwd=root / "vendored")   # found upwards: the top's redfirst.yaml
    assert proc.returncode == 0 and "adds" in proc.stdout, proc.stdout + proc.stderr
    (root / "vendored" / "pyproject.toml").write_text("[tool.redfirst.gates\npaths = ['g']\n")
    broken = cli("gates", "check", cwd=root / "vendored")   # meant to configure: its error, with its line
    assert broken.returncode == 2 and "vendored/pyproject.toml:1: not valid TOML" in broken.stderr, broken.stderr


def test_checkers_with_no_checkers_section_name_both_places_it_could_be(tmp_path: Path):
    root = project(tmp_path, {"pyproject.toml": '[tool.redfirst.gates]\npaths = ["checks"]\n', "checks/adds.yaml": GATE})
    proc = cli("checkers", "run", "--base", "HEAD", cwd=root)
    assert proc.returncode == 3 and "no `checkers:` section in redfirst.yaml or [tool.redfirst]" in proc.stdout + proc.stderr, \
        proc.stdout + proc.stderr


@pytest.mark.parametrize("nested", ["x = " + "[" * 100_000 + "]" * 100_000, "x = " + "{a = " * 80 + "1" + "}" * 80])
def test_tool_redfirst_nested_past_the_bound_is_a_message_at_its_line_for_every_command(tmp_path: Path, nested: str):
    """pyproject.toml is read by the one bounded loader, as redfirst.yaml is: nesting 100,000 arrays deep was a
    RecursionError traceback out of gates and leases, and 80 inline tables deep (past the bound every other
    file kind keeps) was read (round 4 of issue 34)."""
    root = project(tmp_path, {"pyproject.toml": f'[project]\nname = "toy"\n[tool.redfirst.checkers]\n{nested}\n'})
    for command, args in (("gates", ("check",)), ("leases", ("boxes",)), ("checkers", ("run", "--base", "HEAD"))):
        proc = cli(command, *args, cwd=root)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (command, proc.stderr[-2000:])
        # checkers read the policy at the commit: pyproject.toml@<commit>:4
        assert re.search(r"pyproject\.toml(@[0-9a-f]+)?:4: TOML error: nested deeper than 64 levels",
                         proc.stdout + proc.stderr), (command, proc.stdout[-500:], proc.stderr[-2000:])
