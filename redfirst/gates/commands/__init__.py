"""One module per `gates` subcommand: each declares its arguments (`add`) and does its work
(`main`); `redfirst/gates/cli.py` builds the parser from them in this order and dispatches."""

# The subcommands, in the order `gates --help` lists them (module `red_first` is `red-first`).
COMMANDS = ("run", "check", "schema", "list", "show", "regrade", "export", "gc", "red_first", "proofs", "probe",
            "completion")
