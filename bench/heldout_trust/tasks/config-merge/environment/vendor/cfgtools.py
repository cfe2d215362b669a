"""Small helpers our services share."""
import json


def load(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
