#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a small llama-architecture GGUF with random F32 weights, for timing llama-server
without downloading a model: the text is noise, the compute is real.

Uses gguf-py from the same llama.cpp release (put its directory on PYTHONPATH) and numpy
(Debian python3-numpy). The vocabulary is SentencePiece-style: control tokens, the byte tokens
<0x00>..<0x7F> (so every piece the server detokenizes is valid UTF-8), printable ASCII with and
without the word-start mark, a few whole words, a ChatML template and an EOS token. Every token
string is unique (llama.cpp refuses a vocabulary with duplicates).

  PYTHONPATH=llama.cpp/gguf-py python3 make_model.py --out model.gguf
"""
import argparse
import sys

try:
    import numpy as np
except ImportError:
    sys.exit("make_model.py: numpy is missing (Debian: apt-get install python3-numpy)")
try:
    import gguf
except ImportError:
    sys.exit("make_model.py: gguf-py is missing: put llama.cpp's gguf-py directory on PYTHONPATH")

CHATML = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
WORD = "\u2581"  # SentencePiece's word-start mark
WORDS = ["the", "hello", "world", "token", "time", "server", "request", "model"]


def vocabulary():
    """(pieces, scores, types): SPM pieces, merge scores (longer pieces score higher, so
    SentencePiece merges up to them), gguf token types."""
    T = gguf.TokenType
    pieces, scores, types = [], [], []

    def add(piece, score, kind):
        pieces.append(piece)
        scores.append(score)
        types.append(kind)

    add("<unk>", 0.0, T.UNKNOWN)
    add("<s>", 0.0, T.CONTROL)
    add("</s>", 0.0, T.CONTROL)
    add("<|im_start|>", 0.0, T.CONTROL)
    add("<|im_end|>", 0.0, T.CONTROL)
    for b in range(0x80):
        add(f"<0x{b:02X}>", 0.0, T.BYTE)
    add(WORD, -1.0, T.NORMAL)
    for c in range(0x21, 0x7F):
        add(chr(c), -2.0, T.NORMAL)
        add(WORD + chr(c), -1.5, T.NORMAL)
    for w in WORDS:
        # Every prefix of the word, so that merging pairs reaches the whole word.
        for n in range(2, len(w) + 1):
            if WORD + w[:n] not in pieces:
                add(WORD + w[:n], float(n), T.NORMAL)
            if n > 2 and w[:n] not in pieces:
                add(w[:n], float(n) - 0.5, T.NORMAL)
    assert len(set(pieces)) == len(pieces), "duplicate token strings"
    return pieces, scores, types


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the GGUF file to write")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--width", type=int, default=256, help="embedding length")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=512, help="feed-forward length")
    ap.add_argument("--context", type=int, default=4096, help="training context length")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.width % a.heads:
        sys.exit("make_model.py: --width must be a multiple of --heads")

    pieces, scores, types = vocabulary()
    rng = np.random.default_rng(a.seed)

    def weights(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("tokchron-random-llama")
    w.add_context_length(a.context)
    w.add_embedding_length(a.width)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ffn)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.heads)
    w.add_rope_dimension_count(a.width // a.heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(pieces)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(pieces.index("<|im_end|>"))
    w.add_add_bos_token(True)
    w.add_chat_template(CHATML)

    n_vocab = len(pieces)
    # numpy shapes are (rows, columns); gguf stores them reversed, as llama.cpp expects.
    w.add_tensor("token_embd.weight", weights(n_vocab, a.width))
    w.add_tensor("output_norm.weight", np.ones(a.width, dtype=np.float32))
    w.add_tensor("output.weight", weights(n_vocab, a.width))
    for i in range(a.layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(a.width, dtype=np.float32))
        for t in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(p + t + ".weight", weights(a.width, a.width))
        w.add_tensor(p + "ffn_norm.weight", np.ones(a.width, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", weights(a.ffn, a.width))
        w.add_tensor(p + "ffn_up.weight", weights(a.ffn, a.width))
        w.add_tensor(p + "ffn_down.weight", weights(a.width, a.ffn))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"make_model.py: wrote {a.out}: llama, {a.layers} layers, width {a.width}, "
          f"{n_vocab} tokens")


if __name__ == "__main__":
    main()
