"""Exact and near-duplicate removal over instructions.

Normalisation (`normalise`): Unicode NFKC, casefold, then every run of characters that are not letters or
digits (whitespace, punctuation, symbols, underscore) becomes one space, and the ends are stripped. So
"Write `done` to /app/out.txt." and "write done to app out txt" are the same text.

Exact duplicates: equal normalised text. Near duplicates: Jaccard similarity of the sets of character
`shingle_size`-grams (default 5) of the normalised texts >= `threshold` (default 0.8, inclusive). A text
shorter than a shingle is one shingle. Candidates come from MinHash LSH and are always confirmed by the exact
Jaccard of the shingle sets, so a reported pair is never an estimate:

1. MinHash signatures of `num_perm` (128) hash functions. The numpy backend hashes each shingle to 32 bits
   (a polynomial over its code points, then the splitmix64 finaliser) and permutes with multiply-add-shift
   hashes `(a*x + b) >> 32`; `backend="datasketch"` uses datasketch's `MinHash`/`MinHashLSH` instead (the
   reference: slower, same confirmation).
2. LSH banding: `bands` x `rows`; by default the largest `rows` (fewest false candidates) whose probability of
   making a pair at exactly the threshold a candidate, 1 - (1 - t^rows)^bands with bands = num_perm // rows, is
   at least `min_candidate_probability` (0.99). For 128 permutations and 0.8 that is 21 bands of 6 rows
   (0.998 at J = 0.8, 0.28 at 0.5, 0.0013 at 0.2).
3. Candidates whose signature estimate is below `threshold - estimate_margin` (0.15, over 4 standard
   deviations at 128 permutations) are dropped without the exact check.
4. Confirmed pairs make a graph; each connected component is one cluster, of which one task is kept.

Keep rule (exact groups and clusters alike): the task whose `status` is `accepted` first, then one with a
recorded `pass_rate` (the columns are optional), then the shortest id, then the smallest id.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import unicodedata
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from curation.sources import StageResult, removed_frame

STAGE_EXACT = "dedup_exact"
STAGE_NEAR = "dedup_near"

_NON_ALNUM = re.compile(r"[\W_]+")


def normalise(text: str) -> str:
    """NFKC, casefold, runs of non-alphanumeric characters collapsed to one space, ends stripped."""
    return _NON_ALNUM.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def shingles(normalised: str, k: int = 5) -> set[str]:
    """The character k-grams of a normalised text (the text itself when it is shorter than k)."""
    if len(normalised) < k:
        return {normalised}
    return {normalised[i : i + k] for i in range(len(normalised) - k + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def candidate_probability(similarity: float, bands: int, rows: int) -> float:
    """Probability that LSH with `bands` x `rows` makes a pair of this Jaccard similarity a candidate."""
    return 1.0 - (1.0 - similarity**rows) ** bands


@cache
def lsh_params(threshold: float, num_perm: int, min_probability: float = 0.99) -> tuple[int, int]:
    """(bands, rows): the largest `rows` whose candidate probability at `threshold` with num_perm // rows
    bands is at least `min_probability` (one row per band when none reaches it)."""
    best = (num_perm, 1)
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if bands >= 1 and candidate_probability(threshold, bands, rows) >= min_probability:
            best = (bands, rows)
    return best


class DedupConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    column: str = Field("instruction", description="Text column compared.")
    exact: bool = Field(True, description="Remove exact duplicates (equal normalised text).")
    near: bool = Field(True, description="Remove near duplicates (MinHash LSH, confirmed by exact Jaccard).")
    threshold: float = Field(0.8, gt=0, le=1, description="Jaccard similarity at or above which texts are dups.")
    shingle_size: int = Field(5, ge=1, description="Characters per shingle.")
    num_perm: int = Field(128, ge=2, description="MinHash permutations.")
    bands: int | None = Field(None, ge=1, description="LSH bands; None: from `lsh_params`.")
    rows: int | None = Field(None, ge=1, description="Rows per band; None: from `lsh_params`.")
    min_candidate_probability: float = Field(0.99, gt=0, lt=1, description="Used by `lsh_params`.")
    estimate_margin: float = Field(0.15, ge=0, le=1, description="Skip the exact check below threshold - margin.")
    seed: int = Field(1, description="Seed of the hash functions.")
    backend: Literal["numpy", "datasketch"] = "numpy"
    jobs: int = Field(0, ge=0, description="Threads for signatures; 0: one per CPU.")

    def banding(self) -> tuple[int, int]:
        if self.bands is not None and self.rows is not None:
            if self.bands * self.rows > self.num_perm:
                raise ValueError(f"bands x rows = {self.bands * self.rows} exceeds num_perm {self.num_perm}")
            return self.bands, self.rows
        bands, rows = lsh_params(self.threshold, self.num_perm, self.min_candidate_probability)
        if self.rows is not None:
            rows = self.rows
            bands = self.num_perm // rows
        elif self.bands is not None:
            bands = self.bands
            rows = self.num_perm // bands
        return bands, rows


@dataclass
class NearDuplicates:
    """Confirmed pairs (i < j, indices into the texts) with their exact Jaccard, and the funnel counts."""

    pairs: list[tuple[int, int, float]]
    candidates: int = 0
    estimated: int = 0
    bands: int = 0
    rows: int = 0
    timings: dict[str, float] = field(default_factory=dict)


# -- numpy MinHash ------------------------------------------------------------------------------------

_U64 = np.uint64


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on a uint64 array (wrapping arithmetic)."""
    x ^= x >> _U64(30)
    x *= _U64(0xBF58476D1CE4E5B9)
    x ^= x >> _U64(27)
    x *= _U64(0x94D049BB133111EB)
    x ^= x >> _U64(31)
    return x


def _shingle_hashes(texts: Sequence[str], k: int, coefficients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """32-bit hashes (as uint64) of every shingle position of every text, and each text's first position.

    Repeated shingles of a text are hashed repeatedly: the minimum does not mind.
    """
    padded = [t if len(t) >= k else t + "\0" * (k - len(t)) for t in texts]
    lengths = np.fromiter((len(t) for t in padded), dtype=np.int64, count=len(padded))
    points = np.frombuffer("".join(padded).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    positions = len(points) - k + 1
    poly = points[:positions] * coefficients[0]
    for j in range(1, k):
        poly += points[j : j + positions] * coefficients[j]
    counts = lengths - k + 1
    text_start = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    out_start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    index = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(text_start - out_start, counts)
    hashes = _mix64(poly[index]) >> _U64(32)
    return hashes, out_start


class NumpyMinHash:
    """MinHash signatures with vectorised multiply-add-shift permutations."""

    BATCH = 4096

    def __init__(self, num_perm: int = 128, shingle_size: int = 5, seed: int = 1, jobs: int = 0):
        rng = np.random.default_rng(seed)
        self.k = shingle_size
        self.num_perm = num_perm
        self.coefficients = rng.integers(1, 2**63, size=shingle_size, dtype=np.uint64) | _U64(1)
        self.a = rng.integers(1, 2**63, size=num_perm, dtype=np.uint64) | _U64(1)
        self.b = rng.integers(0, 2**63, size=num_perm, dtype=np.uint64)
        self.jobs = jobs or os.cpu_count() or 1

    def signatures(self, normalised: Sequence[str]) -> np.ndarray:
        """(len(texts), num_perm) uint32 signatures."""
        out = np.empty((len(normalised), self.num_perm), dtype=np.uint32)
        starts = range(0, len(normalised), self.BATCH)
        with ThreadPoolExecutor(self.jobs) as pool:
            list(pool.map(lambda s: self._batch(normalised[s : s + self.BATCH], out[s : s + self.BATCH]), starts))
        return out

    def _batch(self, texts: Sequence[str], out: np.ndarray) -> None:
        if not len(texts):
            return
        hashes, starts = _shingle_hashes(texts, self.k, self.coefficients)
        buf = np.empty_like(hashes)
        for p in range(self.num_perm):
            np.multiply(hashes, self.a[p], out=buf)
            np.add(buf, self.b[p], out=buf)
            np.right_shift(buf, _U64(32), out=buf)
            out[:, p] = np.minimum.reduceat(buf, starts)


def _band_keys(signatures: np.ndarray, bands: int, rows: int, seed: int) -> list[np.ndarray]:
    salts = np.random.default_rng(seed + 7919).integers(1, 2**63, size=rows, dtype=np.uint64)
    keys = []
    for band in range(bands):
        key = np.zeros(len(signatures), dtype=np.uint64)
        for j in range(rows):
            key ^= signatures[:, band * rows + j].astype(np.uint64) * salts[j]
            _mix64(key)
        keys.append(key)
    return keys


def _bucket_pairs(key: np.ndarray) -> np.ndarray:
    """Codes i * n + j (i < j) of every pair of items sharing a key."""
    n = len(key)
    order = np.argsort(key, kind="stable")
    sorted_keys = key[order]
    found = []
    d = 1
    while d < n:
        same = np.nonzero(sorted_keys[:-d] == sorted_keys[d:])[0]
        if not len(same):
            break
        i, j = order[same], order[same + d]
        found.append(np.minimum(i, j).astype(np.int64) * n + np.maximum(i, j))
        d += 1
    return np.concatenate(found) if found else np.empty(0, dtype=np.int64)


def _estimates(signatures: np.ndarray, i: np.ndarray, j: np.ndarray, chunk: int = 200_000) -> np.ndarray:
    out = np.empty(len(i), dtype=np.float64)
    for s in range(0, len(i), chunk):
        out[s : s + chunk] = (signatures[i[s : s + chunk]] == signatures[j[s : s + chunk]]).mean(axis=1)
    return out


def _numpy_candidates(normalised: Sequence[str], config: DedupConfig, bands: int, rows: int, result: NearDuplicates):
    t0 = time.perf_counter()
    minhash = NumpyMinHash(config.num_perm, config.shingle_size, config.seed, config.jobs)
    signatures = minhash.signatures(normalised)
    t1 = time.perf_counter()
    n = len(normalised)
    codes = np.unique(np.concatenate([_bucket_pairs(k) for k in _band_keys(signatures, bands, rows, config.seed)]))
    i, j = codes // n, codes % n
    result.candidates = len(codes)
    keep = _estimates(signatures, i, j) >= config.threshold - config.estimate_margin
    result.estimated = int(keep.sum())
    result.timings.update({"signatures": t1 - t0, "lsh": time.perf_counter() - t1})
    return list(zip(i[keep].tolist(), j[keep].tolist(), strict=True))


def _datasketch_candidates(
    normalised: Sequence[str], config: DedupConfig, bands: int, rows: int, result: NearDuplicates
) -> list[tuple[int, int]]:
    from datasketch import LeanMinHash, MinHash, MinHashLSH

    t0 = time.perf_counter()
    sets = [[s.encode("utf-8") for s in shingles(t, config.shingle_size)] for t in normalised]
    hashes = [LeanMinHash(m) for m in MinHash.bulk(sets, num_perm=config.num_perm, seed=config.seed)]
    t1 = time.perf_counter()
    index = MinHashLSH(num_perm=config.num_perm, params=(bands, rows))
    for i, m in enumerate(hashes):
        index.insert(i, m, check_duplication=False)
    pairs = []
    for i, m in enumerate(hashes):
        for j in index.query(m):
            if j > i:
                result.candidates += 1
                if m.jaccard(hashes[j]) >= config.threshold - config.estimate_margin:
                    pairs.append((i, j))
    result.estimated = len(pairs)
    result.timings.update({"signatures": t1 - t0, "lsh": time.perf_counter() - t1})
    return pairs


def near_duplicate_pairs(normalised: Sequence[str], config: DedupConfig | None = None) -> NearDuplicates:
    """Every pair of (already normalised) texts whose shingle-set Jaccard is >= the threshold, as found by
    MinHash LSH and confirmed exactly."""
    config = config or DedupConfig()
    bands, rows = config.banding()
    result = NearDuplicates(pairs=[], bands=bands, rows=rows)
    if len(normalised) < 2:
        return result
    find = _numpy_candidates if config.backend == "numpy" else _datasketch_candidates
    candidates = find(normalised, config, bands, rows, result)
    t0 = time.perf_counter()
    sets: dict[int, set[str]] = {}
    for i, j in candidates:
        a = sets.get(i) or sets.setdefault(i, shingles(normalised[i], config.shingle_size))
        b = sets.get(j) or sets.setdefault(j, shingles(normalised[j], config.shingle_size))
        similarity = jaccard(a, b)
        if similarity >= config.threshold:
            result.pairs.append((i, j, similarity))
    result.pairs.sort()
    result.timings["confirm"] = time.perf_counter() - t0
    return result


def components(n: int, pairs: Sequence[tuple[int, int, float]]) -> list[list[int]]:
    """Connected components (union-find) with more than one member, each sorted, ordered by first member."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j, _ in pairs:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for x in range(n):
        groups.setdefault(find(x), []).append(x)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0])


def near_duplicates_against(
    new: Sequence[str], existing: Sequence[str], config: DedupConfig | None = None
) -> dict[int, tuple[int, float]]:
    """For each text of `new` (raw) that is a near duplicate of one of `existing` (raw), the most similar
    existing index and the Jaccard. Pairs inside `new` or inside `existing` are not reported."""
    config = config or DedupConfig()
    texts = [normalise(t) for t in existing] + [normalise(t) for t in new]
    offset = len(existing)
    best: dict[int, tuple[int, float]] = {}
    for i, j, similarity in near_duplicate_pairs(texts, config).pairs:
        if i < offset <= j and (j - offset not in best or similarity > best[j - offset][1]):
            best[j - offset] = (i, similarity)
    return best


# -- the stage ----------------------------------------------------------------------------------------


def keep_rank(frame: pl.DataFrame) -> pl.Series:
    """Each row's position under the keep rule (0 = kept first): status `accepted`, then a recorded
    pass_rate, then the shortest id, then the smallest id."""
    keys = []
    if "status" in frame.columns:
        keys.append((pl.col("status") != "accepted").fill_null(True).alias("_k_status"))
    if "pass_rate" in frame.columns:
        keys.append(pl.col("pass_rate").is_null().alias("_k_rate"))
    keys += [pl.col("id").str.len_chars().alias("_k_len"), pl.col("id").alias("_k_id")]
    ranked = frame.select(pl.int_range(pl.len()).alias("_row"), *keys).sort([k.meta.output_name() for k in keys])
    rank = np.empty(frame.height, dtype=np.int64)
    rank[ranked["_row"].to_numpy()] = np.arange(frame.height)
    return pl.Series("_rank", rank)


def dedup_tasks(tasks: pl.DataFrame, config: DedupConfig | None = None) -> StageResult:
    """Remove exact then near duplicates of `config.column`; input order is kept.

    Removal reasons: `exact duplicate of <id>` (stage dedup_exact) and `near duplicate of <kept id> (cluster of
    N; jaccard J with <id>)` (stage dedup_near), J being the highest confirmed similarity of the removed row.
    """
    config = config or DedupConfig()
    t0 = time.perf_counter()
    frame = tasks.with_columns(
        pl.col(config.column).fill_null("").map_elements(normalise, return_dtype=pl.String).alias("_norm"),
        keep_rank(tasks),
    )
    removed: list[tuple[str, str, str]] = []
    info: dict[str, object] = {"rows_in": tasks.height}
    if config.exact:
        frame = frame.with_columns(
            pl.col("_norm").map_elements(lambda s: hashlib.sha1(s.encode()).hexdigest(), return_dtype=pl.String)
            .alias("_key")
        )  # fmt: skip
        keeper = frame.sort("_rank").group_by("_key", maintain_order=True).agg(pl.col("id").first().alias("_keeper"))
        frame = frame.join(keeper, on="_key", how="left", maintain_order="left")
        dups = frame.filter(pl.col("id") != pl.col("_keeper"))
        removed += [
            (r, STAGE_EXACT, f"exact duplicate of {k}") for r, k in zip(dups["id"], dups["_keeper"], strict=True)
        ]
        frame = frame.filter(pl.col("id") == pl.col("_keeper")).drop("_key", "_keeper")
        info["exact_removed"] = dups.height
    t1 = time.perf_counter()
    if config.near and frame.height > 1:
        found = near_duplicate_pairs(frame["_norm"].to_list(), config)
        ids, ranks = frame["id"].to_list(), frame["_rank"].to_list()
        best: dict[int, tuple[float, int]] = {}
        for i, j, similarity in found.pairs:
            for a, b in ((i, j), (j, i)):
                if a not in best or similarity > best[a][0]:
                    best[a] = (similarity, b)
        drop: set[int] = set()
        clusters = components(frame.height, found.pairs)
        for members in clusters:
            first = min(members, key=lambda m: ranks[m])
            for m in members:
                if m != first:
                    closest, nearest = best[m]
                    reason = (
                        f"near duplicate of {ids[first]} (cluster of {len(members)}; "
                        f"jaccard {closest:.3f} with {ids[nearest]})"
                    )
                    removed.append((ids[m], STAGE_NEAR, reason))
                    drop.add(m)
        frame = frame.filter(~pl.int_range(pl.len()).is_in(sorted(drop)))
        info.update(
            near_removed=len(drop), clusters=len(clusters), candidates=found.candidates, estimated=found.estimated,
            confirmed_pairs=len(found.pairs), bands=found.bands, rows=found.rows,
            timings={k: round(v, 3) for k, v in found.timings.items()},
        )  # fmt: skip
    info["seconds"] = round(time.perf_counter() - t0, 3)
    info["exact_seconds"] = round(t1 - t0, 3)
    kept = frame.drop("_norm", "_rank")
    info["rows_out"] = kept.height
    return StageResult(kept=kept, removed=removed_frame(removed), info=info)


def expected_recall(similarity: float, config: DedupConfig | None = None) -> float:
    """Probability that a pair of this Jaccard similarity becomes an LSH candidate under `config`."""
    bands, rows = (config or DedupConfig()).banding()
    return candidate_probability(similarity, bands, rows) if similarity > 0 else 0.0


__all__ = [
    "DedupConfig",
    "NearDuplicates",
    "NumpyMinHash",
    "candidate_probability",
    "components",
    "dedup_tasks",
    "expected_recall",
    "jaccard",
    "keep_rank",
    "lsh_params",
    "near_duplicate_pairs",
    "near_duplicates_against",
    "normalise",
    "shingles",
]
