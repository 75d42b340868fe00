"""`gates completion bash|zsh|fish`: a completion script for all four commands."""

from __future__ import annotations

import argparse

from redfirst import clitools
from redfirst.verdict import EXIT_OK


def add(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("completion", help="print a shell completion script for gates, mutate, leases, checkers")
    c.add_argument("shell", choices=("bash", "zsh", "fish"),
                   help="eval \"$(gates completion bash)\" in ~/.bashrc; gates completion fish | source")
    c.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    print(clitools.completion(args.shell), end="")
    return EXIT_OK
