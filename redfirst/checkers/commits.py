"""Commit messages of a range, read with one `git log` and parsed by git's own trailer rules."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import git

from redfirst.checkers.lines import GIT_SPACE, is_blank

# NUL between fields, and -z puts NUL between commits: a message cannot hold NUL, so no text of it
# can shift a field (a body line read as a trailer) or split a commit.
# %(trailers:only,unfold) is git's own trailer parser: last paragraph, its separators, its folding.
_FORMAT = "%H%x00%T%x00%P%x00%B%x00%(trailers:only,unfold)"
_FIELDS = 5


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    message: str
    trailers: tuple[tuple[str, str], ...]
    tree: str = ""      # the commit's tree id (a message being written has none)

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1

    @property
    def subject(self) -> str:
        """git's subject (%s): after leading blank lines, the first paragraph's lines, each cut of
        trailing spaces, joined by one space; lines and blank lines as git reads them."""
        first = _paragraphs(self.message)[:1]
        return " ".join(line.rstrip(GIT_SPACE) for line in first[0]) if first else ""

    @property
    def body(self) -> str:
        """The paragraphs after the subject (git's %b), without the trailer block."""
        paragraphs = _paragraphs(self.message)[1:]
        if self.trailers and paragraphs:
            paragraphs = paragraphs[:-1]
        return "\n\n".join("\n".join(p) for p in paragraphs).strip()

    @property
    def label(self) -> str:
        return f"commit {self.sha[:12]}"


def _paragraphs(message: str) -> list[list[str]]:
    """The message's paragraphs: runs of lines split at LF, between git's blank lines."""
    out: list[list[str]] = [[]]
    for line in message.split("\n"):
        if is_blank(line):
            if out[-1]:
                out.append([])
        else:
            out[-1].append(line)
    return [p for p in out if p]


def parse_trailer_lines(text: str) -> tuple[tuple[str, str], ...]:
    """Lines as git prints them with --parse / trailers:only,unfold: `Key: value`."""
    out = []
    for line in text.split("\n"):  # git prints one trailer a line; a U+2028 is inside its value
        key, sep, value = line.partition(":")
        if sep and key.strip(GIT_SPACE):
            out.append((key.strip(GIT_SPACE), value.strip(GIT_SPACE)))
    return tuple(out)


def _configured(repo: git.Repo, keys: tuple[str, ...]) -> git.Git:
    """git with `keys` declared as configured trailers: git's rules then accept a trailer block that
    also holds a non-trailer line (such as a protocol marker) when it carries one of these keys."""
    if not keys:
        return repo.git
    return repo.git(c=[f"trailer.{k.lower()}.key={k}" for k in keys])


def read_range(repo: git.Repo, base: str, head: str, keys: tuple[str, ...] = ()) -> list[Commit]:
    """Every commit in `base..head`, newest first, from one git process."""
    # --no-show-signature: a user's log.showSignature would print verification text into the fields.
    out = _configured(repo, keys).log("-z", "--no-show-signature", f"--format={_FORMAT}", f"{base}..{head}",
                                      strip_newline_in_stdout=False)
    if not out:
        return []
    fields = out.removesuffix("\0").split("\0")  # tformat ends every commit, the last too, with its NUL
    if len(fields) % _FIELDS:
        raise ValueError(f"git log printed {len(fields)} fields for {base}..{head}, not a multiple of {_FIELDS}")
    commits = []
    for i in range(0, len(fields), _FIELDS):
        sha, tree, parents, message, trailers = fields[i:i + _FIELDS]
        commits.append(Commit(sha.strip(), tuple(parents.split()), message.rstrip("\n"), parse_trailer_lines(trailers),
                              tree.strip()))
    return commits


def read_message_file(repo: git.Repo, path: str, keys: tuple[str, ...] = ()) -> Commit:
    """A message being written (commit-msg hook): comments stripped and trailers parsed by git.
    Bytes stay bytes through git, so a message that is not UTF-8 (i18n.commitEncoding) is judged."""
    with open(path, "rb") as fh:
        raw = repo.git.stripspace("--strip-comments", istream=fh, stdout_as_string=False)
    with tempfile.NamedTemporaryFile("wb", suffix=".msg", delete=False) as tmp:
        tmp.write(raw.rstrip(b"\n") + b"\n")
    try:
        # --no-divider: a `---` line is text of a commit message, as git log's %(trailers) reads it.
        trailers = _configured(repo, keys).interpret_trailers("--parse", "--no-divider", tmp.name,
                                                              stdout_as_string=False)
    finally:
        os.unlink(tmp.name)
    return Commit("0" * 40, (), _text(raw).rstrip("\n"), parse_trailer_lines(_text(trailers)))


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def clean_merge(repo: git.Repo, commit: Commit) -> bool:
    """Whether `commit` is a merge that changes nothing of its own: two parents, and its tree is the tree git's
    own merge of them writes (`git merge-tree --write-tree`, no conflict). A merge that resolved a conflict or
    carries an edit of its own (an evil merge), an octopus merge, or one this git cannot re-merge is not."""
    if len(commit.parents) != 2 or not commit.tree:
        return False
    try:
        out = repo.git.merge_tree("--write-tree", "--no-messages", *commit.parents)
    except git.GitCommandError:
        return False    # a conflict (exit 1) or a git without --write-tree (before 2.38)
    return out.split("\n", 1)[0].strip() == commit.tree
