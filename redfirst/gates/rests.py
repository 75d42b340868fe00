"""What a verdict rests on (`rests_on`): the one account both mutate's result cache
(redfirst.mutations.cache) and the proofs (redfirst.gates.proven) keep of what a result read, and
check (`holds`) before they trust it again.

It is every file the runs read, wherever it lies: under the root by content, mode and link target
(redfirst.gates.treekey), outside it by `treekey.fingerprint` (pytest's conftest.py and
configuration files above the root always among them, read or not: `treekey.surroundings`). Where
what the runs read is not known, the whole tree and those files stand for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redfirst.gates.reads import ReadSet
from redfirst.gates.treekey import TreeState, fingerprint


def rests_on(tree: TreeState, reads: ReadSet | None, whole_tree: bool = False) -> dict[str, Any]:
    """What a result decided on `tree` by runs that read `reads` (None: not known) rests on:
    `{"tree": digest}` (`whole_tree`, or the reads are not known) or `{"reads": {path: content},
    "above": {...}}`, and `{"outside": {path: fingerprint}, "root": root}` for what the runs read
    outside the root. A caller may rely on: while `holds` says so, no file the runs read, nor any
    conftest.py or configuration file above the root, has changed content, mode or link target
    (the paths of the tree are the caller's to key: a file added under the root is not here)."""
    if reads is None or reads.unknown is not None or whole_tree or any(
            rel in reads.written and rel not in tree.entries for rel in reads.paths):
        # Unknown; or a file git does not list was written by the run: its content before is not known.
        rests: dict[str, Any] = {"tree": tree.digest}
    else:
        rests = {"reads": {rel: tree.content(rel) for rel in sorted(reads.paths)}, "above": dict(tree.above)}
    if reads is not None and reads.unknown is None and reads.outside:
        rests["outside"] = {path: fingerprint(path) for path in sorted(reads.outside)}
        # Those paths are this checkout's surroundings: another checkout of the same tree (the
        # cache is the user's, not the checkout's) has its own.
        rests["root"] = str(tree.root)
    return rests


def holds(stored: Mapping[str, Any], tree: TreeState) -> bool:
    """Whether what `rests_on` gave then (`stored`) is as it is now on `tree`."""
    outside = stored.get("outside", {})
    if not isinstance(outside, dict) or (outside and stored.get("root") != str(tree.root)):
        return False
    if not all(fingerprint(path) == found for path, found in outside.items()):
        return False
    if "tree" in stored:
        return bool(stored["tree"] == tree.digest)
    read = stored.get("reads")
    return isinstance(read, dict) and stored.get("above") == dict(tree.above) and all(
        tree.content(rel) == content for rel, content in read.items())
