"""The BM25 analyser (stems, identifiers, URLs), query expansion with synonyms, the id boost, and
argument names in both rankers."""

from __future__ import annotations

import pytest

from helmdeck_dspy.catalog.models import Pack, RoutingGuide
from helmdeck_dspy.catalog.ranking import rank_bm25, rank_lexical
from helmdeck_dspy.catalog.ranking.synonyms import SYNONYM_WEIGHT, expand, load_synonyms
from helmdeck_dspy.catalog.text import stem, terms, tokenize
from helmdeck_dspy.errors import DataFileError


@pytest.mark.parametrize("words", [
    ("file", "files"), ("create", "creates", "created", "creating", "creation"), ("commit", "commits", "committed"),
    ("branch", "branches"), ("entry", "entries"), ("generate", "generation"), ("size", "sizes"),
])
def test_forms_of_one_word_share_a_stem(words):
    assert len({stem(w) for w in words}) == 1


@pytest.mark.parametrize("word", ["status", "analysis", "class", "git", "m3", "v2"])
def test_words_that_are_not_plurals_keep_their_s_and_short_or_digit_tokens_are_untouched(word):
    assert stem(word) == word


def test_terms_split_identifiers_and_keep_a_requests_own_capitals():
    assert terms("git__git_log") == ["git", "git", "log"]
    assert terms("relationType") == [stem("relationtype"), stem("relation"), "type"]
    assert terms("MiniMax launch", camel=False) == ["minimax", "launch"]
    assert tokenize("relationType") == ["relationtype"]  # helmdeck's tokenizer is unchanged


def test_a_url_scheme_adds_the_word_url():
    assert terms("screenshot https://github.com/acme please", camel=False) == [
        "screenshot", "url", "http", "github", "com", "acme", stem("please")]


def test_synonym_groups_are_stemmed_and_symmetric():
    table = load_synonyms()
    assert stem("image") in table[stem("illustration")] and stem("illustration") in table[stem("image")]
    assert stem("folder") in table[stem("directories")]


def test_expansion_weights_own_words_above_synonyms():
    [concept] = expand(frozenset({stem("illustration")}))
    assert concept[stem("illustration")] == 1.0 and concept[stem("image")] == SYNONYM_WEIGHT < 1.0


def test_a_synonym_match_ranks_below_the_requests_own_word():
    guide = RoutingGuide(packs=(Pack(name="a.tool", description="Draws an illustration."),
                                Pack(name="b.tool", description="Draws an image."),
                                Pack(name="c.tool", description="Sends an email.")))
    ranked = rank_bm25(guide, "an illustration")
    assert [r.id for r in ranked[:2]] == ["a.tool", "b.tool"] and ranked[1].score > 0 == ranked[2].score
    assert {r.id: r.score for r in rank_bm25(guide, "an illustration", synonyms=False)}["b.tool"] == 0


def test_a_term_in_the_id_outweighs_the_same_term_in_a_description():
    guide = RoutingGuide(packs=(Pack(name="ledger.edit", description="Edits the books, line by line, in place."),
                                Pack(name="doc.edit", description="Edits documents, ledger notes too."),
                                Pack(name="mail.send", description="Sends mail.")))
    boosted = {r.id: r.score for r in rank_bm25(guide, "ledger")}
    plain = {r.id: r.score for r in rank_bm25(guide, "ledger", name_boost=0)}
    assert boosted["ledger.edit"] > plain["ledger.edit"] and boosted["doc.edit"] == plain["doc.edit"]
    assert boosted["ledger.edit"] > boosted["doc.edit"]


def test_both_rankers_read_argument_names():
    schema = {"type": "object", "properties": {"repo_path": {"type": "string"}, "branchName": {"type": "string"}}}
    guide = RoutingGuide(packs=(Pack(name="x.one", description="Does one thing.", parameters=schema),
                                Pack(name="x.two", description="Does another thing.")))
    for rank in (rank_bm25, rank_lexical):
        ranked = rank(guide, "which branch is the repo on")
        assert ranked[0].id == "x.one" and ranked[0].score > ranked[1].score


def test_a_bad_synonym_file_is_a_typed_error(tmp_path):
    bad = tmp_path / "synonyms.toml"
    bad.write_text('groups = "image, picture"\n')
    with pytest.raises(DataFileError, match="groups"):
        load_synonyms(str(bad))
