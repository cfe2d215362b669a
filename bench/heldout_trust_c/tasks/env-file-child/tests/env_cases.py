CASES = [
    ("A=1\n", {"A": "1"}),
    ("export B=two\n", {"B": "two"}),
    ("C='single quoted'\n", {"C": "single quoted"}),
    ('D="double quoted"\n', {"D": "double quoted"}),
    ("# comment\n\nE=5 # trailing\n", {"E": "5"}),
    ("F=\n", {"F": ""}),
]
