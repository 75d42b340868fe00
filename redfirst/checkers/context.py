"""What a run judges: which tree is the head, which is the base, where the policy comes from."""

from __future__ import annotations

import functools
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import git

from redfirst.checkers.commits import Commit, read_range
from redfirst.checkers.tree import GIT_AS_COMMITTED, EmptyTree, GitTree, IndexTree, Tree


class Undecidable(Exception):
    """The run cannot judge anything: names what is missing (base, merge base, repository)."""


@dataclass(frozen=True)
class Mode:
    base: str | None = None
    head: str | None = None
    staged: bool = False


class Context:
    """The trees of one run. `head` is judged; `base` is what it is compared with (merge base in
    range mode, HEAD in staged mode, none for a plain run); `policy` is where redfirst.yaml and
    baselines are read from (the merge base in range mode, so a change cannot weaken its own rules)."""

    def __init__(self, repo: git.Repo, head: Tree, base: Tree | None, policy: Tree, kind: str,
                 base_sha: str | None = None, head_sha: str | None = None,
                 messages: list[Commit] | None = None, since: str | None = None,
                 merge_bases: tuple[str, ...] = ()) -> None:
        self.repo = repo
        self._messages = messages
        self._ranges: dict[tuple[str, ...], list[Commit]] = {}
        self.trailer_keys: tuple[str, ...] = ()  # keys the policy names; set once the policy is read
        self.policy_foreign = False  # the policy is --config's or the head's (labelled), not the `policy` tree's
        self.root = Path(repo.working_tree_dir or ".")
        self.head = head
        self.base = base
        self.policy = policy
        self.kind = kind  # "tree" | "staged" | "range"
        self.base_sha = base_sha
        self.head_sha = head_sha
        # The range's commits are since..head: `--base` itself, whichever merge base this run compares with.
        self.since = since or base_sha
        self.merge_bases = merge_bases or ((base_sha,) if base_sha else ())  # every one, in git's order

    def with_merge_base(self, sha: str) -> Context:
        """This range judged against another of its merge bases (a criss-cross history has several):
        the same head and commits, that merge base's tree and policy."""
        tree = GitTree(self.repo, sha)
        return Context(self.repo, self.head, tree, tree, self.kind, sha, self.head_sha, since=self.since,
                       merge_bases=self.merge_bases)

    @functools.cached_property
    def worktree(self) -> tuple[str, bool] | str:
        """(checked-out commit, has uncommitted changes to tracked files), or why there is no
        working tree; read once per run (a `git status` per script entry cost a tree scan each)."""
        try:
            at = self.repo.git.rev_parse("HEAD").strip()
            dirty = bool(self.repo.git.status("--porcelain", "--untracked-files=no").strip())
        except Exception as exc:  # noqa: BLE001 - a bare repository or no HEAD: nothing checked out
            return f"no checked-out working tree ({type(exc).__name__})"
        return at, dirty

    @functools.cached_property
    def unlike_head(self) -> str | None:
        """The first tracked path whose working-tree bytes are not the checked-out commit's blob, or None.

        `git status` compares through the attributes (`working-tree-encoding`, `eol`/`text`, `ident`) and
        trusts the index's flags (assume-unchanged, skip-worktree, a sparse checkout), so a head whose own
        .gitattributes renders a file as UTF-16, or an edit those flags hide, is "clean" while a program
        reading the folder reads other bytes than the commit's. A caller may rely on: None means every tracked
        regular file and link reads as its blob, byte for byte; a file a configured filter driver smudges
        (`filter.NAME.smudge` or `.process`: git-lfs) is the driver's, as the CI's own configuration made it."""
        out = self.repo.git.ls_files("-s", "-z")
        if not out:
            return None
        entries = [(f.split(" ")[0], f.split(" ")[1], f.split("\t", 1)[1]) for f in out.split("\0") if "\t" in f]
        digest = hashlib.sha256 if entries and len(entries[0][1]) == 64 else hashlib.sha1
        odd = []
        for mode, oid, path in entries:
            if mode not in ("100644", "100755", "120000"):
                continue        # a submodule's commit: not a file of this tree
            file = self.root / path
            try:
                data = os.readlink(file).encode("utf-8", "surrogateescape") if mode == "120000" else \
                    (None if file.is_symlink() else file.read_bytes())
            except OSError:
                data = None
            if data is None or digest(b"blob %d\0" % len(data) + data).hexdigest() != oid:
                odd.append(path)
        if not odd:
            return None
        filters = self.repo.git.check_attr("-z", "filter", "--", *odd[:1000]).split("\0")
        for path, value in zip(filters[0::3], filters[2::3], strict=False):
            configured = value not in ("unspecified", "unset", "set") and any(
                self.repo.git.config("--get", f"filter.{value}.{key}", with_exceptions=False) for key in ("smudge", "process"))
            if not configured:
                return path
        return None if len(odd) <= 1000 else odd[1000]

    @functools.cached_property
    def shallow(self) -> bool:
        return self.repo.git.rev_parse("--is-shallow-repository").strip() == "true"

    @property
    def commits(self) -> list[Commit]:
        """The commits judged: the range's, or the one message of a commit-msg hook (one git call)."""
        return self.commits_with(self.trailer_keys)

    def commits_with(self, trailer_keys: tuple[str, ...]) -> list[Commit]:
        """The commits, their trailers parsed by git with `trailer_keys` configured (one git call each)."""
        if self._messages is not None:
            return self._messages
        if self.kind != "range" or not self.base_sha or not self.head_sha:
            return []
        if trailer_keys not in self._ranges:
            self._ranges[trailer_keys] = read_range(self.repo, self.since or self.base_sha, self.head_sha,
                                                    trailer_keys)
        return self._ranges[trailer_keys]

    @functools.cached_property
    def changed_paths(self) -> tuple[str, ...]:
        """Files changed on the squashed shape (`base...head`), or staged against HEAD."""
        # --ignore-submodules=none: a submodule bump is a change whatever diff.ignoreSubmodules says
        if self.kind == "range":
            out = self.repo.git.diff("--name-only", "-z", "--no-renames", "--ignore-submodules=none", self.base_sha,
                                     self.head_sha, strip_newline_in_stdout=False)
        elif self.kind == "staged" and isinstance(self.base, EmptyTree):
            return self.head.paths()
        elif self.kind == "staged":
            out = self.repo.git.diff("--cached", "--name-only", "-z", "--no-renames", "--ignore-submodules=none",
                                     strip_newline_in_stdout=False)
        else:
            return ()
        return tuple(sorted(p for p in out.split("\0") if p))

    @functools.cached_property
    def _history(self) -> tuple[str, ...]:
        return tuple(self.repo.git.rev_list(self.head_sha).split())

    def in_history(self, rev: str) -> bool:
        """`rev` is a commit of the judged history: an ancestor of the head (HEAD for a staged run),
        not merely an object somewhere in the repository (an unmerged branch, a stray fetch)."""
        tip = self.head_sha or ("HEAD" if self.repo.head.is_valid() else None)
        if tip is None:
            return False
        if re.fullmatch(r"[0-9a-f]{7,40}", rev) and self.head_sha:
            # one rev-list for every cited commit of the run, not two git processes for each
            matches = [sha for sha in self._history if sha.startswith(rev)]
            if len(matches) == 1:
                return True
            if not matches:
                return False  # an abbreviation git might still resolve elsewhere is not of this history
        try:
            full = self.repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}").strip()
            self.repo.git.merge_base("--is-ancestor", full, tip)
        except git.GitCommandError:
            return False
        return True


def open_repo(root: Path | None) -> git.Repo:
    """The repository, every git command of it reading objects as committed (GIT_AS_COMMITTED: no replace
    ref or graft stands in for a judged commit). A caller may rely on: what checkers judge is what lands."""
    try:
        repo = git.Repo(root or Path.cwd(), search_parent_directories=root is None)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise Undecidable(f"{root or Path.cwd()} is not a git repository: checkers judge commits") from exc
    repo.git.update_environment(**GIT_AS_COMMITTED)
    return repo


def _resolve(repo: git.Repo, rev: str, role: str) -> str:
    try:
        return repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}").strip()
    except git.GitCommandError as exc:
        raise Undecidable(f"--{role} {rev!r} does not resolve to a commit here (fetch it, or fix the name)") from exc


def _refuse_a_cut_range(repo: git.Repo, merge_base: str, head: str) -> None:
    """In a shallow clone the merge base can be reachable along one path while another path of the
    range ends at a shallow boundary: `git log base..head` would then skip the commits behind it."""
    shallow = Path(repo.common_dir) / "shallow"
    try:
        cut = set(shallow.read_text(encoding="ascii").split())
    except OSError:
        return  # not shallow
    cut.discard(merge_base)
    if not cut:
        return
    inside = [sha for sha in repo.git.rev_list(f"{merge_base}..{head}").split() if sha in cut]
    if inside:
        raise Undecidable(f"shallow clone: the range {merge_base[:12]}..{head[:12]} is cut at {inside[0][:12]} "
                          f"(its parents were not fetched), so commits of the range are missing; fetch more "
                          f"history, e.g. `git fetch --unshallow`")


def build(repo: git.Repo, mode: Mode) -> Context:
    """The Context for a plain run (HEAD tree), a staged run (index vs HEAD) or a range run."""
    has_head = repo.head.is_valid()
    if mode.base is not None:
        base = _resolve(repo, mode.base, "base")
        head = _resolve(repo, mode.head or "HEAD", "head")
        try:
            # Every merge base: a criss-cross history has several, and `git merge-base` names one by
            # commit date; a line that only the other holds is old all the same.
            merge_bases = tuple(repo.git.merge_base("--all", base, head).split())
        except git.GitCommandError as exc:
            shallow = repo.git.rev_parse("--is-shallow-repository").strip() == "true"
            why = "shallow clone" if shallow else "unrelated histories"
            raise Undecidable(f"no merge base of {mode.base} and {mode.head or 'HEAD'} ({why}); "
                              f"fetch more history, e.g. `git fetch --unshallow`") from exc
        for merge_base in merge_bases:
            _refuse_a_cut_range(repo, merge_base, head)
        base_tree = GitTree(repo, merge_bases[0])
        return Context(repo, GitTree(repo, head), base_tree, base_tree, "range", merge_bases[0], head, since=base,
                       merge_bases=merge_bases)
    if mode.staged:
        index = IndexTree(repo)
        if not has_head:  # the first commit: compared with nothing, policy from what it adds
            return Context(repo, index, EmptyTree(), index, "staged")
        head_tree = GitTree(repo, repo.head.commit.hexsha)
        return Context(repo, index, head_tree, head_tree, "staged")
    if mode.head is not None or has_head:
        sha = _resolve(repo, mode.head or "HEAD", "head")
        tree = GitTree(repo, sha)
        return Context(repo, tree, None, tree, "tree", None, sha)
    raise Undecidable("the repository has no commit yet: nothing committed to check (use --staged)")
