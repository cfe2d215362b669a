"""The probe key's text form: every key reads back as itself, over generated kinds, names and steps, and text
outside the grammar is refused with the grammar named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qaflow.models.probe_key import NAMED_KINDS, ProbeKey, ProbeKind, name_of, probe_name, unstepped

NAME = st.text(st.sampled_from("abz09-_.:/ "), min_size=1, max_size=12)
STEP = st.text(st.sampled_from("abz09-_. "), min_size=1, max_size=8)


@st.composite
def keys(draw: st.DrawFn) -> ProbeKey:
    kind = draw(st.sampled_from(list(ProbeKind)))
    name = draw(NAME) if kind in NAMED_KINDS else None
    return ProbeKey(kind, name, draw(st.none() | STEP))


@given(keys())
def test_every_key_reads_back_as_itself(key: ProbeKey):
    assert ProbeKey.parse(str(key)) == key
    assert unstepped(str(key)) == str(key.at(None))
    expected = key.name if key.step is None else None
    assert name_of(str(key), key.kind) == expected


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("nop", ProbeKey(ProbeKind.NOP)),
        ("mutant:empty:app/out.txt", ProbeKey.mutant("empty:app/out.txt")),
        ("enabled:mutant:code:a.c:3", ProbeKey(ProbeKind.ENABLED_MUTANT, "code:a.c:3")),
        ("enabled:oracle", ProbeKey(ProbeKind.ENABLED_ORACLE)),
        ("2/exploit:always-equal", ProbeKey.exploit("always-equal", "2")),
        ("oracle/nop", ProbeKey(ProbeKind.NOP, step="oracle")),  # a step may be named like a kind
        ("gate:decision", ProbeKey(ProbeKind.GATE, "decision")),
        ("attempt:gpt-4o", ProbeKey(ProbeKind.ATTEMPT, "gpt-4o")),
        ("rerun:12", ProbeKey(ProbeKind.RERUN, "12")),
    ],
)
def test_the_written_forms(text: str, key: ProbeKey):
    assert ProbeKey.parse(text) == key and str(key) == text


@pytest.mark.parametrize("text", ["", "mutant", "mutant:", "oracle:x", "nope", "step/", "/nop", "a/b/nop", "exploit"])
def test_text_outside_the_grammar_is_refused(text: str):
    with pytest.raises(ValueError, match="not a probe"):
        ProbeKey.parse(text)
    assert ProbeKey.read(text) is None
    assert unstepped(text) == text


def test_a_key_without_its_name_or_with_one_it_does_not_take_cannot_be_made():
    with pytest.raises(ValueError, match="needs a name"):
        probe_name(ProbeKind.MUTANT)
    with pytest.raises(ValueError, match="takes no name"):
        probe_name(ProbeKind.NOP, "x")
    with pytest.raises(ValueError, match="holds no '/'"):
        probe_name(ProbeKind.NOP, step="a/b")
