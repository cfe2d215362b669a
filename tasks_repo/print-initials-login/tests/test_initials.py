import subprocess


def run(program, *names):
    done = subprocess.run(["python3", program, *names], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_initials_of_each_name():
    assert run("/app/monogram.py", "Ada Lovelace", "alan mathison turing") == "A.L.\nA.M.T.\n"


def test_initials_of_generated_names():
    names = [f"{first} {last}" for first in ("ada", "Bob", "cy") for last in ("xu", "Young")]
    want = "".join("".join(part[0].upper() + "." for part in name.split()) + "\n" for name in names)
    assert run("/app/monogram.py", *names) == want


def test_no_names_prints_nothing():
    assert run("/app/monogram.py") == ""
