"""redfirst checkers: pre-merge record checks judged on commits, never on the working tree.

`checkers run` reads the `checkers:` policy of redfirst.yaml (from the merge base in range mode),
runs each configured checker (one module each, see `redfirst.checkers.registry`) and prints findings as
`file:line: rule: message`; verdicts and exit codes are those of `redfirst.verdict`.
"""
