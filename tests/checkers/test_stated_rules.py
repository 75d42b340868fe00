"""The two rules of vllm.cpp's check-agent-record.py that the agents-record preset restates from the
numbers the repository states (never pinned in redfirst): the model matrix's inventory totals
(check_model_invariants) and the ROAD-V1 portfolio order of roadmap_v1.md (check_roadmap). On the
record this project writes (agents_fixture.py), real git, the real CLI."""

from __future__ import annotations

from tests.checkers import agents_fixture as fx

MODEL = ".agents/model-matrix.md"
ROADMAP = ".agents/roadmap_v1.md"
SCRIPT = "scripts/check-agent-record.py"
BLOCKS = ["ROAD-V1-A", "ROAD-V1-C1", "ROAD-V1-D1"]
MESSAGE = "docs(agents): {what}\n\nWhy.\n\nFOLLOWING_AGENTS_PROTOCOL\n"


def model_matrix(rows: int = 326, extra_alias: bool = False) -> str:
    """326 MODEL rows, each naming architecture aliases and a `module::Class` target; rows 1 and 2 share
    a module, row 3 names two aliases (so every total differs from the row count)."""
    out = ["# Model matrix", "", "## Text", "",
           "| ID | Item / architecture aliases | Upstream | Spike/spec | State | Owner |", "|---|---|---|---|---|---|"]
    for k in range(1, rows + 1):
        aliases = f"`Arch{k}`" + (" / `Arch3Alt`" if k == 3 else "") + (" / `ArchNew`" if extra_alias and k == 4 else "")
        module = "mods/shared.py" if k <= 2 else f"mods/m{k}.py"
        out.append(f"| `MODEL-{k}` | {aliases} | `registry.py:{k}`; `{module}::Arch{k}` | — | `INVENTORIED` | — |")
    return "\n".join(out) + "\n"


def inventory(rows: int = 326, memberships: int = 327, architectures: int = 327, targets: int = 326,
              modules: int = 325) -> str:
    return ("\n\ndef check_model_invariants(errors):\n    expected = {\n"
            f'        "rows": {rows},\n        "memberships": {memberships},\n        "architectures": {architectures},\n'
            f'        "targets": {targets},\n        "modules": {modules},\n    }}\n')


def order(blocks: list[str] = BLOCKS) -> str:
    return "\n\ndef check_roadmap(by_id, errors):\n    expected_blocks = [\n" + \
        "".join(f'        "{b}",\n' for b in blocks) + "    ]\n"


def roadmap(blocks: list[str] = BLOCKS, state: str = "`PARTIAL`") -> str:
    rows = "".join(f"| {k} | `{b}` | outcome {k} | [m](model-matrix.md) | spike | {state} | next |\n"
                   for k, b in enumerate(blocks))
    return ("# Roadmap v1\n\n## Portfolio\n\n| Order | Block | Big area / outcome | Canonical detailed table | "
            "Spike coverage | State | Next gate |\n|---|---|---|---|---|---|---|\n" + rows)


def seeded(repo, script: str, files: dict[str, str] | None = None) -> None:
    """The fixture record on main, with this script statement, model matrix and roadmap; a feature branch."""
    fx.build(repo)
    repo.commit(MESSAGE.format(what="state the inventory"),
                {SCRIPT: fx.record_script() + script, MODEL: model_matrix(), ROADMAP: roadmap(), **(files or {})})
    repo.git("checkout", "-q", "-b", "feature")


def run(repo, cli, what: str, files: dict[str, str]) -> tuple[int, dict]:
    repo.commit(MESSAGE.format(what=what), files)
    return cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "matrices")


def findings(doc: dict, check_id: str) -> list[dict]:
    return [f for i in doc["items"] if i["id"] == check_id for f in i["findings"]]


def test_stated_inventory_and_order_that_hold_are_green(repo, cli):
    seeded(repo, inventory() + order())
    rc, doc = run(repo, cli, "touch", {"README.md": "# engine\n\nMore.\n"})
    items = {i["id"]: i for i in doc["items"]}
    assert rc == 0, [(i["id"], i["findings"], i["reason"]) for i in doc["items"]]
    assert items[f"matrices:order:{ROADMAP}"]["counts"]["blocks"] == 3
    assert items[f"matrices:{MODEL}"]["verdict"] == "GREEN"


def test_an_inventory_row_added_without_its_stated_totals_is_one_finding(repo, cli):
    seeded(repo, inventory() + order())
    rc, doc = run(repo, cli, "add an alias", {MODEL: model_matrix(extra_alias=True)})
    assert rc == 1
    (finding,) = findings(doc, f"matrices:{MODEL}")
    assert finding["rule"] == "inventory" and finding["line"] == 1
    assert "'memberships': 328, 'architectures': 328" in finding["message"]
    assert "'memberships': 327, 'architectures': 327" in finding["message"]  # what the script states


def test_raising_the_stated_totals_in_the_same_change_is_green(repo, cli):
    seeded(repo, inventory() + order())
    rc, doc = run(repo, cli, "add an alias", {MODEL: model_matrix(extra_alias=True),
                                               SCRIPT: fx.record_script() + inventory(memberships=328, architectures=328)
                                               + order()})
    assert rc == 0, [(i["id"], i["findings"]) for i in doc["items"]]


def test_a_portfolio_out_of_the_stated_order_is_red_at_the_first_misplaced_block(repo, cli):
    seeded(repo, inventory() + order())
    rc, doc = run(repo, cli, "reorder", {ROADMAP: roadmap(["ROAD-V1-A", "ROAD-V1-D1", "ROAD-V1-C1"])})
    assert rc == 1
    (finding,) = findings(doc, f"matrices:order:{ROADMAP}")
    assert finding["rule"] == "order"
    text = (repo.path / ROADMAP).read_text().split("\n")
    assert finding["line"] == text.index(next(x for x in text if "`ROAD-V1-D1`" in x)) + 1


def test_a_block_without_exactly_one_state_is_a_finding_per_block(repo, cli):
    seeded(repo, inventory() + order())
    rc, doc = run(repo, cli, "unstate", {ROADMAP: roadmap(state="`PARTIAL` `DONE`")})
    assert rc == 1
    found = findings(doc, f"matrices:order:{ROADMAP}")
    assert [f["rule"] for f in found] == ["order-state"] * 3


def test_dropping_the_statement_the_merge_base_makes_is_red(repo, cli):
    seeded(repo, inventory() + order())
    rc, doc = run(repo, cli, "drop the rules", {SCRIPT: fx.record_script()})
    assert rc == 1
    rules = sorted(f["rule"] for i in doc["items"] for f in i["findings"])
    assert rules == ["stated-removed"] * 6  # five totals and the order


def test_a_repository_that_states_neither_rule_has_neither(repo, cli):
    seeded(repo, "")
    rc, doc = run(repo, cli, "reorder", {ROADMAP: roadmap(["ROAD-V1-D1", "ROAD-V1-A"]),
                                         MODEL: model_matrix(extra_alias=True)})
    assert rc == 0, [(i["id"], i["findings"]) for i in doc["items"]]
    assert f"matrices:order:{ROADMAP}" not in {i["id"] for i in doc["items"]}


def test_every_preset_entry_satisfies_its_checkers_schema():
    """A run validates only what a redfirst.yaml writes (jsonschema is not even imported for a policy of
    presets alone), so the presets themselves are validated here."""
    import jsonschema

    from redfirst.checkers.presets import PRESETS
    from redfirst.checkers.registry import REGISTRY

    for preset in PRESETS.values():
        for name, value in preset.items():
            errors = list(jsonschema.Draft202012Validator(
                REGISTRY[name].schema, format_checker=jsonschema.FormatChecker()).iter_errors(value))
            assert not errors, (name, [e.message for e in errors])
