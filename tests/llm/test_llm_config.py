"""The ``llm:`` section of a config file (issue 17): schema, defaults from the
environment, the key never in the file, command-line overrides."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from test_llm import ROUTES, server  # noqa: F401 (the loopback LLM server fixture)

from routecore.config import config_schema
from routecore.config.specs import parse_config
from routecore.errors import ConfigError
from routecore.llm.llm import OpenAICompatibleRouter, llm_from_config
from routecore.routers.router import Router
from stubs import StubEncoder, manual, mix, unit

PUBLISHED = Path(__file__).resolve().parents[2] / "schema" / "routecore-config.schema.json"
ROUTES_DOC = [{"name": "A", "utterances": ["a"]}]


def test_no_section_no_llm():
    assert llm_from_config(None, "f.yaml", environ={"OPENAI_BASE_URL": "http://x/v1"}) is None


def test_a_full_section():
    env = {"LOCAL_KEY": "sk-local", "OPENAI_API_KEY": "sk-default"}
    llm = llm_from_config(
        {
            "base_url": "http://127.0.0.1:11434/v1/",
            "model": "qwen2.5",
            "api_key_env": "LOCAL_KEY",
            "timeout": 2.5,
            "max_tokens": 16,
            "temperature": 0.3,
        },
        "f.yaml",
        environ=env,
    )
    assert isinstance(llm, OpenAICompatibleRouter)
    assert (llm.url, llm.model, llm.api_key, llm.timeout, llm.max_tokens, llm.temperature) == (
        "http://127.0.0.1:11434/v1/chat/completions",
        "qwen2.5",
        "sk-local",
        2.5,
        16,
        0.3,
    )


def test_defaults_come_from_the_openai_variables():
    llm = llm_from_config(
        {"model": "gpt-4o-mini"},
        "f.yaml",
        environ={"OPENAI_BASE_URL": "https://api.example.com/v1", "OPENAI_API_KEY": "sk-x"},
    )
    assert (llm.url, llm.api_key, llm.timeout, llm.max_tokens, llm.temperature) == (
        "https://api.example.com/v1/chat/completions",
        "sk-x",
        5.0,
        None,
        0.0,
    )
    assert llm.headers()["Authorization"] == "Bearer sk-x"


@pytest.mark.parametrize("env", [{}, {"OPENAI_API_KEY": ""}])
def test_an_unset_key_variable_sends_no_authorization(env):
    llm = llm_from_config({"model": "m", "base_url": "http://localhost:8080/v1"}, "f.yaml", environ=env)
    assert llm.api_key is None and "Authorization" not in llm.headers()


def test_no_base_url_anywhere_names_the_file():
    with pytest.raises(
        ConfigError, match=r"^routes\.yaml: llm: no base_url, and OPENAI_BASE_URL is not set$"
    ):
        llm_from_config({"model": "m"}, "routes.yaml", environ={})


@pytest.mark.parametrize(
    "section, match",
    [
        ({}, r"^f\.yaml: llm: object missing required field `model`"),
        ({"model": "m", "timeout": 0}, r"^f\.yaml: llm: timeout: expected `float` > 0\.0"),
        ({"model": "m", "timeout": float("inf")}, r"`timeout` must be finite"),
        ({"model": "m", "max_tokens": 0}, r"max_tokens: expected `int` >= 1"),
        ({"model": "m", "base_url": "localhost:8080"}, r"base_url: expected `str` matching regex"),
        ({"model": "m", "temperature": -1}, r"temperature: expected `float` >= 0\.0"),
        ({"model": "m", "url": "http://x"}, r"unknown field `url`"),
    ],
)
def test_bad_sections_are_config_errors(section, match):
    with pytest.raises(ConfigError, match=match):
        llm_from_config(section, "f.yaml", environ={"OPENAI_BASE_URL": "http://x/v1"})


def test_a_key_is_never_accepted_in_the_file_nor_repeated_in_errors():
    with pytest.raises(ConfigError, match="never write a key") as e:
        llm_from_config(
            {"model": "m", "api_key": "sk-secret"}, "f.yaml", environ={"OPENAI_BASE_URL": "http://x/v1"}
        )
    assert "sk-secret" not in str(e.value)
    with pytest.raises(ConfigError, match=r"llm: object contains unknown field `api_key`") as e:
        parse_config({"routes": ROUTES_DOC, "llm": {"model": "m", "api_key": "sk-secret"}}, "f.yaml")
    assert "sk-secret" not in str(e.value)
    with pytest.raises(
        ConfigError, match=r"`api_key_env` must be the name of an environment variable"
    ) as e:  # the key where its name goes
        parse_config({"routes": ROUTES_DOC, "llm": {"model": "m", "api_key_env": "sk-proj-abc123"}}, "f.yaml")
    assert "sk-proj" not in str(e.value)


def test_command_line_overrides():
    env = {"OPENAI_BASE_URL": "http://env/v1"}
    llm = llm_from_config(
        {"model": "m", "base_url": "http://file/v1"},
        "f.yaml",
        base_url="http://flag/v1",
        model="flag-model",
        environ=env,
    )
    assert (llm.url, llm.model) == ("http://flag/v1/chat/completions", "flag-model")
    llm = llm_from_config(
        None, "f.yaml", model="flag-model", environ=env
    )  # --llm-model alone turns the LLM on
    assert (llm.url, llm.model) == ("http://env/v1/chat/completions", "flag-model")
    llm = llm_from_config(
        {"base_url": "http://file/v1"}, "f.yaml", model="flag-model", environ=env
    )  # the flag supplies the model
    assert llm.model == "flag-model"
    with pytest.raises(ConfigError, match="--llm-url needs a model"):
        llm_from_config(None, "f.yaml", base_url="http://flag/v1", environ=env)
    with pytest.raises(ConfigError, match=r"^f\.yaml: llm: LLM base_url must be an http"):
        llm_from_config(None, "f.yaml", base_url="flag:1234", model="m", environ=env)


def test_the_router_class_can_be_chosen():
    from routecore.llm.llm_async import AsyncOpenAICompatibleRouter

    llm = llm_from_config(
        {"model": "m", "base_url": "http://x/v1"},
        "f.yaml",
        router_class=AsyncOpenAICompatibleRouter,
        environ={},
    )
    assert isinstance(llm, AsyncOpenAICompatibleRouter) and llm.native_async


def test_the_published_schema_has_the_section():
    schema = json.loads(PUBLISHED.read_text())
    assert schema == config_schema.json_schema()
    assert schema["$defs"]["LLM"]["required"] == ["model"]
    v = jsonschema.Draft202012Validator(schema)
    v.validate(
        {
            "routes": ROUTES_DOC,
            "llm": {"model": "m", "base_url": "http://localhost:11434/v1", "max_tokens": 8},
        }
    )
    for bad in (
        {"model": "m", "api_key": "sk"},
        {"base_url": "http://x"},
        {"model": "m", "api_key_env": "sk-abc"},
        {"model": "m", "timeout": 0},
    ):
        with pytest.raises(jsonschema.ValidationError):
            v.validate({"routes": ROUTES_DOC, "llm": bad})
        with pytest.raises(ConfigError):
            parse_config({"routes": ROUTES_DOC, "llm": bad}, "f.yaml")


def test_a_yaml_config_routes_through_its_llm(tmp_path, server, monkeypatch):
    monkeypatch.setenv("ROUTECORE_TEST_KEY", "sk-from-env")
    p = tmp_path / "routes.yaml"
    p.write_text(
        "routes:\n"
        + "".join(
            f"  - name: {r.name}\n    utterances: [{r.utterances[0]}]\n    description: {r.description}\n"
            for r in ROUTES
        )
        + f"llm:\n  base_url: {server.url}\n  model: local-model\n"
        "  api_key_env: ROUTECORE_TEST_KEY\n  timeout: 2\n  max_tokens: 32\n"
    )
    server.mode = "ok:RAG"
    enc = StubEncoder({"e0": unit(0), "e1": unit(1), "e2": unit(2), "q": mix(a0=0.6, a1=0.52)})
    r = Router.from_config(p, encoder=enc, policy=manual(bias_rules=(), three_way_within=0.0))
    with r.llm:
        d = r.route("q")
    assert d.used_llm and d.route == "RAG"
    assert server.requests[-1]["model"] == "local-model" and server.requests[-1]["max_tokens"] == 32
    assert server.seen[-1][2]["Authorization"] == "Bearer sk-from-env"


def test_explicit_llm_and_command_line_values_win_over_the_file(tmp_path, server, encoder):
    from routecore.cli import _router, build_parser

    p = tmp_path / "routes.yaml"
    p.write_text(
        "routes:\n  - name: A\n    utterances: [reset my password]\n"
        "  - name: B\n    utterances: [the VPN is down]\n"
        f"llm:\n  base_url: {server.url}\n  model: from-file\n",
        encoding="utf-8",
    )
    assert Router.from_config(p, encoder=encoder).llm.model == "from-file"
    assert Router.from_config(p, encoder=encoder, llm_model="from-call").llm.model == "from-call"
    mine = OpenAICompatibleRouter(server.url, "mine")
    assert Router.from_config(p, encoder=encoder, llm=mine).llm is mine
    args = build_parser().parse_args(
        ["route", "q", "--config", str(p), "--llm-model", "from-cli", "--llm-url", "http://127.0.0.1:9/v1"]
    )
    r = _router(args, p)
    assert (r.llm.model, r.llm.url) == ("from-cli", "http://127.0.0.1:9/v1/chat/completions")
    assert _router(build_parser().parse_args(["route", "q", "--config", str(p)]), p).llm.model == "from-file"
