"""Title-case headlines for the newsletter."""

SMALL = {"a", "an", "and", "of", "the", "in"}


def title_case(text):
    words = text.lower().split()
    return " ".join(word.capitalize() for word in words)
