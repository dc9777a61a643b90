"""A tiny causal language model made on the spot, for tests that need a real model server
(``transformers serve``) without downloading anything: a two-layer Llama with seeded random
weights and a byte-level BPE tokenizer trained here, saved as a folder any transformers
tool can load.

It answers nonsense, but the same nonsense every time at temperature 0, which is what an
end-to-end test of the client and the runner needs. Needs ``torch``, ``transformers`` and
``tokenizers``; callers skip when they are missing.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}{{ eos_token }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
"""Each turn under its role, ended by the end-of-sequence token: the server renders the
prompt with it, and a model that emits the token ends its reply."""

VOCAB_SIZE = 512
SEED = 1234

ASCII = "".join(chr(code) for code in range(32, 127)) + "\t\n"
"""The characters the tokenizer knows: printable ASCII, tab and newline."""

VOCABULARY = (
    "def return if else elif for while in not and or is None True False assert lambda "
    "import from class self print len range list dict set tuple str int float sorted "
    "the a of to value output input function call program answer what does this return "
    "given assertion complete following code step by trace line variable loop"
)
WORDS = VOCABULARY.split()
PUNCTUATION = ["(", ")", "[", "]", "{", "}", ":", ",", ".", " == ", " = ", " + ", " - ",
               "'", '"', "\n", "\n    ", "??", "[ANSWER]", "[/ANSWER]"]


def training_text(lines: int = 2000, seed: int = SEED) -> list[str]:
    """Seeded lines of Python-ish words, digits and punctuation, and one line with every
    ``ASCII`` character: merges that fit the suites' prompts, and the same lines every
    time, so the tokenizer is the same every time."""
    rng = random.Random(seed)
    pieces = WORDS + PUNCTUATION + [str(n) for n in range(20)]
    return [ASCII] + [
        "".join(rng.choice(pieces) + rng.choice(["", " "]) for _ in range(rng.randint(4, 16)))
        for _ in range(lines)]


def make_tokenizer(folder: Path) -> Any:
    """A byte-level BPE tokenizer (a ``PreTrainedTokenizerFast``) trained on
    ``training_text``, with bos, eos and pad tokens and ``CHAT_TEMPLATE``, saved into
    ``folder``.

    Its alphabet is the training text's characters (``ASCII``), not all 256 bytes, so
    every token is whole characters and any tokens the random model picks decode to valid
    text. With lone bytes of multi-byte characters in the vocabulary, a reply cut at its
    token limit could end in part of a character, which ``transformers serve`` shows as
    U+FFFD in a whole reply but holds back, and so drops, at the end of a stream: the
    same reply would read differently streamed. Characters outside the alphabet are left
    out of the encoding, which does not matter to a test model."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=[PAD, BOS, EOS],
                                  show_progress=False)
    core.train_from_iterator(training_text(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, bos_token=BOS, eos_token=EOS,
                                        pad_token=PAD)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    return tokenizer


def make_tiny_llm(folder: Path) -> Path:
    """Write a two-layer Llama (hidden size 64, two heads of 32) with weights drawn from a
    seeded generator, and its tokenizer, into ``folder``; return the folder. Takes a second
    or two on a CPU.

    Its generation config samples (temperature 1), as many chat models' do, so a server
    that ignored a request's temperature 0 would answer differently each time: a test of
    determinism then shows that the server decodes greedily when asked to."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(folder)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, head_dim=32,
        max_position_embeddings=4096, tie_word_embeddings=True, initializer_range=0.5,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id)
    # Seeded weights: the same model, so the same greedy replies, in every test session.
    # The default initialisation scale gives near-uniform logits, where greedy decoding
    # hangs on tiny margins; a larger one gives clear preferences between tokens, yet
    # still a spread that sampling at temperature 1 almost never reproduces greedily.
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, do_sample=True, temperature=1.0, top_k=0)
    model.save_pretrained(folder)
    return folder
