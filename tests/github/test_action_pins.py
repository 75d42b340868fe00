"""The action and workflows use current maintained majors of GitHub's own actions (node24
runtimes), pinned by commit with the version beside it; README's snippet is adoptable as
it stands; install hints name what exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The first major of each that runs on node24 (node20 is deprecated on GitHub's runners).
NODE24 = {"actions/checkout": 5, "actions/setup-python": 6, "actions/upload-artifact": 5,
          "actions/download-artifact": 6}  # the first major on Node 24 (v6.0.0)
USES = re.compile(r"uses:\s*(actions/[\w-]+)@(\S+)(?:\s+#\s*v(\d+)[\d.]*)?")


def workflow_files() -> list[Path]:
    return sorted((REPO / ".github").rglob("*.yml"))


def test_every_pinned_github_action_is_a_node24_major_pinned_by_commit():
    found = []
    for path in [*workflow_files(), REPO / "tests" / "github" / "test_action_act.py"]:
        for line in path.read_text().splitlines():
            m = USES.search(line) or re.search(r"\"(actions/[\w-]+)@([0-9a-f]{40})\"", line)
            if not m:
                continue
            name, ref = m.group(1), m.group(2)
            found.append(name)
            assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{path.name}: {line.strip()} (pin by commit)"
            if path.suffix == ".yml":
                assert m.group(3) and int(m.group(3)) >= NODE24[name], f"{path.name}: {line.strip()}"
    assert {"actions/checkout", "actions/setup-python", "actions/upload-artifact"} <= set(found)


def test_readme_snippet_checks_out_full_history_and_passes_the_base():
    text = (REPO / "README.md").read_text()
    snippet = text.split("## GitHub Actions", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    assert "actions/checkout@" in snippet and "fetch-depth: 0" in snippet
    assert "base: ${{ github.event.pull_request.base.sha" in snippet
    assert "uses: <owner>/redfirst/.github/actions/redfirst@" in snippet


def test_install_hints_name_what_exists():
    sources = [REPO / "redfirst" / "gates" / "cli.py", REPO / "redfirst" / "gates" / "cuda" / "rt.py", REPO / "README.md"]
    for path in sources:
        assert "install 'redfirst[cuda]'" not in path.read_text(), path
