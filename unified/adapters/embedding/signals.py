"""The signals of the fitted offline faithfulness: what a sentence-embedding model and the
text itself can tell about one response sentence against the retrieved contexts.

Per response sentence ``r`` (sentences by ``unified.text.split_sentences``; ``C``: every
sentence of every context; vectors L2-normalised, so a dot product is a cosine):

- ``cosine``: best(r, C) = max_c cos(r, c), and that context sentence (``best_match``).
  Rewards on-topic paraphrase; blind to one changed number or name.
- ``token_precision``: BERTScore-style precision of the sentence's word pieces against the
  word pieces of all context sentences, P = mean_{x ∈ r} max_{y ∈ C} cos(x, y) (MiniLM's
  layer-6 contextual token vectors, no idf, no rescaling; Zhang et al. 2020).
- ``unsupported_numbers``: number mentions (digits, with their ``,``/``.``/``:``/``-``
  parts, and the number words zero–twenty, hundred, thousand, million, billion) with a
  part that no context mentions: "30 seconds" is unsupported by "within 60 seconds",
  "1,500" is supported by "1500", "17:00-21:00" by "17:0-21:0".
- ``unsupported_names``: capitalised words not starting the sentence (names, places,
  products) that occur in no context, compared case-insensitively.
- ``unsupported_rare``: content words that are not a single word piece of the model's
  vocabulary (the tokenizer splits rare words; ~30k frequent words are one piece) and
  that occur in no context: the rare word is where an invented detail hides.
- ``unsupported_share``: the share of the sentence's content words (numbers and names
  weighing double) found in no context (``unified.text.unsupported_terms``).
- ``non_answer``: the sentence says the information is missing or talks about the source
  (``unified.text.is_nonanswer``).
- ``denied``: content words the contexts hold only as the key of a field set to false,
  no, none or null, and that the sentence does not negate ("offers outdoor seating"
  against ``OutdoorSeating: False``; ``polarity``). They count as unsupported
  in ``idf_unsupported``.

"Occurs in a context" uses ``unified.text.Vocabulary`` (exact word, or a shared five-letter
stem after dropping a plural "-s"), except for numbers, which compare their parts exactly.

More per sentence, as candidates for the fit: ``idf_unsupported`` (the unsupported share
weighted by idf over the context sentences, idf(w) = ln((N + 1) / (df(w) + 1)) + 1, so a
word the contexts repeat weighs little), ``novel_bigrams`` (word pairs found in no
context), ``token_best`` (each word piece's best cosine, whose mean is ``token_precision``).

``response_features`` turns the sentences' signals into candidate features (over the
response's n sentences); the shipped model reads the ones its JSON names, ``FEATURES``:

    idf_unsupported     = (1/n) Σ_i idf_unsupported_i
    unsupported_numbers = (numbers with an unsupported part) / (numbers), 0 without numbers

The other candidates (mean and weakest-sentence token precision, the share of word pieces
whose best match is under 0.5, their 10th percentile, the plain and worst-sentence
unsupported share, novel bigrams, unsupported names, the length ratio, the sentence count)
were each checked held out on all three labelled sets by ``fit_offline_judge.py
--search``; none raised the worst set's held-out AUC by more than 0.005, and the token
signals took signs against their meaning next to ``idf_unsupported`` (collinear), so
they are reported in ``details`` but not fitted (figures in docs/offline-judge.md).
The non-answer rule is applied after the fit instead: ``answered`` (the share of
sentences that are not non-answers) multiplies the probability. Pure functions of
text and vectors: no model is loaded here, so the fitting script
(``benchmarks/fit_offline_judge.py``) and the backend compute the same numbers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from unified.text import STOPWORDS, Vocabulary, content_words, is_nonanswer, unsupported_terms, words

from .polarity import ContextPolarity

__all__ = [
    "SentenceSignals",
    "FEATURES",
    "sentence_signals",
    "response_features",
    "number_mentions",
    "NumberSet",
    "name_mentions",
]

_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER_WORDS.update(
    thirty=30,
    forty=40,
    fifty=50,
    sixty=60,
    seventy=70,
    eighty=80,
    ninety=90,
    hundred=100,
    thousand=1000,
    million=10**6,
    billion=10**9,
)
_DIGITS = re.compile(r"\d[\d,]*(?:[.:/\-]\d+)*")
_CAPITALISED = re.compile(r"[A-Za-z][A-Za-z\-']*")


def number_mentions(text: str) -> list[tuple[str, tuple[int, ...]]]:
    """Each number in ``text`` with its integer parts: ``"1,500"`` → ``(1500,)`` (a
    thousands comma is not a part boundary), ``"17:00-21:00"`` → ``(17, 0, 21, 0)``,
    ``"3.4"`` → ``(3, 4)``, ``"seven"`` → ``(7,)``."""
    out = [
        (m.group(0), tuple(int(g) for g in re.findall(r"\d+", m.group(0).replace(",", ""))))
        for m in _DIGITS.finditer(text)
    ]
    out += [(w, (_NUMBER_WORDS[w],)) for w in words(text) if w in _NUMBER_WORDS]
    return out


class NumberSet:
    """The integer parts of every number in some texts; a mention is supported when all
    its parts are among them (a "-" date, a time or a version is checked part by part)."""

    def __init__(self, texts: Sequence[str]):
        self.parts: set[int] = {p for t in texts for _, ps in number_mentions(t) for p in ps}

    def supports(self, parts: tuple[int, ...]) -> bool:
        return set(parts) <= self.parts


def name_mentions(sentence: str) -> list[str]:
    """Capitalised words after the sentence's first word (names, places, products),
    lower-cased, possessive "'s" dropped; stopwords ("The", "I") excluded."""
    toks = _CAPITALISED.findall(sentence)
    out = []
    for tok in toks[1:]:
        low = tok.lower().removesuffix("'s").strip("'-")
        if tok[0].isupper() and len(low) > 1 and low not in STOPWORDS:
            out.append(low)
    return out


@dataclass
class SentenceSignals:
    """One response sentence's signals against the contexts (see the module docstring)."""

    sentence: str
    best_match: str
    cosine: float
    token_precision: float
    unsupported_share: float
    non_answer: bool
    numbers: int = 0
    names: int = 0
    rare: int = 0
    unsupported_numbers: list[str] = field(default_factory=list)
    unsupported_names: list[str] = field(default_factory=list)
    unsupported_rare: list[str] = field(default_factory=list)
    #: words the contexts hold only as a field set to false ("outdoor" in "OutdoorSeating: False")
    denied: list[str] = field(default_factory=list)
    #: each word piece's best cosine to a context word piece (token_precision is its mean)
    token_best: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    idf_unsupported: float = 0.0
    novel_bigrams: float = 0.0
    n_words: int = 0

    def details(self) -> dict[str, Any]:
        """The sentence's entry in ``Score.details["sentences"]`` (rounded; spans listed)."""
        return {
            "sentence": self.sentence,
            "best_match": self.best_match,
            "cosine": round(self.cosine, 4),
            "token_precision": round(self.token_precision, 4),
            "unsupported_share": round(self.unsupported_share, 4),
            "idf_unsupported": round(self.idf_unsupported, 4),
            "novel_bigrams": round(self.novel_bigrams, 4),
            "non_answer": self.non_answer,
            "unsupported_numbers": self.unsupported_numbers,
            "unsupported_names": self.unsupported_names,
            "unsupported_rare": self.unsupported_rare,
            "denied": self.denied,
        }


class ContextEvidence:
    """What the contexts offer to every response sentence: their words, numbers and the
    word pieces' vectors, built once per sample."""

    def __init__(self, contexts: Sequence[str], sentences: list[str], vectors: np.ndarray, tokens: np.ndarray | None):
        self.sentences, self.vectors, self.tokens = sentences, vectors, tokens
        self.vocabulary = Vocabulary(list(contexts))
        self.numbers = NumberSet(contexts)
        self.bigrams = {b for c in contexts for b in bigrams(c)}
        self.n_words = sum(len(words(c)) for c in contexts)
        self.polarity = ContextPolarity(contexts)
        # document frequency of each word over the context sentences, for idf
        self.df: dict[str, int] = {}
        for c in sentences:
            for w in set(words(c)):
                self.df[w] = self.df.get(w, 0) + 1

    def idf(self, word: str) -> float:
        """idf(w) = ln((N + 1) / (df(w) + 1)) + 1 over the N context sentences: a word the
        contexts repeat weighs little, a word they never use weighs most."""
        return math.log((len(self.sentences) + 1) / (self.df.get(word, 0) + 1)) + 1.0


def bigrams(text: str) -> set[tuple[str, str]]:
    """The distinct pairs of adjacent ``words`` of ``text``."""
    ws = words(text)
    return set(zip(ws, ws[1:]))


def idf_unsupported(sentence: str, ctx: "ContextEvidence", denied: Sequence[str] = ()) -> float:
    """Σ_{w ∈ T, w ∉ V or w ∈ D} idf(w) / Σ_{w ∈ T} idf(w) over the sentence's content
    words T (``ContextEvidence.idf``; V: the contexts' vocabulary; D: ``denied``, the
    words the contexts hold only as a field set to false, ``polarity``); 0
    without content words."""
    terms = content_words(sentence)
    total = sum(ctx.idf(w) for w in terms)
    missing = sum(ctx.idf(w) for w in terms if w not in ctx.vocabulary or w in denied)
    return missing / total if total else 0.0


def novel_bigrams(sentence: str, ctx: "ContextEvidence") -> float:
    """The share of the sentence's word bigrams found in no context (0 with none): a
    re-worded or added relation between words the contexts do contain."""
    bs = bigrams(sentence)
    return sum(b not in ctx.bigrams for b in bs) / len(bs) if bs else 0.0


def sentence_signals(
    sentence: str, vector: np.ndarray, tokens: np.ndarray | None, ctx: ContextEvidence, is_rare: Callable[[str], bool]
) -> SentenceSignals:
    """The signals of one response sentence (its unit vector and, when given, its unit
    word-piece vectors) against the contexts' evidence. ``is_rare(word)``: not one piece
    of the embedding model's vocabulary."""
    sims = ctx.vectors @ vector
    k = int(sims.argmax())
    best = (
        (tokens @ ctx.tokens.T).max(axis=1)
        if (tokens is not None and ctx.tokens is not None and len(tokens) and len(ctx.tokens))
        else np.array([sims[k]])
    )
    share, _ = unsupported_terms(sentence, ctx.vocabulary)
    nums = number_mentions(sentence)
    names = name_mentions(sentence)
    terms = content_words(sentence)
    rare = [w for w in sorted(terms) if w.isalpha() and len(w) > 3 and is_rare(w)]
    denied = ctx.polarity.denied(sentence, terms)
    return SentenceSignals(
        sentence=sentence,
        best_match=ctx.sentences[k],
        cosine=float(sims[k]),
        token_precision=float(best.mean()),
        unsupported_share=share,
        non_answer=is_nonanswer(sentence),
        numbers=len(nums),
        names=len(names),
        rare=len(rare),
        unsupported_numbers=[s for s, parts in nums if not ctx.numbers.supports(parts)],
        unsupported_names=sorted({n for n in names if n not in ctx.vocabulary}),
        unsupported_rare=[w for w in rare if w not in ctx.vocabulary],
        token_best=best,
        denied=denied,
        idf_unsupported=idf_unsupported(sentence, ctx, denied),
        novel_bigrams=novel_bigrams(sentence, ctx),
        n_words=len(words(sentence)),
    )


#: answers that are a verdict, not a statement: FEVER's labels, yes/no, true/false
_LABELS = {
    "supports",
    "supported",
    "refutes",
    "refuted",
    "not enough info",
    "nei",
    "yes",
    "no",
    "true",
    "false",
    "correct",
    "incorrect",
    "unknown",
    "entailment",
    "contradiction",
    "neutral",
}


def bare_label(response: str | None) -> str | None:
    """The response when it is only a verdict label ("SUPPORTS", "Yes.", "false"), else
    None. Such an answer makes no statement whose words the contexts could support: the
    lexical and token signals see one word and rank it by chance (ARES's FEVER rows: AUC
    0.08 with the fitted model), so the offline judge abstains on it."""
    text = " ".join(words(response)).strip()
    return (response or "").strip() if text in _LABELS else None


#: a word piece whose best context match is below this cosine counts as weak
WEAK_TOKEN = 0.5

#: The fitted model's inputs, in the order of the coefficients in ``offline_judge.json``.
FEATURES: tuple[str, ...] = ("idf_unsupported", "unsupported_numbers")


def response_features(signals: Sequence[SentenceSignals], context_words: int = 0) -> dict[str, float]:
    """Every candidate feature of one response from its sentences' signals (formulas in
    the module docstring; the fitted model reads the ones its JSON names), plus
    ``answered``, the share of sentences that are not non-answers. ``context_words``:
    the contexts' word count, for the length ratio."""
    n = max(len(signals), 1)
    numbers = sum(s.numbers for s in signals)
    names = sum(s.names for s in signals)
    bad = sum(len(s.unsupported_numbers) for s in signals)
    best = np.concatenate([s.token_best for s in signals]) if signals else np.zeros(0)
    tp = [s.token_precision for s in signals] or [0.0]
    share = [s.unsupported_share for s in signals] or [0.0]
    n_words = sum(s.n_words for s in signals)
    return {
        "token_precision": sum(tp) / n,
        "token_precision_min": min(tp),
        "weak_tokens": float((best < WEAK_TOKEN).mean()) if len(best) else 0.0,
        "token_best_p10": float(np.percentile(best, 10)) if len(best) else 0.0,
        "unsupported_share": sum(share) / n,
        "unsupported_share_max": max(share),
        "idf_unsupported": sum(s.idf_unsupported for s in signals) / n,
        "idf_unsupported_max": max((s.idf_unsupported for s in signals), default=0.0),
        "novel_bigrams": sum(s.novel_bigrams for s in signals) / n,
        "novel_bigrams_max": max((s.novel_bigrams for s in signals), default=0.0),
        "unsupported_numbers": bad / numbers if numbers else 0.0,
        "unsupported_names": sum(len(s.unsupported_names) for s in signals) / names if names else 0.0,
        "length_ratio": math.log((n_words + 1) / (context_words + 1)),
        "sentences": float(len(signals)),
        "answered": 1.0 - sum(s.non_answer for s in signals) / n,
    }
