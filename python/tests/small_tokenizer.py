"""Shrinks a tokenizer.json to its first N ids, for the test models (vocabulary 1000).

    small_tokenizer.py SRC.tokenizer.json DST.tokenizer.json [N=1000]

WordPiece keeps the tokens with id < N; BPE also keeps only the merges whose parts and
result survive. Added tokens must already have ids < N. Standard library only.
"""
import json
import sys


def shrink(src, dst, n=1000):
    with open(src, encoding="utf-8") as f:
        j = json.load(f)
    model = j["model"]
    vocab = {t: i for t, i in model["vocab"].items() if i < n}
    model["vocab"] = vocab
    if model["type"] == "BPE":
        merges = []
        for m in model["merges"]:
            a, b = m.split(" ", 1) if isinstance(m, str) else m
            if a in vocab and b in vocab and a + b in vocab:
                merges.append(m)
        model["merges"] = merges
    for t in j.get("added_tokens", []):
        if t["id"] >= n:
            raise SystemExit(f"{src}: added token {t['content']!r} has id {t['id']} >= {n}")
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    shrink(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 1000)
