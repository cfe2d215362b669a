import pytest

SEPARATORS = {"en": (",", "."), "de": (".", ",")}


@pytest.fixture
def separators() -> dict[str, tuple[str, str]]:
    """Thousands and decimal separator of each supported locale."""
    return dict(SEPARATORS)
