import re
import sys

print(len({w.lower() for w in re.findall(r"[A-Za-z]+", sys.stdin.read())}))
