from bumpver import bump


def test_patch():
    assert bump("1.2.3", "patch") == "1.2.4"
