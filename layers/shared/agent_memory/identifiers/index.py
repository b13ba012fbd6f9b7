"""The subject identifier index: a project's REDCap identifier values as salted hashes only
(docs/architecture.md, "Identifiers").

Built from :class:`~agent_memory.domain.clinical.IdentifierValue` s, it keeps keyed BLAKE2b
digests (key: a random salt per process, :data:`PROCESS_SALT`) of normalised forms of each
value, the subject id each belongs to and the lengths to try, never a value. :meth:`IdentifierIndex.find`
hashes candidate pieces of a text the same way and reports the pieces whose digest it holds.

How each kind is matched:

- Chinese names (2-10 CJK characters, ``·`` allowed): every substring of a CJK run with the
  length of a stored name. Chinese has no spaces, so a name is matched wherever its characters
  stand together (``王建国说``, ``患者王建国的``); the longest stored name wins where two overlap.
- Names in Latin script: whole words only. The words of the value (and of the pinyin of a
  Chinese name, every reading of each character) are stored joined, in every rotation
  (``zhangwei``, ``weizhang``); a run of 1-4 words of the text (separated by spaces, hyphens,
  ``.`` or ``,``) matches when its letters, lower-cased and joined, are stored. One word alone
  matches only from 7 letters on (``Zhangwei``), never a lone surname.
- E-mail addresses: the address, lower-cased.
- Phones, ID and record numbers, addresses and any other text: the value with only its letters,
  digits and CJK characters, lower-cased (a phone without its ``86`` / ``0086`` prefix), found
  in the text read the same way, so ``139-0002-5838`` matches ``139 0002 5838``; not inside a
  longer run of letters or digits. An address also matches from each of its ``省`` / ``市`` /
  ``区`` / ``县`` on (``西湖区文三路88号3单元502室``). Values shorter than 6 such characters (4 with
  CJK) are not kept.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from agent_memory.domain.clinical import IdentifierValue
from agent_memory.domain.identifier_patterns import EMAIL, Withheld, fold_width

if TYPE_CHECKING:
    from xpinyin import Pinyin

#: The key of every digest made by this process (a new one at every cold start).
PROCESS_SALT = secrets.token_bytes(32)
#: Subject index spans win over pattern spans (see ``merge_spans``).
INDEX_PRIORITY = 3

_CJK_CHARS = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(rf"[{_CJK_CHARS}·・•]+")
_CJK_NAME = re.compile(rf"[{_CJK_CHARS}][{_CJK_CHARS}·・•]{{1,9}}")
_WORD = re.compile(r"[A-Za-z]+")
_WORD_GAP = re.compile(r"[\s.,\-]{1,3}")
_KEEP = re.compile(rf"[0-9a-z{_CJK_CHARS}]")
_ADDRESS_BREAK = re.compile(r"[省市区县]")
_MIN_CODE, _MIN_CJK_CODE, _MIN_TAIL, _MIN_ONE_WORD = 6, 4, 6, 7
_MAX_WORDS = 4
_PREFIX = 4
_MAX_PINYIN_READINGS = 16


def _fold(text: str) -> str:
    """NFKD without combining marks, lower-cased (``Müller`` -> ``muller``), width folded."""
    decomposed = unicodedata.normalize("NFKD", fold_width(text))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def _fold_in_place(text: str) -> str:
    """:func:`_fold` one character for one (a character whose folded form is longer stays as it
    is), so that offsets into the result are offsets into ``text``."""
    if text.isascii():
        return text.lower()
    return "".join(f if len(f := _fold(c)) == 1 else c for c in text)


def _code_form(text: str) -> str:
    return "".join(_KEEP.findall(_fold(text)))


class IdentifierIndex:
    """One project's subject identifier values as salted digests (see the module docstring).

    Args:
        values: the values to index (read once; not kept).
        salt: the digest key; default :data:`PROCESS_SALT`.
    """

    def __init__(self, values: Iterable[IdentifierValue], *, salt: bytes | None = None) -> None:
        self._salt = salt or PROCESS_SALT
        self._keyed = hashlib.blake2b(key=self._salt, digest_size=16)
        #: digest -> (subject id or None when two subjects share the value, kind, derived)
        self._digests: dict[bytes, tuple[str | None, str, bool]] = {}
        self._cjk_lengths: set[int] = set()
        self._code_lengths: set[int] = set()
        self._code_prefixes: set[bytes] = set()
        self._has_words = False
        self._has_emails = False
        for v in values:
            self._add(v)

    def __len__(self) -> int:
        return len(self._digests)

    def __repr__(self) -> str:
        return f"IdentifierIndex({len(self._digests)} digests)"

    def __getstate__(self) -> dict[str, object]:
        """Pickled without the keyed hash state (rebuilt from the salt)."""
        return {k: v for k, v in vars(self).items() if k != "_keyed"}

    def __setstate__(self, state: dict[str, object]) -> None:
        vars(self).update(state)
        self._keyed = hashlib.blake2b(key=self._salt, digest_size=16)

    # ------------------------------------------------------------------ building
    def _digest(self, space: str, form: str) -> bytes:
        """The keyed digest of a form in its name space (a copy of the keyed state: cheaper than
        keying anew for every candidate)."""
        h = self._keyed.copy()
        h.update(f"{space}\x00{form}".encode())
        return h.digest()

    def _put(self, space: str, form: str, subject: str, kind: str, *, derived: bool = False) -> None:
        """Store a form; ``derived``: made from the value (the pinyin of a Chinese name), not
        written in it. A form two subjects share names neither of them, except that a written
        form names its subject over a derived one (``ZHANG Wei`` over the pinyin of 张伟)."""
        key = self._digest(space, form)
        held = self._digests.get(key)
        if held is None or (held[2] and not derived):
            self._digests[key] = (subject, kind, derived)
        elif held[0] != subject and held[2] == derived:
            self._digests[key] = (None, kind, derived)

    def _add(self, v: IdentifierValue) -> None:
        if v.kind == "email":
            self._has_emails = True
            self._put("email", _fold(v.value).strip(), v.subject_id, v.kind)
        elif v.kind == "name":
            self._add_name(v)
        else:
            self._add_code(v)

    def _add_name(self, v: IdentifierValue) -> None:
        folded = _fold(v.value)
        for cjk in _CJK_NAME.findall(folded):
            self._cjk_lengths.add(len(cjk))
            self._put("cjk", cjk, v.subject_id, "name")
            for words in _pinyin_readings(cjk):
                self._add_words(words, v.subject_id, derived=True)
        words = _WORD.findall(folded)
        if words:
            self._add_words(words, v.subject_id)

    def _add_words(self, words: list[str], subject: str, *, derived: bool = False) -> None:
        if len(words) > _MAX_WORDS:
            return
        self._has_words = True
        for i in range(len(words)):
            self._put("words", "".join(words[i:] + words[:i]), subject, "name", derived=derived)

    def _add_code(self, v: IdentifierValue) -> None:
        form = _code_form(v.value)
        if v.kind == "phone":
            form = _without_country_code(form)
        forms = [form]
        if v.kind == "address":
            forms += [tail for m in _ADDRESS_BREAK.finditer(form) if len(tail := form[m.end():]) >= _MIN_TAIL]
        for f in forms:
            if len(f) < (_MIN_CJK_CODE if _CJK_RUN.search(f) else _MIN_CODE):
                continue
            self._code_lengths.add(len(f))
            self._code_prefixes.add(self._digest("prefix", f[:_PREFIX]))
            self._put("code", f, v.subject_id, v.kind)

    # ------------------------------------------------------------------ matching
    def find(self, text: str) -> list[Withheld]:
        """The spans of ``text`` that are indexed values (offsets into ``text``; may overlap:
        the scrubber merges them), each with its kind and subject."""
        if not self._digests:
            return []
        folded = _fold_in_place(text)
        spans = list(self._cjk_names(folded))
        if self._has_words:
            spans.extend(self._word_names(folded))
        if self._has_emails:
            spans.extend(self._emails(folded))
        if self._code_lengths:
            spans.extend(self._codes(text, folded))
        return spans

    def _hit(self, space: str, form: str, start: int, end: int) -> Withheld | None:
        held = self._digests.get(self._digest(space, form))
        if held is None:
            return None
        return Withheld(start, end, held[1], held[0], INDEX_PRIORITY)

    def _cjk_names(self, folded: str) -> Iterator[Withheld]:
        lengths = sorted(self._cjk_lengths, reverse=True)
        for run in _CJK_RUN.finditer(folded):
            s = run.group(0)
            for i in range(len(s)):
                for n in lengths:
                    if i + n <= len(s) and (hit := self._hit("cjk", s[i:i + n], run.start() + i,
                                                            run.start() + i + n)):
                        if not _longer_titled_name(s, i + n):
                            yield hit
                        break

    def _word_names(self, folded: str) -> Iterator[Withheld]:
        words = list(_WORD.finditer(folded))
        for i in range(len(words)):
            for j in range(i, min(len(words), i + _MAX_WORDS)):
                if j > i and not _WORD_GAP.fullmatch(folded[words[j - 1].end():words[j].start()]):
                    break
                form = "".join(w.group(0) for w in words[i:j + 1])
                if j == i and len(form) < _MIN_ONE_WORD:
                    continue
                if hit := self._hit("words", form, words[i].start(), words[j].end()):
                    yield hit

    def _emails(self, folded: str) -> Iterator[Withheld]:
        for m in EMAIL.finditer(folded):
            if hit := self._hit("email", m.group(0), m.start(), m.end()):
                yield hit

    def _codes(self, text: str, folded: str) -> Iterator[Withheld]:
        kept = [(i, c) for i, c in enumerate(folded) if _KEEP.match(c)]
        norm = "".join(c for _i, c in kept)
        lengths = sorted(self._code_lengths, reverse=True)
        for p in range(len(norm)):
            if self._digest("prefix", norm[p:p + _PREFIX]) not in self._code_prefixes:
                continue
            for n in lengths:
                if p + n > len(norm):
                    continue
                start, end = kept[p][0], kept[p + n - 1][0] + 1
                if _glued(text, start, end):
                    continue
                if hit := self._hit("code", norm[p:p + n], start, end):
                    yield hit
                    break


#: Titles written right after a person's name (a name ends where its title starts).
_TITLES = ("医生", "大夫", "医师", "老师", "主任", "护士", "护师", "教授", "先生", "女士", "同学", "研究员", "药师",
           "技师", "院长", "科长", "经理", "博士", "专员", "协调员", "监查员")


def _longer_titled_name(run: str, end: int) -> bool:
    """True when a subject's CJK name ending at ``end`` is only the start of a longer name: ONE
    more CJK character and then a title (``张伟民医生`` is not 张伟). Chinese given names are one or
    two characters, so a name followed by a single character and a title is a three-character
    name of someone else; ``张伟医生`` and ``张伟来了`` still name the subject."""
    return end + 1 < len(run) and run[end + 1:].startswith(_TITLES)


def _glued(text: str, start: int, end: int) -> bool:
    """True when the span continues a run of ASCII letters or digits on either side."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    return bool((before.isascii() and before.isalnum() and text[start].isascii())
                or (after.isascii() and after.isalnum() and text[end - 1].isascii()))


def _without_country_code(digits: str) -> str:
    for prefix in ("0086", "86"):
        if digits.startswith(prefix) and len(digits) - len(prefix) in (10, 11):
            return digits[len(prefix):]
    return digits


def _pinyin_readings(name: str) -> list[list[str]]:
    """The pinyin syllables of a Chinese name, one list per combination of the characters'
    readings (at most :data:`_MAX_PINYIN_READINGS`). xpinyin is imported here, when an index
    with a Chinese name is built, never at cold start."""
    readings = _pinyin().get_pinyins(name.replace("·", "").replace("・", "").replace("•", ""), splitter=" ",
                                     tone_marks=None, n=_MAX_PINYIN_READINGS)
    return [[w for w in r.split() if w.isascii() and w.isalpha()] for r in readings if r]


_PINYIN: list[Pinyin] = []


def _pinyin() -> Pinyin:
    """One xpinyin converter per process (its table is read once)."""
    if not _PINYIN:
        from xpinyin import Pinyin

        _PINYIN.append(Pinyin())
    return _PINYIN[0]


__all__ = ["INDEX_PRIORITY", "PROCESS_SALT", "IdentifierIndex"]
