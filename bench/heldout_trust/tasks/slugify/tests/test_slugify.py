from slugify import slugify


def test_examples():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("  Crème brûlée  ") == "creme-brulee"


def test_more():
    assert slugify("C++ & Rust: 2024 edition") == "c-rust-2024-edition"
    assert slugify("---") == ""
    assert slugify("Ångström Units") == "angstrom-units"
    assert slugify("already-a-slug") == "already-a-slug"
