"""``hf/<model>``: a Hugging Face causal language model run in this process with transformers.

Requests that arrive together are generated as one left-padded batch, so a run with
``--max-connections 16`` keeps the accelerator busy without a server. Decoding is greedy
unless ``--temperature`` is above 0 (as in other harnesses' local backends, whatever the
model's ``generation_config`` prefers), and greedy text is the same batched or alone.
Sampling with a seed (``--seed``) generates each seeded sample on its own after seeding
torch, because one batch shares one random stream: reproducibility costs batching there.
The runner refuses before generation a prompt that cannot fit the context with
``--max-tokens`` (:meth:`HFModel.context`, :mod:`execbench.context_check`); here, a prompt
that leaves no room in the model's context for the answer is an error for that request
only, and otherwise the answer is capped to the room left (without ``--max-tokens``).

torch and transformers are the ``hf`` extra and are imported only when such a model is
asked for. Weights load on the first request, in the generation thread, so naming the model
(which the runner does once to check the name) costs only reading its config.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from execbench.models.base import (
    ContextWindow,
    CountError,
    GenerateConfig,
    Generation,
    ModelBase,
    ModelError,
    Request,
)
from execbench.models.provider import ModelKind, Provider

DEFAULT_MAX_NEW_TOKENS = 1024
"""Used when ``--max-tokens`` is not given: a model has no server default to fall back on."""
_ARGS = {"device", "dtype", "batch_size"}
_DTYPES = ("auto", "float32", "float16", "bfloat16")


def _import() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ModelError(f"hf/... models need the hf extra ({exc.name} is missing): "
                         "pip install 'execbench[hf]'") from None
    return torch, transformers


class HFModel(ModelBase):
    """One model and tokenizer; generation runs in one thread, one batch at a time."""

    def __init__(self, name: str, path: str, args: dict[str, str]) -> None:
        unknown = sorted(set(args) - _ARGS)
        if unknown:
            raise ModelError(f"hf models take model args {', '.join(sorted(_ARGS))}; "
                             f"unknown: {', '.join(unknown)}")
        self.torch, self.transformers = _import()
        self.name = name
        self.path = path
        self.dtype = args.get("dtype", "auto")
        if self.dtype not in _DTYPES:
            raise ModelError(f"-M dtype must be one of {', '.join(_DTYPES)}, not {self.dtype!r}")
        try:
            self.batch_size = int(args.get("batch_size", "8"))
        except ValueError:
            self.batch_size = 0
        if self.batch_size < 1:
            raise ModelError(f"-M batch_size must be a positive integer, "
                             f"not {args['batch_size']!r}")
        self.device = args.get("device") or ("cuda" if self.torch.cuda.is_available() else "cpu")
        self.transformers.utils.logging.disable_progress_bar()
        try:
            self.config = self.transformers.AutoConfig.from_pretrained(path)
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelError(f"cannot load {name}: {first}") from None
        self._loaded: tuple[Any, Any] | None = None
        self._tokenizer: Any = None
        self._load_error: str | None = None
        self._load_lock = threading.Lock()
        self._pending: list[tuple[Request, GenerateConfig, asyncio.Future]] = []
        self._drainer: asyncio.Task | None = None

    # -- loading -----------------------------------------------------------------------------

    def _load(self) -> tuple[Any, Any]:
        """Tokenizer and model, loaded once; a failure is kept and reported for every request."""
        with self._load_lock:
            if self._loaded is None and self._load_error is None:
                try:
                    tokenizer = self._tokenizer or self._load_tokenizer()
                    model = self.transformers.AutoModelForCausalLM.from_pretrained(
                        self.path, dtype=self.dtype).to(self.device)
                    model.eval()
                    self._loaded = tokenizer, model
                except Exception as exc:  # noqa: BLE001 - errors are data (see Generation)
                    self._load_error = f"cannot load {self.name}: {type(exc).__name__}: {exc}"
            if self._load_error is not None:
                raise RuntimeError(self._load_error)
            return self._loaded

    def _load_tokenizer(self) -> Any:
        tokenizer = self.transformers.AutoTokenizer.from_pretrained(self.path)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._tokenizer = tokenizer
        return tokenizer

    # -- the context ---------------------------------------------------------------------------

    async def context(self) -> ContextWindow | None:
        """``max_position_embeddings`` of the model's config, counted with its tokenizer
        and chat template as generation prompts them."""
        length = _context_length(self.config)
        return None if length is None else ContextWindow(
            length, "max_position_embeddings in the model's config",
            "the model's tokenizer and chat template")

    async def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """The prompt's tokens as :meth:`_generate_batch` makes them; loads only the
        tokenizer (the weights wait for the first request)."""
        try:
            with self._load_lock:
                tokenizer = self._tokenizer or self._load_tokenizer()
        except Exception as exc:  # noqa: BLE001 - then the prompt is sent unchecked
            raise CountError(f"cannot load the tokenizer of {self.name}: "
                             f"{type(exc).__name__}: {exc}") from None
        return len(tokenizer(self._prompt(tokenizer, messages),
                             add_special_tokens=False)["input_ids"])

    # -- batching ----------------------------------------------------------------------------

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        future: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self._pending.append((request, config, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        """Generate what is pending, one batch at a time, until nothing is left."""
        while self._pending:
            await asyncio.sleep(0)  # let requests issued in the same tick join the batch
            batch = self._take_batch()
            if not batch:
                break
            try:
                results = await asyncio.to_thread(self._generate_batch, batch)
            except Exception as exc:  # noqa: BLE001 - every request of the batch fails
                error = str(exc) if isinstance(exc, RuntimeError) else \
                    f"{type(exc).__name__}: {exc}"
                results = [Generation(text=None, error=error) for _ in batch]
            for (_, _, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)

    def _take_batch(self) -> list[tuple[Request, GenerateConfig, asyncio.Future]]:
        """The first pending request and those that may share its batch."""
        self._pending = [item for item in self._pending if not item[2].done()]  # cancelled
        if not self._pending:
            return []
        first = self._pending[0]
        if self._sampling_seed(*first[:2]) is not None:
            batch = [first]
        else:
            batch = [item for item in self._pending
                     if item[1] == first[1] and self._sampling_seed(*item[:2]) is None]
            batch = batch[:self.batch_size]
        chosen = {id(item) for item in batch}
        self._pending = [item for item in self._pending if id(item) not in chosen]
        return batch

    def _sampling_seed(self, request: Request, config: GenerateConfig) -> int | None:
        """The seed of a request that samples, or None (greedy, or sampling with no seed)."""
        seed = request.seed if request.seed is not None else config.seed
        return None if seed is None or not self._samples(config) else seed

    @staticmethod
    def _samples(config: GenerateConfig) -> bool:
        return config.temperature is not None and config.temperature > 0

    # -- generation (in the worker thread) ----------------------------------------------------

    def _prompt(self, tokenizer: Any, messages: list[dict[str, str]]) -> str:
        """The chat template when the tokenizer has one; otherwise the turns, one after another."""
        if tokenizer.chat_template:
            return tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                 tokenize=False)
        return "\n\n".join(message["content"] for message in messages) + "\n\n"

    def _generate_batch(self, batch: list[tuple[Request, GenerateConfig, asyncio.Future]]
                        ) -> list[Generation]:
        tokenizer, model = self._load()
        config = batch[0][1]
        wanted = config.max_tokens or DEFAULT_MAX_NEW_TOKENS
        context = _context_length(model.config)
        prompts = [tokenizer(self._prompt(tokenizer, request.messages),
                             add_special_tokens=False)["input_ids"] for request, _, _ in batch]
        results: list[Generation | None] = [None] * len(batch)
        groups: dict[int, list[int]] = {}
        for index, ids in enumerate(prompts):
            room = wanted if context is None else min(wanted, context - len(ids))
            if room < 1:
                results[index] = Generation(text=None, input_tokens=len(ids), error=(
                    f"prompt of {len(ids)} tokens leaves no room in the model's context "
                    f"of {context} tokens"))
            else:
                groups.setdefault(room, []).append(index)
        for room, rows in groups.items():  # rows share a cap, so batching changes no text
            for index, generation in zip(rows, self._generate(
                    tokenizer, model, [prompts[i] for i in rows], room, config,
                    self._sampling_seed(*batch[rows[0]][:2])), strict=True):
                results[index] = generation
        return results

    def _generate(self, tokenizer: Any, model: Any, prompts: list[list[int]], room: int,
                  config: GenerateConfig, seed: int | None) -> list[Generation]:
        torch = self.torch
        start = time.perf_counter()
        padded = tokenizer.pad({"input_ids": prompts}, return_tensors="pt")
        options: dict[str, Any] = {
            "max_new_tokens": room,
            "pad_token_id": tokenizer.pad_token_id,
            "do_sample": self._samples(config),
        }
        if options["do_sample"]:
            options["temperature"] = config.temperature
            if config.top_p is not None:
                options["top_p"] = config.top_p
        else:  # greedy: the model's sampling defaults do not apply
            options.update(temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            if seed is not None:
                torch.manual_seed(seed)
            output = model.generate(input_ids=padded["input_ids"].to(self.device),
                                    attention_mask=padded["attention_mask"].to(self.device),
                                    **options)
        latency = time.perf_counter() - start
        width = padded["input_ids"].shape[1]
        stops = _stop_ids(model, tokenizer)
        results = []
        for row, ids in zip(output, prompts, strict=True):
            new = row[width:].tolist()
            end = next((i for i, token in enumerate(new) if token in stops), None)
            kept = new if end is None else new[:end]
            results.append(Generation(
                text=tokenizer.decode(kept, skip_special_tokens=True),
                input_tokens=len(ids),
                output_tokens=len(kept) + (end is not None),
                latency=latency,
                extra={"finish_reason": "length" if end is None else "stop"},
            ))
        return results

    async def aclose(self) -> None:
        self._loaded = None
        if self.device.startswith("cuda"):
            self.torch.cuda.empty_cache()


def _context_length(config: Any) -> int | None:
    """Positions the model can attend to, when its config says (most causal LMs do)."""
    value = getattr(config, "max_position_embeddings", None)
    return value if isinstance(value, int) and value > 0 else None


def _stop_ids(model: Any, tokenizer: Any) -> set[int]:
    """Token ids that end an answer: the generation config's EOS ids and the tokenizer's."""
    configured = model.generation_config.eos_token_id
    ids = set(configured if isinstance(configured, list) else [configured])
    ids.add(tokenizer.eos_token_id)
    ids.discard(None)
    return ids


def _create(name: str, path: str, base_url: str | None, args: dict[str, str]) -> HFModel:
    if base_url:
        raise ModelError("hf models run in this process and take no --model-base-url")
    return HFModel(name, path, args)


PROVIDER = Provider(_create, (ModelKind(
    "hf/<hub id or folder>", "transformers in this process (the hf extra)", "",
    "device=cuda|cpu, dtype=auto|float32|float16|bfloat16, batch_size=N"),),
    (("temperature", "0: greedy, whatever the model's generation_config.json says"),
     ("top_p", "not used when greedy"),
     ("max_tokens", f"{DEFAULT_MAX_NEW_TOKENS} (capped to what the context leaves)")))
