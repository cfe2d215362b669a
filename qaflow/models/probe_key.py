"""`ProbeKey`: what a ledger result is the result of, typed. The one module that reads or writes the text form.

The ledger stores a result's probe as text (`ResultKey.probe`), and `qaflow run --agent` takes the same
text for the probes it replays. The grammar, in full:

    [STEP "/"] KIND [":" NAME]

KIND is a `ProbeKind`; the kinds in `NAMED_KINDS` always carry a NAME (a mutant's, an exploit's, a solver's,
a decision's), the others never do. STEP names one step of a multi-step task (`2/exploit:always-equal`).
NAME may hold `:` and `/` (`mutant:empty:app/out.txt`); STEP holds no `/` (a step's folder name), and one that
begins with a named kind and `:` reads back as that kind's NAME.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ProbeKind(StrEnum):
    BUILD = "build"
    NOP = "nop"
    ORACLE = "oracle"
    TAMPER = "tamper"
    OBSERVE = "observe"
    MUTANT = "mutant"
    """A wrong solution derived from the oracle's effect (file mutants and code mutants)."""
    ENABLED_ORACLE = "enabled:oracle"
    """The reference solution against the task's own tests with their disabled tests enabled."""
    ENABLED_MUTANT = "enabled:mutant"
    """A code mutant against the same tests."""
    EXPLOIT = "exploit"
    RERUN = "rerun"
    """`--agent rerun:N`: the oracle, then N verifier reruns on its final state (NAME is N)."""
    ATTEMPT = "attempt"
    """Another solver's imported result (NAME is the solver)."""
    GATE = "gate"
    HARDEN = "harden"
    REPAIR = "repair"
    UNRESOLVED = "unresolved"


NAMED_KINDS = frozenset(
    {ProbeKind.MUTANT, ProbeKind.ENABLED_MUTANT, ProbeKind.EXPLOIT, ProbeKind.RERUN, ProbeKind.ATTEMPT,
     ProbeKind.GATE, ProbeKind.HARDEN}
)  # fmt: skip
_BY_LENGTH = sorted(ProbeKind, key=lambda k: -len(k.value))  # `enabled:mutant` before any shorter kind


@dataclass(frozen=True)
class ProbeKey:
    kind: ProbeKind
    name: str | None = None
    step: str | None = None

    def __post_init__(self) -> None:
        if (self.kind in NAMED_KINDS) != bool(self.name):
            needs = "needs a name" if self.kind in NAMED_KINDS else "takes no name"
            raise ValueError(f"probe kind {self.kind.value} {needs} (got {self.name!r})")
        if self.step is not None and (not self.step or "/" in self.step):
            raise ValueError(f"step {self.step!r}: a step name is not empty and holds no '/'")

    def __str__(self) -> str:
        text = self.kind.value if self.name is None else f"{self.kind.value}:{self.name}"
        return text if self.step is None else f"{self.step}/{text}"

    @classmethod
    def parse(cls, text: str) -> ProbeKey:
        """The key written as `text`.

        Raises:
            ValueError: `text` is not in the grammar (an unknown kind, a name missing or extra).
        """
        key = cls._parse_unstepped(text)
        if key is not None:
            return key
        step, sep, rest = text.partition("/")
        key = cls._parse_unstepped(rest) if sep and step else None
        if key is None:
            raise ValueError(f"{text!r} is not a probe ([STEP/]KIND[:NAME], KIND one of {_kinds()})")
        return cls(key.kind, key.name, step)

    @classmethod
    def read(cls, text: str) -> ProbeKey | None:
        """The key written as `text`, or None where it is not one (results written by other tools)."""
        try:
            return cls.parse(text)
        except ValueError:
            return None

    @classmethod
    def _parse_unstepped(cls, text: str) -> ProbeKey | None:
        for kind in _BY_LENGTH:
            if text == kind.value and kind not in NAMED_KINDS:
                return cls(kind)
            if text.startswith(kind.value + ":") and kind in NAMED_KINDS and len(text) > len(kind.value) + 1:
                return cls(kind, text[len(kind.value) + 1 :])
        return None

    def at(self, step: str | None) -> ProbeKey:
        """This probe, played at `step` (None: on the whole task)."""
        return ProbeKey(self.kind, self.name, step)

    @property
    def is_mutant(self) -> bool:
        return self.kind is ProbeKind.MUTANT

    # -- the keys written most often ---------------------------------------------------------------

    @classmethod
    def mutant(cls, name: str, step: str | None = None) -> ProbeKey:
        return cls(ProbeKind.MUTANT, name, step)

    @classmethod
    def exploit(cls, name: str, step: str | None = None) -> ProbeKey:
        return cls(ProbeKind.EXPLOIT, name, step)


def _kinds() -> str:
    return ", ".join(k.value for k in ProbeKind)


def probe_name(kind: ProbeKind, name: str | None = None, step: str | None = None) -> str:
    """The text form of a key, for the ledger's probe column and `--agent`."""
    return str(ProbeKey(kind, name, step))


def name_of(text: str, kind: ProbeKind) -> str | None:
    """NAME of `text` when it is a `kind` probe on the whole task (`mutant:X` -> X for MUTANT), else None."""
    key = ProbeKey.read(text)
    return key.name if key is not None and key.kind is kind and key.step is None else None


def unstepped(text: str) -> str:
    """`text` without its step (`2/exploit:x` -> `exploit:x`); text that is not a probe comes back as it is."""
    key = ProbeKey.read(text)
    return str(key.at(None)) if key is not None else text
