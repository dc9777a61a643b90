"""Model names, environment configuration and .env loading."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from execbench.models import get_model
from execbench.models.anthropic import AnthropicModel
from execbench.models.base import GenerateConfig, ModelError, Request
from execbench.models.openai import OpenAIModel
from tests.fakeserver import FakeServer, Reply

ENV_VARS = [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "MY_SERVER_BASE_URL",
    "MY_SERVER_API_KEY",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Start from no provider settings and an empty working directory.

    Setting before deleting makes monkeypatch restore the original state afterwards, which
    also undoes whatever a test's .env file added to the environment.
    """
    for var in ENV_VARS:
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    monkeypatch.chdir(tmp_path)


def test_openai_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    model = get_model("openai/gpt-4o-mini")
    assert isinstance(model, OpenAIModel)
    assert model.name == "openai/gpt-4o-mini" and model.model == "gpt-4o-mini"
    assert model.urls == ["https://api.openai.com/v1/chat/completions"]
    assert model.headers == {"authorization": "Bearer sk-1"}


def test_openai_base_url_from_env_and_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://proxy.example/v1/")
    assert get_model("openai/gpt-4o").urls == ["https://proxy.example/v1/chat/completions"]
    model = get_model("openai/gpt-4o", base_url="http://localhost:9/v1")
    assert model.urls == ["http://localhost:9/v1/chat/completions"]


def test_missing_keys_name_the_variable() -> None:
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        get_model("openai/gpt-4o")
    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY"):
        get_model("anthropic/claude-sonnet-4-5")


def test_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-1")
    model = get_model("anthropic/claude-sonnet-4-5")
    assert isinstance(model, AnthropicModel) and model.model == "claude-sonnet-4-5"
    assert model.urls == ["https://api.anthropic.com/v1/messages"]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://gateway.local")
    assert get_model("anthropic/claude").urls == ["http://gateway.local/v1/messages"]


def test_openai_compatible_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVER_BASE_URL", "http://localhost:8000/v1")
    model = get_model("openai-api/my-server/Qwen/Qwen2.5-7B-Instruct")
    assert isinstance(model, OpenAIModel)
    assert model.model == "Qwen/Qwen2.5-7B-Instruct"
    assert model.urls == ["http://localhost:8000/v1/chat/completions"]
    assert model.headers == {}, "local servers need no key"
    monkeypatch.setenv("MY_SERVER_API_KEY", "local-key")
    assert get_model("openai-api/my-server/m").headers == {"authorization": "Bearer local-key"}


def test_openai_compatible_server_needs_a_url() -> None:
    with pytest.raises(ModelError) as error:
        get_model("openai-api/my-server/model")
    assert str(error.value) == (
        "openai-api/my-server/... needs --model-base-url or MY_SERVER_BASE_URL"
    )
    assert get_model("openai-api/my-server/model", base_url="http://h:1/v1").urls == [
        "http://h:1/v1/chat/completions"
    ]


def test_registry_model_talks_to_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    request = Request(messages=[{"role": "user", "content": "hi"}], instance={}, sample=0)

    async def go(name: str):
        model = get_model(name)
        try:
            return await model.generate(request, GenerateConfig())
        finally:
            await model.aclose()

    with FakeServer(lambda body, attempt: Reply(text="hello")) as server:
        monkeypatch.setenv("LOCAL_BASE_URL", server.base_url)
        gen = asyncio.run(go("openai-api/local/tiny"))
        assert server.requests[0].body["model"] == "tiny"
    assert gen.text == "hello"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("gpt-4o", "must be provider/model; providers: openai, openai-api, anthropic"),
        ("mistral/large", "unknown model provider 'mistral'.*providers: openai, openai-api"),
        ("openai/", "must look like openai/<model>"),
        ("openai-api/only-name", "must look like openai-api/<name>/<model>"),
    ],
)
def test_bad_names(name: str, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        get_model(name)


def test_bad_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    with pytest.raises(ModelError, match="must start with http"):
        get_model("openai/gpt-4o", base_url="localhost:8000")


def test_model_args_are_request_fields_checked_where_the_api_lists_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """-M once was refused for every HTTP model; now it adds request fields. The official
    APIs publish theirs, so a misspelt one is refused by name; OpenAI-compatible servers
    take fields of their own (vLLM's top_k, chat_template_kwargs), so theirs pass as given."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-1")
    model = get_model("openai/o3", model_args={"reasoning_effort": "high"})
    assert model.extra_fields == {"reasoning_effort": "high"}
    with pytest.raises(ModelError) as error:
        get_model("openai/gpt-4o", model_args={"reasoning_efort": "high", "top_k": "5"})
    message = str(error.value)
    assert message.startswith("openai/gpt-4o has no documented request field reasoning_efort, "
                              "top_k; -M takes audio, frequency_penalty,")
    assert "temperature" not in message, "fields the run sets itself are not offered"
    assert get_model("anthropic/claude", model_args={"top_k": "5"}).extra_fields == {"top_k": 5}
    with pytest.raises(ModelError, match="anthropic/claude has no documented request field "
                                         "min_p; -M takes container,"):
        get_model("anthropic/claude", model_args={"min_p": "0.1"})
    served = get_model("openai-api/vllm/m", base_url="http://h:1/v1",
                       model_args={"min_p": "0.1", "chat_template_kwargs": '{"a": true}'})
    assert served.extra_fields == {"min_p": 0.1, "chat_template_kwargs": {"a": True}}


def test_reference_models_take_only_their_own_options() -> None:
    from execbench.models.reference import ConstantModel, OracleModel

    assert isinstance(get_model("reference/oracle"), OracleModel)
    assert get_model("reference/constant", model_args={"answer": "x"}).answer == "x"
    with pytest.raises(ModelError, match=r"reference/oracle does not take model arguments "
                                         r"\['accuracy'\]"):
        get_model("reference/oracle", model_args={"accuracy": "0.5"})
    assert isinstance(get_model("reference/constant"), ConstantModel)


def test_a_misspelt_name_gets_the_closest_known_one() -> None:
    with pytest.raises(ModelError) as error:
        get_model("reference/oracel")
    assert str(error.value) == (
        "unknown reference model 'oracel'; did you mean 'oracle'? known reference models: "
        "oracle, constant, random-category, original, shortcut")
    with pytest.raises(ModelError, match="unknown model provider 'opneai'; did you mean "
                                         "'openai'?"):
        get_model("opneai/gpt-4o")


def test_naming_a_provider_imports_only_that_provider() -> None:
    """The HTTP client is the slow import: a reference model, or the command line, must
    not pay for it."""
    import subprocess

    code = ("import sys, execbench.cli, execbench.models as m; m.get_model('reference/oracle'); "
            "print(sorted({'aiohttp', 'execbench.models.openai', 'execbench.models.managed'} "
            "& set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_keys_load_from_dotenv_in_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\nMY_SERVER_BASE_URL=http://h:2\n")
    assert get_model("openai/gpt-4o").headers == {"authorization": "Bearer sk-from-dotenv"}
    assert get_model("openai-api/my-server/m").urls == ["http://h:2/chat/completions"]


def test_environment_wins_over_dotenv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    assert get_model("openai/gpt-4o").headers == {"authorization": "Bearer sk-from-env"}


def test_several_base_urls_are_replicas() -> None:
    model = get_model("openai-api/my-server/m", base_url="http://a:1/v1, http://b:2/v1")
    assert model.urls == ["http://a:1/v1/chat/completions", "http://b:2/v1/chat/completions"]
    with pytest.raises(ModelError, match="base URL 'b:2' must start with http"):
        get_model("openai-api/my-server/m", base_url="http://a:1/v1,b:2")
    with pytest.raises(ModelError, match="a base URL is listed twice"):
        get_model("openai-api/my-server/m", base_url="http://a:1/v1,http://a:1/v1")


def test_each_provider_states_its_sampling_defaults() -> None:
    """The same model through two providers is decoded differently unless the run sets
    the sampling: each provider says what it uses for what is left unset."""
    from execbench.models import sampling_defaults

    hf = sampling_defaults("hf/Qwen/Qwen2.5-0.5B")
    served = sampling_defaults("openai-api/vllm/Qwen/Qwen2.5-0.5B")
    assert set(hf) == set(served) == {"temperature", "top_p", "max_tokens"}
    assert hf["temperature"].startswith("0: greedy")
    assert "generation_config.json" in served["temperature"]
    assert sampling_defaults("vllm/Qwen/Qwen2.5-0.5B") == served
    assert sampling_defaults("anthropic/claude-x")["max_tokens"].startswith("4096")
    assert sampling_defaults("openai/gpt-4o")["temperature"].startswith("1")
    assert sampling_defaults("reference/oracle") == {}
