"""The tiny Llama of ``tiny_llm.py`` as a GGUF file, for a llama.cpp server in the tests
(``tests/models/test_llama_cpp_real.py``; the "llama.cpp" section of
docs/models-and-servers.md says how to run one).

It is converted by llama.cpp's own ``convert_hf_to_gguf.py`` (shipped in the
``llama-cpp-python`` source archive under ``vendor/llama.cpp``, with its ``gguf-py``), with
two things set aside that this model does not need and that would need packages or a
network: the converter knows a BPE pre-tokenizer by a hash of its output, and one trained
on the spot is in no list (it is taken as llama.cpp's default, a byte-level split); and it
imports ``mistral_common`` and ``sentencepiece`` for other models' tokenizers (stand-ins
let it load, and the byte-level BPE vocabulary is read directly).

    python -m tests.helpers.tiny_gguf OUT.gguf --llama-cpp DIR

Needs torch and transformers (``execbench[serve]``).
"""

from __future__ import annotations

import argparse
import runpy
import sys
import tempfile
import types
from pathlib import Path

STAND_INS = {
    "mistral_common": [], "mistral_common.tokens": [],
    "mistral_common.tokens.tokenizers": [],
    "mistral_common.tokens.tokenizers.base": ["TokenizerVersion"],
    "mistral_common.tokens.tokenizers.multimodal": ["DATASET_MEAN", "DATASET_STD"],
    "mistral_common.tokens.tokenizers.tekken": ["Tekkenizer"],
    "mistral_common.tokens.tokenizers.sentencepiece": ["SentencePieceTokenizer"],
}
"""What the converter imports from ``mistral_common`` at its top."""


def convert(model_dir: Path, out: Path, llama_cpp: Path) -> Path:
    """Write ``model_dir`` (a transformers Llama folder) to ``out`` as float32 GGUF."""
    import transformers  # noqa: F401 - before the stand-ins, which it would take as real

    sys.path.insert(0, str(llama_cpp / "gguf-py"))
    for name, names in STAND_INS.items():
        module = sys.modules[name] = types.ModuleType(name)
        for attr in names:
            setattr(module, attr, type(attr, (), {}))
    try:
        converter = runpy.run_path(str(llama_cpp / "convert_hf_to_gguf.py"),
                                   run_name="convert_hf_to_gguf")
    finally:
        for name in STAND_INS:
            sys.modules.pop(name, None)
    converter["TextModel"].get_vocab_base_pre = lambda self, tokenizer: "default"
    converter["LlamaModel"].set_vocab = lambda self: self._set_vocab_gpt2()
    argv = sys.argv
    sys.argv = ["convert_hf_to_gguf.py", str(model_dir), "--outfile", str(out),
                "--outtype", "f32"]
    try:
        converter["main"]()
    finally:
        sys.argv = argv
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the .gguf file to write")
    parser.add_argument("--llama-cpp", type=Path, required=True,
                        help="llama.cpp's source folder (convert_hf_to_gguf.py, gguf-py)")
    args = parser.parse_args()
    from tests.helpers.tiny_llm import make_tiny_llm

    with tempfile.TemporaryDirectory() as folder:
        model = make_tiny_llm(Path(folder) / "tiny-llama")
        convert(model, args.out, args.llama_cpp)


if __name__ == "__main__":
    main()
