"""Exact and near-duplicate removal: planted duplicates are caught, controls kept, the keep rule and the
threshold edges behave as documented, and the numpy MinHash agrees with datasketch."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from curation.dedup import (
    DedupConfig,
    NumpyMinHash,
    candidate_probability,
    components,
    dedup_tasks,
    jaccard,
    lsh_params,
    near_duplicate_pairs,
    near_duplicates_against,
    normalise,
    shingles,
)
from curation.sources import HarborSource, SourcedTask, collect_tasks, tasks_frame
from tests.conftest import TASKS_REPO


def frame(texts: dict[str, str], source: str = "s", **columns: list) -> pl.DataFrame:
    tasks = [
        SourcedTask(source=source, original_id=key, name=key, instruction=text, version=f"v-{key}")
        for key, text in texts.items()
    ]
    return tasks_frame(tasks).with_columns(**{k: pl.Series(v) for k, v in columns.items()})


def repo_instructions() -> dict[str, str]:
    kept = collect_tasks([HarborSource(name="repo", path=TASKS_REPO)]).kept
    return dict(zip(kept["original_id"], kept["instruction"], strict=True))


def pseudo_corpus(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(3000)]
    return [" ".join(rng.choice(vocab) for _ in range(rng.randint(40, 70))) for _ in range(n)]


def test_normalise_is_documented_exactly():
    assert normalise("Write `done` to /app/out.txt.\n") == "write done to app out txt"
    assert normalise("  Ｔhe ﬁle   my_file\tIS\n\nhere!! ") == "the file my file is here"
    assert normalise("Straße") == "strasse"
    assert normalise("...") == ""
    assert shingles("abcdef", 5) == {"abcde", "bcdef"}
    assert shingles("abc", 5) == {"abc"}


def test_planted_exact_and_near_duplicates_are_caught_and_controls_kept():
    originals = repo_instructions()
    assert len(originals) >= 30
    texts = dict(originals)
    csv_sum, word_freq, fix_calc = originals["csv-sum"], originals["word-frequency"], originals["fix-calc"]
    # exact duplicates: only case, punctuation and whitespace differ
    texts["planted-exact-csv-sum"] = csv_sum.upper().replace(" ", "   ").replace(".", "!")
    texts["planted-exact-fix-calc"] = "\n\n" + fix_calc.replace(",", " ;") + "  "
    # paraphrases with small edits
    texts["planted-near-csv-sum"] = csv_sum.replace("Compute the total", "Work out the total").replace(
        "exactly two", "two"
    )
    texts["planted-near-word-frequency"] = word_freq.replace("most frequent words", "most common words").replace(
        "Read", "Open"
    )
    near_j = {
        k: jaccard(shingles(normalise(texts[k])), shingles(normalise(originals[o])))
        for k, o in (("planted-near-csv-sum", "csv-sum"), ("planted-near-word-frequency", "word-frequency"))
    }
    assert all(0.8 <= j < 1.0 for j in near_j.values()), near_j
    # a control on the same template, with different paths and numbers: similar, but below the threshold
    texts["planted-control"] = (
        "`/srv/orders.csv` lists orders with the columns `day,shop,price`.\n\nCompute the mean `price` of all "
        "orders of the `east` shop and print it to stdout rounded to an integer."
    )
    assert jaccard(shingles(normalise(texts["planted-control"])), shingles(normalise(csv_sum))) < 0.8

    result = dedup_tasks(frame(texts))

    removed = {i: (stage, reason) for i, stage, reason in result.removed.iter_rows()}
    assert removed == {
        "s:planted-exact-csv-sum": ("dedup_exact", "exact duplicate of s:csv-sum"),
        "s:planted-exact-fix-calc": ("dedup_exact", "exact duplicate of s:fix-calc"),
        "s:planted-near-csv-sum": (
            "dedup_near",
            f"near duplicate of s:csv-sum (cluster of 2; jaccard {near_j['planted-near-csv-sum']:.3f} with s:csv-sum)",
        ),
        "s:planted-near-word-frequency": (
            "dedup_near",
            "near duplicate of s:word-frequency (cluster of 2; "
            f"jaccard {near_j['planted-near-word-frequency']:.3f} with s:word-frequency)",
        ),
    }
    assert set(result.kept["id"]) == {f"s:{k}" for k in originals} | {"s:planted-control"}
    assert result.kept.columns == frame(texts).columns
    assert result.info["exact_removed"] == 2 and result.info["near_removed"] == 2 and result.info["clusters"] == 2


def test_keep_rule_accepted_then_pass_rate_then_shortest_id():
    base = pseudo_corpus(1, seed=3)[0]
    texts = {"a-long-id": base, "b": base + " x", "cc": base.upper()}
    # without status or pass rate: the shortest id wins
    plain = dedup_tasks(frame(texts))
    assert plain.kept["id"].to_list() == ["s:b"]
    # a recorded pass rate beats a shorter id
    rated = dedup_tasks(frame(texts, pass_rate=[None, None, 0.5]))
    assert rated.kept["id"].to_list() == ["s:cc"]
    # accepted beats everything
    status = dedup_tasks(frame(texts, status=["accepted", "needs_repair", "new"], pass_rate=[None, 0.3, 0.5]))
    assert status.kept["id"].to_list() == ["s:a-long-id"]
    assert sorted(status.removed["reason"]) == [
        "exact duplicate of s:a-long-id",
        status.removed.filter(pl.col("stage") == "dedup_near")["reason"][0],
    ]


def test_jaccard_threshold_is_inclusive_at_its_edge():
    # 12 distinct letters have 8 five-character shingles; two more letters add 2: J = 8 / 10 = 0.8 exactly
    texts = {"short": "abcdefghijkl", "longer": "abcdefghijklmn", "other": "zyxwvutsrqpo"}
    assert jaccard(shingles(texts["short"]), shingles(texts["longer"])) == 0.8
    at = dedup_tasks(frame(texts), DedupConfig(threshold=0.8))
    assert at.removed["id"].to_list() == ["s:longer"]
    above = dedup_tasks(frame(texts), DedupConfig(threshold=0.81))
    assert above.removed.height == 0 and above.kept.height == 3


def test_clusters_are_connected_components_with_one_keeper():
    words = pseudo_corpus(1, seed=5)[0].split()
    a = " ".join(words)
    b = " ".join([*words[:-1], "qqqq"])  # one word changed from a
    c = " ".join([*words[:-2], "rrrr", "qqqq"])  # one more word changed from b
    pairs = near_duplicate_pairs([normalise(t) for t in (a, b, c)]).pairs
    assert {(i, j) for i, j, _ in pairs} >= {(0, 1), (1, 2)}
    assert components(4, pairs) == [[0, 1, 2]]
    result = dedup_tasks(frame({"a": a, "b": b, "c": c, "d": pseudo_corpus(2, seed=6)[1]}))
    assert sorted(result.kept["id"]) == ["s:a", "s:d"]
    assert all("near duplicate of s:a (cluster of 3;" in r for r in result.removed["reason"])


def planted(n_base: int, seed: int) -> tuple[list[str], set[tuple[int, int]]]:
    rng = random.Random(seed)
    texts = pseudo_corpus(n_base, seed)
    pairs = set()
    for i in range(0, n_base, 4):
        words = texts[i].split()
        for _ in range(rng.randint(1, 2)):
            words[rng.randrange(len(words))] = "edit" + str(rng.randint(0, 99))
        texts.append(" ".join(words))
        pairs.add((i, len(texts) - 1))
    return texts, pairs


def test_numpy_minhash_agrees_with_datasketch_and_with_brute_force():
    texts, planted_pairs = planted(240, seed=11)
    normal = [normalise(t) for t in texts]
    sets = [shingles(t) for t in normal]
    truth = {(i, j) for i in range(len(sets)) for j in range(i + 1, len(sets)) if jaccard(sets[i], sets[j]) >= 0.8}
    assert planted_pairs <= truth and len(truth) == len(planted_pairs)
    fast = near_duplicate_pairs(normal, DedupConfig(backend="numpy"))
    reference = near_duplicate_pairs(normal, DedupConfig(backend="datasketch"))
    assert {(i, j) for i, j, _ in fast.pairs} == truth
    assert {(i, j) for i, j, _ in reference.pairs} == truth
    assert fast.pairs == reference.pairs  # same exact Jaccard values, too
    # the signatures estimate Jaccard without bias: mean error over the planted pairs is small
    signatures = NumpyMinHash().signatures(normal)
    errors = [
        (signatures[i] == signatures[j]).mean() - jaccard(shingles(normal[i]), shingles(normal[j]))
        for i, j in planted_pairs
    ]
    assert abs(sum(errors) / len(errors)) < 0.02


def test_lsh_parameters_favour_recall_at_the_threshold():
    assert lsh_params(0.8, 128) == (21, 6)
    assert candidate_probability(0.8, 21, 6) == pytest.approx(0.99834, abs=1e-4)
    assert candidate_probability(0.2, 21, 6) < 0.002
    assert DedupConfig(bands=16, rows=8).banding() == (16, 8)
    with pytest.raises(ValueError, match="exceeds num_perm"):
        DedupConfig(bands=20, rows=8).banding()


def test_near_duplicates_against_existing_texts_only():
    existing = pseudo_corpus(50, seed=21)
    new = [existing[7].replace(existing[7].split()[3], "changed", 1), pseudo_corpus(60, seed=22)[55]]
    new.append(new[1] + " extra")  # a duplicate inside `new` is not reported
    found = near_duplicates_against(new, existing)
    assert list(found) == [0] and found[0][0] == 7 and 0.8 <= found[0][1] < 1


def test_dedup_reads_tasks_repo_folders(tmp_path: Path):
    result = dedup_tasks(collect_tasks([HarborSource(name="repo", path=TASKS_REPO)]).kept)
    assert result.removed.height == 0
    assert result.info["rows_in"] == result.info["rows_out"] == result.kept.height >= 30
