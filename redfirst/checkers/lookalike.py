"""Letters of other scripts that render as Latin ones (Unicode's confusables, Cyrillic and Greek
subset): a forbidden name spelled with them reads as the name in `git log`."""

from __future__ import annotations

# Cyrillic then Greek, lower and upper case, each beside the Latin letter it looks like.
_PAIRS = (
    "аaвbсcԁdеeһhіiјjкkӏlмmнhоoрpԛqѕsтtԝwхxуyАAВBСCЕEНHІIЈJКKМMНHОOРPЅSТTХXУYԜWԚQ"
    "αaβbεeιiκkνvοoρpτtυuχxγyΑAΒBΕEΗHΙIΚKΜMΝNΟOΡPΤTΥYΧXΖZ"
)
_FOLD = str.maketrans({_PAIRS[i]: _PAIRS[i + 1] for i in range(0, len(_PAIRS), 2)})


def latin(text: str) -> str:
    """`text` with every look-alike letter replaced by the Latin letter it renders as."""
    return text.translate(_FOLD)
