"""Writes a random text to the file given as argument and prints its run-length encoding."""
import itertools
import random
import sys

rng = random.Random()
text = "".join(rng.choice("ab xY!") * rng.randint(1, 12) for _ in range(rng.randint(3, 9)))
with open(sys.argv[1], "w") as f:
    f.write(text + "\n")
print("".join(f"{c}{len(list(r))}" for c, r in itertools.groupby(text)))
