"""Word frequencies for typo repair (routecore.decide.words; scripts/make_words.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from routecore.decide.words import LANGUAGES, languages_of, word_table

ROOT = Path(__file__).resolve().parents[2]


def test_every_bundled_table_reads_and_ranks_common_words_first():
    for lang in LANGUAGES:
        t = word_table(lang)
        assert t.language == lang and 80_000 <= len(t.log_share) <= 100_000
        assert all(s <= 0 for s in list(t.log_share.values())[:100])
        assert t.floor < min(t.log_share.values())  # under every word kept
        assert set("aeiou") <= set(t.letters)
    en = word_table("en")
    assert en.log_share["the"] > en.log_share["have"] > en.log_share["wheat"]
    assert "pasword" not in en.log_share and "é" in word_table("fr").letters
    assert word_table("en") is en  # read once per process


def test_languages_of_picks_the_exemplars_languages():
    assert languages_of("how do i reset my password it is not working".split()) == ("en",)
    assert languages_of("je voudrais réserver une table pour ce soir".split()) == ("fr",)
    assert languages_of("ich möchte einen tisch für zwei reservieren und das ist gut".split()) == ("de",)
    both = "how do i reset my password je voudrais réserver une table pour ce soir".split()
    assert set(languages_of(both)) == {"en", "fr"}
    assert languages_of(["服务器", "宕机"]) == () and languages_of([]) == ()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=30))
def test_languages_of_never_raises_and_names_bundled_languages(words):
    got = languages_of(words)
    assert set(got) <= set(LANGUAGES) and len(set(got)) == len(got)


def test_the_bundled_tables_are_what_the_script_builds():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_words.py"), "--check"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr + out.stdout
