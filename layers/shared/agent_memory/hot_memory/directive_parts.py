"""A user message cut into its standing statements and what it asks for now (a chat turn does the
second part and leaves the first to the distiller): :func:`directive_parts`, and
:func:`find_statement` for one clause. Statements are found by
:func:`agent_memory.hot_memory.statement_finder.find_statements`. Deterministic and offline;
nothing is logged.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_memory.hot_memory.analysis import analyse, nfkc
from agent_memory.hot_memory.sentences import fragments, mask_quotes, sentence_spans
from agent_memory.hot_memory.statement_finder import find_statements
from agent_memory.hot_memory.statement_lexicon import (
    ACT_NOW,
    ALWAYS_EN,
    CHANGE,
    DURABLE_EN,
    DURABLE_ZH,
    LESSON_LABEL,
    NOTE,
    REMEMBER,
)


def _has_cue(fragment: str) -> bool:
    norm = nfkc(fragment)
    return any(rx.search(norm) for rx in (DURABLE_ZH, DURABLE_EN, REMEMBER, NOTE, CHANGE)) or bool(
        ALWAYS_EN.match(norm))


def _covered(fragment: str, statements: Sequence[str]) -> bool:
    """The fragment's content words / bigrams are (mostly) in one of the statements' texts."""
    grams = analyse(fragment).grams
    core = analyse(fragment).core
    for s in statements:
        info = analyse(s)
        if (grams and len(grams & info.grams) >= 0.6 * len(grams)) or (core and core in info.core):
            return True
    return False


def directive_parts(text: str) -> tuple[list[str], list[str]]:
    """A message cut into its standing statements and what it asks for now.

    Returns:
        ``(statements, task)``: the texts :func:`find_statements` finds (withdrawals included:
        they ask nothing of the current turn), and the fragments of the message outside them, in
        order (sentences without a statement whole; in a sentence with one, the comma fragments
        that carry no cue and are not part of the statement, e.g. "这周的先发我" in "以后周报周一发，
        这周的先发我"). Deterministic; nothing logged.
    """
    masked_all = mask_quotes(text)
    norm_all = nfkc(masked_all)
    note = NOTE.search(norm_all) if len(norm_all) == len(masked_all) else NOTE.search(masked_all)
    if note and text[note.end():].strip():
        noted = find_statements(text)
        if noted:
            head = text[: note.start()].strip(" ，,。.：:")
            return [f.text for f in noted], [head] if head else []
    statements: list[str] = []
    task: list[str] = []
    for start, end, question in sentence_spans(text):
        sentence = text[start:end].strip()
        if not sentence:
            continue
        said = [f.text for f in find_statements(sentence + ("?" if question else ""))]
        if not said:
            task.append(sentence)
            continue
        statements.extend(said)
        task.extend(f for f in fragments(sentence) if not _has_cue(f) and not LESSON_LABEL.fullmatch(f + "：")
                    and (ACT_NOW.search(nfkc(f)) or not _covered(f, said)))
    return statements, task


def find_statement(clause: str) -> str | None:
    """The first durable statement of ``clause`` (cue removed, fillers trimmed), or None."""
    found = [f for f in find_statements(clause) if f.kind != "withdraw"]
    return found[0].text if found else None
