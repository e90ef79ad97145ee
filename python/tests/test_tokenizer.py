"""ingot.Tokenizer against the reference encodings of Hugging Face `tokenizers`."""
import itertools
import json

import pytest

import ingot
from conftest import TEXT

NAMES = ("wordpiece", "bpe_gpt2", "bpe_roberta")


def reference(name, kind, n):
    with open(TEXT / f"{name}.reference.jsonl", encoding="utf-8") as f:
        rows = (json.loads(line) for line in f)
        return list(itertools.islice((r for r in rows if r["kind"] == kind), n))


@pytest.mark.parametrize("name", NAMES)
def test_encode_matches_reference(name):
    tok = ingot.Tokenizer.from_file(TEXT / f"{name}.tokenizer.json")
    for r in reference(name, "single", 60):
        e = tok.encode(r["text"])
        assert e.ids == r["ids"], r["text"]
        assert e.type_ids == r["type_ids"]
        assert e.attention_mask == r["attention_mask"]
        assert e.tokens == r["tokens"]
        assert len(e) == len(r["ids"])
        assert tok.decode(e.ids) == r["decoded"]


@pytest.mark.parametrize("name", NAMES)
def test_encode_pair_matches_reference(name):
    tok = ingot.Tokenizer.from_file(str(TEXT / f"{name}.tokenizer.json"))
    for r in reference(name, "pair", 30):
        e = tok.encode(r["text"], r["pair"])
        assert e.ids == r["ids"], (r["text"], r["pair"])
        assert e.type_ids == r["type_ids"]


@pytest.mark.parametrize("name", NAMES)
def test_encode_batch_matches_reference(name):
    tok = ingot.Tokenizer.from_file(TEXT / f"{name}.tokenizer.json")
    n = 0
    for r in reference(name, "batch", 40):
        if r.get("padding") != "longest" or r.get("pairs"):
            continue
        encs = tok.encode_batch(r["texts"], padding=True, max_length=r.get("truncation"))
        assert [e.ids for e in encs] == r["ids"]
        assert [e.attention_mask for e in encs] == r["attention_mask"]
        n += 1
    assert n > 0


def test_batch_padding_and_pairs():
    tok = ingot.Tokenizer.from_file(TEXT / "wordpiece.tokenizer.json")
    a, b = tok.encode_batch(["short", "a much longer text than that"], ["x", "y"])
    assert len(a) == len(b)
    assert a.attention_mask[-1] == 0 and b.attention_mask[-1] == 1
    assert 1 in a.type_ids
    (c, d) = tok.encode_batch(["short", "a much longer text"], padding=False)
    assert len(c) < len(d)
    with pytest.raises(ingot.InvalidArgument, match="1 pairs for 2 texts"):
        tok.encode_batch(["a", "b"], ["x"])


def test_vocab_helpers_and_errors():
    tok = ingot.Tokenizer.from_file(TEXT / "wordpiece.tokenizer.json")
    assert tok.get_vocab_size() == tok.vocab_size == 3000
    assert tok.token_to_id("[CLS]") == 2 and tok.id_to_token(2) == "[CLS]"
    assert tok.token_to_id("no-such-token-here") is None and tok.id_to_token(10**6) is None
    assert tok.decode([2, 3], skip_special_tokens=False) == "[CLS] [SEP]"
    plain, full = tok.encode("hello world", add_special_tokens=False), tok.encode("hello world")
    assert full.tokens == ["[CLS]"] + plain.tokens + ["[SEP]"]
    with pytest.raises(ingot.Error, match="nothere.json"):
        ingot.Tokenizer.from_file("nothere.json")
    with pytest.raises(ingot.Error):
        tok.decode([10**6])
