"""Licence ids as the Hugging Face Hub spells them: lowercase SPDX (`Apache-2.0` -> `apache-2.0`, `MIT` -> `mit`,
`CC-BY-4.0` -> `cc-by-4.0`), one id per GNU licence version (`GPL-3.0-only` -> `gpl-3.0`). Sources, rows and
dataset cards all write them so."""

from __future__ import annotations

HUB_LICENCE_ALIASES = {
    f"{family}-{version}-{suffix}": f"{family}-{version}"
    for family, version in (("gpl", "2.0"), ("gpl", "3.0"), ("lgpl", "2.1"), ("lgpl", "3.0"), ("agpl", "3.0"))
    for suffix in ("only", "or-later")
}
"""SPDX ids the Hub spells otherwise than by lowercasing."""


def hub_licence(licence: str | None) -> str | None:
    """`licence` as the Hub spells it; None for none or a blank."""
    if licence is None or not licence.strip():
        return None
    key = licence.strip().lower()
    return HUB_LICENCE_ALIASES.get(key, key)
