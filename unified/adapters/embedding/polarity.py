"""Words the contexts deny, and words a sentence negates: a field set to false is not
support for saying the thing is there.

A record rendered as text (``OutdoorSeating (Outdoor Seating): False``, a JSON object's
``"casual": false``, ``WiFi: no``) contains the very word it denies, so a word-overlap
check calls "It offers outdoor seating" supported. People call it a contradiction: in
RAGTruth's data-to-text set about half of the "evident conflict" spans assert an attribute
that the record sets to false ("trendy atmosphere" against ``trendy: False``).

For contexts C and a response sentence r:

    F  = the ``key: value`` fields of C whose value is false, no, none or null
         (a line ``key: value``, or a JSON pair ``"key": value``; quotes optional)
    D  = the content words of F's keys                 (the denied words)
    A  = the vocabulary of C with F's fields removed   (the affirmed words)
    N  = the words of r's clauses that hold a negation cue (not, no, never, without,
         n't, unavailable, absent, …; clauses split at ";" and at but / however / while /
         whereas / although)
    denied(r) = { w ∈ content_words(r) : w ∈ D, w ∉ A, w ∉ N }

A denied word counts as unsupported in ``idf_unsupported`` (it was found only where the
contexts say "no"), and is listed in the sentence's details (``denied``). Conservative on
purpose: a negated mention ("does not offer outdoor seating") is never denied, whatever
the field says, and a word that also occurs outside a false field is affirmed. Prose
contexts have no such fields, so nothing changes for them. Null counts as "no": a field
that says nothing of a thing does not support saying it is there either.
"""

from __future__ import annotations

import re
from typing import Sequence

from unified.text import Vocabulary, content_words

__all__ = ["ContextPolarity", "negated_words"]

# a field whose value says "no": at a line start or after "{" / "," (a JSON object), an
# optionally quoted key without ":" or braces, ":", then false/no/none/null, optionally
# quoted, ending the line, the pair or the object. The key starts and ends on a visible
# character and each run of blanks is bounded, so the blanks around a key belong to one
# part of the pattern only: when the key could also take them, a comma followed by
# 20,000 spaces took 117 s (every split of the run between three parts was tried).
_FALSE_FIELD = re.compile(
    r"""(?:^|(?<=[{,]))[ \t]{0,40}["']?(?P<key>[^\s:{},"'](?:[^\n:{},"']{0,118}[^\s:{},"'])?)["']?"""
    r"""[ \t]{0,40}:[ \t]{0,40}["']?(?:false|no|none|null)["']?[ \t]{0,40}(?=$|[\n,}])""",
    re.IGNORECASE | re.MULTILINE,
)
_CLAUSE_BREAK = re.compile(r";|\b(?:but|however|while|whereas|although)\b", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(?:not|no|never|without|nor|neither|cannot|none|lacks?|lacking|unavailable|absent"
    r"|(?:do|does|did|is|are|was|were|ca|wo|has|have)nt)\b|n[’']t\b",
    re.IGNORECASE,
)


def negated_words(sentence: str) -> set[str]:
    """The content words of ``sentence``'s clauses that hold a negation cue (the whole
    clause: "garage and valet parking are not offered" negates both)."""
    out: set[str] = set()
    for clause in _CLAUSE_BREAK.split(sentence):
        if _NEGATION.search(clause):
            out |= content_words(clause)
    return out


class ContextPolarity:
    """The denied words ``D`` and affirmed vocabulary ``A`` of some contexts (module
    docstring), built once per sample."""

    def __init__(self, contexts: Sequence[str]):
        keys: list[str] = []

        def take(m: re.Match[str]) -> str:  # one scan finds a field and blanks it out
            keys.append(m.group("key"))
            return " "

        rest = [_FALSE_FIELD.sub(take, text) for text in contexts]
        self.denied_vocabulary = Vocabulary(keys) if keys else None
        self.affirmed = Vocabulary(rest) if keys else None

    def denied(self, sentence: str, terms: set[str] | None = None) -> list[str]:
        """``denied(r)``: the sentence's content words (``terms``, default all of them)
        found in the contexts only as the key of a field that says no, and not negated
        by the sentence itself; sorted."""
        if self.denied_vocabulary is None or self.affirmed is None:
            return []
        terms = content_words(sentence) if terms is None else terms
        hits = [w for w in terms if w in self.denied_vocabulary and w not in self.affirmed]
        if not hits:
            return []
        negated = negated_words(sentence)
        return sorted(w for w in hits if w not in negated)
