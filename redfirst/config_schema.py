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
    "properties": {
        "backend": {"enum": ["local", "slurm", "rc"], "default": "local", "description": "the lease backend"},
        "db": {"type": "string", "description": "local: the SQLite lease file "
                                                "(default $XDG_STATE_HOME/redfirst/leases.db; REDFIRST_LEASES_DB wins)"},
        "ttl": {"type": "number", "exclusiveMinimum": 0, "default": 30,
                "description": "seconds a holder may go without a heartbeat"},
        "boxes": {"type": "object", "description": "local: labels of `local` and extra boxes it schedules",
                  "additionalProperties": {
                      "type": "object", "additionalProperties": False,
                      "properties": {"gpus": {"type": "integer", "minimum": 0, "maximum": 4096,
                                              "description": "GPUs of the box"},
                                     "labels": {"type": "object", "description": "selector labels",
                                                "additionalProperties": {"type": ["string", "number", "boolean"]}}}}},
        "slurm": {"type": "object", "description": "slurm: the cluster's REST endpoint",
                  "properties": {"rest": {"type": "string", "description": "slurmrestd URL"},
                                 "user": {"type": "string", "description": "the user jobs run as"},
                                 "partition": {"type": "string", "description": "the partition to allocate in"},
                                 "token_env": {"type": "string", "description": "environment variable with the JWT"}}},
        "rc": {"type": "object", "description": "rc: the resource controller's HTTP API",
               "properties": {"url": {"type": "string", "description": "the controller's URL"},
                              "token_env": {"type": "string", "description": "environment variable with the token"},
                              "submitter": {"type": "string", "description": "who the leases are for"}}},
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
                      "properties": {"paths": {**_PATHS, "default": ["gates"]}}},
            "mutations": {"type": "object", "description": "where mutation files are",
                          "properties": {"paths": {**_PATHS, "default": ["mutations"]}}},
            "evidence": {"type": "object", "additionalProperties": False, "description": "the evidence store",
                         "properties": {"max_mib": {"type": "number", "exclusiveMinimum": 0, "default": 512,
                                                    "description": "the store's size cap in MiB (`gates gc`)"}}},
            "leases": _LEASES,
            "secrets": {"type": "object", "additionalProperties": False,
                        "description": "values scrubbed from every record besides those of secret-looking names",
                        "properties": {"names": {"type": "array", "default": [],
                                                 "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                                                 "description": "environment variables whose values are secrets "
                                                                "(exact names)"}}},
            "checkers": {"type": "object", "additionalProperties": False,
                         "description": "record checkers `checkers run` runs on the commits that will land",
                         "properties": checkers},
        },
    }
