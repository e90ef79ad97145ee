#!/usr/bin/env python3
"""Trains small tokenizers with Hugging Face `tokenizers` (no hub) and records reference encodings.

Run where `tokenizers` is installed (the GPU machine):
  python3 scripts/make_tokenizer_fixtures.py --out tests/text

Writes, per tokenizer NAME in {wordpiece, bpe_roberta, bpe_gpt2}:
  NAME.tokenizer.json        the tokenizer as Hugging Face saves it
  NAME.reference.jsonl       one JSON object per case: inputs, options and the expected encoding
and wordpiece.vocab.txt (a BERT vocab file), corpus.jsonl (the test corpus: one text per line).
Training text is the docstrings of Python's standard library; the test corpus is other
docstring lines plus Unicode edge cases (accents, CJK, emoji, control characters, very long
words, empty lines).
"""
import argparse
import ast
import json
import os
import random
import sysconfig

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers


def stdlib_docstrings():
    root = sysconfig.get_paths()["stdlib"]
    texts = []
    for dirpath, _, files in sorted(os.walk(root)):
        if "site-packages" in dirpath or "test" in dirpath:
            continue
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            try:
                tree = ast.parse(open(os.path.join(dirpath, f), encoding="utf-8").read())
            except Exception:
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    d = ast.get_docstring(node)
                    if d:
                        texts.append(d)
    return texts


EDGE_CASES = [
    "", " ", "   leading and trailing spaces   ", "\t tabs\tand\nnewlines\r\n",
    "Café naïve résumé Ångström façade jalapeño", "ÉCOLE ÉLÉMENTAIRE", "Crème Brûlée à la mode",
    "e\u0301 combining acute, n\u0303 combining tilde", "ﬁ ligature, ＦＵＬＬＷＩＤＴＨ letters",
    "中文字符测试，这是一个句子。", "日本語のテキストとカタカナ", "한국어 문장입니다", "混合 English 和中文 words",
    "emoji 👍 👍🏽 👨‍👩‍👧 🇫🇷 ❤️ 🤖", "math ∑ ∫ √ ≤ ≥ ≠ ∞ π", "arrows → ← ↑ ↓ ⇒",
    "control\x00char\x01s\x1f here", "zero\u200bwidth\u200cjoin\u200dchars", "\ufeffbyte order mark",
    "soft\u00adhyphen", "non\u00a0breaking\u2009thin space", "line\u2028separator",
    "a" * 300, "supercalifragilisticexpialidocious" * 5, "x" * 99 + " " + "y" * 100 + " " + "z" * 101,
    "don't won't it's y'all o'clock", "e-mail co-operate state-of-the-art", "U.S.A. e.g. i.e. etc...",
    "!!!???...,,,;;;:::", "(parentheses) [brackets] {braces} <angles>", "\"quotes\" 'single' «guillemets» „low“",
    "numbers 3.14159 1,000,000 -42 +7 1e-10 0x1F", "email@example.com https://example.org/path?q=1&r=2",
    "C++ C# F# .NET node.js", "snake_case camelCase PascalCase kebab-case", "ALL CAPS SHOUTING",
    "العربية نص من اليمين إلى اليسار", "עברית טקסט", "Ελληνικά κείμενο", "Русский текст с буквой ё",
    "हिन्दी पाठ", "ภาษาไทย", "Tiếng Việt có dấu", "İstanbul ıi Iİ",
    "[CLS] [SEP] [MASK] [PAD] [UNK] literal specials", "<s> </s> <pad> <unk> <mask> literal specials",
    "    ", "\n", "a\u3000ideographic space", "wide　ｃｈａｒｓ", "ℌ𝔢𝔩𝔩𝔬 𝕨𝕠𝕣𝕝𝕕", "tab\tseparated\tvalues",
]


def build_wordpiece(train_texts, vocab_size):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials)
    tok.train_from_iterator(train_texts, trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tok


def build_bpe(train_texts, vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(train_texts, trainer)
    return tok


def record(tok, corpus, path, pad_token, pad_id):
    rng = random.Random(7)
    with open(path, "w", encoding="utf-8") as f:
        def out(case, enc):
            case.update(ids=enc.ids, type_ids=enc.type_ids, attention_mask=enc.attention_mask, tokens=enc.tokens)
            case["decoded"] = tok.decode(enc.ids, skip_special_tokens=True)
            f.write(json.dumps(case, ensure_ascii=False) + "\n")

        tok.no_truncation()
        tok.no_padding()
        for i, text in enumerate(corpus):
            out({"kind": "single", "text": text}, tok.encode(text))
        for i in range(0, len(corpus) - 1, 7):
            out({"kind": "pair", "text": corpus[i], "pair": corpus[i + 1]}, tok.encode(corpus[i], corpus[i + 1]))
        # Truncation and padding, one by one and as batches.
        for max_len in (8, 32):
            tok.enable_truncation(max_length=max_len)
            for i in range(0, len(corpus), 13):
                out({"kind": "single", "text": corpus[i], "truncation": max_len}, tok.encode(corpus[i]))
            for i in range(0, len(corpus) - 1, 29):
                out({"kind": "pair", "text": corpus[i], "pair": corpus[i + 1], "truncation": max_len},
                    tok.encode(corpus[i], corpus[i + 1]))
            tok.no_truncation()
        tok.enable_padding(pad_id=pad_id, pad_token=pad_token)
        tok.enable_truncation(max_length=48)
        for b in range(40):
            batch = [corpus[rng.randrange(len(corpus))] for _ in range(rng.randint(1, 6))]
            encs = tok.encode_batch(batch)
            f.write(json.dumps({"kind": "batch", "texts": batch, "truncation": 48, "padding": "longest",
                                "ids": [e.ids for e in encs], "type_ids": [e.type_ids for e in encs],
                                "attention_mask": [e.attention_mask for e in encs]}, ensure_ascii=False) + "\n")
        tok.no_padding()
        tok.no_truncation()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    docs = stdlib_docstrings()
    rng = random.Random(1234)
    rng.shuffle(docs)
    train, test_docs = docs[: len(docs) * 4 // 5], docs[len(docs) * 4 // 5:]
    lines = [l for d in test_docs for l in d.split("\n")]
    rng.shuffle(lines)
    corpus = EDGE_CASES + lines[:3000]
    with open(os.path.join(args.out, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for t in corpus:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")

    wp = build_wordpiece(train, 3000)
    wp.save(os.path.join(args.out, "wordpiece.tokenizer.json"))
    vocab = sorted(wp.get_vocab().items(), key=lambda kv: kv[1])
    with open(os.path.join(args.out, "wordpiece.vocab.txt"), "w", encoding="utf-8") as f:
        for token, _ in vocab:
            f.write(token + "\n")
    record(wp, corpus, os.path.join(args.out, "wordpiece.reference.jsonl"), "[PAD]", wp.token_to_id("[PAD]"))

    bpe = build_bpe(train, 3000)
    bos, eos = bpe.token_to_id("<s>"), bpe.token_to_id("</s>")
    bpe.post_processor = processors.RobertaProcessing(("</s>", eos), ("<s>", bos), trim_offsets=True,
                                                      add_prefix_space=False)
    bpe.save(os.path.join(args.out, "bpe_roberta.tokenizer.json"))
    record(bpe, corpus, os.path.join(args.out, "bpe_roberta.reference.jsonl"), "<pad>", bpe.token_to_id("<pad>"))

    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    bpe.save(os.path.join(args.out, "bpe_gpt2.tokenizer.json"))
    record(bpe, corpus, os.path.join(args.out, "bpe_gpt2.reference.jsonl"), "<pad>", bpe.token_to_id("<pad>"))
    for f in sorted(os.listdir(args.out)):
        print(f, os.path.getsize(os.path.join(args.out, f)))


if __name__ == "__main__":
    main()
