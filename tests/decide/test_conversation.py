"""routing_query over OpenAI-style dicts and LangChain message objects, and the
lazy import of the framework integrations."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import langchain_core.messages as lc  # the test extra installs it: missing, these fail, never skip
import pytest

from routecore.decide.conversation import routing_query
from routecore.errors import InvalidArgumentError


def test_langchain_messages_mixed_with_dicts():
    msgs = [
        lc.SystemMessage("You are a helpful agent."),
        lc.HumanMessage("first"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "1", "content": "tool output"},
        lc.AIMessage("hello", tool_calls=[{"name": "get_logs", "args": {}, "id": "2"}]),
        lc.ToolMessage("log lines", tool_call_id="2"),
        {"role": "user", "content": "second"},
        lc.HumanMessage('{"json": "payload"}'),
        lc.HumanMessage("third"),
    ]
    assert routing_query(msgs) == "first\nsecond\nthird"
    assert routing_query(msgs, last_n=2) == "second\nthird"
    assert routing_query(tuple(msgs), last_n=1) == "third"


def test_content_parts_chat_messages_chunks_and_dict_types():
    parts = [
        {"type": "text", "text": "look at"},
        {"type": "image_url", "image_url": {"url": "x"}},
        "this",
        {"type": "text", "text": "  "},
    ]
    msgs = [
        lc.ChatMessage(role="user", content="chat user"),
        lc.ChatMessage(role="assistant", content="chat assistant"),
        {"type": "human", "content": "dict typed"},
        {"type": "ai", "content": "dict ai"},
        lc.HumanMessageChunk(content="chunk"),
        lc.AIMessageChunk(content="ai chunk"),
        lc.HumanMessage(content=parts),
        lc.HumanMessage(content=[{"type": "image_url", "image_url": {"url": "y"}}]),  # no text: skipped
    ]
    assert routing_query(msgs, last_n=10) == "chat user\ndict typed\nchunk\nlook at\nthis"


def test_a_duck_typed_message_object_is_read():
    assert (
        routing_query(
            [SimpleNamespace(type="human", content="  duck  "), SimpleNamespace(type="ai", content="x")]
        )
        == "duck"
    )


@pytest.mark.parametrize(
    ("bad", "pattern"),
    [
        ("just a string", r"message 1 \(str\) is neither a message dict nor a message object"),
        (42, r"message 1 \(int\)"),
        (("human", "tuple"), r"message 1 \(tuple\)"),
        ({"content": "no role"}, r'message 1 \(dict\) has no "role" string'),
        ({"role": 3, "content": "x"}, r'message 1 \(dict\) has a "role" of type int'),
        ({"role": "user"}, r"message 1 \(dict\) has no content"),
        ({"role": "user", "content": None}, r"message 1 \(dict\) has content of type NoneType"),
        (SimpleNamespace(type="human", content=7), r"message 1 \(SimpleNamespace\) has content of type int"),
        (SimpleNamespace(content="no type"), r"message 1 \(SimpleNamespace\)"),
    ],
)
def test_unreadable_messages_raise_naming_position_and_type(bad, pattern):
    with pytest.raises(InvalidArgumentError, match=pattern):
        routing_query([lc.HumanMessage("ok"), bad])


def test_a_conversation_without_human_text_raises():
    assert routing_query([]) == ""  # nothing to route: the caller decides
    for msgs in (
        [lc.SystemMessage("sys"), lc.AIMessage("hi")],
        [{"role": "user", "content": '{"a": 1}'}, {"role": "user", "content": "   "}],
        [lc.HumanMessage(content=[{"type": "image_url", "image_url": {"url": "y"}}])],
    ):
        with pytest.raises(InvalidArgumentError, match="no human message with text"):
            routing_query(msgs)


def test_bad_arguments():
    for last_n in (0, -1, True, 1.5):
        with pytest.raises(InvalidArgumentError, match="last_n"):
            routing_query([lc.HumanMessage("x")], last_n=last_n)  # type: ignore[arg-type]
    for messages in ("hello", lc.HumanMessage("x"), {"role": "user", "content": "x"}, 5):
        with pytest.raises(InvalidArgumentError, match="must be a list of messages"):
            routing_query(messages)  # type: ignore[arg-type]


def test_only_the_messages_read_are_checked():
    # Reading stops after last_n human texts: an old bad entry is not reached.
    assert routing_query([object(), lc.HumanMessage("a"), lc.HumanMessage("b")], last_n=2) == "a\nb"


def test_import_routecore_imports_no_framework():
    code = (
        "import routecore, routecore.decide.conversation, routecore.integrations, sys; "
        "bad = sorted({m.split('.')[0] for m in sys.modules} & "
        "{'langgraph', 'langgraph_bigtool', 'langchain_core', 'mcp', 'httpx'}); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
