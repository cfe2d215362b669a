"""The declared requirement graph of a task: `requirements`, `artifacts` and `checks` in `[metadata.qaflow]`.

```toml
[[metadata.qaflow.requirements]]
id = "north-total"
text = "The total amount of the north region, with two decimals"
produces = ["answer"]                  # artifact ids

[[metadata.qaflow.artifacts]]
id = "answer"
path = "/app/answer.txt"               # a folder ends with "/"
depends_on = ["sales"]                 # artifact ids

[[metadata.qaflow.checks]]
id = "exact-total"
file = "tests/check.py"                # optional: the test file that implements it
verifies = ["answer"]                  # artifact or requirement ids
```

Ids are unique across the three lists; every reference must name a declared id. Other keys of
`[metadata.qaflow]` (e.g. `label`) are left alone.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from qaflow.errors import QaflowError

SECTION = "qaflow"
"""The `[metadata.<SECTION>]` table of task.toml that holds the declared graph."""
KEYS = ("requirements", "artifacts", "checks")
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+-]*$")


class GraphSpecError(QaflowError, ValueError):
    """The declared graph is malformed (wrong types, duplicate ids, references to undeclared ids)."""


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Unique among requirements, artifacts and checks: letters, digits, _ . : / @ + -")

    @model_validator(mode="after")
    def _id_shape(self) -> _Item:
        if not ID_RE.match(self.id):
            raise ValueError(f"id {self.id!r}: use letters, digits and _ . : / @ + - (no spaces)")
        return self


class RequirementSpec(_Item):
    text: str = Field("", description="What the instruction asks, in one sentence")
    produces: list[str] = Field(default_factory=list, description="Ids of the artifacts that fulfil it")
    verified_by: list[str] = Field(default_factory=list, description="Ids of checks that verify it directly")


class ArtifactSpec(_Item):
    path: str | None = Field(None, description="Absolute container path; a folder ends with '/'")
    description: str = ""
    depends_on: list[str] = Field(default_factory=list, description="Ids of the artifacts it is made from")


class CheckSpec(_Item):
    description: str = ""
    file: str | None = Field(None, description="The test file implementing it, relative to the task folder")
    verifies: list[str] = Field(default_factory=list, description="Ids of the artifacts or requirements it checks")


class GraphSpec(BaseModel):
    """The three declared lists; references are validated on construction."""

    model_config = ConfigDict(extra="forbid")

    requirements: list[RequirementSpec] = Field(default_factory=list)
    artifacts: list[ArtifactSpec] = Field(default_factory=list)
    checks: list[CheckSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references(self) -> GraphSpec:
        kinds: dict[str, str] = {}
        for kind, items in (("requirement", self.requirements), ("artifact", self.artifacts), ("check", self.checks)):
            for item in items:
                if item.id in kinds:
                    raise ValueError(f"id {item.id!r} is declared twice ({kinds[item.id]} and {kind})")
                kinds[item.id] = kind

        def expect(owner: str, field: str, refs: list[str], allowed: tuple[str, ...]) -> None:
            for ref in refs:
                if kinds.get(ref) not in allowed:
                    what = f"a {kinds[ref]}" if ref in kinds else "not declared"
                    raise ValueError(f"{owner}.{field}: {ref!r} is {what}; expected {' or '.join(allowed)} id")

        for r in self.requirements:
            expect(f"requirement {r.id!r}", "produces", r.produces, ("artifact",))
            expect(f"requirement {r.id!r}", "verified_by", r.verified_by, ("check",))
        for a in self.artifacts:
            expect(f"artifact {a.id!r}", "depends_on", a.depends_on, ("artifact",))
        for c in self.checks:
            expect(f"check {c.id!r}", "verifies", c.verifies, ("artifact", "requirement"))
        return self

    @property
    def empty(self) -> bool:
        return not (self.requirements or self.artifacts or self.checks)

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> GraphSpec:
        """The graph declared in a task's `metadata` (the `[metadata]` table); empty when none is.

        Raises:
            GraphSpecError: the section is there but malformed; the message names the field.
        """
        section = metadata.get(SECTION)
        if section is None:
            return cls()
        if not isinstance(section, dict):
            raise GraphSpecError(f"[metadata.{SECTION}] must be a table, not {type(section).__name__}")
        try:
            return cls.model_validate({k: section[k] for k in KEYS if k in section})
        except ValidationError as e:
            first = e.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise GraphSpecError(f"[metadata.{SECTION}] {loc}: {first['msg']}".replace(" : ", ": ")) from e

    def to_metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """A copy of `metadata` whose `[metadata.qaflow]` holds this graph (other keys kept)."""
        out = dict(metadata)
        section = dict(out.get(SECTION) or {})
        for key in KEYS:
            items = [i.model_dump(exclude_defaults=True) for i in getattr(self, key)]
            if items:
                section[key] = items
            else:
                section.pop(key, None)
        out[SECTION] = section
        return out

    def extended(self, other: GraphSpec) -> GraphSpec:
        """This graph with `other`'s items appended (validated again: ids stay unique)."""
        try:
            return GraphSpec(
                requirements=[*self.requirements, *other.requirements],
                artifacts=[*self.artifacts, *other.artifacts],
                checks=[*self.checks, *other.checks],
            )
        except ValidationError as e:
            raise GraphSpecError(str(e.errors()[0]["msg"])) from e

    def prefixed(self, prefix: str) -> GraphSpec:
        """Every id (and reference) with `prefix` in front, to merge two tasks' graphs without clashes."""

        def p(ids: list[str]) -> list[str]:
            return [prefix + i for i in ids]

        return GraphSpec(
            requirements=[
                r.model_copy(update={"id": prefix + r.id, "produces": p(r.produces), "verified_by": p(r.verified_by)})
                for r in self.requirements
            ],
            artifacts=[
                a.model_copy(update={"id": prefix + a.id, "depends_on": p(a.depends_on)}) for a in self.artifacts
            ],
            checks=[c.model_copy(update={"id": prefix + c.id, "verifies": p(c.verifies)}) for c in self.checks],
        )
