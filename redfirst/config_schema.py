"""The JSON Schema of `redfirst.yaml`, built from what the parts accept: the checkers'
section from each registered checker's own schema (`redfirst.checkers.schema_section`, so it never
lags a new checker), the rest written out here. `gates schema --config` prints it; docs/reference.md is generated
from it."""

from __future__ import annotations

from typing import Any

_PATHS = {"type": "array", "items": {"type": "string", "minLength": 1},
          "description": "folders relative to the root"}

_LEASES: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "description": "GPU leases: which backend, where its state lives, declared boxes",
    "examples": [{"backend": "slurm", "slurm": {"rest": "http://slurm:6820", "partition": "gpu"}}],
    "properties": {
        "backend": {"enum": ["local", "slurm", "rc"], "default": "local", "description": "the lease backend",
                    "examples": ["slurm"]},
        "db": {"type": "string", "description": "local: the SQLite lease file "
                                                "(default $XDG_STATE_HOME/redfirst/leases.db; REDFIRST_LEASES_DB wins)",
               "examples": ["/var/lib/redfirst/leases.db"]},
        "ttl": {"type": "number", "exclusiveMinimum": 0, "default": 30,
                "description": "seconds a holder may go without a heartbeat", "examples": [60]},
        "boxes": {"type": "object", "description": "local: labels of `local` and extra boxes it schedules",
                  "examples": [{"thor": {"gpus": 2, "labels": {"gpu_model": "h100"}}}],
                  "additionalProperties": {
                      "type": "object", "additionalProperties": False,
                      "properties": {"gpus": {"type": "integer", "minimum": 0, "maximum": 4096,
                                              "description": "GPUs of the box", "examples": [2]},
                                     "labels": {"type": "object", "description": "selector labels", "examples": [{"gpu_model": "h100"}],
                                                "additionalProperties": {"type": ["string", "number", "boolean"]}}}}},
        "slurm": {"type": "object", "description": "slurm: the cluster's REST endpoint",
                  "examples": [{"rest": "http://slurm:6820", "user": "ci", "partition": "gpu", "token_env": "SLURM_JWT"}],
                  "properties": {"rest": {"type": "string", "description": "slurmrestd URL", "examples": ["http://slurm:6820"]},
                                 "user": {"type": "string", "description": "the user jobs run as", "examples": ["ci"]},
                                 "partition": {"type": "string", "description": "the partition to allocate in",
                                               "examples": ["gpu"]},
                                 "token_env": {"type": "string", "description": "environment variable with the JWT",
                                               "examples": ["SLURM_JWT"]}}},
        "rc": {"type": "object", "description": "rc: the resource controller's HTTP API",
               "examples": [{"url": "https://rc.example:8443", "token_env": "RC_TOKEN", "submitter": "ci"}],
               "properties": {"url": {"type": "string", "description": "the controller's URL",
                                     "examples": ["https://rc.example:8443"]},
                              "token_env": {"type": "string", "description": "environment variable with the token",
                                           "examples": ["RC_TOKEN"]},
                              "submitter": {"type": "string", "description": "who the leases are for", "examples": ["ci"]}}},
    },
}


# The sections of redfirst.yaml that a part builds from its own registry, named as an entry point is
# (module:function), so this shared module imports no part: loaded when the schema is asked for.
SECTIONS: dict[str, str] = {"checkers": "redfirst.checkers.schema_section:section"}


def _section(name: str) -> dict[str, Any]:
    import pkgutil

    built: dict[str, Any] = pkgutil.resolve_name(SECTIONS[name])()
    return built


def config_schema() -> dict[str, Any]:
    checkers = _section("checkers")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://redfirst.dev/schema/config/1.json",
        "title": "redfirst.yaml",
        "description": "The project config at the root of the repository; every part optional.",
        "type": "object", "additionalProperties": False,
        "properties": {
            "gates": {"type": "object", "additionalProperties": False, "description": "where gate files are",
                      "examples": [{"paths": ["gates"]}],
                      "properties": {"paths": {**_PATHS, "default": ["gates"], "examples": [["gates", "native/gates"]]}}},
            "mutations": {"type": "object", "description": "where mutation files are",
                          "examples": [{"paths": ["mutations"]}],
                          "properties": {"paths": {**_PATHS, "default": ["mutations"], "examples": [["mutations"]]}}},
            "evidence": {"type": "object", "additionalProperties": False, "description": "the evidence store", "examples": [{"max_mib": 2048}],
                         "properties": {"max_mib": {"type": "number", "exclusiveMinimum": 0, "default": 512,
                                                    "description": "the store's size cap in MiB (`gates gc`)",
                                                    "examples": [2048]}}},
            "leases": _LEASES,
            "secrets": {"type": "object", "additionalProperties": False,
                        "description": "values scrubbed from every record besides those of secret-looking names",
                        "examples": [{"names": ["HF_HUB_READ"]}],
                        "properties": {"names": {"type": "array", "default": [],
                                                 "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                                                 "description": "environment variables whose values are secrets "
                                                                "(exact names)", "examples": [["HF_HUB_READ"]]}}},
            "checkers": {"type": "object", "additionalProperties": False,
                         "description": "record checkers `checkers run` runs on the commits that will land",
                         "examples": [{"preset": "agents-record", "append_only": [{"path": "CHANGELOG.md"}]}],
                         "properties": checkers},
        },
    }
