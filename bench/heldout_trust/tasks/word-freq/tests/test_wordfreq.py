import sys

sys.path.insert(0, "/app")
from wordfreq import top_words  # noqa: E402


def test_example():
    assert top_words("b a B c b a", 2) == [("b", 3), ("a", 2)]


def test_apostrophes_and_ties():
    text = "Don't stop. don't! Stop? 'quoted' words, words; zeta alpha"
    assert top_words(text, 4) == [("don't", 2), ("stop", 2), ("words", 2), ("alpha", 1)]


def test_k_larger_than_vocabulary():
    assert top_words("x y", 10) == [("x", 1), ("y", 1)]
