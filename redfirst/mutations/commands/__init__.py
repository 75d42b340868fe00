"""One module per `mutate` subcommand (`run` is the default)."""
