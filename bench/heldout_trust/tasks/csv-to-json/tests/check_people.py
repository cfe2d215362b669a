import json
import sys

want = [
    {"name": "Ada Lovelace", "age": 36, "email": "ada@example.org", "active": True},
    {"name": "Alan Turing", "age": 41, "email": None, "active": False},
    {"name": "Hopper, Grace", "age": 85, "email": "grace@example.org", "active": True},
]
got = json.load(open("/app/people.json"))
if got != want or any(type(g["age"]) is not int for g in got):
    print("mismatch:", got)
    sys.exit(1)
print("people.json ok")
