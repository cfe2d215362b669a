"""Fuzzing the reward reader (issue 11): whatever a verifier leaves in /logs/verifier, `read_reward` gives a
clear `RewardError` or a valid `Reward`: every value finite, `value` the "reward" key else the mean,
`full` exactly "every value >= 1", and the numbers the ones written (never a silent default). Never
another exception, never a RecursionError on deep nesting.

The oracles below recompute the expected result from the generated data, independently of the parser.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from qaflow.errors import RewardError
from qaflow.reward import Reward, read_reward

FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_NUMBER_LITERALS = [
    "0",
    "1",
    "1.0",
    "-0.0",
    "0.5",
    "-1",
    "1e308",
    "-1e308",
    "1e309",
    "-1e309",
    "1e-400",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "-Infinity",
    "+1",
    "1_0",
    "0x1",
    "1/2",
    "1,5",
    "true",
    "false",
    "null",
    "one",
    "\ufeff1",
    "1" + "0" * 400,
    "9" * 5000,
]

# text that a verifier could plausibly (or implausibly) write
_junk_text = st.one_of(
    st.text(max_size=50),
    st.text(alphabet=st.characters(codec=None, categories=["Cc", "Zs", "Nd", "Cs", "Co"]), max_size=20),
    st.sampled_from(["", " ", "\n", "\t\n ", "\x00", "1\n2", "0.5 0.5", "reward: 1"]),
)


def _expected_number(raw: Any) -> float | None:
    """The oracle for one value: a finite float from a number or numeric string, else None (an error)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        value = float(raw)
    except (ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def check_reward(result: Reward | RewardError, expected: dict[str, float] | None, source: str) -> None:
    """`expected` None: an error is due; else these exact values from `source`."""
    if isinstance(result, RewardError):
        assert str(result).strip(), "a RewardError without a message"
        assert expected is None, f"rejected a valid reward {expected}: {result}"
        return
    assert expected is not None, f"accepted {result!r} where an error was due"
    assert result.source == source
    assert result.values == expected
    assert all(math.isfinite(v) for v in result.values.values())
    assert math.isfinite(result.value)
    if "reward" in result.values:
        assert result.value == result.values["reward"]
    else:
        values = list(result.values.values())
        mean = math.fsum(v / len(values) for v in values)
        assert math.isclose(result.value, mean, rel_tol=1e-9, abs_tol=1e-300)
        assert min(values) <= result.value <= max(values) or math.isclose(result.value, min(values))
    assert result.full == all(v >= 1.0 for v in result.values.values())


def read(folder: Path) -> Reward | RewardError:
    try:
        return read_reward(folder)
    except RewardError as e:
        return e


# --- reward.txt ----------------------------------------------------------------------------------------


def _spaced(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    ws = st.sampled_from(["", " ", "\n", "\r\n", "\t", "  \n\n"])
    return st.tuples(ws, inner, ws).map("".join)


txt_text = _spaced(
    st.one_of(
        st.sampled_from(_NUMBER_LITERALS),
        st.floats().map(repr),
        st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f"{f:.17g}"),
        st.integers(min_value=-(10**30), max_value=10**30).map(str),
        _junk_text,
    )
)


@FUZZ
@given(text=txt_text)
@example(text="1e309")
@example(text="\n\n")
@example(text="1.0\n")
def test_reward_txt(text: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        (folder / "reward.txt").write_bytes(text.encode("utf-8", "surrogatepass"))
        result = read(folder)
    decoded = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    value = _expected_number(decoded.strip()) if decoded.strip() else None
    check_reward(result, None if value is None else {"reward": value}, "reward.txt")


@FUZZ
@given(data=st.binary(max_size=200))
@example(data=b"\xff\xfe1\x00")
@example(data=b"\x001")
def test_reward_txt_binary(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        (folder / "reward.txt").write_bytes(data)
        result = read(folder)
    text = data.decode("utf-8", "replace").strip()
    value = _expected_number(text) if text else None
    check_reward(result, None if value is None else {"reward": value}, "reward.txt")


# --- reward.json ---------------------------------------------------------------------------------------

json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from(_NUMBER_LITERALS),
    _junk_text,
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
reward_key = st.one_of(st.just("reward"), st.text(max_size=12), st.sampled_from(["\udc80", "a\ud800", "", " "]))
reward_object = st.one_of(
    st.dictionaries(reward_key, json_scalar, max_size=6),
    st.dictionaries(reward_key, json_value, max_size=4),
    st.dictionaries(reward_key, st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=8),
)


def _expected_json(data: Any) -> dict[str, float] | None:
    if isinstance(data, int | float) and not isinstance(data, bool):
        value = _expected_number(data)
        return None if value is None else {"reward": value}
    if not isinstance(data, dict) or not data:
        return None
    values = {}
    for key, raw in data.items():
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            return None
        value = _expected_number(raw)
        if value is None:
            return None
        values[key] = value
    return values


def _dumps(data: Any) -> str:
    # allow_nan writes NaN/Infinity literals, which Python's json reads back
    return json.dumps(data, allow_nan=True, ensure_ascii=False)


@FUZZ
@given(data=st.one_of(reward_object, json_value), indent=st.sampled_from([None, 2]))
@example(data={"a": 1e308, "b": 1e308}, indent=None)
@example(data={"a": -1e308, "b": -1e308, "c": 1e308}, indent=None)
@example(data={"reward": float("nan")}, indent=None)
@example(data={"reward": float("inf"), "x": 1.0}, indent=None)
@example(data={"a": 10**400}, indent=None)
@example(data=10**5000, indent=None)
@example(data={"reward": "0.5"}, indent=None)
@example(data={"\udc80": 1.0}, indent=None)
@example(data=True, indent=None)
def test_reward_json(data: Any, indent: int | None) -> None:
    try:
        text = json.dumps(data, allow_nan=True, ensure_ascii=False, indent=indent)
    except ValueError:  # an int over Python's 4300-digit str limit: write it by hand
        text = None
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        if text is None:
            (folder / "reward.json").write_text("1" + "0" * 5000)
        else:
            (folder / "reward.json").write_bytes(text.encode("utf-8", "surrogatepass"))
        result = read(folder)
    if text is None or any(_has_surrogate(k) for k in (data if isinstance(data, dict) else {})):
        # an over-long int literal, or a raw lone surrogate (invalid UTF-8 on disk, read as U+FFFD)
        expected = None if text is None else _expected_json(_replace_surrogates(data))
    else:
        expected = _expected_json(data)
    check_reward(result, expected, "reward.json")


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def _replace_surrogates(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        fixed = key.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        if fixed in out:
            return {"dup": None}  # two keys that became the same: an error (duplicate key) is due
        out[fixed] = value
    return out


@FUZZ
@given(data=st.dictionaries(reward_key, json_scalar, min_size=1, max_size=5), escaped=st.booleans())
@example(data={"\udc80": 1.0}, escaped=True)
@example(data={"\udc80": 1.0}, escaped=False)
@example(data={chr(0xDC80): 1.0, chr(0xDC81): 1.0}, escaped=False)
def test_reward_json_escaped_keys(data: dict[str, Any], escaped: bool) -> None:
    """Keys with lone surrogates: written as \\uXXXX escapes (ensure_ascii) they are refused (not text);
    written raw they are invalid UTF-8 on disk, read as U+FFFD (two that become the same are a duplicate)."""
    text = json.dumps(data, allow_nan=True, ensure_ascii=escaped)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "reward.json").write_bytes(text.encode("utf-8", "surrogatepass"))
        result = read(Path(d))
    check_reward(result, _expected_json(data if escaped else _replace_surrogates(data)), "reward.json")


@FUZZ
@given(
    keys=st.lists(st.sampled_from(["reward", "a", "b", "c"]), min_size=2, max_size=6),
    values=st.lists(st.floats(min_value=0, max_value=1), min_size=6, max_size=6),
)
def test_reward_json_duplicate_keys(keys: list[str], values: list[float]) -> None:
    """A key given twice is an error, not last-one-wins."""
    body = ", ".join(f"{json.dumps(k)}: {v!r}" for k, v in zip(keys, values, strict=False))
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "reward.json").write_text("{" + body + "}")
        result = read(Path(d))
    expected = None if len(set(keys)) < len(keys) else dict(zip(keys, values, strict=False))
    check_reward(result, expected, "reward.json")


@FUZZ
@given(
    depth=st.integers(min_value=2, max_value=200_000),
    shape=st.sampled_from(["array", "object", "value", "mixed"]),
)
@example(depth=100_000, shape="array")
@example(depth=100_000, shape="object")
@example(depth=3_000, shape="value")
def test_reward_json_deep_nesting(depth: int, shape: str) -> None:
    """Deep nesting is a RewardError (no RecursionError), whatever the depth."""
    if shape == "array":
        text = "[" * depth + "1" + "]" * depth
    elif shape == "object":
        text = '{"a":' * depth + "1" + "}" * depth
    elif shape == "value":
        text = '{"reward": ' + "[" * depth + "]" * depth + "}"
    else:
        text = '{"x": 0.5, "y": ' + '[{"a":' * depth + "1" + "}]" * depth + "}"
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "reward.json").write_text(text)
        result = read(Path(d))
    check_reward(result, None, "reward.json")


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(
    n=st.integers(min_value=1000, max_value=5000),
    value=st.floats(min_value=-1e300, max_value=1e300),
    spread=st.floats(min_value=0, max_value=1e300),
    with_reward=st.booleans(),
)
@example(n=1000, value=1e300, spread=0.0, with_reward=False)
@example(n=2000, value=1.0, spread=0.0, with_reward=False)
def test_reward_json_many_keys(n: int, value: float, spread: float, with_reward: bool) -> None:
    data = {f"k{i}": value + (spread if i % 2 else -spread) for i in range(n)}
    data = {k: v for k, v in data.items() if math.isfinite(v)} or {"k": value}
    if with_reward:
        data["reward"] = value
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "reward.json").write_text(_dumps(data))
        result = read(Path(d))
    check_reward(result, data, "reward.json")


# --- which file is read --------------------------------------------------------------------------------


@FUZZ
@given(
    json_text=st.one_of(st.none(), st.just("DIR"), reward_object.map(_dumps), _junk_text),
    txt_text=st.one_of(st.none(), st.just("DIR"), txt_text),
)
def test_reward_file_choice(json_text: str | None, txt_text: str | None) -> None:
    """reward.json first when it is a file (even a broken one), else reward.txt, else an error; a folder
    named like the file does not count."""
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        for name, text in (("reward.json", json_text), ("reward.txt", txt_text)):
            if text == "DIR":
                (folder / name).mkdir()
                (folder / name / "reward.txt").write_text("1")
            elif text is not None:
                (folder / name).write_bytes(text.encode("utf-8", "surrogatepass"))
        result = read(folder)
    if json_text not in (None, "DIR"):
        decoded = json_text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        try:
            data = json.loads(decoded, object_pairs_hook=_no_duplicates)
        except (ValueError, RecursionError):
            expected = None
        else:
            expected = _expected_json(data)
        check_reward(result, expected, "reward.json")
    elif txt_text not in (None, "DIR"):
        decoded = txt_text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").strip()
        value = _expected_number(decoded) if decoded else None
        check_reward(result, None if value is None else {"reward": value}, "reward.txt")
    else:
        check_reward(result, None, "none")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) < len(keys):
        raise ValueError("duplicate key")
    return dict(pairs)
