"""A random text for one case (words, digits, punctuation, mixed case)."""
import random

rng = random.Random()
vocab = ["alpha", "Beta", "gamma", "DELTA", "it's", "x", "Y", "one-two", "3", "4th", "end.", "a,b"]
print(" ".join(rng.choice(vocab) for _ in range(rng.randint(5, 40))))
