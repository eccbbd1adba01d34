"""Tokenising catalog text for ranking (shared by the rankers and the entry models' caches).

Two analysers:

- :func:`tokenize` is helmdeck's: lower-case ASCII tokens split on anything not a letter or digit,
  stop words out. The lexical ranker (a port of helmdeck's scorer) and plan history use it.
- :func:`terms` is the BM25 analyser: identifiers are split into words (``git__git_log``,
  ``blog.rewrite_for_audience``, and in catalog text ``camelCase`` too, keeping the whole word
  beside its parts), then each token is reduced to a stem (:func:`stem`), so "files" meets "file"
  and "creates" meets "created". A request's own capitals are left alone: "MiniMax" is one word.
  A URL's scheme also adds the word "url" (``https://github.com/x`` reads "url http github com
  x"): the request holds a link, which tools that take a URL name in their ids.
"""

from __future__ import annotations

import re

STOP_WORDS = frozenset(
    "a an the this that these those of in to for and with on is are was be by from as it its or if "
    "i me my do does want need can should would".split()
)
_SPLIT = re.compile(r"[^a-z0-9]+")
_SPLIT_RAW = re.compile(r"[^A-Za-z0-9]+")
_URL_SCHEME = re.compile(r"\b(https?|ftp)://", re.IGNORECASE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def tokenize(text: str) -> list[str]:
    """Lower-case ASCII tokens of length >= 2, split on anything not a letter or digit, no stop words."""
    return [t for t in _SPLIT.split(text.lower()) if len(t) >= 2 and t not in STOP_WORDS]


def token_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


def split_identifiers(text: str) -> str:
    """``text`` with camelCase humps split apart: ``relationType`` -> ``relation Type``,
    ``HTTPServer`` -> ``HTTP Server``. Underscores, dots and dashes already split in :func:`tokenize`."""
    return _CAMEL.sub(" ", text)


_VOWELS = frozenset("aeiouy")


def stem(token: str) -> str:
    """A light English suffix stripper (plural, -ing, -ed, -ation/-tion, final e).

    It only has to send the forms of one word to the same key, for ranking; keys need not be
    words. Tokens of 3 characters or fewer, and tokens with digits, are returned unchanged.
    """
    t = token
    if len(t) <= 3 or not t.isalpha():
        return t
    if t.endswith("ies") and len(t) > 4:
        t = t[:-3] + "y"
    elif t.endswith(("sses", "ches", "shes", "xes")):
        t = t[:-2]
    elif t.endswith("s") and not t.endswith(("ss", "us", "is")):
        t = t[:-1]
    for suffix in ("ing", "ed"):
        if t.endswith(suffix) and len(t) - len(suffix) >= 3 and _VOWELS.intersection(t[: -len(suffix)]):
            t = t[: -len(suffix)]
            if len(t) >= 4 and t[-1] == t[-2] and t[-1] not in "lsz":  # committ -> commit
                t = t[:-1]
            break
    if t.endswith("ation") and len(t) > 7:
        t = t[:-3]  # generation -> generat, like generate -> generat below
    elif t.endswith("tion") and len(t) > 6:
        t = t[:-3]  # deletion -> delet
    if t.endswith("e") and len(t) > 4:
        t = t[:-1]
    return t


def terms(text: str, *, camel: bool = True) -> list[str]:
    """The BM25 analyser: :func:`tokenize`, plus with ``camel`` the parts of each camelCase word
    after the word itself, then :func:`stem` on every token."""
    words = _SPLIT_RAW.split(_URL_SCHEME.sub(lambda m: f" url {m.group(1)} ", text))
    if camel:
        words = [part for w in words for part in ([w, *_CAMEL.split(w)] if _CAMEL.search(w) else [w])]
    return [stem(t) for t in tokenize(" ".join(words))]


def term_set(text: str, *, camel: bool = True) -> frozenset[str]:
    return frozenset(terms(text, camel=camel))
