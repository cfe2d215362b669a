import json
import sys

KEY = {"1": "billing", "2": "bug", "3": "feature", "4": "billing", "5": "bug", "6": "feature", "7": "billing", "8": "bug", "9": "feature", "10": "billing"}


def main() -> int:
    try:
        with open("/app/answers.jsonl") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as exc:
        print(f"cannot read answers: {exc}")
        return 1
    if not rows:
        print("no answers")
        return 1
    answers = {}
    for row in rows:
        answers[str(row["id"])] = row["category"]
    score = sum(answers.get(i) == c for i, c in KEY.items()) / len(KEY)
    print(f"accuracy {score:.2f}")
    return 0 if score >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
