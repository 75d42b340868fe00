"""YAML loaded together with the line of every key, so config errors can name file and line."""

from __future__ import annotations

from typing import Any

import yaml


class YamlError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def load(text: str) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """The data and a map from each path (tuple of keys/indexes) to its 1-based line."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None:
            _check_bounds(node)  # before anything is built: a bomb, or a value PyYAML cannot build
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlError((mark.line + 1) if mark else 1, str(exc.problem or exc)) from exc
    except yaml.YAMLError as exc:
        raise YamlError(1, str(exc)) from exc
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _walk(node, (), lines)
    return data, lines


def _check_bounds(node: yaml.Node) -> None:
    """An alias bomb is refused before anything walks it (a recursive alias is read: _walk stops at it)."""
    from pathlib import Path

    from redfirst import yamlsrc

    try:
        yamlsrc.check_bounds(node, Path("redfirst.yaml"), recursion_ok=True)
    except yamlsrc.YamlError as exc:
        problem = exc.problems[0]
        raise YamlError(problem.line, problem.message) from None


def _walk(node: yaml.Node, path: tuple[Any, ...], lines: dict[tuple[Any, ...], int],
          open_nodes: frozenset[int] = frozenset()) -> None:
    lines[path] = node.start_mark.line + 1
    if id(node) in open_nodes:  # an alias of an enclosing node (`&a [*a]`): its lines are known already
        return
    inside = open_nodes | {id(node)}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = path + (key.value,)
            _walk(value, child, lines, inside)
            lines[child] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, path + (i,), lines, inside)


def line_of(lines: dict[tuple[Any, ...], int], path: tuple[Any, ...]) -> int:
    """The line of `path`, or of its nearest ancestor that has one."""
    while path and path not in lines:
        path = path[:-1]
    return lines.get(path, 1)
