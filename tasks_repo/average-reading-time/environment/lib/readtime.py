"""The project's helper: minutes to read a number of words at 200 words per minute."""


def minutes(words):
    return words / 200
